"""Verdict matrices: many (variant, config) checks in one run, one row each.

A matrix file (TOML) has a `title`, optional `intro` and `outro` (markdown
before the table and after the cells), optional
`[defaults]` (config keys every cell starts from) and `[[cell]]` entries:
`name`, `config` (keys over the defaults), optional `expect` ("holds" or
"violated: INVARIANT": what we pinned after investigating), `claim` (what
the KIP or the design claims), `note` (markdown: the evidence where the
two differ), `exercises` (the actions the claim is about: a "holds" in
which one never fired is flagged as vacuous) and `goals` (the spec's
reachability goals the check must reach). Cells are independent checks, so they run in parallel
processes; each row is what `modelcheck check` would print for that cell.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from typing import Any

import click

from ..config import ConfigError, read_file, shown
from ..engine import refuse_unsupported
from ..engine import run as run_engine
from ..engine.control import Control
from ..engine.options import CheckOptions
from ..lifetime import Stopped, StopRequest, end_pool, exit_code, stop_on_signals, worker_pool
from ..output import check_file
from ..result import parse_expectation
from ..trace import described
from ..views.matrix_page import markdown
from ..views.terminal import stderr_console
from ..views.verdicts import matrix_json, print_matrix
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .inputs import Loader, cell_memory

CELL_KEYS = {"name", "config", "expect", "claim", "note", "symmetry", "exercises", "goals"}
TEXT_KEYS = {"title", "intro", "outro", "claim", "note"}


@dataclass(frozen=True)
class Cell:
    name: str
    config: dict[str, Any]
    expect: str | None = None
    claim: str = ""
    note: str = ""
    symmetry: bool = False  # check's --symmetry: one state of each class of renamed brokers
    exercises: tuple[str, ...] = ()  # actions (or coverage labels) a holds must have fired
    goals: tuple[str, ...] = ()  # reachability goals a complete check must reach
    max_violations: int = 1  # check's --max-violations

    def options(self, max_memory: int | None = None) -> CheckOptions:
        """How the cell is checked: the fast engine, its symmetry, `max_memory`."""
        return CheckOptions.of(symmetry=self.symmetry, max_memory=max_memory, max_violations=self.max_violations)


@dataclass
class Row:
    cell: Cell
    verdict: str  # "holds" or "violated: NAME", as a cell pins it
    invariant: str | None
    trace_len: int | None  # steps of the shortest counterexample
    distinct: int
    generated: int
    depth: int
    elapsed_s: float
    config: dict[str, Any] = field(default_factory=dict)
    story: str = ""
    trace: list[dict[str, Any]] = field(default_factory=list)  # trace.described() of the counterexample
    coverage: dict[str, int] = field(default_factory=dict)
    goals: dict[str, bool] = field(default_factory=dict)
    loop: int | None = None  # a temporal property's lasso: the step the last one returns to
    triggers: dict[str, int] = field(default_factory=dict)  # CheckResult.triggers
    memory: dict[str, Any] = field(default_factory=dict)  # memory_limit, and whether it spilled (segments)
    further: list[str] = field(default_factory=list)  # --max-violations: the invariants violated after the first

    @property
    def as_expected(self) -> bool | None:
        return None if self.cell.expect is None else self.cell.expect == self.verdict

    @property
    def never_fired(self) -> list[str]:
        """Actions with no transition (an action split by coverage_by: by
        name when none of its kinds fired, else the kinds that did not)."""
        out = []
        for action in dict.fromkeys(label.split("(")[0] for label in self.coverage):
            labels = [x for x in self.coverage if x.split("(")[0] == action]
            zero = [x for x in labels if not self.coverage[x]]
            out += [action] if len(zero) == len(labels) else zero
        return out

    @property
    def vacuous(self) -> list[str]:
        """Why a "holds" proves less than its cell claims: an action the
        claim is about that never fired, a goal never reached."""
        if self.verdict != "holds":
            return []
        out = [
            f"{a} never fired"
            for a in self.cell.exercises
            if not sum(n for x, n in self.coverage.items() if x == a or x.startswith(a + "("))
        ]
        return (
            out
            + [f"goal {g} not reached" for g in self.cell.goals if not self.goals.get(g)]
            + [f"property {p} never triggered" for p, n in self.triggers.items() if not n]
        )


def verdict_text(holds: bool, invariant: str | None) -> str:
    return "holds" if holds else f"violated: {invariant}"


def read_entries(
    path: str, loader: Loader, table: str, keys: set[str], top_keys: set[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The top-level keys and the `[[table]]` entries of a matrix or gate
    file, each with its config merged over `[defaults]` and loaded once, so a
    bad entry fails (one line, naming it) before anything runs."""
    raw = read_file(path)
    unknown = sorted(set(raw) - top_keys - {"defaults", table})
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(top_keys | {'defaults', table}))})"
        )
    check_text(raw, TEXT_KEYS, path)
    defaults = raw.get("defaults", {})
    entries = raw.get(table, [])
    if not isinstance(defaults, dict) or not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: needs [defaults] as a table and at least one [[{table}]]")
    out, names = [], set()
    for i, c in enumerate(entries, 1):
        where = f"{path}: {table} {i}"
        if not isinstance(c, dict) or "name" not in c or not isinstance(c.get("config", {}), dict):
            raise ConfigError(f'{where}: needs name = "..." and config = {{...}}')
        name = c["name"]
        if not isinstance(name, str) or not name.strip() or not name.isprintable():
            raise ConfigError(f"{where}: name is {shown(name)}; allowed: non-empty text on one line")
        where = f"{where} ({name})"
        check_text(c, TEXT_KEYS, where)
        bad = sorted(set(c) - keys)
        if bad:
            raise ConfigError(f"{where}: unknown key {bad[0]!r} (allowed: {', '.join(sorted(keys))})")
        if c["name"] in names:
            raise ConfigError(f"{path}: {table} {i}: duplicate name {c['name']!r}")
        names.add(c["name"])
        config = {**defaults, **c.get("config", {})}
        if not isinstance(c.get("symmetry", False), bool):
            raise ConfigError(f"{where}: symmetry is {c['symmetry']!r}; allowed: true or false")
        try:
            spec = loader(config)
            refuse_unsupported(spec, CheckOptions(symmetry=c.get("symmetry", False)), symmetry="symmetry = true")
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        if "expect" in c:
            parse_expectation(c["expect"], spec, where)
        check_pins(c, spec, where)
        out.append({**c, "config": config, "where": where})
    return raw, out


def check_text(table: dict[str, Any], keys: set[str], where: str) -> None:
    """The free-text keys (title, intro, claim, note) of a table hold strings."""
    for key in sorted(keys & set(table)):
        if not isinstance(table[key], str):
            raise ConfigError(f"{where}: {key} is {shown(table[key])}; allowed: text")


def check_pins(entry: dict[str, Any], spec: Any, where: str) -> None:
    """`exercises` names actions or coverage labels of the spec, `goals` its goals."""
    for key, known, what in (
        ("exercises", [*spec.actions, *spec.coverage_labels], "action"),
        ("goals", list(spec.goals), "goal"),
    ):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where}: {key} is {value!r}; allowed: a list of names")
        unknown = [x for x in value if x not in known]
        if unknown:
            raise ConfigError(
                f"{where}: {key}: {unknown[0]!r} is not {'an' if what[0] in 'aeiou' else 'a'} {what} of this variant "
                f"(allowed: {', '.join(dict.fromkeys(known))})"
            )


def read_matrix(path: str, loader: Loader) -> tuple[dict[str, Any], list[Cell]]:
    raw, entries = read_entries(path, loader, "cell", CELL_KEYS, {"title", "intro", "outro"})
    cells = [
        Cell(
            e["name"],
            e["config"],
            e.get("expect"),
            e.get("claim", ""),
            e.get("note", ""),
            e.get("symmetry", False),
            tuple(e.get("exercises", [])),
            tuple(e.get("goals", [])),
        )
        for e in entries
    ]
    return {
        "title": raw.get("title", "Verdict matrix"),
        "intro": raw.get("intro", ""),
        "outro": raw.get("outro", ""),
    }, cells


def run_cell(loader: Loader, cell: Cell, max_memory: int | None = None, stop: StopRequest | None = None) -> Row:
    """The cell's check as a row; a cell stopped at the memory limit, or by
    a limit of the search itself (a behaviour graph too big for it), is a
    row whose verdict says so (it matches no pin), not an error that loses
    every other cell's. A stop signal propagates."""
    spec = loader(cell.config)
    try:
        r = run_engine(spec, cell.options(max_memory), control=Control(stop=StopRequest() if stop is None else stop))
    except ConfigError as e:  # the entries were validated before any ran: a limit met while running
        return Row(cell, f"stopped: {e}", None, None, 0, 0, 0, 0.0, spec.config, memory={"memory_limit": max_memory})
    except Stopped as e:
        if e.signum is not None:
            raise
        return Row(
            cell,
            f"stopped: {e.why}",
            None,
            None,
            e.distinct,
            e.generated,
            e.depth,
            e.elapsed_s,
            spec.config,
            memory={"memory_limit": max_memory},
        )
    story = "" if r.holds else spec.story(r.trace, r.invariant, r.loop)
    return Row(
        cell,
        verdict_text(r.holds, r.invariant),
        r.invariant,
        None if r.holds else len(r.trace) - 1,
        r.distinct_states,
        r.generated_states,
        r.depth,
        r.elapsed_s,
        spec.config,
        story,
        described(spec, r.trace),
        r.coverage,
        r.goals,
        r.loop,
        r.triggers,
        {k: r.run_info[k] for k in ("memory_limit", "spilled", "segments") if k in r.run_info},
        [more.invariant or "" for more in r.further],
    )


def run(
    loader: Loader,
    cells: list[Cell],
    jobs: int,
    stop: Callable[[], bool] = lambda: False,
    request: StopRequest | None = None,
    max_memory: int | None = None,
) -> Iterator[tuple[int, Row]]:
    """(index, row) as cells finish, `jobs` processes at a time (1: in this
    process), each within `max_memory`; once `stop()` is true, cells not
    yet finished are dropped; once `request` is set (a signal), they are
    killed and Stopped is raised. Worker processes die with this one, and
    are never more than the cells."""
    request = StopRequest() if request is None else request
    jobs = min(jobs, len(cells))
    if jobs <= 1:
        for i, cell in enumerate(cells):
            if stop():
                return
            yield i, run_cell(loader, cell, max_memory, request)
        return
    pool = worker_pool(jobs)
    try:
        pending = {pool.submit(run_cell, loader, cell, max_memory): i for i, cell in enumerate(cells)}
        while pending:
            done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if request.asked:
                raise request.stopped()
            for f in sorted(done, key=lambda f: pending[f]):
                yield pending.pop(f), f.result()
            if stop():
                return
    finally:
        end_pool(pool)


def matrix_command(
    load: Loader,
    matrix_file: str | None,
    default: str,
    as_json: bool,
    out: str | None,
    jobs: int,
    only: tuple[str, ...],
    max_memory: str | None,
) -> int:
    """`modelcheck matrix`: the cells of `matrix_file` (else `default`) run
    `jobs` at a time, their verdicts tabulated (and written to `out`);
    exits 0 if every cell is as pinned, 1 if one differs."""
    path = matrix_file or default
    try:
        meta, cells = read_matrix(path, load)
        unknown = sorted(set(only) - {c.name for c in cells})
        if unknown:
            raise ConfigError(f"--only {unknown[0]!r}: no such cell in {path}")
        if out:
            check_file(out, "--out")
        cells = [c for c in cells if not only or c.name in only]
        jobs = min(jobs, len(cells))  # the processes, and the shares of memory, of the cells that run
        limit = cell_memory(max_memory, jobs)
    except ConfigError as e:
        fail(str(e))
    console = stderr_console()
    rows: list[Any] = [None] * len(cells)
    with stop_on_signals() as request, request.polling():
        try:
            for i, row in run(load, cells, jobs, request=request, max_memory=limit):
                rows[i] = row
                console.print(
                    f"[{sum(r is not None for r in rows)}/{len(cells)}] {row.cell.name}: {row.verdict} "
                    f"({row.distinct:,} states, {row.elapsed_s:.1f} s)",
                    highlight=False,
                )
        except Stopped as e:
            done = [r for r in rows if r is not None]
            console.print(
                f"{e.why}: {len(done)} of {len(cells)} cells done"
                + (f" ({', '.join(r.cell.name for r in done)})" if done else "")
                + (f"; {out} not written" if out else ""),
                highlight=False,
                markup=False,
            )
            return exit_code(e)
    outputs = Outputs()
    if out:
        command = "modelcheck matrix" + (f" {matrix_file}" if matrix_file else "") + f" --out {out}"
        outputs.write(out, "--out", markdown(meta, rows, command, jobs) + "\n")
    if as_json:
        click.echo(json.dumps(matrix_json(rows)))
    else:
        print_matrix(rows)
    return outputs.status(EXIT_VIOLATED if any(r.as_expected is False for r in rows) else EXIT_HOLDS)
