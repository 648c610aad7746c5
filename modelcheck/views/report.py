"""What a finished check, simulation or replay says: the summary printed
on stdout, the object --json prints instead, and what a check stopped
before its verdict says on stderr."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click
from rich.text import Text

from ..engine.options import CheckOptions
from ..lifetime import Stopped
from ..result import CheckResult, never_fired
from ..trace import described
from .terminal import format_action, replay_table, stdout_console, trace_table

# ---- a check --------------------------------------------------------------------------


def check_json(
    spec: Any,
    result: CheckResult,
    trace: list[dict[str, Any]],
    expected: str | None,
    verdict: str,
    options: CheckOptions,
) -> dict[str, Any]:
    """check --json's object."""
    engine = options.engine
    return {
        "verdict": result.verdict,
        "invariant": result.invariant,
        "distinct_states": result.distinct_states,
        "generated_states": result.generated_states,
        "depth": result.depth,
        "elapsed_s": round(result.elapsed_s, 3),
        "config": spec.config,
        "coverage": result.coverage,
        "goals": result.goals,
        "trace": trace,
        "loop": result.loop,
        "properties": result.triggers,
        "expected": expected,
        "as_expected": None if expected is None else expected == verdict,
        "engine": engine,
        "workers": options.local.workers if engine == "fast" else 1,
        "symmetry": options.symmetry,
        **result.run_info,
        "memory": result.memory,
        # --max-violations: the further violations, each of an invariant not violated before
        "further": [
            {
                "invariant": more.invariant,
                "depth": more.depth,
                "distinct_states": more.distinct_states,
                "loop": more.loop,
                "trace": described(spec, more.trace),
            }
            for more in result.further
        ],
    }


def print_result(spec: Any, result: CheckResult, expected: str | None, verdict: str, trace_out: str | None) -> None:
    """check's summary on stdout: the verdict (with the counterexample's
    table and explanation), the counts, coverage, goals and [expected]."""
    out = stdout_console()
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in spec.config.items() if v is not None)
    out.print(f"config: {cfg}")
    rate = result.distinct_states / result.elapsed_s if result.elapsed_s else 0
    if result.holds:
        out.print(
            f"[bold green]holds[/]: {len(spec.checked_invariants())} invariants hold in every reachable state "
            f"({', '.join(spec.checked_invariants())})"
        )
        if result.triggers:
            out.print(
                f"[bold green]holds[/]: {len(result.triggers)} temporal properties hold in every fair behaviour "
                f"({', '.join(result.triggers)})"
            )
    elif result.loop is not None:
        last = result.trace[-1].state
        out.print(
            f"[bold red]violated: {result.invariant}[/] by a fair behaviour of {len(result.trace) - 1} steps "
            f"that then loops for ever (a lasso, re-validated by replay)"
        )
        out.print(trace_table(spec, result.trace, loop=result.loop))
    else:
        last = result.trace[-1].state
        out.print(
            f"[bold red]violated: {result.invariant}[/] after {len(result.trace) - 1} steps "
            f"(a shortest counterexample, re-validated by replay)"
        )
        out.print(trace_table(spec, result.trace))
    if not result.holds:
        # Text, not markup: an explanation quotes logs as "[r1@0]"
        out.print(Text.assemble((result.invariant or "", "bold"), ": ", spec.explain(result.invariant, last)))
        if trace_out:
            out.print(
                Text(f"trace written to {trace_out}; view it with: modelcheck trace show {shlex.quote(trace_out)}")
            )
    for number, more in enumerate(result.further, 2):
        if more.loop is None:
            how = "the shortest counterexample of an invariant not violated before"
        else:
            how = "a fair behaviour that then loops for ever, once the other invariants held"
        out.print(
            f"[bold red]violated ({number}): {more.invariant}[/] after {len(more.trace) - 1} steps ({how}, "
            f"re-validated by replay; found among {more.distinct_states:,} states)"
        )
        out.print(trace_table(spec, more.trace, loop=more.loop))
        out.print(
            Text.assemble((more.invariant or "", "bold"), ": ", spec.explain(more.invariant, more.trace[-1].state))
        )
    if "others_hold_in" in result.run_info:
        others = [n for n in spec.to_check() if n not in {r.invariant for r in (result, *result.further)}]
        out.print(
            f"[bold green]holds[/]: the {len(others)} other invariants hold in every reachable state "
            f"({result.run_info['others_hold_in']:,} states, a complete search)"
        )
    out.print(
        f"distinct states: {result.distinct_states:,}  generated: {result.generated_states:,}  "
        f"depth: {result.depth}  time: {result.elapsed_s:.1f} s ({rate:,.0f} distinct states/s)"
    )
    keys = state_keys(result.run_info)
    if keys:
        out.print(keys)
    if "symmetry" in result.run_info:
        sym = result.run_info["symmetry"]
        out.print(
            f"symmetry: {sym['classes']:,} classes of states equal up to renaming the brokers; they hold "
            f"{sym['class_states']:,} states ({sym['max_reduction']:,.1f}x), the most a search without "
            f"--symmetry would meet (it starts from fewer: its initial states are not renamed)"
        )
    fired = "  ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    out.print(f"coverage (transitions per action): {fired}")
    never = never_fired(result)
    if never and result.holds:
        out.print(f"[yellow]never fired[/] (a holds says nothing about them): {', '.join(never)}")
    if result.triggers:
        out.print(
            f"properties, {'classes' if 'symmetry' in result.run_info else 'states'} where a violation could begin: "
            + "  ".join(f"{name} {count:,}" for name, count in result.triggers.items())
        )
        if "liveness_under_symmetry" in result.run_info:
            lifted = result.run_info["liveness_under_symmetry"]
            out.print(
                f"fair cycles under symmetry: components of classes proposed {lifted['proposed']:,}, "
                f"states over them searched again {lifted['states_explored']:,} (docs/model.md "
                '"Temporal properties under symmetry")'
            )
        vacuous = [name for name, count in result.triggers.items() if count == 0]
        if vacuous and result.holds:
            out.print(
                f"[yellow]never triggered[/] (held vacuously: the check exercised nothing of them): "
                f"{', '.join(vacuous)}"
            )
    if result.goals:
        reached = [g for g, ok in result.goals.items() if ok]
        missed = [g for g, ok in result.goals.items() if not ok]
        out.print(
            "goals reached: "
            + (", ".join(reached) or "none")
            + (f"  [yellow]not reached[/]: {', '.join(missed)}" if missed else "")
        )
    if expected is not None:
        out.print(
            f"expected: {expected} -> " + ("[green]as expected[/]" if expected == verdict else "[bold red]DIFFERS[/]")
        )


def state_keys(info: dict[str, Any]) -> str:
    """How the compiled engines identified states: exactly, or by
    fingerprints with TLC's collision estimate."""
    if info.get("state_keys") == "exact":
        return f"states identified exactly (packed in {info['state_bits']} bits, stored whole)"
    if info.get("state_keys") == "fingerprint":
        bits, p = info["fingerprint_bits"], info["collision_probability"]
        of = f"{info['state_bits']}-bit packed states" if "state_bits" in info else "their encodings"
        return (
            f"states identified by {bits}-bit fingerprints of {of}; "
            f"collision probability (TLC's optimistic estimate) {p:.1e}"
            + (" (--fingerprint-bits 128 makes it negligible)" if bits == 64 and p > 1e-6 else "")
        )
    return ""


def print_stop(stop: Stopped, as_json: bool) -> None:
    """What a stopped check had done, and how to go on (its JSON on
    stdout with --json; the lines on stderr)."""
    resume = f"modelcheck check --resume {shlex.quote(stop.checkpoint)}" if stop.checkpoint else None
    if as_json:
        click.echo(
            json.dumps(
                {
                    "verdict": "stopped",
                    "reason": stop.why,
                    "distinct_states": stop.distinct,
                    "generated_states": stop.generated,
                    "levels_complete": stop.depth,
                    "elapsed_s": round(stop.elapsed_s, 3),
                    "checkpoint": stop.checkpoint,
                    "resume": resume,
                }
            )
        )
    if stop.signum is None:
        click.echo(f"error: {stop.why}", err=True)
    elif not as_json:
        click.echo(
            f"{stop.why} after {stop.elapsed_s:.1f} s, no verdict: {stop.distinct:,} distinct states, "
            f"{stop.generated:,} generated, {stop.depth} levels complete",
            err=True,
        )
        click.echo(
            f"checkpoint in {stop.checkpoint}; resume with: {resume}"
            if resume
            else "no checkpoint (--checkpoint DIR makes a stopped check resumable)",
            err=True,
        )


# ---- a simulation ---------------------------------------------------------------------


def simulation_json(
    spec: Any, result: Any, trace: list[dict[str, Any]], the_plan: Any, weight: dict[str, float], rate: float
) -> dict[str, Any]:
    """simulate --json's object."""
    return {
        "verdict": result.verdict,
        "invariant": result.invariant,
        "exhaustive": False,
        "walks": result.walks,
        "states_visited": result.states_visited,
        "distinct_seen": result.distinct_seen,
        "seed": the_plan.seed,
        "depth": the_plan.depth,
        "pick": the_plan.by,
        "weights": weight,
        "elapsed_s": round(result.elapsed_s, 3),
        "states_per_s": round(rate, 1),
        "config": spec.config,
        "coverage": result.coverage,
        "trace": trace,
        "walk_steps": result.shrink.get("walk_steps"),
        "shrink": result.shrink,
        **result.run_info,
    }


def simulation_stop_json(stop: Any, the_plan: Any) -> dict[str, Any]:
    """simulate --json's object when a signal stopped the walks."""
    return {
        "verdict": "stopped",
        "reason": stop.why,
        "exhaustive": False,
        "states_visited": stop.generated,
        "distinct_seen": stop.distinct,
        "seed": the_plan.seed,
        "elapsed_s": round(stop.elapsed_s, 3),
    }


def action_weights(the_plan: Any) -> list[float]:
    """Each action's weight, in the spec's order of actions."""
    first: dict[int, float] = {}
    for label, number in enumerate(the_plan.label_action):
        first.setdefault(number, the_plan.label_weight[label])
    return [first.get(number, 1.0) for number in range(max(first, default=-1) + 1)]


def print_simulation(spec: Any, result: Any, the_plan: Any, trace_out: str | None, rate: float) -> None:
    """simulate's summary on stdout: how the walks picked their steps, the
    shrunk counterexample or nothing found, the counts and coverage."""
    out = stdout_console()
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in spec.config.items() if v is not None)
    out.print(f"config: {cfg}")
    weighted = sorted((a, w) for a, w in zip(spec.actions, action_weights(the_plan)) if w != 1.0)
    if the_plan.by == "swarm":
        how = (
            "by swarm testing: each walk kept each action with probability 1/2 at a random weight of its own, "
            "each step among the enabled actions it kept (any, where none is), then among the action's "
            "instances" + (f"; weights times {', '.join(f'{a}={w:g}' for a, w in weighted)}" if weighted else "")
        )
    else:
        how = (
            "among enabled action instances"
            if the_plan.by == "instance"
            else "among enabled actions, then among the action's instances"
        )
        how = f"{'uniformly ' if not weighted else ''}{how}" + (
            f", weights {', '.join(f'{a}={w:g}' for a, w in weighted)}" if weighted else ""
        )
    out.print(
        f"simulate: {result.walks:,} of {the_plan.walks:,} walk(s) of at most {result.depth} steps, "
        f"seed {result.seed}, each step taken {how}"
    )
    if result.invariant:
        s = result.shrink
        out.print(
            f"[bold red]violated: {result.invariant}[/] in walk {s['walk']} after {s['walk_steps']} steps; "
            f"shrunk to {s['steps']} steps ({s['replays']:,} replays, {s['elapsed_s']:.1f} s), "
            f"re-validated by replay (not necessarily a shortest counterexample)"
        )
        out.print(trace_table(spec, result.trace))
        out.print(
            Text.assemble((result.invariant, "bold"), ": ", spec.explain(result.invariant, result.trace[-1].state))
        )
        if trace_out:
            out.print(
                Text(f"trace written to {trace_out}; view it with: modelcheck trace show {shlex.quote(trace_out)}")
            )
    else:
        out.print(
            "[bold yellow]nothing found[/]: no invariant broke in the states these walks visited. "
            "Not exhaustive: a random search says nothing of the states it did not reach "
            "(modelcheck check explores them all)."
        )
    out.print(
        f"walks: {result.walks:,}  states visited: {result.states_visited:,}  distinct seen: "
        f"{result.distinct_seen:,}  time: {result.elapsed_s:.1f} s ({rate:,.0f} states/s)"
    )
    out.print(
        "coverage (steps taken per action): "
        + "  ".join(f"{name} {count:,}" for name, count in result.coverage.items())
    )
    never = [name for name, count in result.coverage.items() if count == 0]
    if never:
        out.print(f"[yellow]never taken[/]: {', '.join(never)}")


# ---- a replay -------------------------------------------------------------------------


def replay_json(spec: Any, initial: dict[str, Any], reports: list[Any], ok: bool) -> dict[str, Any]:
    """replay --json's object."""
    return {
        "ok": ok,
        "config": spec.config,
        "initial": initial,
        "steps": [
            {
                "index": r.index,
                "action": r.step.action,
                "args": r.step.args,
                "enabled": r.enabled,
                "ok": r.ok,
                "error": r.error,
                "mismatches": [{"variable": k, "expected": e, "actual": a} for k, e, a in r.mismatches],
                "violated": r.violated,
                "expected_violations": r.step.violates,
                "state": r.state,
            }
            for r in reports
        ],
    }


def print_replay(spec: Any, reports: list[Any], steps: int, ok: bool) -> None:
    """A replay's table of `steps` steps, the step it stopped at, and whether it is ok."""
    out = stdout_console()
    out.print(replay_table(spec, reports))
    if len(reports) < steps:
        out.print(
            f"stopped at step {reports[-1].index}: "
            f"{format_action(reports[-1].step.action, reports[-1].step.args)} {reports[-1].error}; "
            f"{steps - len(reports)} step(s) not run"
        )
    out.print(
        "[bold green]ok[/]: the scenario replays as written" if ok else "[bold red]FAILED[/]: see the rows marked FAIL"
    )
