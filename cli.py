"""The `modelcheck` command: check a configuration, replay a scenario.

Exit codes: 0 the property holds / the scenario replays as written, 1 a
violation / a failed step, 2 bad input (one line on stderr, nothing else
written).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.live import Live
from rich.text import Text

from modelcheck import __version__
from modelcheck.config import ConfigError, parse_override, read_file
from modelcheck.engine.bfs import check as bfs_check
from modelcheck.replay import parse_steps, replay as run_replay, split_scenario
from modelcheck.result import CheckResult
from modelcheck.viewer import format_action, replay_table, stderr_console, stdout_console, trace_table
from specs import kafka_elr

EXIT_HOLDS, EXIT_VIOLATED, EXIT_BAD_INPUT = 0, 1, 2


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
            if not isinstance(exp, dict) or set(exp) != {"verdict"} or not isinstance(exp["verdict"], str):
                raise ConfigError(f"{path}: [expected] must hold only verdict = \"holds\" or \"violated: NAME\"")
            expected = exp["verdict"]
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
        line = (f"depth {st['depth']}  distinct {st['distinct']:,}  generated {st['generated']:,}  "
                f"queue {st['queue']:,}  {st['states_per_s']:,.0f} states/s  {st['elapsed_s']:.0f} s")
        if self.live:
            self.live.update(Text(line))
        elif self.enabled and time.monotonic() - self.last >= 10:
            self.console.print(line)
            self.last = time.monotonic()


def trace_json(spec: Any, result: CheckResult) -> list[dict[str, Any]]:
    return [{"action": s.action, "args": s.args, "state": spec.describe(s.state)} for s in result.trace]


def write_atomically(path: str, text: str) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=".modelcheck-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, target)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
def check(config: str | None, overrides: tuple[str, ...], as_json: bool, trace_out: str | None,
          quiet: bool) -> None:
    """Explore every reachable state of a configuration and check its invariants.

    Without CONFIG.toml the embedded default is checked: 3 brokers,
    min_isr=2, 2 records, one unclean shutdown, one fence, one ISR shrink,
    variant kip966. Config keys (all optional, in the file or via --set):

    \b
    brokers, min_isr, max_records, max_unclean_shutdowns,
    max_clean_shutdowns, max_fences, max_isr_shrinks, max_min_isr_changes,
    max_admin_elections, variant (kip966 | legacy), unclean_leader_election,
    unclean_recovery_strategy (none | balanced | aggressive), acks, invariants

    Exit status: 0 all invariants hold, 1 one is violated (the shortest
    counterexample is printed), 2 bad input.
    """
    try:
        given, expected = load_check_config(config, overrides)
        spec = kafka_elr.load(given)
    except ConfigError as e:
        fail(str(e))
    with Progress(enabled=not quiet and not as_json) as progress:
        result = bfs_check(spec, progress=progress)
    trace = trace_json(spec, result)
    verdict = result.verdict if result.holds else f"violated: {result.invariant}"
    if trace_out and not result.holds:
        write_atomically(trace_out, json.dumps({"config": spec.config, "invariant": result.invariant,
                                                "trace": trace}, indent=1) + "\n")
    if as_json:
        click.echo(json.dumps({
            "verdict": result.verdict, "invariant": result.invariant,
            "distinct_states": result.distinct_states, "generated_states": result.generated_states,
            "depth": result.depth, "elapsed_s": round(result.elapsed_s, 3), "config": spec.config,
            "coverage": result.coverage, "trace": trace,
            "expected": expected, "as_expected": None if expected is None else expected == verdict}))
    else:
        print_result(spec, result, expected, verdict, trace_out)
    sys.exit(EXIT_HOLDS if result.holds else EXIT_VIOLATED)


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
    else:
        last = result.trace[-1].state
        out.print(f"[bold red]violated: {result.invariant}[/] after {len(result.trace) - 1} steps "
                  f"(a shortest counterexample, re-validated by replay)")
        out.print(trace_table(spec, result.trace))
        out.print(f"[bold]{result.invariant}[/]: {spec.explain(result.invariant, last)}")
        if trace_out:
            out.print(f"trace written to {trace_out}")
    out.print(f"distinct states: {result.distinct_states:,}  generated: {result.generated_states:,}  "
              f"depth: {result.depth}  time: {result.elapsed_s:.1f} s ({rate:,.0f} distinct states/s)")
    fired = "  ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    out.print(f"coverage (transitions per action): {fired}")
    never = [name for name, count in result.coverage.items() if count == 0]
    if never and result.holds:
        out.print(f"[yellow]never enabled[/]: {', '.join(never)}")
    if expected is not None:
        out.print(f"expected: {expected} -> " + ("[green]as expected[/]" if expected == verdict
                                                  else "[bold red]DIFFERS[/]"))


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@click.option("--json", "as_json", is_flag=True, help="Print {\"ok\": ..., \"steps\": [...]} on stdout.")
def replay(scenario: str, as_json: bool) -> None:
    """Replay a scenario file step by step against the spec.

    A scenario (TOML, or JSON of the same shape) has a [config] table and
    [[steps]]; each step has `action`, its arguments (an argument may be
    left out when only one instance is enabled), optionally `expect = {var
    = value, ...}` (state after the step; sets as sorted lists) and
    `violates = [INVARIANT, ...]` (invariants the step breaks; default none).

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


if __name__ == "__main__":
    main()
