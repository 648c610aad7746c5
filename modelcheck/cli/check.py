"""check, replay and refines: one configuration, one scenario, one
refinement."""

from __future__ import annotations

import os
from typing import Any

import click
from click.core import ParameterSource

from ..config import ConfigError
from ..engine.options import ENGINES, CheckOptions, parse_spark_settings
from ..memory import default_limit, parse_size
from ..runs.check import check_command
from ..runs.refines import refines_command
from ..runs.replay import replay_command
from .app import ProtocolHelp, bad_input, main, protocol
from .flags import Seconds, Size, json_option, quiet_option, set_option, spark_options, trace_out_option


@main.command(cls=ProtocolHelp)
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option("Override a config key; VALUE is a TOML value (a bare word is a string). Repeatable.")
@json_option()
@trace_out_option(
    "Write the counterexample (JSON) to FILE if there is one (if not, one an earlier run left there is removed)."
)
@quiet_option()
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default="all cores",
    help="Threads that share the state space (fast engine; bfs is one thread, spark uses --partitions).",
)
@click.option(
    "--symmetry",
    is_flag=True,
    help="Explore one state of each class of states that differ only by "
    "renaming the brokers (up to N! fewer states, same verdict and shortest counterexample; the output "
    "says how many states the classes hold). Refused where the rules tell brokers apart (kafka-4, "
    "admin elections).",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="fast",
    show_default=True,
    help="fast: the spec compiled (numba; the first run of a variant compiles for about 30 s, later "
    "runs load it) over packed states, sharded over --workers threads; bfs: the interpreted "
    "one-thread reference; spark: the compiled search on Spark executors (pip install "
    "'.[spark]', Java 17+). All give the same counts and traces. Without a working numba, "
    "fast runs bfs and says so.",
)
@spark_options(
    master="Spark master for --engine spark: local, local[N], local[*], "
    "spark://HOST:PORT, yarn, k8s://https://HOST:PORT (default local[*], or spark-submit's when run "
    "under it; see docs/spark.md).",
    partitions="Shards of the state space for --engine spark (default: Spark's default parallelism, "
    "i.e. the cores of a local master or all executors' cores of a cluster).",
    conf="A Spark setting for --engine spark, as spark-submit's --conf; overrides modelcheck's "
    "defaults (e.g. spark.driver.memory=8g; spark.modelcheck.stateDir=DIR on storage every "
    "executor sees, needed on a cluster of several hosts). Repeatable.",
)
@click.option(
    "--fingerprint-bits",
    type=click.Choice(["64", "128"]),
    default="64",
    show_default=True,
    help="Where a packed state is too large to store whole (over 128 bits), the visited set keeps a "
    "fingerprint of it: 64 bits (8 bytes a state, as TLC), or 128 (16 bytes a state; the "
    "collision probability becomes negligible). The output reports which, with the estimate.",
)
@click.option(
    "--checkpoint",
    "checkpoint_dir",
    metavar="DIR",
    help="Save the search in DIR (created if missing; else it must be empty or hold no checkpoint "
    "yet: DIR is modelcheck's alone, locked while a run writes there) every --checkpoint-every "
    "seconds and when it stops (Ctrl-C, SIGTERM, --max-memory), so that --resume DIR continues it "
    "after a stop, a kill or a crash. Engines fast and bfs.",
)
@click.option(
    "--checkpoint-every",
    type=Seconds(min=0),
    default=180.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between checkpoints (at the next safe point: a level, or a "
    "segment of one); each costs what changed since the last, plus the "
    "visited set (8-16 bytes a state) and the frontier.",
)
@click.option(
    "--resume",
    "resume_dir",
    metavar="DIR",
    help="Continue the check checkpointed in DIR (verified whole first: a damaged one is refused), with "
    "its config, engine and symmetry (a CONFIG.toml or --set given too is read over its config and "
    "must agree); it ends with exactly the counts, verdict and counterexample "
    "of an uninterrupted run, and keeps checkpointing into DIR. --workers may differ.",
)
@click.option(
    "--max-memory",
    type=Size(),
    metavar="SIZE",
    help="Bound this check's memory (anonymous resident memory, e.g. 4G, 512M): past it, the fast "
    "engine splits levels into segments and moves frontiers, parent links and then the visited "
    "set's keys to disk (sorted runs, merged as levels settle), and stops with one line (exit 2, "
    "with a checkpoint if --checkpoint is given) only when a segment of the frontier no longer "
    "fits beside what must stay in memory. Default: 80% of RAM (or of a cgroup's limit). Engines "
    "fast and bfs.",
)
def check(**options: Any) -> int:
    """Explore every reachable state of a configuration and check its invariants.

    Without CONFIG.toml or --set, the default check: four small
    configurations of kip966 (specs/kafka_elr/default.toml) that together
    fire every action and reach every goal, one verdict line each, then a
    table of which fired what. With either, one configuration: the
    embedded default (3 brokers, min_isr=2, 2 records, one unclean
    shutdown, one fence, one ISR shrink, variant kip966) with the keys
    given. Config keys (all optional, in the file or via --set):

    \b
    {config_keys}

    Reassignment: `max_reassignments` operator reassignments move the
    partition (of `brokers` replicas) within brokers + `spare_brokers`:

    \b
    modelcheck check --set spare_brokers=1 --set max_reassignments=1 --set max_records=1 --symmetry

    properties: temporal properties (P ~> Q under the fairness the spec
    states beside each; docs/model.md "Temporal properties"), checked on
    the behaviour graph after every invariant holds; a violation is a
    lasso, a prefix then a loop repeated for ever:

    \b
    modelcheck check --set 'properties=["LeaderlessGetsLeader"]' --set max_unclean_shutdowns=2

    After the verdict: coverage (transitions per action, AdminElectLeaders
    per election type), the actions that never fired, and the spec's
    reachability goals reached or not: a holds says nothing about what
    never happened.

    \b
    variants (see docs/model.md; `modelcheck matrix` runs them all; `modelcheck mutate` the mutants):
    {variants}

    \b
    modelcheck check --engine spark                        Spark, local[*]
    modelcheck check --engine spark --master spark://host:7077 --partitions 64

    Exit status: 0 all invariants (and properties) hold, 1 one is violated
    (the shortest counterexample, or a lasso, is printed), 2 bad input or an engine that cannot run
    here (no Java for Spark, no Spark master at the URL, ...), 3 an
    internal error (a traceback; a bug to report), 4 --trace-out could not
    be written (said after the result). An [expected] verdict
    in CONFIG.toml is reported, not turned into the exit status.
    """
    ctx = click.get_current_context()
    explicit = frozenset(name for name in options if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE)
    try:
        check_options = options_of(explicit, **options)
    except ConfigError as e:
        bad_input(str(e))
    return check_command(
        protocol().load,
        options["config"],
        options["overrides"],
        check_options,
        options["as_json"],
        options["trace_out"],
        options["quiet"],
        explicit,
        suite=protocol().default_suite,
    )


def options_of(explicit: frozenset[str], **flags: Any) -> CheckOptions:
    """check's flags as a CheckOptions; the rules between flags that the
    options cannot express (CheckOptions.validate holds the others)."""
    if "checkpoint_every" in explicit and not (flags["checkpoint_dir"] or flags["resume_dir"]):
        raise ConfigError(
            "--checkpoint-every applies with --checkpoint DIR (or --resume DIR): give the directory to save in"
        )
    if flags["resume_dir"] and flags["checkpoint_dir"]:
        raise ConfigError(
            f"--checkpoint {flags['checkpoint_dir']!r} with --resume: a resumed check keeps checkpointing into "
            "its --resume directory; leave out --checkpoint"
        )
    engine, max_memory = flags["engine"], flags["max_memory"]
    return CheckOptions.of(
        engine,
        symmetry=flags["symmetry"],
        fingerprint_bits=int(flags["fingerprint_bits"]),
        workers=flags["workers"],
        max_memory=parse_size(max_memory) if max_memory else None if engine == "spark" else default_limit(),
        checkpoint_dir=flags["resume_dir"] or flags["checkpoint_dir"],
        checkpoint_every=flags["checkpoint_every"],
        resume=bool(flags["resume_dir"]),
        master=flags["master"],
        partitions=flags["partitions"],
        spark_settings=dict(parse_spark_settings(flags["spark_conf"])),
    )


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@json_option('Print {"ok": ..., "steps": [...]} on stdout.')
def replay(scenario: str, as_json: bool) -> int:
    """Replay a scenario file step by step against the spec.

    A scenario (TOML, or JSON of the same shape) has a [config] table
    (required; empty: the default config) and [[steps]]; each step has
    `action`, its arguments (an argument may be left out when only one
    instance is enabled), optionally `expect = {var = value, ...}` (state
    after the step; sets as sorted lists) and `violates = [INVARIANT, ...]`
    (invariants the step breaks; default none).

    Exit status: 0 every step was enabled and met its expectations, 1
    otherwise, 2 bad input.
    """
    return replay_command(protocol().load, scenario, as_json)


@main.command()
@click.argument("impl", metavar="IMPL")
@click.argument("abstract", metavar="ABSTRACT")
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option()
@click.option(
    "--mapping",
    metavar="NAME",
    help="The refinement mapping IMPL declares for ABSTRACT (default: the one it declares, else "
    "'identity': every variable as it is).",
)
@json_option()
@quiet_option()
@click.option(
    "--engine",
    type=click.Choice(["fast", "bfs"]),
    default="fast",
    show_default=True,
    help="fast: both specs compiled (each compiled once, then loaded from the cache); bfs: the interpreted reference.",
)
@trace_out_option(
    "Write a failure's trace (JSON) to FILE, for `trace show` and `trace html`, which show its image "
    "beside it (if it holds, one an earlier run left there is removed)."
)
def refines(**options: Any) -> int:
    """Does variant IMPL refine variant ABSTRACT? Every reachable step of
    IMPL, read through a refinement mapping, must be a step of ABSTRACT or
    leave the image unchanged (a stutter), and the image of every initial
    state must be an initial state of ABSTRACT: then every behaviour of
    IMPL is one of ABSTRACT (TLA+'s `IMPL => ABSTRACT!Spec` with the
    mapping as the INSTANCE's substitutions).

    \b
    modelcheck refines kafka-4 kip966 --set brokers=2   Kafka 4.0 against the KIP
    modelcheck refines kip966 legacy                   the KIP against pre-KIP-966 KRaft
    modelcheck refines kip966 hwm-ignores-min-isr      does the KIP only remove behaviours?

    ABSTRACT is evaluated on the images, which need not be states its own
    search reaches: its steps are a function of the state. The config (a
    file and --set, as check's, without `variant`) applies to both, and
    both must accept it. The mapping is data the IMPL variant declares
    (specs/kafka_elr/): per abstract variable, the same variable, a
    constant (projected away), or a named function of IMPL's state;
    `--mapping identity` reads every variable as it is.

    Output: holds with the IMPL states and transitions checked and how
    many were stutters; or the shortest IMPL trace that ends in the first
    step ABSTRACT does not allow (re-validated by replay), its image in
    ABSTRACT step by step (a stutter, the ABSTRACT step that makes it, or
    NOT ALLOWED), and the ABSTRACT steps that came closest (fewest
    variables differing from the image). Exit status: 0 holds, 1 violated,
    2 bad input (an unknown variant, a config either refuses, a mapping
    IMPL does not declare), 4 --trace-out could not be written."""
    return refines_command(protocol().load_as, **options)
