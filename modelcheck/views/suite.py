"""What `modelcheck check` prints of its default suite: a heading, a
verdict line a configuration, and which of them fired each action and
reached each goal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..result import CheckResult

if TYPE_CHECKING:
    from ..suite import Member, SuiteCoverage


def suite_heading(path: Path, members: list[Member]) -> str:
    return (
        f"default check ({path.name}): {len(members)} configurations that together fire every action and "
        f"reach every goal; CONFIG.toml or --set checks one configuration"
    )


def suite_line(member: Member, spec: Any, result: CheckResult) -> str:
    verdict = "holds" if result.holds else f"violated: {result.invariant}"
    return f"{verdict:6} {member.name:11} {result.distinct_states:>9,} states {result.elapsed_s:5.1f} s  {member.about}"


def print_suite_coverage(coverage: SuiteCoverage, names: list[str]) -> None:
    """The table of transitions per action and configuration, the goals
    each reached, and what none exercised (a holds says nothing of it)."""
    width = max(len(a) for a in [*coverage.actions, *coverage.goals, "action"])
    cols = [max(len(n), 9) for n in names]
    click.echo("coverage (transitions per action, by configuration):")
    click.echo(f"  {'action':{width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, cols)))
    for action, counts in coverage.actions.items():
        cells = [f"{counts[n]:,}" if counts.get(n) else "-" for n in names]
        click.echo(f"  {action:{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, cols)))
    click.echo("goals (reached by):")
    for goal, by in coverage.goals.items():
        click.echo(f"  {goal:{width}}  {', '.join(by) or 'none'}")
    never, missed = coverage.never_fired(), coverage.never_reached()
    if never or missed:
        if never:
            click.echo(f"never fired in any configuration (the verdicts say nothing about them): {', '.join(never)}")
        if missed:
            click.echo(f"never reached in any configuration: {', '.join(missed)}")
    else:
        click.echo("every action fired and every goal was reached in some configuration")
