"""`modelcheck mutate`: how strong a gate is, measured on a protocol's own
mutants (each a variant that redefines one rule, e.g. a real bug put
back). Each mutant takes its base variant's place in every gate entry that
pins "holds" for the base; the mutant is killed by the first entry whose
verdict it breaks (an invariant or property that fails), in the gate's
order. A moved count is not a kill: a harmless refactor moves one too.

A survivor is either equivalent on the gate's configs (every count as
pinned: no entry can tell it from its base) or reaches other states
without breaking anything (a missing invariant, or a configuration the
gate does not run). The gate file may list known survivors under
`[mutation] survivors`; a survivor not listed, or a listed mutant killed,
fails the run, so the score is held where it is and raised on purpose.

Generated mutants (`[mutation] generate`) are the points of a mutant
schema (modelcheck.schemata): every small slip of the variant's own rules,
one compiled kernel for all. An entry whose config leaves every action
that reaches a point's rule dormant cannot run the mutated code, so it is
not run for that point (the search would be the base's, state for state);
a point no entry runs is UNREACHED (a configuration the gate lacks). Their
score (killed / not shown equivalent) must stay at `[mutation] min_score`
or above."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from typing import Any

import click

from ..config import ConfigError, read_file
from ..engine.kernel import FieldOutOfRange, compiling_ahead
from ..lifetime import Stopped, StopRequest, end_pool, exit_code, stop_on_signals, worker_pool
from ..memory import anon_rss
from ..output import check_file
from ..schemata import SWITCH, Point, Schema
from ..trace import TraceError
from ..views.mutation import report, score
from ..views.summary import check_command, mutate_markdown
from ..views.terminal import stderr_console
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .gate_entries import VARIANT, Entry, read_gate, variant_and_rest
from .matrix import Cell, Loader, Row, run_cell


@dataclass
class Verdict:
    """A mutant's fate on the gate: the entry and invariant that killed it,
    or none, with the entries it ran, how many moved their count, and how
    many could not run its rule (a generated mutant's)."""

    mutant: str
    base: str
    killed_by: str | None = None  # the entry's name
    invariant: str | None = None
    steps: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    ran: int = 0
    moved: int = 0
    unreached: int = 0
    grew: int = 0  # entries a generated mutant's search outgrew (the memory limit)
    errors: list[str] = field(default_factory=list)
    point: Point | None = None

    @property
    def status(self) -> str:
        if self.killed_by is not None:
            return "killed"
        if self.errors:
            return "error"
        if not self.ran:
            return "unreached" if self.unreached else "untested"
        return "survived" if self.moved else "equivalent"

    def reason(self) -> str:
        if self.killed_by is not None and self.steps is None:
            return f"{self.invariant}, entry {self.killed_by!r}"
        if self.killed_by is not None:
            return f"{self.invariant} in {self.steps} steps, entry {self.killed_by!r}"
        if self.errors:
            return "; ".join(self.errors)
        if not self.ran and self.unreached:
            return f"none of the {self.unreached} entries runs an action that reaches it: a missing configuration"
        if not self.ran:
            return f"no entry pins holds for {self.base}"
        if self.moved:
            grew = f" ({self.grew} past {GENERATED_MEMORY >> 30} GiB, nothing broken by then)" if self.grew else ""
            return (
                f"{self.moved} of {self.ran} entries reach other states{grew} and none fails: "
                "a missing invariant, or a configuration the gate does not run"
            )
        return f"every count of the {self.ran} entries as pinned: equivalent on the gate's configs"

    def command(self) -> str:
        """The check that shows the killing trace."""
        return check_command(self.config) if self.killed_by is not None else ""


@dataclass(frozen=True)
class Task:
    """A mutant to hunt: `mutation` 0 for a named one, else its generated
    point; `live` holds each entry's actions that may fire (by entry name)."""

    mutant: str
    base: str
    entries: list[Entry]
    point: Point | None = None
    live: dict[str, frozenset[str]] = field(default_factory=dict)


def hunt(loader: Loader, task: Task) -> Verdict:
    """Run the base's "holds" entries with the mutant in its place, in order,
    until one breaks."""
    v = Verdict(task.mutant, task.base, point=task.point)
    for entry in task.entries:
        if task.point is not None and not task.live[entry.cell.name].intersection(task.point.actions):
            v.unreached += 1
            continue
        rest = {k: value for k, value in entry.cell.config.items() if k != VARIANT}
        config = (
            {VARIANT: task.mutant, **rest}
            if task.point is None
            else {VARIANT: task.base, **rest, SWITCH: task.point.number}
        )
        cell = Cell(entry.cell.name, config, "holds", symmetry=entry.cell.symmetry)
        row = judged(loader, cell, None if task.point is None else GENERATED_MEMORY)
        v.ran += 1
        if isinstance(row, str):  # an error TLC would stop at too: a kill, though without a trace
            v.killed_by, v.invariant, v.config = entry.cell.name, row, config
            return v
        if task.point is not None and row.verdict.startswith("stopped"):  # a limit: a signal raises
            v.moved += 1  # far more states than its base, and nothing broken among them
            v.grew += 1
        elif row.verdict.startswith("stopped"):
            v.errors.append(f"{entry.cell.name}: {row.verdict}")
        elif row.verdict != "holds":
            v.killed_by, v.invariant, v.steps, v.config = entry.cell.name, row.invariant, row.trace_len, config
            return v
        elif entry.states is not None and row.distinct != entry.states:
            v.moved += 1
    return v


# the memory a generated mutant's search may take (a slip such as a counter
# not bumped can make a bounded space unbounded; the hunted entries' own
# searches take under 1 GiB)
GENERATED_MEMORY = 3 << 30


def judged(loader: Loader, cell: Cell, grow: int | None = None) -> Row | str:
    """The cell's row, or why the mutant cannot be run: a state outside
    the layout (TypeOK's domains), or an evaluation error (a value read or
    written outside a tuple, an action's label outside its range), which
    TLC stops at too. Where the compiled engine fails otherwise, or the
    kernel and the spec part ways (a negative index that Python wraps and
    numba does not), the reference engine judges alone. `grow`: the
    memory the search may add to what the process holds already (a
    worker's earlier searches leave some behind)."""
    max_memory = None if grow is None else anon_rss() + grow
    try:
        return run_cell(loader, cell, max_memory)
    except FieldOutOfRange as e:
        return f"TypeOK ({e})"
    except Exception:  # the reference engine judges a mutant the kernel cannot run (a stop is no Exception)
        pass
    before = os.environ.get("MODELCHECK_KERNEL")
    os.environ["MODELCHECK_KERNEL"] = "interpreted"
    try:
        return run_cell(loader, cell, None if grow is None else anon_rss() + grow)
    except (IndexError, KeyError, ValueError, TypeError, TraceError) as e:
        return f"an evaluation error ({e})"
    finally:
        if before is None:
            del os.environ["MODELCHECK_KERNEL"]
        else:
            os.environ["MODELCHECK_KERNEL"] = before


def hunts(loader: Loader, tasks: list[Task], jobs: int, request: StopRequest) -> Iterator[Verdict]:
    """Each mutant's Verdict as it is known, `jobs` mutants at a time."""
    if jobs <= 1:
        for task in tasks:
            yield hunt(loader, task)
        return
    pool = worker_pool(jobs)
    try:
        pending = {pool.submit(hunt, loader, task) for task in tasks}
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if request.asked:
                raise request.stopped()
            yield from (f.result() for f in done)
    finally:
        end_pool(pool)


@dataclass
class Mutation:
    """The gate file's `[mutation]` table."""

    survivors: list[str] = field(default_factory=list)  # named mutants known to survive
    generate: list[str] = field(default_factory=list)  # variants whose rules' points are hunted
    hunt_on: list[str] | None = None  # the entries generated mutants run on (default: all that fit)
    min_score: float = 0.0  # the least generated score that passes


def mutation_table(path: str) -> Mutation:
    """The gate file's `[mutation]` (every key optional)."""
    table = read_file(path).get("mutation", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: mutation is {table!r}; allowed: a table with survivors = [...]")
    allowed = ("survivors", "generate", "hunt_on", "min_score")
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise ConfigError(f"{path}: [mutation] {extra[0]}: no such key (allowed: {', '.join(allowed)})")
    m = Mutation()
    for key, what in (("survivors", "mutant names"), ("generate", "variant names"), ("hunt_on", "entry names")):
        value = table.get(key, [] if key != "hunt_on" else None)
        if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
            raise ConfigError(f"{path}: [mutation] {key} is {value!r}; allowed: a list of {what}")
        setattr(m, key, value)
    score = table.get("min_score", 0.0)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        raise ConfigError(f"{path}: [mutation] min_score is {score!r}; allowed: a number from 0 to 1")
    m.min_score = float(score)
    return m


def known_survivors(path: str) -> list[str]:
    """The gate file's `[mutation] survivors` (empty when it has none)."""
    return mutation_table(path).survivors


def mutate_command(
    load: Loader,
    mutants: Mapping[str, str],
    gate_file: str,
    only: tuple[str, ...],
    jobs: int,
    as_json: bool,
    summary: str | None = None,
    schemata: Callable[[str], Schema] | None = None,
    points: tuple[int, ...] = (),
    list_points: bool = False,
) -> int:
    """`modelcheck mutate GATE.toml`: every mutant (`mutants`: name -> base
    variant) and every generated point (`schemata`: a variant's schema) of
    the variants `[mutation] generate` names hunted on the gate's entries;
    exit 0 when the kills and survivors are those the gate file expects
    and the generated score is at least its min_score, else 1. `only` and
    `points` narrow the hunt to those named mutants and generated points.
    With `summary`, the score and each fate are appended to that file as
    markdown."""
    try:
        entries = read_gate(gate_file, load)
        table = mutation_table(gate_file)
        for name in [*only, *table.survivors]:
            if name not in mutants:
                raise ConfigError(f"mutant {name!r}: no such mutant (allowed: {', '.join(mutants)})")
        generated = generated_points(load, schemata, table, gate_file)
        known = {p.number for ps in generated.values() for p in ps}
        for number in points:
            if number not in known:
                raise ConfigError(f"--point {number}: no such point (allowed: 1 to {max(known, default=0)})")
        if summary:
            check_file(summary, "--summary")
        tasks = hunt_tasks(load, mutants, entries, table, generated, only, points, gate_file)
    except ConfigError as e:
        fail(str(e))
    if list_points:
        for variant, ps in generated.items():
            for p in ps:
                click.echo(f"{variant}#{p.number} {p.rule} ({p.where}): {p.kind}: {p.change}")
        return EXIT_HOLDS
    console = stderr_console()
    verdicts: dict[str, Verdict] = {}
    # one task a generated variant names every kernel its points need (one a broker count)
    first = {t.base: t for t in reversed(tasks) if t.point is not None}.values()
    kernels = [load({**e.cell.config, SWITCH: t.point.number}) for t in first if t.point for e in t.entries]
    with compiling_ahead(kernels), stop_on_signals() as request, request.polling():
        try:
            for v in hunts(load, tasks, min(jobs, len(tasks)), request):
                verdicts[v.mutant] = v
                console.print(f"{v.status}: {v.mutant}: {v.reason()}", highlight=False, markup=False, soft_wrap=True)
        except Stopped as e:  # a signal: what ran is said, nothing else
            console.print(f"{e.why}: {len(verdicts)} of {len(tasks)} mutants done", highlight=False, markup=False)
            return exit_code(e)
    ordered = [verdicts[t.mutant] for t in tasks]
    named = [v for v in ordered if v.point is None]
    points_hunted = [v for v in ordered if v.point is not None]
    unexpected = {v.mutant: why for v in named if (why := surprise(v, table.survivors))}
    unexpected.update({v.mutant: f"{v.status}: {v.reason()}" for v in points_hunted if v.status == "error"})
    low = low_score(points_hunted, table.min_score) if points_hunted and not points else ""
    report(named, points_hunted, unexpected, low, as_json)
    outputs = Outputs()
    if summary:
        outputs.append(summary, "--summary", mutate_markdown(gate_file, named, unexpected, points_hunted, low))
    return outputs.status(EXIT_VIOLATED if unexpected or low else EXIT_HOLDS)


def hunt_tasks(
    load: Loader,
    mutants: Mapping[str, str],
    entries: list[Entry],
    table: Mutation,
    generated: dict[str, tuple[Point, ...]],
    only: tuple[str, ...],
    points: tuple[int, ...],
    gate_file: str,
) -> list[Task]:
    """The named mutants, then the generated points, to hunt (`only` and
    `points` narrow them), each with the entries it runs on."""
    holds = [(e, variant_and_rest(load, e.cell.config)[0]) for e in entries if e.cell.expect == "holds"]
    of_base = {variant: [e for e, v in holds if v == variant] for variant in {*mutants.values(), *generated}}
    named = [m for m in mutants if (only or not points) and (not only or m in only)]
    tasks = [Task(m, mutants[m], of_base[mutants[m]]) for m in named]
    for variant, ps in generated.items():
        hunted = hunted_entries(of_base[variant], table.hunt_on, gate_file)
        live = {e.cell.name: live_actions(load, e.cell.config) for e in hunted}
        chosen = [p for p in ps if (points or not only) and (not points or p.number in points)]
        tasks += [Task(f"{variant}#{p.number}", variant, hunted, p, live) for p in chosen]
    return tasks


def generated_points(
    load: Loader, schemata: Callable[[str], Schema] | None, table: Mutation, gate_file: str
) -> dict[str, tuple[Point, ...]]:
    """Each variant `[mutation] generate` names, with its schema's points."""
    if table.generate and schemata is None:
        raise ConfigError(f"{gate_file}: [mutation] generate: this protocol generates no mutants")
    out = {}
    for variant in table.generate:
        try:
            load({VARIANT: variant})
        except ConfigError:
            raise ConfigError(f"{gate_file}: [mutation] generate: {variant!r} is not a variant") from None
        assert schemata is not None
        out[variant] = schemata(variant).points
    return out


def hunted_entries(entries: list[Entry], hunt_on: list[str] | None, gate_file: str) -> list[Entry]:
    """The entries generated mutants run on, cheapest first (a kill is
    found sooner), by their pinned count."""
    if hunt_on is not None:
        names = {e.cell.name for e in entries}
        unknown = [n for n in hunt_on if n not in names]
        if unknown:
            raise ConfigError(
                f"{gate_file}: [mutation] hunt_on: {unknown[0]!r} is no entry that pins holds for a generated variant"
            )
        entries = [e for e in entries if e.cell.name in hunt_on]
    return sorted(entries, key=lambda e: (e.states is None, e.states or 0))


def live_actions(load: Loader, config: dict[str, Any]) -> frozenset[str]:
    """The actions a config lets fire (the engine never calls the others)."""
    spec = load(config)
    return frozenset(spec.actions) - spec.never_enabled()


def low_score(verdicts: list[Verdict], least: float) -> str:
    """Why the generated score fails its pin ("" where it holds)."""
    killed, telling = score(verdicts)
    measured = killed / telling if telling else 1.0
    if measured < least:
        return f"generated mutation score {measured:.3f} is below [mutation] min_score {least}"
    return ""


def surprise(v: Verdict, survivors: list[str]) -> str:
    """Why the gate file does not expect `v` ("" where it does): a kill of a
    listed survivor, a survivor not listed, or a hunt that did not finish."""
    if v.status in ("error", "untested"):
        return f"{v.status}: {v.reason()}"
    if v.status == "killed":
        return "was killed: remove it from [mutation] survivors" if v.mutant in survivors else ""
    return "" if v.mutant in survivors else f"{v.status} (not listed in [mutation] survivors)"
