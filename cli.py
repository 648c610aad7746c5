"""The `modelcheck` command: check a configuration, replay a scenario.

Exit codes: 0 the property holds / the scenario replays as written, 1 a
violation / a failed step, 2 bad input (one line on stderr, nothing else
written).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.live import Live
from rich.table import Table
from rich.text import Text

from modelcheck import __version__
from modelcheck.config import ConfigError, parse_override, read_file
from modelcheck.engine import ENGINES, run as run_engine
from modelcheck.engine.checkpoint import Checkpoints
from modelcheck.engine.control import Control
from modelcheck.engine.walks import PICKS
from modelcheck.lifetime import Stopped, exit_code, stop_on_signals
from modelcheck.memory import default_limit, parse_size
from modelcheck.output import check_dir, check_file, make_dir, write_text, writing
from modelcheck.runs.replay import parse_steps, replay as run_replay, split_scenario
from modelcheck.result import CheckResult, never_fired, parse_expectation
from modelcheck.trace import described
from modelcheck.views.graph import GraphTooLarge, dot, graphml, mark_path, state_graph
from modelcheck.views.html import render as render_html
from modelcheck.views.itf import to_itf
from modelcheck.views.terminal import (diff_table, format_action, replay_table, stderr_console, step_table,
                                       stdout_console, trace_table)
from modelcheck.views.tracefile import TraceFile, open_trace as read_and_replay
from specs import kafka_elr

EXIT_HOLDS, EXIT_VIOLATED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
# master URLs spark-submit accepts (local[N] needs N >= 1; local[N,F] retries failed tasks)
SPARK_MASTER = re.compile(r"local(\[([1-9]\d*|\*)(,[1-9]\d*)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def load_check_config(path: str | None, overrides: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    """File keys, then --set overrides; returns (given keys, expected verdict)."""
    given: dict[str, Any] = {}
    expected = None
    if path is not None:
        given = read_file(path)
        exp = given.pop("expected", None)
        if exp is not None:
            if not isinstance(exp, dict) or set(exp) != {"verdict"}:
                raise ConfigError(f"{path}: [expected] must hold only verdict = \"holds\" or \"violated: NAME\"")
            expected = exp["verdict"]       # checked against the spec's invariants once it is loaded
    for item in overrides:
        key, value = parse_override(item)
        given[key] = value
    return given, expected


class Progress:
    """Live progress on stderr: a rich line on a terminal, a plain line every
    10 s otherwise (so CI logs show long runs are alive)."""

    def __init__(self, enabled: bool):
        self.console = stderr_console()
        self.enabled = enabled
        self.live = Live(console=self.console, transient=True) if enabled and self.console.is_terminal else None
        self.last = time.monotonic()

    def __enter__(self) -> "Progress":
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.live.stop()

    def __call__(self, st: dict) -> None:
        line = st["note"] if "note" in st else (
            f"depth {st['depth']}  distinct {st['distinct']:,}  generated {st['generated']:,}  "
            f"queue {st['queue']:,}  {st['states_per_s']:,.0f} states/s  {st['elapsed_s']:.0f} s")
        if self.live:
            self.live.update(Text(line))
        elif self.enabled and ("note" in st or time.monotonic() - self.last >= 10):
            self.console.print(line)
            self.last = time.monotonic()


def write_output(path: str, option: str, text: str) -> None:
    """write_text (modelcheck/output.py); a failure is one line, exit 2."""
    try:
        write_text(path, option, text)
    except ConfigError as e:
        fail(str(e))


class Commands(click.Group):
    """Every command's exit status means what it says: Ctrl-C outside a
    check's own handling is 130 (not click's "Aborted!", exit 1, which
    reads as "violated"); a resource the machine ran out of is one line,
    exit 2; anything else unexpected is a traceback and exit 3, never a
    verdict."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            sys.exit(128 + signal.SIGINT)
        except Stopped as e:            # a stop no command reported: said, never a traceback
            click.echo(f"modelcheck {e}", err=True)
            sys.exit(exit_code(e))
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (MemoryError, OSError) as e:
            fail(resource_error(e) or internal_error())
        except Exception:
            internal_error()


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
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config key; VALUE is a TOML value (a bare word is a string). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of tables.")
@click.option("--trace-out", metavar="FILE", help="Write the counterexample (JSON) to FILE if there is one.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default="all cores", help="Threads that share the state space (fast engine; bfs is one "
              "thread, spark uses --partitions).")
@click.option("--symmetry", is_flag=True, help="Explore one state of each class of states that differ only by "
              "renaming the brokers (up to N! fewer states, same verdict and shortest counterexample; the output "
              "says how many states the classes hold). Refused where the rules tell brokers apart (kafka-4, "
              "admin elections).")
@click.option("--engine", type=click.Choice(ENGINES), default="fast", show_default=True,
              help="fast: the spec compiled (numba; the first run of a variant compiles for about 30 s, later "
                   "runs load it) over packed states, sharded over --workers threads; bfs: the interpreted "
                   "one-thread reference; spark: the compiled search on Spark executors (pip install "
                   "'.[spark]', Java 17+). All give the same counts and traces. Without a working numba, "
                   "fast runs bfs and says so.")
@click.option("--master", metavar="URL", help="Spark master for --engine spark: local, local[N], local[*], "
              "spark://HOST:PORT, yarn, k8s://https://HOST:PORT (default local[*], or spark-submit's when run "
              "under it; see docs/spark.md).")
@click.option("--partitions", type=click.IntRange(min=1), metavar="P",
              help="Shards of the state space for --engine spark (default: Spark's default parallelism, "
                   "i.e. the cores of a local master or all executors' cores of a cluster).")
@click.option("--fingerprint-bits", type=click.Choice(["64", "128"]), default="64", show_default=True,
              help="Where a packed state is too large to store whole (over 128 bits), the visited set keeps a "
                   "fingerprint of it: 64 bits (8 bytes a state, as TLC), or 128 (16 bytes a state; the "
                   "collision probability becomes negligible). The output reports which, with the estimate.")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting for --engine spark, as spark-submit's --conf; overrides modelcheck's "
                   "defaults (e.g. spark.driver.memory=8g; spark.modelcheck.stateDir=DIR on storage every "
                   "executor sees, needed on a cluster of several hosts). Repeatable.")
@click.option("--checkpoint", "checkpoint_dir", metavar="DIR",
              help="Save the search in DIR (created; it must hold no checkpoint yet) every --checkpoint-every "
                   "seconds and when it stops (Ctrl-C, SIGTERM, --max-memory), so that --resume DIR continues it "
                   "after a stop, a kill or a crash. Engines fast and bfs.")
@click.option("--checkpoint-every", type=click.FloatRange(min=0), default=180.0, show_default=True,
              metavar="SECONDS", help="Seconds between checkpoints (at the next safe point: a level, or a "
                                      "segment of one); each costs what changed since the last, plus the "
                                      "visited set (8-16 bytes a state) and the frontier.")
@click.option("--resume", "resume_dir", metavar="DIR",
              help="Continue the check checkpointed in DIR, with its config, engine and symmetry (a CONFIG.toml "
                   "or --set given too must agree); it ends with exactly the counts, verdict and counterexample "
                   "of an uninterrupted run, and keeps checkpointing into DIR. --workers may differ.")
@click.option("--max-memory", metavar="SIZE",
              help="Bound this check's memory (anonymous resident memory, e.g. 4G, 512M): past it, the fast "
                   "engine splits levels into segments and moves frontiers, parent links and then the visited "
                   "set's keys to disk (sorted runs, merged as levels settle), and stops with one line (exit 2, "
                   "with a checkpoint if --checkpoint is given) only when a segment of the frontier no longer "
                   "fits beside what must stay in memory. Default: 80% of RAM (or of a cgroup's limit). Engines "
                   "fast and bfs.")
def check(config: str | None, overrides: tuple[str, ...], as_json: bool, trace_out: str | None,
          quiet: bool, workers: int, symmetry: bool, engine: str, master: str | None,
          partitions: int | None, fingerprint_bits: str, spark_conf: tuple[str, ...],
          checkpoint_dir: str | None, checkpoint_every: float, resume_dir: str | None,
          max_memory: str | None) -> None:
    """Explore every reachable state of a configuration and check its invariants.

    Without CONFIG.toml the embedded default is checked: 3 brokers,
    min_isr=2, 2 records, one unclean shutdown, one fence, one ISR shrink,
    variant kip966. Config keys (all optional, in the file or via --set):

    \b
    brokers, min_isr, max_records, max_unclean_shutdowns,
    max_clean_shutdowns, max_fences, max_isr_shrinks, max_min_isr_changes,
    max_admin_elections, max_reassignments, spare_brokers, variant,
    unclean_leader_election, unclean_recovery_strategy (none | balanced |
    aggressive), fence_cuts_data_plane (true | false), metadata (atomic |
    propagated), acks, invariants, properties

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
    internal error (a traceback; a bug to report). An [expected] verdict
    in CONFIG.toml is reported, not turned into the exit status.
    """
    try:
        check_spark_options(engine, master, partitions, spark_conf)
        if engine == "bfs" and fingerprint_bits != "64":
            raise ConfigError("--fingerprint-bits applies to the compiled engines (fast, spark); "
                              "the reference engine keeps 64-bit fingerprints")
        given, expected = load_check_config(config, overrides)
        local = [name for name, given_ in (("checkpoint", checkpoint_dir), ("resume", resume_dir),
                                           ("max-memory", max_memory)) if given_]
        if engine == "spark" and local:
            raise ConfigError(f"--{local[0]} applies to the local engines (fast, bfs); a Spark check survives a "
                              "lost executor by itself (its shards' state is in files), and its memory is Spark's "
                              "(spark.driver.memory, spark.executor.memory)")
        control = Control(max_memory=None if engine == "spark" else
                          parse_size(max_memory) if max_memory else default_limit())
        if resume_dir:
            given, engine, symmetry, fingerprint_bits = resumed(resume_dir, given, bool(config or overrides),
                                                                engine, symmetry, fingerprint_bits)
            control.checkpoints, control.resume = Checkpoints(resume_dir, checkpoint_every), True
        spec = kafka_elr.load(given)
        if expected is not None:
            expected = parse_expectation(expected, spec, str(config), "[expected] verdict")
        if symmetry:
            spec.enable_symmetry()
        if checkpoint_dir:
            control.checkpoints = Checkpoints(checkpoint_dir, checkpoint_every)
            control.checkpoints.prepare(resuming=False)
        if trace_out:
            check_file(trace_out, "--trace-out")
    except ConfigError as e:
        fail(str(e))
    stopped = None
    with stop_on_signals() as control.stop:
        try:
            with Progress(enabled=not quiet and not as_json) as progress:
                result = run_engine(spec, engine=engine, workers=workers, progress=progress,
                                    master=master, partitions=partitions,
                                    spark_settings=dict(kv.split("=", 1) for kv in spark_conf),
                                    fingerprint_bits=int(fingerprint_bits), control=control)
        except Stopped as e:
            stopped = e
        except ConfigError as e:        # the engine cannot start here (e.g. no Java for Spark)
            fail(str(e))
    if stopped is not None:
        report_stop(stopped, as_json)
    kernel = result.run_info.get("kernel", "")
    if kernel.startswith("interpreted: "):        # not "interpreted (done before the kernel compiled)"
        click.echo(f"warning: no compiled kernel ({kernel.split(': ', 1)[1]}); ran the interpreted engine", err=True)
    trace = described(spec, result.trace)
    verdict = result.verdict if result.holds else f"violated: {result.invariant}"
    if trace_out and not result.holds:
        write_output(trace_out, "--trace-out", json.dumps(
            TraceFile(spec.config, result.invariant, trace, result.loop).to_json(), indent=1) + "\n")
    if as_json:
        click.echo(json.dumps({
            "verdict": result.verdict, "invariant": result.invariant,
            "distinct_states": result.distinct_states, "generated_states": result.generated_states,
            "depth": result.depth, "elapsed_s": round(result.elapsed_s, 3), "config": spec.config,
            "coverage": result.coverage, "goals": result.goals, "trace": trace, "loop": result.loop,
            "properties": result.triggers,
            "expected": expected, "as_expected": None if expected is None else expected == verdict,
            "engine": engine, "workers": workers if engine == "fast" else 1, "symmetry": symmetry,
            **result.run_info,
            "memory": result.memory}))
    else:
        print_result(spec, result, expected, verdict, trace_out)
    sys.exit(EXIT_HOLDS if result.holds else EXIT_VIOLATED)


def check_spark_options(engine: str, master: str | None, partitions: int | None, spark_conf: tuple[str, ...]) -> None:
    """The Spark-only options: given only with --engine spark, and well formed."""
    spark_only = [name for name, given in (("master", master), ("partitions", partitions),
                                           ("spark-conf", spark_conf)) if given]
    if engine != "spark" and spark_only:
        raise ConfigError(f"--{spark_only[0]} applies to --engine spark only")
    if master and not SPARK_MASTER.fullmatch(master):
        raise ConfigError(f"--master {master!r}: expected local, local[N], local[*], spark://HOST:PORT, "
                          "yarn or k8s://https://HOST:PORT")
    bad = [kv for kv in spark_conf if "=" not in kv or not kv.split("=", 1)[0].strip()]
    if bad:
        raise ConfigError(f"--spark-conf {bad[0]!r}: expected KEY=VALUE, e.g. spark.executor.memory=8g")


def resumed(directory: str, given: dict[str, Any], config_given: bool, engine: str, symmetry: bool,
            fingerprint_bits: str) -> tuple[dict[str, Any], str, bool, str]:
    """The config, engine, symmetry and fingerprint bits of the check
    checkpointed in `directory`; what the command line says of them must
    agree."""
    checkpoints = Checkpoints(directory)
    checkpoints.prepare(resuming=True)
    state = checkpoints.load()[0]
    saved = state["identity"]
    config = {k: v for k, v in saved["config"].items() if v is not None}
    if config_given and kafka_elr.load(given).config != saved["config"]:
        now = kafka_elr.load(given).config
        key = next(k for k in now if now[k] != saved["config"].get(k))
        raise ConfigError(f"--resume {directory}: the checkpoint's {key} is {json.dumps(saved['config'].get(key))}, "
                          f"not {json.dumps(now[key])} (leave out the config to take the checkpoint's)")
    ctx = click.get_current_context()
    explicit = lambda name: ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE  # noqa: E731
    bits = str(state.get("fingerprint_bits") or 64)
    for name, now, then in (("engine", engine, saved["engine"]), ("fingerprint_bits", fingerprint_bits, bits)):
        if explicit(name) and now != then:
            raise ConfigError(f"--resume {directory}: the checkpoint was written with --{name.replace('_', '-')} "
                              f"{then}, not {now}")
    if symmetry and not saved["symmetry"]:
        raise ConfigError(f"--resume {directory}: the checkpoint was written without --symmetry")
    return config, saved["engine"], saved["symmetry"], bits


def report_stop(stop: Stopped, as_json: bool) -> NoReturn:
    """What a stopped check had done, and how to go on; exit 128 + the
    signal (130 Ctrl-C, 143 SIGTERM), or 2 at the memory limit."""
    resume = f"modelcheck check --resume {shlex.quote(stop.checkpoint)}" if stop.checkpoint else None
    if as_json:
        click.echo(json.dumps({"verdict": "stopped", "reason": stop.why, "distinct_states": stop.distinct,
                               "generated_states": stop.generated, "levels_complete": stop.depth,
                               "elapsed_s": round(stop.elapsed_s, 3), "checkpoint": stop.checkpoint,
                               "resume": resume}))
    if stop.signum is None:
        click.echo(f"error: {stop.why}", err=True)
    elif not as_json:
        click.echo(f"{stop.why} after {stop.elapsed_s:.1f} s, no verdict: {stop.distinct:,} distinct states, "
                   f"{stop.generated:,} generated, {stop.depth} levels complete", err=True)
        click.echo(f"checkpoint in {stop.checkpoint}; resume with: {resume}" if resume else
                   "no checkpoint (--checkpoint DIR makes a stopped check resumable)", err=True)
    sys.exit(exit_code(stop))


def resource_error(e: BaseException) -> str | None:
    """One line for a resource the machine ran out of (not a bug), or None."""
    if isinstance(e, MemoryError):
        return ("out of memory: the machine had less free memory than this run needed (a check's "
                "--max-memory below what is free makes the fast engine spill to disk instead)")
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EFBIG):
        where = f" writing {e.filename}" if e.filename else ""
        return f"{e.strerror}{where} (a checkpoint, or levels spilled to disk under --max-memory)"
    return None


def internal_error() -> NoReturn:
    """Never exit 1 ("violated") without a verdict: a traceback, exit 3."""
    traceback.print_exc()
    click.echo("error: internal error, no verdict (the traceback above is a bug to report)", err=True)
    sys.exit(EXIT_INTERNAL)


def print_result(spec: Any, result: CheckResult, expected: str | None, verdict: str,
                 trace_out: str | None) -> None:
    out = stdout_console()
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in spec.config.items()
                   if v is not None)
    out.print(f"config: {cfg}")
    rate = result.distinct_states / result.elapsed_s if result.elapsed_s else 0
    if result.holds:
        out.print(f"[bold green]holds[/]: {len(spec.checked_invariants())} invariants hold in every reachable state "
                  f"({', '.join(spec.checked_invariants())})")
        if result.triggers:
            out.print(f"[bold green]holds[/]: {len(result.triggers)} temporal properties hold in every fair behaviour "
                      f"({', '.join(result.triggers)})")
    elif result.loop is not None:
        last = result.trace[-1].state
        out.print(f"[bold red]violated: {result.invariant}[/] by a fair behaviour of {len(result.trace) - 1} steps "
                  f"that then loops for ever (a lasso, re-validated by replay)")
        out.print(trace_table(spec, result.trace, loop=result.loop))
    else:
        last = result.trace[-1].state
        out.print(f"[bold red]violated: {result.invariant}[/] after {len(result.trace) - 1} steps "
                  f"(a shortest counterexample, re-validated by replay)")
        out.print(trace_table(spec, result.trace))
    if not result.holds:
        # Text, not markup: an explanation quotes logs as "[r1@0]"
        out.print(Text.assemble((result.invariant, "bold"), ": ", spec.explain(result.invariant, last)))
        if trace_out:
            out.print(Text(f"trace written to {trace_out}; view it with: modelcheck trace show "
                           f"{shlex.quote(trace_out)}"))
    out.print(f"distinct states: {result.distinct_states:,}  generated: {result.generated_states:,}  "
              f"depth: {result.depth}  time: {result.elapsed_s:.1f} s ({rate:,.0f} distinct states/s)")
    keys = state_keys(result.run_info)
    if keys:
        out.print(keys)
    if "symmetry" in result.run_info:
        sym = result.run_info["symmetry"]
        out.print(f"symmetry: {sym['classes']:,} classes of states equal up to renaming the brokers; they hold "
                  f"{sym['class_states']:,} states ({sym['max_reduction']:,.1f}x), the most a search without "
                  f"--symmetry would meet (it starts from fewer: its initial states are not renamed)")
    fired = "  ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    out.print(f"coverage (transitions per action): {fired}")
    never = never_fired(result)
    if never and result.holds:
        out.print(f"[yellow]never fired[/] (a holds says nothing about them): {', '.join(never)}")
    if result.triggers:
        out.print("properties, states where a violation could begin: " + "  ".join(
            f"{name} {count:,}" for name, count in result.triggers.items()))
        vacuous = [name for name, count in result.triggers.items() if count == 0]
        if vacuous and result.holds:
            out.print(f"[yellow]never triggered[/] (held vacuously: the check exercised nothing of them): "
                      f"{', '.join(vacuous)}")
    if result.goals:
        reached = [g for g, ok in result.goals.items() if ok]
        missed = [g for g, ok in result.goals.items() if not ok]
        out.print("goals reached: " + (", ".join(reached) or "none")
                  + (f"  [yellow]not reached[/]: {', '.join(missed)}" if missed else ""))
    if expected is not None:
        out.print(f"expected: {expected} -> " + ("[green]as expected[/]" if expected == verdict
                                                  else "[bold red]DIFFERS[/]"))


def state_keys(info: dict[str, Any]) -> str:
    """How the compiled engines identified states: exactly, or by
    fingerprints with TLC's collision estimate."""
    if info.get("state_keys") == "exact":
        return f"states identified exactly (packed in {info['state_bits']} bits, stored whole)"
    if info.get("state_keys") == "fingerprint":
        bits, p = info["fingerprint_bits"], info["collision_probability"]
        of = f"{info['state_bits']}-bit packed states" if "state_bits" in info else "their encodings"
        return (f"states identified by {bits}-bit fingerprints of {of}; "
                f"collision probability (TLC's optimistic estimate) {p:.1e}"
                + (" (--fingerprint-bits 128 makes it negligible)" if bits == 64 and p > 1e-6 else ""))
    return ""


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@click.option("--json", "as_json", is_flag=True, help="Print {\"ok\": ..., \"steps\": [...]} on stdout.")
def replay(scenario: str, as_json: bool) -> None:
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
    try:
        config, raw_steps = split_scenario(read_file(scenario), scenario)
        spec = kafka_elr.load(config)
        steps = parse_steps(spec, raw_steps, scenario)
        initial, reports = run_replay(spec, steps)
    except ConfigError as e:
        fail(str(e))
    ok = len(reports) == len(steps) and all(r.ok for r in reports)
    if as_json:
        click.echo(json.dumps({"ok": ok, "config": spec.config, "initial": initial, "steps": [{
            "index": r.index, "action": r.step.action, "args": r.step.args, "enabled": r.enabled,
            "ok": r.ok, "error": r.error,
            "mismatches": [{"variable": k, "expected": e, "actual": a} for k, e, a in r.mismatches],
            "violated": r.violated, "expected_violations": r.step.violates, "state": r.state}
            for r in reports]}))
    else:
        out = stdout_console()
        out.print(replay_table(spec, reports))
        if len(reports) < len(steps):
            out.print(f"stopped at step {reports[-1].index}: "
                      f"{format_action(reports[-1].step.action, reports[-1].step.args)} {reports[-1].error}; "
                      f"{len(steps) - len(reports)} step(s) not run")
        out.print("[bold green]ok[/]: the scenario replays as written" if ok
                  else "[bold red]FAILED[/]: see the rows marked FAIL")
    sys.exit(EXIT_HOLDS if ok else EXIT_VIOLATED)



# ---- verdict matrix -----------------------------------------------------------------

CELL_MEMORY_HELP = ("Bound each cell's memory (e.g. 4G; see check --max-memory). Default: 80% of RAM shared "
                    "among the --jobs running at once. A cell stopped at it reports so, matching no pin.")


def cell_memory(text: str | None, jobs: int) -> int:
    return parse_size(text) if text else default_limit(share_among=jobs)


DEFAULT_MATRIX = Path(kafka_elr.__file__).parent.parent / "matrix.toml"


@main.command()
@click.argument("matrix_file", required=False, metavar="[MATRIX.toml]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object a cell, as a list, on stdout.")
@click.option("--out", metavar="FILE.md", help="Write the verdicts as markdown (e.g. docs/verdicts.md).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="all cores",
              help="Cells checked at a time, each in its own process.")
@click.option("--only", multiple=True, metavar="NAME", help="Run only the named cell(s). Repeatable.")
@click.option("--max-memory", metavar="SIZE", help=CELL_MEMORY_HELP)
def matrix(matrix_file: str | None, as_json: bool, out: str | None, jobs: int, only: tuple[str, ...],
           max_memory: str | None) -> None:
    """Check a list of (variant, config) cells and tabulate the verdicts:
    violated invariant, shortest trace length, distinct states, depth, time.

    Without MATRIX.toml the shipped specs/matrix.toml runs: every variant at
    N=3/min_isr=2 with one and two unclean shutdowns, and N=4/min_isr=3.
    A cell may pin `expect = "holds"` or `"violated: NAME"`, and set
    `symmetry = true` (check's --symmetry). `exercises = [ACTION, ...]` and
    `goals = [GOAL, ...]` name what its claim needs to have happened: a cell
    that holds while one of those actions never fired, or a goal was never
    reached, is marked VACUOUS (the "never fired" column lists the rest).

    Exit status: 0 every cell is as pinned, 1 one differs, 2 bad input;
    Ctrl-C or SIGTERM stops every cell at once (130, 143: the cells done
    are shown, --out is not written).
    """
    from modelcheck.runs import matrix as mx
    path = matrix_file or str(DEFAULT_MATRIX)
    try:
        meta, cells = mx.read_matrix(path, kafka_elr.load)
        unknown = sorted(set(only) - {c.name for c in cells})
        if unknown:
            raise ConfigError(f"--only {unknown[0]!r}: no such cell in {path}")
        if out:
            check_file(out, "--out")
        limit = cell_memory(max_memory, jobs)
    except ConfigError as e:
        fail(str(e))
    cells = [c for c in cells if not only or c.name in only]
    console = stderr_console()
    rows: list[Any] = [None] * len(cells)
    with stop_on_signals() as request, request.polling():
        try:
            for i, row in mx.run(kafka_elr.load, cells, jobs, request=request, max_memory=limit):
                rows[i] = row
                console.print(f"[{sum(r is not None for r in rows)}/{len(cells)}] {row.cell.name}: {row.verdict} "
                              f"({row.distinct:,} states, {row.elapsed_s:.1f} s)", highlight=False)
        except Stopped as e:
            done = [r for r in rows if r is not None]
            console.print(f"{e.why}: {len(done)} of {len(cells)} cells done"
                          + (f" ({', '.join(r.cell.name for r in done)})" if done else "")
                          + (f"; {out} not written" if out else ""), highlight=False, markup=False)
            sys.exit(exit_code(e))
    if out:
        command = "modelcheck matrix" + (f" {matrix_file}" if matrix_file else "") + f" --out {out}"
        write_output(out, "--out", mx.markdown(meta, rows, command, jobs) + "\n")
    if as_json:
        click.echo(json.dumps([{
            "name": r.cell.name, "verdict": "holds" if r.invariant is None else "violated", "invariant": r.invariant,
            "trace_length": r.trace_len, "distinct_states": r.distinct, "generated_states": r.generated,
            "depth": r.depth, "elapsed_s": round(r.elapsed_s, 3), "config": r.config, "symmetry": r.cell.symmetry,
            "expected": r.cell.expect, "as_expected": r.as_expected, "never_fired": r.never_fired,
            "goals": r.goals, "vacuous": r.vacuous, "story": r.story, "loop": r.loop,
            "properties": r.triggers} for r in rows]))
    else:
        table = Table(header_style="bold")
        for col in ("cell", "verdict", "trace", "distinct", "depth", "time s", "pinned"):
            table.add_column(col, justify="right" if col in ("trace", "distinct", "depth", "time s") else "left")
        for r in rows:
            pinned = {None: "", True: "ok", False: f"DIFFERS ({r.cell.expect})"}[r.as_expected] + \
                (f" VACUOUS ({'; '.join(r.vacuous)})" if r.vacuous else "")
            table.add_row(r.cell.name, r.verdict, str(r.trace_len or ""), f"{r.distinct:,}", str(r.depth),
                          f"{r.elapsed_s:.1f}", Text(pinned, style="bold red" if r.as_expected is False or r.vacuous else ""))
        stdout_console().print(table)
    sys.exit(EXIT_VIOLATED if any(r.as_expected is False for r in rows) else EXIT_HOLDS)


# ---- CI gate --------------------------------------------------------------------------

@main.command()
@click.argument("gate_file", metavar="GATE.toml")
@click.option("--junit", metavar="FILE.xml", help="Write JUnit XML: a testcase an entry, traces in failures.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcomes as one JSON list on stdout.")
@click.option("--trace-dir", metavar="DIR", help="Write each failing entry's counterexample there as JSON "
              "(view with `modelcheck trace show`).")
@click.option("--update-baseline", is_flag=True, help="Rewrite the pinned `states` counts in GATE.toml to "
              "what this run found, and show the changes.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing entry; the rest are reported skipped.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="all cores",
              help="Entries checked at a time, each in its own process.")
@click.option("--max-memory", metavar="SIZE", help=CELL_MEMORY_HELP)
def gate(gate_file: str, junit: str | None, as_json: bool, trace_dir: str | None, update_baseline: bool,
         fail_fast: bool, jobs: int, max_memory: str | None) -> None:
    """Fail a protocol change that breaks an invariant or changes what the
    protocol can reach.

    Each [[entry]] of GATE.toml has a name, a config table, `expect =
    "holds"` or `"violated: INVARIANT"`, and optionally `states = N` (the
    pinned distinct-state count), `budget_s = S` (a time budget), and what
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

    Exit status: 0 every entry passes, 1 one fails (verdict, count, a
    vacuous holds or budget), 2 bad gate file or an output that cannot be
    written (checked before the run; --update-baseline included); Ctrl-C or
    SIGTERM stops every entry at once (130, 143), and --junit and
    --trace-dir still report what ran (the rest as skipped).
    """
    from modelcheck.runs import gate as gt
    try:
        entries = gt.read_gate(gate_file, kafka_elr.load)
        limit = cell_memory(max_memory, jobs)
        if junit:
            check_file(junit, "--junit")
        if trace_dir:
            check_dir(trace_dir, "--trace-dir")
        if update_baseline:     # before the run: a file that cannot take the new counts is refused now
            check_file(gate_file, "--update-baseline")
            gt.set_states(gate_file, {e.cell.name: 1 for e in entries})
    except ConfigError as e:
        fail(str(e))
    console = stderr_console()

    def done(o: Any) -> None:
        console.print(f"{o.status}: {o.entry.cell.name}: {o.row.verdict} ({o.row.distinct:,} states, "
                      f"{o.row.elapsed_s:.1f} s)" + (f" -- {'; '.join(o.failures)}" if o.failures else ""),
                      highlight=False, markup=False)

    with stop_on_signals() as request, request.polling():
        outcomes, stopped = gt.run_gate(kafka_elr.load, entries, jobs, fail_fast, done, request, limit)
    if stopped:                 # the reports of what ran; no baseline from a partial run
        console.print(f"{stopped.why}: {sum(o.row is not None for o in outcomes)} of {len(outcomes)} entries done",
                      highlight=False, markup=False)
        update_baseline = False
    if update_baseline:         # the counts are re-pinned, not failures
        for o in outcomes:
            o.failures = [f for f in o.failures if not f.startswith("distinct states:")]
    try:                        # the reports first: a baseline that cannot be written loses neither
        if trace_dir:
            make_dir(trace_dir, "--trace-dir")
            for o, name in zip(outcomes, gt.trace_file_names([o.entry.cell.name for o in outcomes])):
                if o.status == "failed" and o.row.trace:
                    write_text(str(Path(trace_dir) / name), "--trace-dir", json.dumps(TraceFile(
                        o.row.config, o.row.invariant, o.row.trace, o.row.loop).to_json(), indent=1) + "\n")
        if junit:
            write_text(junit, "--junit", gt.junit(outcomes, format_action, *(
                [f"the gate was {stopped.why}"] if stopped else [])))
        if update_baseline:
            text, changes = gt.update_baseline(gate_file, outcomes)
            if changes:
                write_text(gate_file, "--update-baseline", text)
            for name, old, new in changes:
                console.print(f"baseline {name}: states {old if old is not None else 'unpinned'} -> {new}",
                              highlight=False, markup=False)
            console.print(f"{gate_file}: {len(changes)} pinned count(s) updated", highlight=False)
    except ConfigError as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(gt.summary_rows(outcomes)))
    else:
        table = Table(header_style="bold")
        for col in ("entry", "status", "verdict", "states", "time s", "why"):
            table.add_column(col, justify="right" if col in ("states", "time s") else "left")
        for o in outcomes:
            style = {"passed": "green", "failed": "bold red", "skipped": "yellow"}[o.status]
            states = "" if o.row is None else f"{o.row.distinct:,}" + (
                f" (pinned {o.entry.states:,})" if o.entry.states not in (None, o.row.distinct) else "")
            table.add_row(o.entry.cell.name, Text(o.status, style=style), o.row.verdict if o.row else "",
                          states, f"{o.row.elapsed_s:.1f}" if o.row else "", "; ".join(o.failures))
        stdout_console().print(table)
        counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}
        stdout_console().print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
                               + (": " + ", ".join(o.entry.cell.name for o in outcomes if o.status == "skipped")
                                  if counts["skipped"] else ""))
    sys.exit(exit_code(stopped) if stopped else EXIT_VIOLATED if any(o.status == "failed" for o in outcomes)
             else EXIT_HOLDS)


@main.command("spark-env")
@click.option("--out", "-o", default="modelcheck-spark.zip", show_default=True, metavar="FILE",
              help="Where to write the zip.")
def spark_env(out: str) -> None:
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
    from modelcheck.engine.spark_session import package_archive

    try:
        check_file(out, "--out")
        with writing(out, "--out", binary=True) as f:
            package_archive(f, ["modelcheck", "specs"], ("cli",))
    except ConfigError as e:
        fail(str(e))
    size = f" ({os.path.getsize(out):,} bytes)" if os.path.isfile(out) else ""
    click.echo(f"wrote {out}{size}: modelcheck, specs and cli.py for --py-files")


# ---- trace viewer, exports and the state graph ------------------------------------
# Rendering lives in modelcheck/views/ (terminal, html, itf, graph, tracefile),
# which takes a Spec and never imports specs/; here each file's config picks the spec.

def open_trace(path: str) -> tuple[Any, TraceFile, list[Any]]:
    """A trace file (JSON or ITF), the spec of its config, and its steps
    replayed into spec states; bad input exits 2."""
    try:
        return read_and_replay(path, kafka_elr.load)
    except ConfigError as e:
        fail(str(e))


@main.group()
def trace() -> None:
    """View and convert a counterexample: the JSON of `check --trace-out`,
    or an ITF trace written by `trace export`."""


@trace.command("show")
@click.argument("path", metavar="TRACE")
@click.option("--step", "step_no", metavar="K", help="Show step K's state in full.")
@click.option("--diff", is_flag=True, help="Show only what each step changed.")
def trace_show(path: str, step_no: str | None, diff: bool) -> None:
    """One row a step: leader/epoch, ISR, ELR, LastKnownELR, HWM and each
    broker's lane (role, faults, log coloured by epoch); changed cells
    marked `*`; the violated invariant explained at the end."""
    spec, tf, steps = open_trace(path)
    if step_no is not None and not (re.fullmatch("[0-9]{1,9}", step_no) and int(step_no) < len(steps)):
        fail(f"--step {step_no!r}: expected a step number from 0 to {len(steps) - 1}")
    out = stdout_console()
    if step_no is not None:
        out.print(step_table(spec, steps, int(step_no)))
    else:
        out.print(diff_table(spec, steps, tf.loop) if diff else trace_table(spec, steps, loop=tf.loop))
    if tf.invariant and (step_no is None or int(step_no) == len(steps) - 1):
        out.print(Text.assemble((tf.invariant, "bold red"), ": ", spec.explain(tf.invariant, steps[-1].state)))


@trace.command("html")
@click.argument("path", metavar="TRACE")
@click.option("-o", "--out", required=True, metavar="FILE.html", help="The page to write.")
def trace_html(path: str, out: str) -> None:
    """One self-contained HTML page (no network): brokers as lanes, steps as
    rows; a slider, arrow keys or clicks step through, showing each step's
    changes and state."""
    spec, tf, steps = open_trace(path)
    try:
        check_file(out, "-o")
    except ConfigError as e:
        fail(str(e))
    write_output(out, "-o", render_html(spec, steps, tf.config, tf.invariant, tf.loop))
    click.echo(f"wrote {out} ({len(steps)} steps)")


@trace.command("export")
@click.argument("path", metavar="TRACE")
@click.option("--format", "fmt", type=click.Choice(["itf", "json"]), default="itf", show_default=True,
              help="itf: the Informal Trace Format of Apalache and Quint; json: check's --trace-out form.")
@click.option("-o", "--out", default="-", metavar="FILE", help="Where to write (default: stdout).")
def trace_export(path: str, fmt: str, out: str) -> None:
    """Convert a trace (JSON or ITF) to ITF or JSON; reading the result back
    gives the same steps."""
    spec, tf, _steps = open_trace(path)
    try:
        check_file(out, "-o", stdout=True)
    except ConfigError as e:
        fail(str(e))
    doc = to_itf(tf.config, tf.invariant, tf.steps, spec.itf_types, tf.loop) if fmt == "itf" else tf.to_json()
    write_output(out, "-o", json.dumps(doc, indent=1) + "\n")


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option("-o", "--out", required=True, metavar="FILE.graphml|FILE.dot", help="The format follows the suffix.")
@click.option("--max-states", default=20000, show_default=True, type=click.IntRange(min=1),
              help="Refuse configs with more reachable states.")
def graph(config: str | None, overrides: tuple[str, ...], out: str, max_states: int) -> None:
    """Write the reachable state graph of a small config (networkx): nodes
    are states with their variables, edges actions with their arguments;
    when an invariant fails, check's shortest counterexample is marked."""
    writers = {".graphml": graphml, ".dot": dot}
    writer = writers.get(Path(out).suffix.lower())
    if writer is None:
        fail(f"-o {out}: the name must end in .graphml or .dot")
    try:
        spec = kafka_elr.load(load_check_config(config, overrides)[0])
        check_file(out, "-o")
        g = state_graph(spec, max_states)
    except (ConfigError, GraphTooLarge) as e:
        fail(str(e))
    # the graph is small (--max-states): the reference engine finds the same
    # counterexample without compiling the kernel
    result = run_engine(spec, engine="bfs") if any(bad for _n, bad in g.nodes(data="violated")) else None
    if result:
        mark_path(g, spec, result.trace)
    write_output(out, "-o", writer(g))
    click.echo(f"wrote {out}: {g.number_of_nodes():,} states, {g.number_of_edges():,} transitions"
               + (f"; counterexample to {result.invariant} marked ({len(result.trace) - 1} steps)" if result else ""))


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option("--trace", "trace_path", metavar="TRACE", help="Start on a saved trace (check --trace-out, or ITF), "
              "in its config: forward walks it, and any step can branch off it.")
@click.option("--step", "step_no", type=click.IntRange(min=0), metavar="K",
              help="With --trace: open at step K (default 0).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to serve on (another than loopback serves the network).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to serve on (0: any free port).")
@click.option("--seen-states", type=click.IntRange(min=0), metavar="N",
              help="Index the first N states a breadth-first check visits, to mark which successors the "
                   "checker has seen and at what depth (default 1,000,000 compiled, 50,000 interpreted; 0: none).")
def explore(config: str | None, overrides: tuple[str, ...], trace_path: str | None, step_no: int | None,
            host: str, port: int, seen_states: int | None) -> None:
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
    from modelcheck.engine.reach import index
    from modelcheck.views.explorer import Explorer, address, server, url

    try:
        if trace_path and (config or overrides):
            raise ConfigError("--trace: a trace brings its own config; leave out CONFIG.toml and --set")
        if step_no is not None and not trace_path:
            raise ConfigError("--step applies to --trace only")
        if trace_path:
            spec, _tf, steps = read_and_replay(trace_path, kafka_elr.load)
            if step_no is not None and step_no >= len(steps):
                raise ConfigError(f"--step {step_no}: the trace's steps are 0 to {len(steps) - 1}")
        else:
            spec, steps = kafka_elr.load(load_check_config(config, overrides)[0]), None
        explorer = Explorer(spec)
        httpd = server(explorer, host, port)
    except ConfigError as e:
        fail(str(e))
    console = stderr_console()
    with stop_on_signals():
        try:
            explorer.reach = None if seen_states == 0 else index(spec, seen_states, lambda text: console.print(
                text, highlight=False, markup=False))
            if explorer.reach:
                r = explorer.reach
                console.print(f"seen: indexed {r.states:,} states to depth {r.deepest} in {r.elapsed_s:.1f} s"
                              + (" (all reachable states)" if r.complete else ""), highlight=False)
            path = explorer.path_of(steps) if steps else ()
            start = url(path[:step_no or 0], path[step_no or 0:])
            click.echo(f"serving {address(httpd)}{start[1:]}  (Ctrl-C stops it)")
            httpd.serve_forever()
        except Stopped as e:
            click.echo(f"explorer {e.why}", err=True)
            sys.exit(exit_code(e))
        finally:
            httpd.server_close()


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key. Repeatable.")
@click.option("--walks", type=click.IntRange(min=1), default=20_000, show_default=True,
              help="Random walks to run (at most: a violation ends the search).")
@click.option("--depth", type=click.IntRange(min=1), default=100, show_default=True,
              help="Steps a walk takes at most (it ends sooner at a violation or where nothing is enabled).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="The seed: the same seed, config and options give the same walks, results and trace, "
                   "whatever --workers or --engine.")
@click.option("--weight", "weights", multiple=True, metavar="ACTION=W",
              help="Weight of an action's steps (default 1 each; 0 never takes it). Under swarm it multiplies "
                   "each walk's own weight for the action. Repeatable.")
@click.option("--pick", type=click.Choice(PICKS), default=PICKS[0], show_default=True,
              help="swarm: swarm testing; each walk keeps each action with probability 1/2 (never none) at "
                   "a random weight of its own, then takes each step as action does among the enabled actions "
                   "it kept (any enabled action where none is); action: each enabled action by its weight, then "
                   "one of its instances uniformly (actions with many arguments are not favoured); instance: "
                   "each enabled action instance in proportion to its action's weight (uniform by default, "
                   "as TLC).")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes running walks (the results do not depend on it).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: here, on --workers processes; spark: walks spread over Spark executors "
                   "(pip install '.[spark]', Java 17+), the same results.")
@click.option("--master", metavar="URL", help="Spark master for --engine spark (as check's; default local[*]).")
@click.option("--partitions", type=click.IntRange(min=1), metavar="P",
              help="Spark tasks a round of walks is split into (default: Spark's default parallelism).")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting for --engine spark, as spark-submit's --conf. Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of tables.")
@click.option("--trace-out", metavar="FILE", help="Write the shrunk counterexample (JSON, as check's) to FILE.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def simulate(config: str | None, overrides: tuple[str, ...], walks: int, depth: int, seed: int,
             weights: tuple[str, ...], pick: str, workers: int, engine: str, master: str | None,
             partitions: int | None, spark_conf: tuple[str, ...], as_json: bool, trace_out: str | None,
             quiet: bool) -> None:
    """Random walks through a configuration too large to check
    exhaustively (TLC's -simulate): each walk takes a random enabled action
    at each step, up to --depth steps, checking the invariants in every
    state it visits. A violation's walk is shrunk to a short
    counterexample (steps dropped and reordered while replay still breaks
    the invariant) and re-validated by replay.

    \b
    modelcheck simulate --set brokers=5 --set min_isr=3 --set max_unclean_shutdowns=3
    modelcheck simulate --set brokers=5 --walks 20000 --depth 60 --seed 7 --workers 2

    Exit status: 0 no violation found (the search is not exhaustive: it
    says nothing of the states it did not visit), 1 a violation (the
    shrunk counterexample is printed), 2 bad input, 130/143 stopped.
    """
    from modelcheck.engine.simulate import simulate as run_simulation
    from modelcheck.engine.walks import plan as make_plan

    try:
        check_spark_options(engine, master, partitions, spark_conf)
        if engine == "spark" and workers != 1:
            raise ConfigError("--workers applies to --engine local; Spark's parallelism is --partitions")
        weight = {}
        for item in weights:
            name, eq, value = item.partition("=")
            try:
                weight[name.strip()] = float(value) if eq else float("nan")
            except ValueError:
                weight[name.strip()] = float("nan")
            if weight[name.strip()] != weight[name.strip()]:
                raise ConfigError(f"--weight {item!r}: expected ACTION=W, W a number >= 0 (e.g. FenceBroker=0.5)")
        given, _expected = load_check_config(config, overrides)
        spec = kafka_elr.load(given)
        if spec.checked_properties():
            raise ConfigError("properties: random walks check invariants only (a finite walk shows no fair cycle); "
                              "check temporal properties with modelcheck check")
        the_plan = make_plan(spec, walks, depth, seed, weight, pick)
        if trace_out:
            check_file(trace_out, "--trace-out")
    except ConfigError as e:
        fail(str(e))
    with stop_on_signals() as stop, Progress(enabled=not quiet and not as_json) as progress:
        try:
            kernel = simulation_kernel(spec, engine, progress)
            result = run_simulation(spec, the_plan, kernel=kernel, workers=workers, progress=progress, stop=stop,
                                    engine=engine, master=master, partitions=partitions,
                                    spark_settings=dict(kv.split("=", 1) for kv in spark_conf))
        except Stopped as e:
            click.echo(f"simulate {e.why} after {e.elapsed_s:.1f} s, no verdict: {e.generated:,} states visited, "
                       f"{e.distinct:,} distinct", err=True)
            sys.exit(exit_code(e))
        except ConfigError as e:        # the engine cannot start here (e.g. no Java for Spark)
            fail(str(e))
    trace = described(spec, result.trace)
    if trace_out and result.invariant:
        write_output(trace_out, "--trace-out", json.dumps(
            TraceFile(spec.config, result.invariant, trace).to_json(), indent=1) + "\n")
    rate = result.states_visited / result.elapsed_s if result.elapsed_s else 0.0
    if as_json:
        click.echo(json.dumps({
            "verdict": result.verdict, "invariant": result.invariant, "exhaustive": False,
            "walks": result.walks, "states_visited": result.states_visited, "distinct_seen": result.distinct_seen,
            "seed": seed, "depth": depth, "pick": pick, "weights": weight,
            "elapsed_s": round(result.elapsed_s, 3), "states_per_s": round(rate, 1), "config": spec.config,
            "coverage": result.coverage, "trace": trace, "walk_steps": result.shrink.get("walk_steps"),
            "shrink": result.shrink, **result.run_info}))
    else:
        print_simulation(spec, result, the_plan, trace_out, rate)
    sys.exit(EXIT_VIOLATED if result.invariant else EXIT_HOLDS)


def simulation_kernel(spec: Any, engine: str, progress: Progress) -> Any:
    """The compiled kernel walks run on (compiled now, once, if need be),
    or None to run the interpreted spec, with a warning saying why; Spark
    needs it."""
    from modelcheck.engine.kernel import KernelUnavailable, kernel_for
    try:
        return kernel_for(spec, lambda text: progress({"note": text}))
    except KernelUnavailable as e:
        if engine == "spark":
            raise ConfigError(f"--engine spark runs the compiled kernel, and there is none here: {e}") from None
        click.echo(f"warning: no compiled kernel ({e}); walks run on the interpreted spec", err=True)
        return None


def action_weights(the_plan: Any) -> list[float]:
    """Each action's weight, in the spec's order of actions."""
    first = {}
    for label, number in enumerate(the_plan.label_action):
        first.setdefault(number, the_plan.label_weight[label])
    return [first.get(number, 1.0) for number in range(max(first, default=-1) + 1)]


def print_simulation(spec: Any, result: Any, the_plan: Any, trace_out: str | None, rate: float) -> None:
    out = stdout_console()
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in spec.config.items() if v is not None)
    out.print(f"config: {cfg}")
    weighted = sorted((a, w) for a, w in zip(spec.actions, action_weights(the_plan)) if w != 1.0)
    if the_plan.by == "swarm":
        how = ("by swarm testing: each walk kept each action with probability 1/2 at a random weight of its own, "
               "each step among the enabled actions it kept (any, where none is), then among the action's "
               "instances" + (f"; weights times {', '.join(f'{a}={w:g}' for a, w in weighted)}" if weighted else ""))
    else:
        how = ("among enabled action instances" if the_plan.by == "instance" else
               "among enabled actions, then among the action's instances")
        how = (f"{'uniformly ' if not weighted else ''}{how}"
               + (f", weights {', '.join(f'{a}={w:g}' for a, w in weighted)}" if weighted else ""))
    out.print(f"simulate: {result.walks:,} of {the_plan.walks:,} walk(s) of at most {result.depth} steps, "
              f"seed {result.seed}, each step taken {how}")
    if result.invariant:
        s = result.shrink
        out.print(f"[bold red]violated: {result.invariant}[/] in walk {s['walk']} after {s['walk_steps']} steps; "
                  f"shrunk to {s['steps']} steps ({s['replays']:,} replays, {s['elapsed_s']:.1f} s), "
                  f"re-validated by replay (not necessarily a shortest counterexample)")
        out.print(trace_table(spec, result.trace))
        out.print(Text.assemble((result.invariant, "bold"), ": ",
                                spec.explain(result.invariant, result.trace[-1].state)))
        if trace_out:
            out.print(Text(f"trace written to {trace_out}; view it with: modelcheck trace show "
                           f"{shlex.quote(trace_out)}"))
    else:
        out.print("[bold yellow]nothing found[/]: no invariant broke in the states these walks visited. "
                  "Not exhaustive: a random search says nothing of the states it did not reach "
                  "(modelcheck check explores them all).")
    out.print(f"walks: {result.walks:,}  states visited: {result.states_visited:,}  distinct seen: "
              f"{result.distinct_seen:,}  time: {result.elapsed_s:.1f} s ({rate:,.0f} states/s)")
    out.print("coverage (steps taken per action): "
              + "  ".join(f"{name} {count:,}" for name, count in result.coverage.items()))
    never = [name for name, count in result.coverage.items() if count == 0]
    if never:
        out.print(f"[yellow]never taken[/]: {', '.join(never)}")


if __name__ == "__main__":
    main()
