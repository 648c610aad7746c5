"""The `modelcheck` command: check a configuration, replay a scenario.

Exit codes: 0 the property holds / the scenario replays as written, 1 a
violation / a failed step, 2 bad input (one line on stderr, nothing else
written).

Here are the commands' options, help and exit statuses, and the protocol
(specs.kafka_elr): each command hands its options and the protocol's spec
loader to its run in modelcheck/runs/, which prints through
modelcheck/views/.
"""

from __future__ import annotations

import errno
import math
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from modelcheck import __version__
from modelcheck.config import ConfigError
from modelcheck.engine.options import ENGINES, CheckOptions, parse_spark_settings
from modelcheck.engine.walks import PICKS
from modelcheck.lifetime import Stopped, exit_code
from modelcheck.memory import default_limit, parse_size
from modelcheck.runs.check import check_command
from modelcheck.runs.exits import EXIT_BAD_INPUT, EXIT_INTERNAL, BadInput
from modelcheck.runs.graph import graph_command
from modelcheck.runs.refines import refines_command
from modelcheck.runs.replay import replay_command
from modelcheck.runs.spark_env import spark_env_command
from modelcheck.runs.trace import export_command, html_command, show_command
from specs import kafka_elr


class Commands(click.Group):
    """Every command's exit status means what it says: Ctrl-C outside a
    check's own handling is 130 (not click's "Aborted!", exit 1, which
    reads as "violated"); a resource the machine ran out of is one line,
    exit 2; anything else unexpected is a traceback and exit 3, never a
    verdict."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as e:
            usage_error(e)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            status = super().invoke(ctx)
        except click.UsageError as e:
            usage_error(e)
        except KeyboardInterrupt:
            sys.exit(128 + signal.SIGINT)
        except Stopped as e:  # a stop no command reported: said, never a traceback
            click.echo(f"modelcheck {e}", err=True)
            sys.exit(exit_code(e))
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (MemoryError, OSError) as e:
            bad_input(resource_error(e) or internal_error())
        except BadInput as e:
            bad_input(str(e))
        except Exception:
            internal_error()
        sys.exit(status or 0)  # each run returns its exit status


def bad_input(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit 2, nothing else written."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def usage_error(e: click.UsageError) -> NoReturn:
    """A usage error is one line, as bad input is (click's shows the usage
    and a hint on four); a command or group called bare shows its help."""
    shows_help = getattr(click.exceptions, "NoArgsIsHelpError", None)  # click 8.2+; 8.1 shows the help itself
    if shows_help is not None and isinstance(e, shows_help):
        raise e
    see = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
    bad_input(" ".join(e.format_message().split()).removesuffix(".") + see)


def resource_error(e: BaseException) -> str | None:
    """One line for a resource the machine ran out of (not a bug), or None."""
    if isinstance(e, MemoryError):
        return (
            "out of memory: the machine had less free memory than this run needed (a check's "
            "--max-memory below what is free makes the fast engine spill to disk instead)"
        )
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EFBIG):
        where = f" writing {e.filename}" if e.filename else ""
        return f"{e.strerror}{where} (a checkpoint, or levels spilled to disk under --max-memory)"
    return None


def internal_error() -> NoReturn:
    """Never exit 1 ("violated") without a verdict: a traceback, exit 3."""
    traceback.print_exc()
    click.echo("error: internal error, no verdict (the traceback above is a bug to report)", err=True)
    sys.exit(EXIT_INTERNAL)


class Size(click.ParamType):
    """A --max-memory, refused as it is parsed by modelcheck.memory's rule
    ('' included, which a command would take for "not given")."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            parse_size(value)
        except ConfigError as e:
            raise click.UsageError(str(e), ctx) from None
        return value


class Seconds(click.FloatRange):
    """A duration: a FloatRange that also refuses nan and inf."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="modelcheck")
def main() -> None:
    """Explicit-state model checker for Kafka's replication protocol
    (KIP-966 Eligible Leader Replicas, KIP-704, KIP-460).

    \b
    modelcheck check                      exhaustive check of the default config
    modelcheck check --set variant=legacy the pre-KIP-966 protocol (a counterexample)
    modelcheck replay specs/scenarios/kip966-elr-example.toml
    """


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config key; VALUE is a TOML value (a bare word is a string). Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of tables.")
@click.option(
    "--trace-out",
    metavar="FILE",
    help="Write the counterexample (JSON) to FILE if there is one (if not, one an earlier run left there is removed).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
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
@click.option(
    "--master",
    metavar="URL",
    help="Spark master for --engine spark: local, local[N], local[*], "
    "spark://HOST:PORT, yarn, k8s://https://HOST:PORT (default local[*], or spark-submit's when run "
    "under it; see docs/spark.md).",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    metavar="P",
    help="Shards of the state space for --engine spark (default: Spark's default parallelism, "
    "i.e. the cores of a local master or all executors' cores of a cluster).",
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
    "--spark-conf",
    "spark_conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark setting for --engine spark, as spark-submit's --conf; overrides modelcheck's "
    "defaults (e.g. spark.driver.memory=8g; spark.modelcheck.stateDir=DIR on storage every "
    "executor sees, needed on a cluster of several hosts). Repeatable.",
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
    brokers, min_isr, max_records, max_unclean_shutdowns,
    max_clean_shutdowns, max_fences, max_isr_shrinks, max_min_isr_changes,
    max_admin_elections, max_reassignments, spare_brokers, variant,
    unclean_leader_election, max_unclean_switches, unclean_recovery_strategy
    (none | balanced | aggressive), fence_cuts_data_plane (true | false),
    metadata (atomic | propagated), controlled_shutdown (atomic | staged),
    acks, invariants, properties

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
    variants: kip966 (default), legacy, kip966-elr-only, kafka-4,
    hwm-ignores-min-isr, hwm-on-maximal-isr, balanced-fixed-responses,
    no-unclean-detection, reassignment-ignores-min-isr (see docs/model.md;
    `modelcheck matrix` runs them all)

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
        kafka_elr.load,
        options["config"],
        options["overrides"],
        check_options,
        options["as_json"],
        options["trace_out"],
        options["quiet"],
        explicit,
        suite=kafka_elr.DEFAULT_SUITE,
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
@click.option("--json", "as_json", is_flag=True, help='Print {"ok": ..., "steps": [...]} on stdout.')
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
    return replay_command(kafka_elr.load, scenario, as_json)


# ---- verdict matrix -----------------------------------------------------------------

CELL_MEMORY_HELP = (
    "Bound each cell's memory (e.g. 4G; see check --max-memory). Default: 80% of RAM shared "
    "among the cells running at once (--jobs, or fewer cells). A cell stopped at it reports so, matching no pin."
)
DEFAULT_MATRIX = Path(kafka_elr.__file__).parent.parent / "matrix.toml"


@main.command()
@click.argument("impl", metavar="IMPL")
@click.argument("abstract", metavar="ABSTRACT")
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option(
    "--mapping",
    metavar="NAME",
    help="The refinement mapping IMPL declares for ABSTRACT (default: the one it declares, else "
    "'identity': every variable as it is).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of tables.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option(
    "--engine",
    type=click.Choice(["fast", "bfs"]),
    default="fast",
    show_default=True,
    help="fast: both specs compiled (each compiled once, then loaded from the cache); bfs: the interpreted reference.",
)
@click.option(
    "--trace-out",
    metavar="FILE",
    help="Write a failure's trace (JSON) to FILE, for `trace show` and `trace html`, which show its image "
    "beside it (if it holds, one an earlier run left there is removed).",
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
    return refines_command(kafka_elr.load_as, **options)


def jobs_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--jobs/-j: how many of `what` (e.g. "Cells checked") run at once, a process each."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=os.cpu_count() or 1,
        show_default="all cores",
        help=f"{what} at a time, each in its own process.",
    )


def summary_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--summary: a markdown report appended to a file (a CI job's summary page)."""
    return click.option(
        "--summary",
        metavar="FILE.md",
        help=f"Append {what} as markdown to FILE.md, each finding with the command that shows its trace "
        '(in GitHub Actions: --summary "$GITHUB_STEP_SUMMARY").',
    )


@main.command()
@click.argument("matrix_file", required=False, metavar="[MATRIX.toml]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object a cell, as a list, on stdout.")
@click.option("--out", metavar="FILE.md", help="Write the verdicts as markdown (e.g. docs/verdicts.md).")
@jobs_option("Cells checked")
@click.option("--only", multiple=True, metavar="NAME", help="Run only the named cell(s). Repeatable.")
@click.option("--max-memory", type=Size(), metavar="SIZE", help=CELL_MEMORY_HELP)
def matrix(**options: Any) -> int:
    """Check a list of (variant, config) cells and tabulate the verdicts:
    violated invariant, shortest trace length, distinct states, depth, time.

    Without MATRIX.toml the shipped specs/matrix.toml runs: every variant at
    N=3/min_isr=2 with one and two unclean shutdowns, and N=4/min_isr=3.
    A cell may pin `expect = "holds"` or `"violated: NAME"`, and set
    `symmetry = true` (check's --symmetry). `exercises = [ACTION, ...]` and
    `goals = [GOAL, ...]` name what its claim needs to have happened: a cell
    that holds while one of those actions never fired, or a goal was never
    reached, is marked VACUOUS (the "never fired" column lists the rest).

    Exit status: 0 every cell is as pinned, 1 one differs, 2 bad input, 4
    --out could not be written (said after the table);
    Ctrl-C or SIGTERM stops every cell at once (130, 143: the cells done
    are shown, --out is not written).
    """
    from modelcheck.runs.matrix import matrix_command

    return matrix_command(kafka_elr.load, default=str(DEFAULT_MATRIX), **options)


# ---- CI gate --------------------------------------------------------------------------


@main.command()
@click.argument("gate_file", metavar="GATE.toml")
@click.option("--junit", metavar="FILE.xml", help="Write JUnit XML: a testcase an entry, traces in failures.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcomes as one JSON list on stdout.")
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Write each failing entry's counterexample there as JSON (view with `modelcheck trace show`).",
)
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Rewrite the pinned `states` counts in GATE.toml to what this run found, and show the changes.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing entry; the rest are reported skipped.")
@jobs_option("Entries checked")
@click.option("--max-memory", type=Size(), metavar="SIZE", help=CELL_MEMORY_HELP)
@click.option(
    "--strict-budgets",
    is_flag=True,
    help="Fail an entry that runs over its budget_s (default: a warning, since a busy machine "
    "stretches wall-clock time and must not fail a right verdict).",
)
@click.option(
    "--against",
    metavar="REF",
    help="Compare each entry's variant with the same variant at git revision REF of specs/ "
    "instead of checking the pins: the first new behaviour, or none.",
)
@click.option(
    "--repo",
    metavar="DIR",
    help="The git repository --against reads REF from (default: the checkout specs/ is imported from).",
)
@summary_option("the outcome (counts, and each entry that failed or warned)")
def gate(junit: str | None, update_baseline: bool, repo: str | None, **options: Any) -> int:
    """Fail a protocol change that breaks an invariant or changes what the
    protocol can reach.

    Each [[entry]] of GATE.toml has a name, a config table, `expect =
    "holds"` or `"violated: INVARIANT"`, and optionally `states = N` (the
    pinned distinct-state count), `budget_s = S` (a time budget in seconds:
    over it is a warning, a failure with --strict-budgets), and what
    a holds must have exercised: `exercises = [ACTION, ...]` (actions that
    fired) and `goals = [GOAL, ...]` (reachability goals reached):

    \b
    [[entry]]
    name = "kip966, one record"
    config = { variant = "kip966", max_records = 1 }
    expect = "holds"
    states = 108175
    exercises = ["UncleanShutdown", "StartBroker"]
    goals = ["ElrMemberElected", "UncleanShutdownDetected"]
    budget_s = 60
    refines = "hwm-ignores-min-isr"

    `refines = "VARIANT"` also checks that the entry's variant refines
    VARIANT on its config (`modelcheck refines`, the mapping its variant
    declares): an entry fails with the first step VARIANT does not allow.

    `--against REF` checks no pins: it compares each entry's variant with
    the same variant at git revision REF of specs/ (extracted with `git
    archive` into a temporary directory, the working tree untouched), and
    reports each entry's first new behaviour: the shortest trace whose last
    step the spec at REF does not allow (exit 1), or none (exit 0).

    \b
    modelcheck gate specs/gate.toml --against main    what does this branch allow that main did not?

    Exit status: 0 every entry passes, 1 one fails (verdict, count, a
    vacuous holds, refines, or a budget with --strict-budgets), 2 bad gate file or an output that cannot be
    written (checked before the run; --update-baseline included), 4 an
    output whose write failed after the run (said after the table); Ctrl-C or
    SIGTERM stops every entry at once (130, 143), and --junit and
    --trace-dir still report what ran (the rest as skipped).
    """
    from modelcheck.runs.gate import gate_command

    if repo is not None and options["against"] is None:
        bad_input("--repo applies to --against only")
    return gate_command(
        kafka_elr.load,
        junit_file=junit,
        update=update_baseline,
        load_as=kafka_elr.load_as,
        load_at=lambda ref: specs_at(repo or str(Path(kafka_elr.__file__).resolve().parents[2]), ref),
        **options,
    )


@main.command()
@click.argument("gate_file", metavar="GATE.toml")
@click.option("--mutant", "only", multiple=True, metavar="NAME", help="Hunt only this mutant (repeatable).")
@click.option(
    "--point",
    "points",
    multiple=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Hunt only this generated mutant, by its number (repeatable; see --list-points).",
)
@click.option("--list-points", is_flag=True, help="Print the generated mutants (one a line) and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the score and each mutant's fate as JSON on stdout.")
@jobs_option("Mutants hunted")
@summary_option("the mutation score and each mutant's fate")
def mutate(
    gate_file: str,
    only: tuple[str, ...],
    points: tuple[int, ...],
    list_points: bool,
    as_json: bool,
    jobs: int,
    summary: str | None,
) -> int:
    """How strong the gate is: each of the protocol's mutants (a variant
    that redefines one rule; specs/kafka_elr/bugs.py puts real Kafka bugs
    back) takes its base variant's place in every GATE.toml entry that pins
    "holds" for the base, in order, until one breaks. KILLED names the
    entry, the invariant, the steps and the check that shows the trace;
    a moved count alone is no kill. A survivor is EQUIVALENT on the gate's
    configs (every count as pinned) or SURVIVED (other states, nothing
    broken: a missing invariant or configuration).

    Generated mutants are every small slip of a variant's own rules (drop a
    conjunct or a `not`, flip a comparison or its strictness, swap | and &,
    drop a set removal or an increment, keep a field an update sets, skip
    a rebinding), numbered as --list-points prints them, all in one
    compiled kernel: `--set mutation=N` checks one. One that no hunted
    entry can run (its actions never fire there) is UNREACHED. A generated
    mutant's search stops at 3 GiB (a slip can unbound a bounded space) and
    counts as reaching other states. Survivors are listed by rule.

    \b
    modelcheck mutate specs/gate.toml
    modelcheck mutate specs/gate.toml --mutant leader-own-min-isr
    modelcheck mutate specs/gate.toml --point 12 --point 40
    modelcheck mutate specs/gate.toml --list-points

    The gate file may list the survivors it knows of, the variants whose
    rules are mutated, the entries they are hunted on (default: every entry
    that pins holds for the variant, the cheapest first) and the least
    score (killed / not shown equivalent) of the generated mutants:

    \b
    [mutation]
    survivors = ["elr-kept-on-downgrade"]
    generate = ["kip966"]
    hunt_on = ["kip966", "kip966, 2 brokers"]
    min_score = 0.8

    Exit status: 0 every named mutant is killed but the listed survivors,
    which survive, and the generated score is at least min_score; 1
    otherwise (a new survivor: the gate got weaker; a listed one killed:
    take it off the list; a lower score; a hunt stopped at the memory
    limit, or a mutant whose base no entry pins holds for); 2 bad input;
    Ctrl-C or SIGTERM stop it (130, 143).
    """
    from modelcheck.runs.mutate import mutate_command

    return mutate_command(
        kafka_elr.load,
        kafka_elr.MUTANTS,
        gate_file,
        only,
        jobs,
        as_json,
        summary,
        schemata=kafka_elr.schemata,
        points=points,
        list_points=list_points,
    )


def specs_at(repo: str, ref: str) -> Any:
    """kafka_elr.load_as with the loader of specs/ at revision `ref` of `repo`."""
    import functools
    import importlib

    from modelcheck.runs.revision import package_at

    old = importlib.import_module(package_at(repo, ref, "specs").__name__ + ".kafka_elr")
    return functools.partial(kafka_elr.load_as, load=old.load)


@main.command("spark-env")
@click.option(
    "--out", "-o", default="modelcheck-spark.zip", show_default=True, metavar="FILE", help="Where to write the zip."
)
def spark_env(out: str) -> int:
    """Build the zip that puts modelcheck, its specs and cli.py on Spark
    executors' sys.path, for a cluster whose executors do not have
    modelcheck installed:

    \b
    modelcheck spark-env -o modelcheck-spark.zip
    spark-submit --master spark://HOST:7077 --py-files modelcheck-spark.zip \\
        "$(python -c 'import cli; print(cli.__file__)')" check --engine spark

    (`modelcheck check --engine spark` with a cluster master ships
    modelcheck and the spec itself, in a zip without cli.py.) Executors also
    need numpy and numba, the compiled kernel's dependencies (the kernel
    itself travels with the check and is compiled once a machine):
    docs/spark.md shows a packed virtualenv that carries them.
    """
    return spark_env_command(out)


# ---- trace viewer, exports and the state graph ------------------------------------
# The runs (modelcheck/runs/trace.py, graph.py) and the rendering (modelcheck/views/)
# take a Spec and never import specs/; here each file's config picks the spec.


@main.group()
def trace() -> None:
    """View and convert a counterexample: the JSON of `check --trace-out`,
    or an ITF trace written by `trace export`."""


@trace.command("show")
@click.argument("path", metavar="TRACE")
@click.option("--step", "step_no", metavar="K", help="Show step K's state in full.")
@click.option("--diff", is_flag=True, help="Show only what each step changed.")
def trace_show(path: str, step_no: str | None, diff: bool) -> int:
    """One row a step: leader/epoch, ISR, ELR, LastKnownELR, HWM and each
    broker's lane (role, faults, log coloured by epoch); changed cells
    marked `*`; the violated invariant explained at the end."""
    return show_command(kafka_elr.load, path, step_no, diff)


@trace.command("html")
@click.argument("path", metavar="TRACE")
@click.option("-o", "--out", required=True, metavar="FILE.html", help="The page to write.")
def trace_html(path: str, out: str) -> int:
    """One self-contained HTML page (no network): brokers as lanes, steps as
    rows; a slider, arrow keys or clicks step through, showing each step's
    changes and state."""
    return html_command(kafka_elr.load, path, out)


@trace.command("export")
@click.argument("path", metavar="TRACE")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["itf", "json"]),
    default="itf",
    show_default=True,
    help="itf: the Informal Trace Format of Apalache and Quint; json: check's --trace-out form.",
)
@click.option("-o", "--out", default="-", metavar="FILE", help="Where to write (default: stdout).")
def trace_export(path: str, fmt: str, out: str) -> int:
    """Convert a trace (JSON or ITF) to ITF or JSON; reading the result back
    gives the same steps."""
    return export_command(kafka_elr.load, path, fmt, out)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option("-o", "--out", required=True, metavar="FILE.graphml|FILE.dot", help="The format follows the suffix.")
@click.option(
    "--max-states",
    default=20000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Refuse configs with more reachable states.",
)
def graph(**options: Any) -> int:
    """Write the reachable state graph of a small config (networkx): nodes
    are states with their variables, edges actions with their arguments;
    when an invariant fails, check's shortest counterexample is marked."""
    return graph_command(kafka_elr.load, **options)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option(
    "--trace",
    "trace_path",
    metavar="TRACE",
    help="Start on a saved trace (check --trace-out, or ITF), "
    "in its config: forward walks it, and any step can branch off it.",
)
@click.option(
    "--step", "step_no", type=click.IntRange(min=0), metavar="K", help="With --trace: open at step K (default 0)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to serve on (another than loopback serves the network).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to serve on (0: any free port).",
)
@click.option(
    "--seen-states",
    type=click.IntRange(min=0),
    metavar="N",
    help="Index the first N states a breadth-first check visits, to mark which successors the "
    "checker has seen and at what depth (default 1,000,000 compiled, 50,000 interpreted; 0: none).",
)
def explore(**options: Any) -> int:
    """Explore a configuration's states in the browser, from the initial
    state or from any step of a saved trace: every enabled action with its
    arguments, the diff of the state it leads to, the invariants that state
    breaks and whether the checker has seen it; the path walked is the URL,
    and exports as a scenario (modelcheck replay) or a trace file
    (modelcheck trace show/html/export).

    \b
    modelcheck explore --set variant=legacy        then open the URL it prints
    modelcheck explore --trace t.json --step 5     branch off a counterexample

    Serves until Ctrl-C (exit 130) or SIGTERM (143); bad input exits 2.
    """
    from modelcheck.runs.explore import explore_command

    return explore_command(kafka_elr.load, **options)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option(
    "--walks",
    type=click.IntRange(min=1),
    default=20_000,
    show_default=True,
    help="Random walks to run (at most: a violation ends the search).",
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Steps a walk takes at most, up to 100,000 (it ends sooner at a violation or where nothing is enabled).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="The seed, 0 to 2^64 - 1: the same seed, config and options give the same walks, results and "
    "trace, whatever --workers or --engine.",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="ACTION=W",
    help="Weight of an action's steps (default 1 each; 0 never takes it). Under swarm it multiplies "
    "each walk's own weight for the action. Repeatable.",
)
@click.option(
    "--pick",
    type=click.Choice(PICKS),
    default=PICKS[0],
    show_default=True,
    help="swarm: swarm testing; each walk keeps each action with probability 1/2 (never none) at "
    "a random weight of its own, then takes each step as action does among the enabled actions "
    "it kept (any enabled action where none is); action: each enabled action by its weight, then "
    "one of its instances uniformly (actions with many arguments are not favoured); instance: "
    "each enabled action instance in proportion to its action's weight (uniform by default, "
    "as TLC).",
)
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes running walks (the results do not depend on it); more than the CPUs this process may "
    "use runs as many as those, with a warning.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="local: here, on --workers processes; spark: walks spread over Spark executors "
    "(pip install '.[spark]', Java 17+), the same results.",
)
@click.option("--master", metavar="URL", help="Spark master for --engine spark (as check's; default local[*]).")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    metavar="P",
    help="Spark tasks a round of walks is split into (default: Spark's default parallelism).",
)
@click.option(
    "--spark-conf",
    "spark_conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark setting for --engine spark, as spark-submit's --conf. Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of tables.")
@click.option("--trace-out", metavar="FILE", help="Write the shrunk counterexample (JSON, as check's) to FILE.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option(
    "--max-memory",
    metavar="SIZE",
    help="Bound this process's memory (anonymous resident memory, e.g. 4G, 512M, as check's): the "
    "distinct states seen grow with the walks (8 bytes each), and past it the walks stop with one "
    "line (exit 2) saying what they did. Default: 80% of RAM (or of a cgroup's limit).",
)
def simulate(**options: Any) -> int:
    """Random walks through a configuration too large to check
    exhaustively (TLC's -simulate): each walk takes a random enabled action
    at each step, up to --depth steps, checking the invariants in every
    state it visits. A violation's walk is shrunk to a short
    counterexample (steps dropped and reordered while replay still breaks
    the invariant) and re-validated by replay.

    \b
    modelcheck simulate --set brokers=5 --set min_isr=3 --set max_unclean_shutdowns=3
    modelcheck simulate --set brokers=5 --walks 20000 --depth 60 --seed 7 --workers 2

    Nothing is held in proportion to --walks (10^20 walks start at once);
    what grows is the set of distinct states seen, bounded by --max-memory.

    Exit status: 0 no violation found (the search is not exhaustive: it
    says nothing of the states it did not visit), 1 a violation (the
    shrunk counterexample is printed), 2 bad input or the memory limit, 4 --trace-out could not
    be written (said after the result), 130/143 stopped.
    """
    from modelcheck.runs.simulate import simulate_command

    return simulate_command(kafka_elr.load, **options)


if __name__ == "__main__":
    main()
