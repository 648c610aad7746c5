"""The CI gate: pinned verdicts, state counts and time budgets.

A gate file is a matrix file whose entries (`[[entry]]`) each pin a verdict
(`expect`, required), optionally the distinct-state count (`states`), a
time budget in seconds (`budget_s`), and what a "holds" must have
exercised: actions that fired (`exercises`) and reachability goals reached
(`goals`). An entry fails when its verdict differs, its count changes (a
protocol change that alters what is reachable is worth a look even when
every invariant still holds) or it holds vacuously. Running over budget is
a warning (a busy machine must not fail a right verdict), a failure only
with `strict_budgets`.
`update_baseline` rewrites the pinned counts after an intended change
(`set_states`, tried before the run, says whether it can).
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..config import ConfigError
from ..engine.kernel import compiling_ahead
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, StopRequest, exit_code, stop_on_signals
from ..output import check_dir, check_file
from ..views.summary import gate_markdown
from ..views.terminal import format_action, stderr_console
from ..views.verdicts import memory_json, print_gate
from .against import against_command
from .baseline import repinned, set_states, update_baseline
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .gate_entries import Entry, Kind, Outcome, judge, over_budget, read_gate, refinement_failures
from .inputs import cell_memory
from .matrix import Loader, Row, run
from .refines import LoadAs


def run_gate(
    loader: Loader,
    entries: list[Entry],
    jobs: int,
    fail_fast: bool,
    on_done: Callable[[Outcome], None] = lambda o: None,
    request: StopRequest | None = None,
    max_memory: int | None = None,
    load_as: LoadAs | None = None,
    strict_budgets: bool = False,
) -> tuple[list[Outcome], Stopped | None]:
    """Check every entry (`jobs` at a time, each within `max_memory`); with
    `fail_fast`, entries not yet finished when one fails are skipped, and
    so are those a signal (`request`) stopped (the Stopped is returned).
    A budget overrun fails an entry only with `strict_budgets`."""
    outcomes = [Outcome(e, None) for e in entries]
    try:
        for i, row in run(
            loader,
            [e.cell for e in entries],
            jobs,
            stop=lambda: fail_fast and any(o.failures for o in outcomes),
            request=request,
            max_memory=max_memory,
        ):
            outcomes[i].row = row
            outcomes[i].failures = judge(entries[i], row)
            late = over_budget(entries[i], row)
            if strict_budgets:
                outcomes[i].failures += late
            else:
                outcomes[i].warnings += late
            if load_as is not None:
                outcomes[i].failures += refinement_failures((load_as, load_as), loader, entries[i])
            on_done(outcomes[i])
    except Stopped as e:
        return outcomes, e
    return outcomes, None


def trace_text(row: Row, format_action: Callable[[str | None, dict], str]) -> str:
    """The counterexample as numbered steps, then its story."""
    steps = [f"{i}. {format_action(s['action'], s['args'])}" for i, s in enumerate(row.trace)]
    return "\n".join(steps + ["", row.story])


def junit(
    outcomes: list[Outcome],
    format_action: Callable[[str | None, dict], str],
    skipped_why: str = "an earlier entry failed (--fail-fast)",
) -> str:
    """JUnit XML: one testcase an entry; a failure carries its reasons and,
    for a counterexample, the trace."""
    suite = ET.Element(
        "testsuite",
        name="modelcheck gate",
        tests=str(len(outcomes)),
        failures=str(sum(o.status == "failed" for o in outcomes)),
        skipped=str(sum(o.status == "skipped" for o in outcomes)),
        time=f"{sum(o.row.elapsed_s for o in outcomes if o.row):.3f}",
    )
    for o in outcomes:
        case = ET.SubElement(
            suite, "testcase", classname="gate", name=o.entry.cell.name, time=f"{o.row.elapsed_s:.3f}" if o.row else "0"
        )
        if o.status == "skipped":
            ET.SubElement(case, "skipped", message=f"not run: {skipped_why}")
        elif o.status == "failed":
            failure = ET.SubElement(case, "failure", message="; ".join(map(str, o.failures)))
            failure.text = "\n".join(map(str, o.failures)) + (
                "\n\n" + trace_text(o.row, format_action) if o.row is not None and o.row.trace else ""
            )
        if o.warnings:
            ET.SubElement(case, "system-out").text = "\n".join(f"warning: {w}" for w in o.warnings)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def trace_file_names(names: list[str]) -> list[str]:
    """A file name for each entry's counterexample in --trace-dir: a
    readable slug of its name, plus a short hash of the exact name where
    slugs collide (ignoring case, for case-insensitive file systems) or are
    empty, so every entry has its own visible file, the same on every run."""
    out = [re.sub(r"[\W_]+", "-", name).strip("-")[:60] for name in names]  # 60: under 255 bytes in UTF-8
    while True:
        seen = Counter(s.lower() for s in out)
        clashing = [i for i, s in enumerate(out) if not s or seen[s.lower()] > 1]
        if not clashing:
            return [f"{s}.json" for s in out]
        for i in clashing:
            out[i] = f"{out[i] or 'entry'}-{hashlib.sha256(names[i].encode()).hexdigest()[:8]}"


def summary_rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    return [
        {
            "name": o.entry.cell.name,
            "status": o.status,
            "expected": o.entry.cell.expect,
            "verdict": o.row.verdict if o.row else None,
            "further": o.row.further if o.row else [],
            "pinned_states": o.entry.states,
            "distinct_states": o.row.distinct if o.row else None,
            "trace_length": o.row.trace_len if o.row else None,
            "elapsed_s": round(o.row.elapsed_s, 3) if o.row else None,
            "budget_s": o.entry.budget_s,
            "failures": [str(f) for f in o.failures],
            "failed_on": sorted({str(f.kind) for f in o.failures}),
            "warnings": [str(w) for w in o.warnings],
            **memory_json(o.row),
        }
        for o in outcomes
    ]


def gate_command(
    load: Loader,
    gate_file: str,
    junit_file: str | None,
    as_json: bool,
    trace_dir: str | None,
    update: bool,
    fail_fast: bool,
    jobs: int,
    max_memory: str | None,
    strict_budgets: bool = False,
    load_as: LoadAs | None = None,
    against: str | None = None,
    load_at: Callable[[str], LoadAs] | None = None,
    summary: str | None = None,
) -> int:
    """`modelcheck gate`: the entries of `gate_file` run `jobs` at a time
    and judged, reported (JUnit XML, trace files, a table or JSON, and a
    markdown `summary` appended to a file) and, with `update`, their
    counts re-pinned; exits 0 if every entry passes."""
    try:
        entries = read_gate(gate_file, load, load_as)
        if summary:
            check_file(summary, "--summary")
        if against is not None:
            given = [
                o
                for o, on in (
                    ("--junit", junit_file),
                    ("--trace-dir", trace_dir),
                    ("--update-baseline", update),
                    ("--fail-fast", fail_fast),
                    ("--strict-budgets", strict_budgets),
                )
                if on
            ]
            if given:
                raise ConfigError(f"{given[0]} applies to the gate's pinned checks, not to --against")
            assert load_as is not None and load_at is not None, "--against is given with the protocol's loaders"
            load_old = load_at(against)
    except ConfigError as e:
        fail(str(e))
    if against is not None:
        assert load_as is not None, "--against is given with the protocol's loaders"
        return against_command(load, load_as, load_old, against, entries, as_json, gate_file, summary)
    try:
        jobs = min(jobs, len(entries))  # the processes, and the shares of memory, of the entries
        limit = cell_memory(max_memory, jobs)
        if junit_file:
            check_file(junit_file, "--junit")
        if trace_dir:
            check_dir(trace_dir, "--trace-dir")
        if update:  # before the run: a file that cannot take the new counts is refused now
            check_file(gate_file, "--update-baseline")
            set_states(gate_file, {e.cell.name: 1 for e in entries})
    except ConfigError as e:
        fail(str(e))
    console = stderr_console()

    def done(o: Any) -> None:
        console.print(
            f"{o.status}: {o.entry.cell.name}: {o.row.verdict}"
            + "".join(f", then violated: {name}" for name in o.row.further)
            + f" ({o.row.distinct:,} states, "
            f"{o.row.elapsed_s:.1f} s)"
            + (f" -- {'; '.join(map(str, o.failures))}" if o.failures else "")
            + "".join(f" (warning: {w})" for w in o.warnings),
            highlight=False,
            markup=False,
        )

    # every kernel the entries need compiles from the start, side by side
    with compiling_ahead(load(e.cell.config) for e in entries), stop_on_signals() as request, request.polling():
        outcomes, stopped = run_gate(load, entries, jobs, fail_fast, done, request, limit, load_as, strict_budgets)
    if stopped:  # the reports of what ran; no baseline from a partial run
        console.print(
            f"{stopped.why}: {sum(o.row is not None for o in outcomes)} of {len(outcomes)} entries done",
            highlight=False,
            markup=False,
        )
        update = False
    if update:  # the counts are re-pinned, not failures
        for o in filter(repinned, outcomes):
            o.failures = [f for f in o.failures if f.kind is not Kind.COUNT]
    outputs = Outputs()  # each written whatever became of the others; a failure is said after the table
    if trace_dir and outputs.make_dir(trace_dir, "--trace-dir"):
        for o, name in zip(outcomes, trace_file_names([o.entry.cell.name for o in outcomes])):
            if o.row is not None and not (o.status == "failed" and o.row.trace):
                outputs.clear_trace(str(Path(trace_dir) / name), "--trace-dir")
            if o.status == "failed" and o.row is not None and o.row.trace:
                trace = TraceFile(o.row.config, o.row.invariant, o.row.trace, o.row.loop).to_json()
                outputs.write(str(Path(trace_dir) / name), "--trace-dir", json.dumps(trace, indent=1) + "\n")
    if junit_file:
        stop_why = [f"the gate was {stopped.why}"] if stopped else []
        outputs.write(junit_file, "--junit", junit(outcomes, format_action, *stop_why))
    if update:
        try:
            text, changes = update_baseline(gate_file, outcomes)
        except ConfigError as e:  # the file changed during the run into one this cannot edit
            outputs.failures.append(str(e))
            changes = []
        if changes and not outputs.write(gate_file, "--update-baseline", text):
            changes = []
        for name, old, new in changes:
            console.print(
                f"baseline {name}: states {old if old is not None else 'unpinned'} -> {new}",
                highlight=False,
                markup=False,
            )
        for o in outcomes:
            if o.row is not None and not repinned(o):
                console.print(
                    f"baseline {o.entry.cell.name}: not re-pinned, its verdict failed "
                    f"(expected {o.entry.cell.expect}, got {o.row.verdict})",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
        console.print(f"{gate_file}: {len(changes)} pinned count(s) updated", highlight=False, soft_wrap=True)
    if summary:
        outputs.append(summary, "--summary", gate_markdown(gate_file, outcomes, stopped.why if stopped else None))
    if as_json:
        click.echo(json.dumps(summary_rows(outcomes)))
    else:
        print_gate(outcomes)
    return outputs.status(
        exit_code(stopped) if stopped else EXIT_VIOLATED if any(o.status == "failed" for o in outcomes) else EXIT_HOLDS
    )
