"""`modelcheck mutate`'s report: each mutant's fate, the scores, the
generated survivors by rule (text, or --json)."""

from __future__ import annotations

import json
from typing import Any

import click

from .terminal import stdout_console


def score(verdicts: list[Any]) -> tuple[int, int]:
    """(killed, mutants not shown equivalent: killed, survived or unreached)."""
    killed = sum(v.status == "killed" for v in verdicts)
    return killed, killed + sum(v.status in ("survived", "unreached") for v in verdicts)


def as_dict(v: Any, unexpected: dict[str, str]) -> dict[str, Any]:
    out = {
        "mutant": v.mutant,
        "base": v.base,
        "status": v.status,
        "killed_by": v.killed_by,
        "invariant": v.invariant,
        "steps": v.steps,
        "entries_run": v.ran,
        "entries_unreached": v.unreached,
        "counts_moved": v.moved,
        "reason": v.reason(),
        "command": v.command(),
        "expected": v.mutant not in unexpected,
    }
    if v.point is not None:
        out.update(rule=v.point.rule, where=v.point.where, kind=v.point.kind, change=v.point.change)
    return out


def report(named: list[Any], generated: list[Any], unexpected: dict[str, str], low: str, as_json: bool) -> None:
    killed, telling = score(named)
    g_killed, g_telling = score(generated)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "score": {"killed": killed, "non_equivalent": telling, "mutants": len(named)},
                    "mutants": [as_dict(v, unexpected) for v in named],
                    "generated_score": {"killed": g_killed, "non_equivalent": g_telling, "mutants": len(generated)},
                    "generated": [as_dict(v, unexpected) for v in generated],
                }
            )
        )
        return
    out = stdout_console()
    for v in named:
        out.print(f"{v.mutant} ({v.base}): {v.status.upper()}: {v.reason()}", highlight=False, markup=False)
        if v.command():
            out.print(f"  {v.command()}", highlight=False, markup=False, soft_wrap=True)
    if named:
        out.print(f"mutation score: {killed} killed of {telling} the gate can tell apart ({len(named)} mutants)")
    if generated:
        by_status = {
            s: sum(v.status == s for v in generated) for s in ("killed", "survived", "unreached", "equivalent")
        }
        out.print(
            f"generated mutants: {len(generated)}: " + ", ".join(f"{n} {s}" for s, n in by_status.items() if n),
            highlight=False,
        )
        for rule, vs in survivors_by_rule(generated).items():
            out.print(f"  {rule}:", highlight=False, markup=False)
            for v in vs:
                assert v.point is not None
                p = v.point
                out.print(
                    f"    {v.mutant} {v.status.upper()} ({p.where}, {p.kind}: {p.change}): {v.reason()}",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
        measured = f"{g_killed / g_telling:.3f}" if g_telling else "1"
        out.print(f"generated mutation score: {g_killed} killed of {g_telling} not shown equivalent ({measured})")
    for mutant, why in unexpected.items():
        out.print(f"unexpected: {mutant} {why}", highlight=False, markup=False)
    if low:
        out.print(low, highlight=False, markup=False)


def survivors_by_rule(verdicts: list[Any]) -> dict[str, list[Any]]:
    """The generated mutants the gate did not kill, by the rule they change."""
    out: dict[str, list[Any]] = {}
    for v in verdicts:
        if v.status != "killed" and v.point is not None:
            out.setdefault(v.point.rule, []).append(v)
    return out
