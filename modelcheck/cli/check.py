"""check, replay and refines: one configuration, one scenario, one
refinement."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from ..config import ConfigError
from ..engine.options import CheckOptions
from ..runs.check import check_command
from ..runs.refines import refines_command
from ..runs.replay import replay_command
from .app import ProtocolHelp, bad_input, main, protocol
from .flags import check_options, json_option, quiet_option, set_option, trace_out_option


@main.command(cls=ProtocolHelp)
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option("Override a config key; VALUE is a TOML value (a bare word is a string). Repeatable.")
@json_option()
@trace_out_option(
    "Write the counterexample (JSON) to FILE if there is one (if not, one an earlier run left there is removed)."
)
@quiet_option()
@check_options()
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
    return CheckOptions.from_flags(flags)


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
