"""The verdicts of many checks at once: a matrix's cells and a gate's
entries, as a table on stdout or as JSON."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from .terminal import stdout_console


def matrix_json(rows: list[Any]) -> list[dict[str, Any]]:
    """matrix --json's list: one object a cell."""
    return [
        {
            "name": r.cell.name,
            "verdict": r.verdict.split(":")[0],  # holds, violated, or stopped (at the memory limit)
            "invariant": r.invariant,
            "trace_length": r.trace_len,
            "distinct_states": r.distinct,
            "generated_states": r.generated,
            "depth": r.depth,
            "elapsed_s": round(r.elapsed_s, 3),
            "config": r.config,
            "symmetry": r.cell.symmetry,
            "expected": r.cell.expect,
            "as_expected": r.as_expected,
            "never_fired": r.never_fired,
            "goals": r.goals,
            "vacuous": r.vacuous,
            "story": r.story,
            "loop": r.loop,
            "properties": r.triggers,
            **memory_json(r),
        }
        for r in rows
    ]


def memory_json(row: Any) -> dict[str, Any]:
    """A cell's memory limit, and whether its check spilled to disk under
    it (in how many segments); null where unknown (not run, stopped, or an
    engine that does not spill)."""
    memory = row.memory if row is not None else {}
    return {key: memory.get(key) for key in ("memory_limit", "spilled", "segments")}


def print_matrix(rows: list[Any]) -> None:
    """One row a cell: verdict, trace length, states, depth, time, and whether it is as pinned."""
    table = Table(header_style="bold")
    for col in ("cell", "verdict", "trace", "distinct", "depth", "time s", "pinned"):
        table.add_column(col, justify="right" if col in ("trace", "distinct", "depth", "time s") else "left")
    for r in rows:
        pinned = {None: "", True: "ok", False: f"DIFFERS ({r.cell.expect})"}[r.as_expected] + (
            f" VACUOUS ({'; '.join(r.vacuous)})" if r.vacuous else ""
        )
        style = "bold red" if r.as_expected is False or r.vacuous else ""
        table.add_row(
            r.cell.name,
            r.verdict,
            str(r.trace_len or ""),
            f"{r.distinct:,}",
            str(r.depth),
            f"{r.elapsed_s:.1f}",
            Text(pinned, style=style),
        )
    stdout_console().print(table)


def print_gate(outcomes: list[Any]) -> None:
    """One row an entry (passed, failed or skipped, and why), then the counts."""
    table = Table(header_style="bold")
    for col in ("entry", "status", "verdict", "states", "time s", "why"):
        table.add_column(col, justify="right" if col in ("states", "time s") else "left")
    for o in outcomes:
        style = {"passed": "green", "failed": "bold red", "skipped": "yellow"}[o.status]
        states = (
            ""
            if o.row is None
            else f"{o.row.distinct:,}"
            + (f" (pinned {o.entry.states:,})" if o.entry.states not in (None, o.row.distinct) else "")
        )
        table.add_row(
            o.entry.cell.name,
            Text(o.status, style=style),
            o.row.verdict if o.row else "",
            states,
            f"{o.row.elapsed_s:.1f}" if o.row else "",
            "; ".join([*map(str, o.failures), *(f"warning: {w}" for w in o.warnings)]),
        )
    stdout_console().print(table)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}
    late = sum(bool(o.warnings) for o in outcomes)
    stdout_console().print(
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        + (f" ({late} over their time budget: a warning, --strict-budgets fails them)" if late else "")
        + (": " + ", ".join(o.entry.cell.name for o in outcomes if o.status == "skipped") if counts["skipped"] else "")
    )
