"""Terminal views of traces and replays (rich tables; plain in a pipe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..formats.scenario import StepReport
from ..presentation import Cell
from ..result import Step
from ..spec import Spec

CHANGED = "bold yellow"


def format_action(action: str | None, args: dict[str, Any]) -> str:
    if action is None:
        return "Init"
    inner = ", ".join(f"{k}={v}" for k, v in args.items())
    return f"{action}({inner})" if inner else action


def changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """Variables whose value differs (all of them for the first step)."""
    return [k for k in after if before is None or before[k] != after[k]]


def plain(cell: Cell) -> str:
    return "".join(text for text, _style in cell)


@dataclass
class Row:
    """A step as every view shows it: the spec's cells, and what changed
    since the previous step (nothing is marked on the first)."""

    index: int
    action: str
    state: dict[str, Any]  # described variables
    cells: dict[str, Cell]  # columns, then lanes
    lanes: list[str]  # labels of the lane cells
    changed: list[str]  # labels of cells whose text changed
    diff: list[tuple[str, str, str]]  # (label or variable, before, after)
    other: list[str]  # variables changed outside the spec's trace_columns


def rows(spec: Spec, trace: list[Step]) -> list[Row]:
    out: list[Row] = []
    for i, step in enumerate(trace):
        now = spec.describe(step.state)
        columns, lanes = spec.trace_row(now)
        cells = {**columns, **lanes}
        prev = out[-1] if out else None
        changed = [k for k in cells if prev and plain(prev.cells[k]) != plain(cells[k])]
        other = [k for k in changes(prev.state, now) if k not in spec.trace_columns] if prev else []
        diff = (
            [(k, plain(prev.cells[k]), plain(cells[k])) for k in changed]
            + [(k, spec.format_value(k, prev.state[k]), spec.format_value(k, now[k])) for k in other]
            if prev
            else [(k, "", plain(c)) for k, c in cells.items()]
        )
        out.append(Row(i, format_action(step.action, step.args), now, cells, list(lanes), changed, diff, other))
    return out


def styled(cell: Cell, changed: bool) -> Text:
    """A cell for the terminal; a changed one is marked with `*` as well as
    colour, so the mark survives a pipe."""
    text = Text()
    if changed:
        text.append("*", style=CHANGED)
    for part, style in cell:
        text.append(part, style=style or (CHANGED if changed else ""))
    return text


def loop_marks(trace: list[Step], loop: int | None) -> tuple[dict[int, str], str]:
    """A lasso's marks on the step numbers (where the loop starts, the
    step that returns there) and the line that explains them."""
    if loop is None:
        return {}, ""
    last = len(trace) - 1
    if loop == last:
        return {last: f"{last} ⟲"}, f"⟲ step {last} stays unchanged for ever"
    return {
        loop: f"{loop} ⟲",
        last: f"{last} ↩{loop}",
    }, f"⟲ the loop starts at step {loop}; step {last} returns to it (↩), for ever"


def trace_table(spec: Spec, trace: list[Step], title: str = "", loop: int | None = None) -> Table:
    """One row a step: the action, the spec's cells (changed ones marked)
    and every other variable that changed; a lasso's loop marked."""
    views = rows(spec, trace)
    marks, explained = loop_marks(trace, loop)
    legend = "; ".join(filter(None, (spec.trace_legend, "* changed by this step", explained)))
    table = Table(title=title or None, header_style="bold", caption=legend, caption_justify="left")
    table.add_column("#", justify="right")
    table.add_column("action")
    for label in views[0].cells:
        table.add_column(label)
    table.add_column("other changes")
    for r in views:
        other = "  ".join(f"{k}={spec.format_value(k, r.state[k])}" for k in r.other)
        table.add_row(
            marks.get(r.index, str(r.index)),
            r.action,
            *(styled(c, k in r.changed) for k, c in r.cells.items()),
            Text(other, style=CHANGED),
        )
    return table


def diff_table(spec: Spec, trace: list[Step], loop: int | None = None) -> Table:
    """Only what each step changed (the first step: everything shown)."""
    marks, explained = loop_marks(trace, loop)
    table = Table(header_style="bold", caption=explained or None, caption_justify="left")
    for c in ("#", "action", "changes"):
        table.add_column(c)
    for r in rows(spec, trace):
        lines = [f"{k}: {after}" if not r.index else f"{k}: {before} -> {after}" for k, before, after in r.diff]
        table.add_row(marks.get(r.index, str(r.index)), r.action, Text("\n".join(lines) or "(no visible change)"))
    return table


def step_table(spec: Spec, trace: list[Step], k: int) -> Table:
    """Step k in full: every variable, those the step changed marked with
    their previous value, and the invariants the state violates."""
    now = spec.describe(trace[k].state)
    prev = spec.describe(trace[k - 1].state) if k else None
    changed = changes(prev, now) if k else []
    table = Table(
        title=f"step {k} of {len(trace) - 1}: {format_action(trace[k].action, trace[k].args)}",
        title_justify="left",
        header_style="bold",
        caption_justify="left",
        caption="invariants violated here: " + (", ".join(spec.violated(trace[k].state)) or "none"),
    )
    for c in ("variable", "value", "before"):
        table.add_column(c)
    for name, value in now.items():
        mark = name in changed
        table.add_row(
            Text(("*" if mark else "") + name, style=CHANGED if mark else ""),
            Text(spec.format_value(name, value)),
            Text(spec.format_value(name, prev[name]) if mark and prev is not None else ""),
        )
    return table


def replay_table(spec: Spec, reports: list[StepReport]) -> Table:
    table = Table(header_style="bold")
    for c in ("#", "action", "enabled", "expectations", "invariants violated", "ok"):
        table.add_column(c)
    for r in reports:
        if r.error:
            expect = r.error
        elif r.mismatches:
            expect = "; ".join(
                f"{k}: expected {spec.format_value(k, e)}, got {spec.format_value(k, a)}" for k, e, a in r.mismatches
            )
        else:
            expect = f"{len(r.step.expect)} met" if r.step.expect else "-"
        # Text, not markup: expected values are the scenario's own strings
        table.add_row(
            str(r.index),
            Text(format_action(r.step.action, r.step.args)),
            "yes" if r.enabled else "no, as expected" if not r.step.enabled else "NO",
            Text(expect),
            ", ".join(r.violated) or "-",
            Text("ok" if r.ok else "FAIL", style="green" if r.ok else "bold red"),
        )
    return table


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """Wide enough in a pipe that trace rows do not wrap into noise."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    return console
