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
fails the run, so the score is held where it is and raised on purpose."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from typing import Any, NoReturn

import click

from ..config import ConfigError, read_file
from ..lifetime import Stopped, StopRequest, end_pool, exit_code, stop_on_signals, worker_pool
from ..output import check_file
from ..views.summary import check_command, mutate_markdown
from ..views.terminal import stderr_console, stdout_console
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .gate import VARIANT, Entry, read_gate, variant_and_rest
from .matrix import Cell, Loader, Row, run_cell


@dataclass
class Verdict:
    """A mutant's fate on the gate: the entry and invariant that killed it,
    or none, with the entries it ran and how many moved their count."""

    mutant: str
    base: str
    killed_by: str | None = None  # the entry's name
    invariant: str | None = None
    steps: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    ran: int = 0
    moved: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.killed_by is not None:
            return "killed"
        if self.errors:
            return "error"
        if not self.ran:
            return "untested"
        return "survived" if self.moved else "equivalent"

    def reason(self) -> str:
        if self.killed_by is not None:
            return f"{self.invariant} in {self.steps} steps, entry {self.killed_by!r}"
        if self.errors:
            return "; ".join(self.errors)
        if not self.ran:
            return f"no entry pins holds for {self.base}"
        if self.moved:
            return (
                f"{self.moved} of {self.ran} entries reach other states and none fails: "
                "a missing invariant, or a configuration the gate does not run"
            )
        return f"every count of the {self.ran} entries as pinned: equivalent on the gate's configs"

    def command(self) -> str:
        """The check that shows the killing trace."""
        return check_command(self.config) if self.killed_by is not None else ""


def hunt(loader: Loader, mutant: str, base: str, entries: list[Entry]) -> Verdict:
    """Run the base's "holds" entries with `mutant` in its place, in order,
    until one breaks."""
    v = Verdict(mutant, base)
    for entry in entries:
        config = {VARIANT: mutant, **{k: value for k, value in entry.cell.config.items() if k != VARIANT}}
        row: Row = run_cell(loader, Cell(entry.cell.name, config, "holds", symmetry=entry.cell.symmetry))
        v.ran += 1
        if row.verdict.startswith("stopped"):
            v.errors.append(f"{entry.cell.name}: {row.verdict}")
        elif row.verdict != "holds":
            v.killed_by, v.invariant, v.steps, v.config = entry.cell.name, row.invariant, row.trace_len, config
            return v
        elif entry.states is not None and row.distinct != entry.states:
            v.moved += 1
    return v


def hunts(
    loader: Loader, tasks: list[tuple[str, str, list[Entry]]], jobs: int, request: StopRequest
) -> Iterator[Verdict]:
    """Each mutant's Verdict as it is known, `jobs` mutants at a time."""
    if jobs <= 1:
        for task in tasks:
            yield hunt(loader, *task)
        return
    pool = worker_pool(jobs)
    try:
        pending = {pool.submit(hunt, loader, *task) for task in tasks}
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if request.asked:
                raise request.stopped()
            yield from (f.result() for f in done)
    finally:
        end_pool(pool)


def known_survivors(path: str) -> list[str]:
    """The gate file's `[mutation] survivors` (empty when it has none)."""
    table = read_file(path).get("mutation", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: mutation is {table!r}; allowed: a table with survivors = [...]")
    extra = sorted(set(table) - {"survivors"})
    if extra:
        raise ConfigError(f"{path}: [mutation] {extra[0]}: no such key (allowed: survivors)")
    survivors = table.get("survivors", [])
    if not isinstance(survivors, list) or not all(isinstance(s, str) for s in survivors):
        raise ConfigError(f"{path}: [mutation] survivors is {survivors!r}; allowed: a list of mutant names")
    return survivors


def mutate_command(
    load: Loader,
    mutants: dict[str, str],
    gate_file: str,
    only: tuple[str, ...],
    jobs: int,
    as_json: bool,
    summary: str | None = None,
) -> NoReturn:
    """`modelcheck mutate GATE.toml`: every mutant (`mutants`: name -> base
    variant) hunted on the gate's entries; exit 0 when the kills and
    survivors are those the gate file expects, else 1. With `summary`, the
    score and each fate are appended to that file as markdown."""
    try:
        entries = read_gate(gate_file, load)
        survivors = known_survivors(gate_file)
        for name in [*only, *survivors]:
            if name not in mutants:
                raise ConfigError(f"mutant {name!r}: no such mutant (allowed: {', '.join(mutants)})")
        if summary:
            check_file(summary, "--summary")
    except ConfigError as e:
        fail(str(e))
    chosen = [m for m in mutants if not only or m in only]
    tasks = []
    for m in chosen:
        base = mutants[m]
        of_base = [e for e in entries if e.cell.expect == "holds" and variant_and_rest(load, e.cell.config)[0] == base]
        tasks.append((m, base, of_base))
    console = stderr_console()
    verdicts: dict[str, Verdict] = {}
    with stop_on_signals() as request, request.polling():
        try:
            for v in hunts(load, tasks, min(jobs, len(tasks)), request):
                verdicts[v.mutant] = v
                console.print(f"{v.status}: {v.mutant}: {v.reason()}", highlight=False, markup=False, soft_wrap=True)
        except Stopped as e:  # a signal: what ran is said, nothing else
            console.print(f"{e.why}: {len(verdicts)} of {len(tasks)} mutants done", highlight=False, markup=False)
            sys.exit(exit_code(e))
    ordered = [verdicts[m] for m in chosen]
    unexpected = {v.mutant: why for v in ordered if (why := surprise(v, survivors))}
    report(ordered, unexpected, as_json)
    outputs = Outputs()
    if summary:
        outputs.append(summary, "--summary", mutate_markdown(gate_file, ordered, unexpected))
    outputs.exit(EXIT_VIOLATED if unexpected else EXIT_HOLDS)


def surprise(v: Verdict, survivors: list[str]) -> str:
    """Why the gate file does not expect `v` ("" where it does): a kill of a
    listed survivor, a survivor not listed, or a hunt that did not finish."""
    if v.status in ("error", "untested"):
        return f"{v.status}: {v.reason()}"
    if v.status == "killed":
        return "was killed: remove it from [mutation] survivors" if v.mutant in survivors else ""
    return "" if v.mutant in survivors else f"{v.status} (not listed in [mutation] survivors)"


def score(verdicts: list[Verdict]) -> tuple[int, int]:
    """(killed, mutants the gate could tell apart from their base: killed or survived)."""
    killed = sum(v.status == "killed" for v in verdicts)
    return killed, killed + sum(v.status == "survived" for v in verdicts)


def report(verdicts: list[Verdict], unexpected: dict[str, str], as_json: bool) -> None:
    killed, telling = score(verdicts)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "score": {"killed": killed, "non_equivalent": telling, "mutants": len(verdicts)},
                    "mutants": [
                        {
                            "mutant": v.mutant,
                            "base": v.base,
                            "status": v.status,
                            "killed_by": v.killed_by,
                            "invariant": v.invariant,
                            "steps": v.steps,
                            "entries_run": v.ran,
                            "counts_moved": v.moved,
                            "reason": v.reason(),
                            "command": v.command(),
                            "expected": v.mutant not in unexpected,
                        }
                        for v in verdicts
                    ],
                }
            )
        )
        return
    out = stdout_console()
    for v in verdicts:
        out.print(f"{v.mutant} ({v.base}): {v.status.upper()}: {v.reason()}", highlight=False, markup=False)
        if v.command():
            out.print(f"  {v.command()}", highlight=False, markup=False, soft_wrap=True)
    out.print(f"mutation score: {killed} killed of {telling} the gate can tell apart ({len(verdicts)} mutants)")
    for mutant, why in unexpected.items():
        out.print(f"unexpected: {mutant} {why}", highlight=False, markup=False)
