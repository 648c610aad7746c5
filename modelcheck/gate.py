"""The CI gate: pinned verdicts, state counts and time budgets.

A gate file is a matrix file whose entries (`[[entry]]`) each pin a verdict
(`expect`, required), optionally the distinct-state count (`states`), a
time budget in seconds (`budget_s`), and what a "holds" must have
exercised: actions that fired (`exercises`) and reachability goals reached
(`goals`). An entry fails when its verdict differs, its count changes (a
protocol change that alters what is reachable is worth a look even when
every invariant still holds), it holds vacuously or it runs over budget. `update_baseline` rewrites the pinned counts after an intended
change.
"""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .config import ConfigError
from .matrix import Cell, Loader, Row, read_entries, run

ENTRY_KEYS = {"name", "config", "expect", "states", "budget_s", "note", "symmetry", "exercises", "goals"}


@dataclass(frozen=True)
class Entry:
    cell: Cell
    states: int | None
    budget_s: float | None


@dataclass
class Outcome:
    entry: Entry
    row: Row | None                        # None: skipped (fail-fast)
    failures: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "skipped" if self.row is None else ("failed" if self.failures else "passed")


def read_gate(path: str, loader: Loader) -> list[Entry]:
    _raw, raw_entries = read_entries(path, loader, "entry", ENTRY_KEYS, set())
    entries = []
    for e in raw_entries:
        if "expect" not in e:
            raise ConfigError(f"{e['where']}: expect is required (\"holds\" or \"violated: INVARIANT\")")
        states, budget = e.get("states"), e.get("budget_s")
        if states is not None and (not isinstance(states, int) or isinstance(states, bool) or states < 1):
            raise ConfigError(f"{e['where']}: states is {states!r}; allowed: a positive integer")
        if budget is not None and (not isinstance(budget, (int, float)) or isinstance(budget, bool) or budget <= 0):
            raise ConfigError(f"{e['where']}: budget_s is {budget!r}; allowed: a positive number of seconds")
        entries.append(Entry(Cell(e["name"], e["config"], e["expect"], note=e.get("note", ""),
                                  symmetry=e.get("symmetry", False), exercises=tuple(e.get("exercises", [])),
                                  goals=tuple(e.get("goals", []))), states, budget))
    return entries


def judge(entry: Entry, row: Row) -> list[str]:
    """Why `row` fails `entry` (empty: it passes)."""
    failures = []
    if row.verdict != entry.cell.expect:
        failures.append(f"verdict: expected {entry.cell.expect}, got {row.verdict}")
    if entry.states is not None and row.distinct != entry.states:
        failures.append(f"distinct states: pinned {entry.states:,}, got {row.distinct:,}")
    failures += [f"vacuous: {why}" for why in row.vacuous]
    if entry.budget_s is not None and row.elapsed_s > entry.budget_s:
        failures.append(f"time: {row.elapsed_s:.1f} s, over the budget of {entry.budget_s:g} s")
    return failures


def run_gate(loader: Loader, entries: list[Entry], jobs: int, fail_fast: bool,
             on_done: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Check every entry (`jobs` at a time); with `fail_fast`, entries not
    yet finished when one fails are skipped."""
    outcomes = [Outcome(e, None) for e in entries]
    for i, row in run(loader, [e.cell for e in entries], jobs, stop=lambda: fail_fast and any(
            o.failures for o in outcomes)):
        outcomes[i].row = row
        outcomes[i].failures = judge(entries[i], row)
        on_done(outcomes[i])
    return outcomes


def trace_text(row: Row, format_action: Callable[[str | None, dict], str]) -> str:
    """The counterexample as numbered steps, then its story."""
    steps = [f"{i}. {format_action(s['action'], s['args'])}" for i, s in enumerate(row.trace)]
    return "\n".join(steps + ["", row.story])


def junit(outcomes: list[Outcome], format_action: Callable[[str | None, dict], str]) -> str:
    """JUnit XML: one testcase an entry; a failure carries its reasons and,
    for a counterexample, the trace."""
    suite = ET.Element("testsuite", name="modelcheck gate", tests=str(len(outcomes)),
                       failures=str(sum(o.status == "failed" for o in outcomes)),
                       skipped=str(sum(o.status == "skipped" for o in outcomes)),
                       time=f"{sum(o.row.elapsed_s for o in outcomes if o.row):.3f}")
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname="gate", name=o.entry.cell.name,
                             time=f"{o.row.elapsed_s:.3f}" if o.row else "0")
        if o.status == "skipped":
            ET.SubElement(case, "skipped", message="not run: an earlier entry failed (--fail-fast)")
        elif o.status == "failed":
            failure = ET.SubElement(case, "failure", message="; ".join(o.failures))
            failure.text = "\n".join(o.failures) + ("\n\n" + trace_text(o.row, format_action) if o.row.trace else "")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def update_baseline(path: str, outcomes: list[Outcome]) -> tuple[str, list[tuple[str, int | None, int]]]:
    """The gate file's text with every run entry's `states` set to the count
    just found, and the (name, old, new) changes. Only the `states` lines
    change; comments and layout stay."""
    text = Path(path).read_text(encoding="utf-8")
    changes = []
    for o in outcomes:
        if o.row is None or o.entry.states == o.row.distinct:
            continue
        changes.append((o.entry.cell.name, o.entry.states, o.row.distinct))
        text = _set_states(text, o.entry.cell.name, o.row.distinct)
    return text, changes


def _set_states(text: str, name: str, states: int) -> str:
    """Set `states = N` inside the [[entry]] block named `name`."""
    blocks = re.split(r"(?m)^(?=\[\[entry\]\])", text)
    pattern = re.compile(r'(?m)^name\s*=\s*("(?:[^"\\]|\\.)*"|\'[^\']*\')\s*$')
    for i, block in enumerate(blocks):
        m = pattern.search(block)
        if not block.startswith("[[entry]]") or not m or _unquote(m.group(1)) != name:
            continue
        if re.search(r"(?m)^states\s*=", block):
            blocks[i] = re.sub(r"(?m)^states\s*=.*$", f"states = {states}", block, count=1)
        else:
            blocks[i] = block[:m.end()] + f"\nstates = {states}" + block[m.end():]
        return "".join(blocks)
    raise ConfigError(f"cannot find [[entry]] name = {name!r} to update")


def _unquote(token: str) -> str:
    return tomllib.loads(f"x = {token}")["x"]


def summary_rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    return [{"name": o.entry.cell.name, "status": o.status, "expected": o.entry.cell.expect,
             "verdict": o.row.verdict if o.row else None, "pinned_states": o.entry.states,
             "distinct_states": o.row.distinct if o.row else None,
             "trace_length": o.row.trace_len if o.row else None,
             "elapsed_s": round(o.row.elapsed_s, 3) if o.row else None, "budget_s": o.entry.budget_s,
             "failures": o.failures} for o in outcomes]
