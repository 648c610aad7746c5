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
import math
import re
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from ..config import ConfigError, read_text
from ..engine.control import Control
from ..engine.kernel import compiling_ahead
from ..engine.refinement.refine import RefinementResult
from ..engine.refinement.refine import check as refine
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, StopRequest, exit_code, stop_on_signals
from ..output import check_dir, check_file
from ..refinement import Image
from ..views.refinement import failure_line, print_refinement, refinement_json
from ..views.summary import against_markdown, gate_markdown
from ..views.terminal import format_action, stderr_console, stdout_console
from ..views.verdicts import memory_json, print_gate
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .inputs import cell_memory
from .matrix import Cell, Loader, Row, read_entries, run
from .refines import LoadAs, images, mapping_json

ENTRY_KEYS = {"name", "config", "expect", "states", "budget_s", "note", "symmetry", "exercises", "goals", "refines"}
VARIANT = "variant"  # the config key that names a spec's variant (the protocol's loader reads it)


@dataclass(frozen=True)
class Entry:
    cell: Cell
    states: int | None
    budget_s: float | None
    refines: str | None = None  # a variant the entry's must refine (`modelcheck refines`)


def variant_and_rest(loader: Loader, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The variant a config checks (its own or the loader's default), and its other keys."""
    return loader(config).config[VARIANT], {k: v for k, v in config.items() if k != VARIANT}


def refinement_of(loaders: tuple[LoadAs, LoadAs], loader: Loader, entry: Entry, abstract: str | None = None) -> Image:
    """The mapping from the entry's variant to `abstract` (default: the
    variant it pins as `refines`), each side by its loader."""
    variant, rest = variant_and_rest(loader, entry.cell.config)
    target = abstract or entry.refines
    assert target is not None, "an entry that pins no refines is compared with a variant named"
    return images(loaders, variant, target, rest, None, "by the entry's config and refines")


def refinement_failures(loaders: tuple[LoadAs, LoadAs], loader: Loader, entry: Entry) -> list[Failure]:
    """Why the entry's variant does not refine the one it pins (empty: it does, or pins none)."""
    if entry.refines is None:
        return []
    result = refine(refinement_of(loaders, loader, entry))
    return (
        []
        if result.holds
        else [Failure(Kind.REFINES, f"refines {entry.refines}: {failure_line(entry.refines, result)}")]
    )


class Kind(StrEnum):
    """What an entry failed on (a budget overrun is a warning unless --strict-budgets)."""

    VERDICT = "verdict"
    COUNT = "distinct states"
    VACUOUS = "vacuous"
    REFINES = "refines"
    BUDGET = "time"


@dataclass(frozen=True)
class Failure:
    kind: Kind
    text: str  # the line the gate prints, e.g. "verdict: expected holds, got violated: X"

    def __str__(self) -> str:
        return self.text


@dataclass
class Outcome:
    entry: Entry
    row: Row | None  # None: skipped (fail-fast)
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)  # a budget overrun, unless strict

    @property
    def status(self) -> str:
        return "skipped" if self.row is None else ("failed" if self.failures else "passed")


def read_gate(path: str, loader: Loader, load_as: LoadAs | None = None) -> list[Entry]:
    """The entries of gate file `path`; an entry's `refines` is checked with
    `load_as` where given (the protocol's: the gate command gives it)."""
    # [mutation]: what `modelcheck mutate` expects of the gate (runs/mutate.py)
    _raw, raw_entries = read_entries(path, loader, "entry", ENTRY_KEYS, {"mutation"})
    entries = []
    for e in raw_entries:
        if "expect" not in e:
            raise ConfigError(f'{e["where"]}: expect is required ("holds" or "violated: INVARIANT")')
        states, budget = e.get("states"), e.get("budget_s")
        if states is not None and (not isinstance(states, int) or isinstance(states, bool) or states < 1):
            raise ConfigError(f"{e['where']}: states is {states!r}; allowed: a positive integer")
        if budget is not None and (
            not isinstance(budget, (int, float)) or isinstance(budget, bool) or not 0 < budget < math.inf
        ):  # nan fails both
            raise ConfigError(f"{e['where']}: budget_s is {budget!r}; allowed: a positive number of seconds")
        refines = e.get("refines")
        if refines is not None and not isinstance(refines, str):
            raise ConfigError(f"{e['where']}: refines is {refines!r}; allowed: the name of a variant")
        entry = Entry(
            Cell(
                e["name"],
                e["config"],
                e["expect"],
                note=e.get("note", ""),
                symmetry=e.get("symmetry", False),
                exercises=tuple(e.get("exercises", [])),
                goals=tuple(e.get("goals", [])),
            ),
            states,
            budget,
            refines,
        )
        if refines is not None and load_as is not None:
            try:
                refinement_of((load_as, load_as), loader, entry)
            except ConfigError as err:
                raise ConfigError(f"{e['where']}: refines: {err}") from None
        entries.append(entry)
    return entries


def judge(entry: Entry, row: Row) -> list[Failure]:
    """Why `row` fails `entry` (empty: it passes)."""
    failures = []
    if row.verdict != entry.cell.expect:
        failures.append(Failure(Kind.VERDICT, f"verdict: expected {entry.cell.expect}, got {row.verdict}"))
    if entry.states is not None and row.distinct != entry.states:
        failures.append(Failure(Kind.COUNT, f"distinct states: pinned {entry.states:,}, got {row.distinct:,}"))
    failures += [Failure(Kind.VACUOUS, f"vacuous: {why}") for why in row.vacuous]
    return failures


def over_budget(entry: Entry, row: Row) -> list[Failure]:
    """The entry's time overrun, if it had one: wall-clock seconds, which
    a loaded machine stretches, so a warning unless the gate is strict."""
    if entry.budget_s is not None and row.elapsed_s > entry.budget_s:
        return [Failure(Kind.BUDGET, f"time: {row.elapsed_s:.1f} s, over the budget of {entry.budget_s:g} s")]
    return []


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


def repinned(o: Outcome) -> bool:
    """Whether `--update-baseline` pins the count this entry's run found:
    only where its verdict came out as expected (the count of a wrong
    verdict, or of a run stopped at its memory limit, is no baseline)."""
    return o.row is not None and o.row.verdict == o.entry.cell.expect


def update_baseline(path: str, outcomes: list[Outcome]) -> tuple[str, list[tuple[str, int | None, int]]]:
    """The gate file's text with the `states` of every entry re-pinned
    (`repinned`) set to the count just found, and the (name, old, new)
    changes."""
    changes = [
        (o.entry.cell.name, o.entry.states, o.row.distinct)
        for o in outcomes
        if o.row is not None and repinned(o) and o.entry.states != o.row.distinct
    ]
    return set_states(path, {name: new for name, _old, new in changes}), changes


def set_states(path: str, counts: dict[str, int]) -> str:
    """The text of gate file `path` with the `states` of the entry named
    `name` set to counts[name]. JSON is rewritten, key order kept; in TOML
    only `states` lines change (or are added after the entry's name), so
    comments and layout stay. The result is parsed back and must differ
    from the file in those counts only: a layout this cannot edit is refused
    (ConfigError), never rewritten wrong. Tried before a run with every
    entry, so such a file is refused before hours of checking, not after."""
    is_json = Path(path).suffix.lower() == ".json"  # as config.read_file decides
    parse = json.loads if is_json else tomllib.loads
    try:  # read again: the file may have changed since the run began
        text = read_text(path, newline="")  # CRLF stays CRLF
        doc = parse(text)
        index = {e["name"]: i for i, e in enumerate(doc["entry"])}
        at = {index[name]: n for name, n in counts.items()}
    except ConfigError:
        raise
    except (OSError, ValueError, LookupError, TypeError) as e:
        raise ConfigError(f"{path}: cannot read its entries back to update them ({type(e).__name__}: {e})") from None
    for i, n in at.items():
        doc["entry"][i] = _with_states(doc["entry"][i], n)
    new = json.dumps(doc, indent=2, ensure_ascii=False) + "\n" if is_json else _set_toml_states(text, at)
    try:
        edited_right = new is not None and _canonical(parse(new)) == _canonical(doc)
    except ValueError:  # the edit broke the file: refused all the same
        edited_right = False
    if new is None or not edited_right:
        raise ConfigError(
            f"{path}: cannot locate each [[entry]]'s name to update its states = N; "
            "set them by hand (or write entries as [[entry]] tables)"
        )
    return new


def _with_states(entry: dict[str, Any], n: int) -> dict[str, Any]:
    """`entry` with states = n: in place if pinned, else right after name."""
    if "states" in entry:
        return {**entry, "states": n}
    out = {}
    for key, value in entry.items():
        out[key] = value
        if key == "name":
            out["states"] = n
    return out


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, default=str)  # nan == nan; TOML dates as text


def _set_toml_states(text: str, counts: dict[int, int]) -> str | None:
    """Edit the `states` lines of a TOML gate file (None: entries are not
    all [[entry]] tables with a name). Statements are found by a real
    parse: lines are added to a statement until tomllib accepts it, so a
    multi-line string or array is one statement and a `name` inside one is
    never taken for a key."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    entries: list[dict[str, tuple[int, int]]] = []  # for each [[entry]]: "name"/"states" -> line span
    start, in_entry = 0, False
    while start < len(lines):
        end, parsed = _statement(lines, start)
        if lines[start].lstrip().startswith("["):  # a table header
            in_entry = parsed == {"entry": [{}]}
            if in_entry:
                entries.append({})
        elif in_entry and len(parsed) == 1 and next(iter(parsed)) in ("name", "states"):
            entries[-1][next(iter(parsed))] = (start, end)
        start = end
    if any("name" not in e for e in entries) or max(counts, default=-1) >= len(entries):
        return None
    eol = "\r\n" if "\r\n" in text else "\n"
    for i in sorted(counts, key=lambda i: -entries[i]["name"][0]):  # bottom up: spans stay valid
        if "states" in entries[i]:
            at = entries[i]["states"][0]
            lines[at] = re.sub(r"=(\s*)[^\s#]+", rf"=\g<1>{counts[i]}", lines[at], count=1)
        else:
            first, end = entries[i]["name"]
            indent = lines[first][: len(lines[first]) - len(lines[first].lstrip(" \t"))]
            if not lines[end - 1].endswith("\n"):
                lines[end - 1] += eol
            lines.insert(end, f"{indent}states = {counts[i]}{eol}")
    return "".join(lines)


def _statement(lines: list[str], start: int) -> tuple[int, dict[str, Any]]:
    """Where the TOML statement starting at lines[start] ends, and what it
    parses to (a blank or comment line: {})."""
    for end in range(start + 1, len(lines) + 1):
        try:
            return end, tomllib.loads("".join(lines[start:end]))
        except tomllib.TOMLDecodeError:
            continue
    return len(lines), {}  # not reached for a file tomllib read


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


def against_command(
    load: Loader,
    load_as: LoadAs,
    load_old: LoadAs,
    ref: str,
    entries: list[Entry],
    as_json: bool,
    gate_file: str = "",
    summary: str | None = None,
) -> int:
    """`modelcheck gate --against REF`: each entry's variant against the same
    variant at revision REF (identity mapping): the first new behaviour, a
    shortest trace whose last step the old spec does not allow, or none.
    Exit 0 when no entry has one, 1 when one has."""
    pairs = []
    for entry in entries:
        try:
            variant, _rest = variant_and_rest(load, entry.cell.config)
            pairs.append((entry, variant, refinement_of((load_as, load_old), load, entry, abstract=variant)))
        except ConfigError as e:
            fail(f"entry {entry.cell.name!r}: {e}")
    console = stderr_console()
    reports: list[tuple[Entry, tuple[str, str], Image, RefinementResult]] = []
    with stop_on_signals() as request:
        for entry, variant, image in pairs:
            try:
                result = refine(image, control=Control(stop=request))
            except Stopped as e:
                console.print(f"{e.why}: {len(reports)} of {len(entries)} entries compared", markup=False)
                return exit_code(e)
            names = (variant, f"{variant} at {ref}")
            reports.append((entry, names, image, result))
            console.print(
                f"{'no new behaviour' if result.holds else 'NEW BEHAVIOUR'}: {entry.cell.name}: "
                + (
                    f"{names[0]} refines {names[1]} ({result.states:,} states, {result.transitions:,} transitions)"
                    if result.holds
                    else failure_line(names[1], result)
                ),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    if as_json:
        click.echo(
            json.dumps(
                [
                    {"name": x.cell.name, **refinement_json(i.impl, i.abstract, n, r, mapping_json(i.mapping))}
                    for x, n, i, r in reports
                ]
            )
        )
    else:
        for x, n, i, r in reports:
            if not r.holds:
                stdout_console().print(Text.assemble("\n", (x.cell.name, "bold"), ": the first new behaviour"))
                print_refinement(i.impl, i.abstract, n, r, mapping_json(i.mapping))
        new = sum(not r.holds for *_x, r in reports)
        stdout_console().print(f"{len(reports) - new} entries without new behaviour, {new} with")
    outputs = Outputs()
    if summary:
        lines = [(x.cell.name, r.holds, "" if r.holds else failure_line(n[1], r)) for x, n, _i, r in reports]
        outputs.append(summary, "--summary", against_markdown(gate_file, ref, lines))
    return outputs.status(EXIT_VIOLATED if any(not r.holds for *_x, r in reports) else EXIT_HOLDS)


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
            f"{o.status}: {o.entry.cell.name}: {o.row.verdict} ({o.row.distinct:,} states, "
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
