"""Terminal views of traces and replays (rich tables; plain in a pipe)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .replay import StepReport
from .result import Step
from .spec import Spec

CHANGED = "bold yellow"


def format_action(action: str | None, args: dict[str, Any]) -> str:
    if action is None:
        return "Init"
    inner = ", ".join(f"{k}={v}" for k, v in args.items())
    return f"{action}({inner})" if inner else action


def changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """Variables whose value differs (all of them for the first step)."""
    return [k for k in after if before is None or before[k] != after[k]]


def trace_table(spec: Spec, trace: list[Step], title: str = "") -> Table:
    """One row a step: the action, the spec's summary columns (changed ones
    highlighted) and every other variable that changed."""
    cols = spec.trace_columns
    table = Table(title=title or None, show_lines=False, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("action")
    for c in cols:
        table.add_column(c)
    table.add_column("other changes")
    before = None
    for i, step in enumerate(trace):
        now = spec.describe(step.state)
        changed = changes(before, now)
        cells = [Text(spec.format_value(c, now[c]), style=CHANGED if before and c in changed else "")
                 for c in cols]
        other = [f"{k}={spec.format_value(k, now[k])}" for k in changed if k not in cols] if before else []
        table.add_row(str(i), format_action(step.action, step.args), *cells, Text("  ".join(other), style=CHANGED))
        before = now
    return table


def replay_table(spec: Spec, reports: list[StepReport]) -> Table:
    table = Table(header_style="bold")
    for c in ("#", "action", "enabled", "expectations", "invariants violated", "ok"):
        table.add_column(c)
    for r in reports:
        if r.error:
            expect = r.error
        elif r.mismatches:
            expect = "; ".join(f"{k}: expected {spec.format_value(k, e)}, got {spec.format_value(k, a)}"
                               for k, e, a in r.mismatches)
        else:
            expect = f"{len(r.step.expect)} met" if r.step.expect else "-"
        table.add_row(str(r.index), format_action(r.step.action, r.step.args), "yes" if r.enabled else "NO",
                      expect, ", ".join(r.violated) or "-", Text("ok" if r.ok else "FAIL",
                                                                   style="green" if r.ok else "bold red"))
    return table


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """Wide enough in a pipe that trace rows do not wrap into noise."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    return console
