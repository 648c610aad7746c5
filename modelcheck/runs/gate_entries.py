"""A gate file's entries and what an entry can fail on (runs/gate.py runs them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..config import ConfigError
from ..engine.refinement.refine import check as refine
from ..refinement import Image
from ..views.refinement import failure_line
from .matrix import Cell, Loader, Row, read_entries
from .refines import LoadAs, images

ENTRY_KEYS = {
    "name",
    "config",
    "expect",
    "states",
    "budget_s",
    "note",
    "symmetry",
    "exercises",
    "goals",
    "refines",
    "max_violations",
    "further",
}
VARIANT = "variant"  # the config key that names a spec's variant (the protocol's loader reads it)


@dataclass(frozen=True)
class Entry:
    cell: Cell
    states: int | None
    budget_s: float | None
    refines: str | None = None  # a variant the entry's must refine (`modelcheck refines`)
    further: tuple[str, ...] | None = None  # the invariants violated after the first, in order (max_violations)


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
        most, further = e.get("max_violations", 1), e.get("further")
        if not isinstance(most, int) or isinstance(most, bool) or most < 1:
            raise ConfigError(f"{e['where']}: max_violations is {most!r}; allowed: a positive integer")
        if further is not None and (
            not isinstance(further, list) or not all(isinstance(n, str) for n in further) or len(further) >= most
        ):
            raise ConfigError(
                f"{e['where']}: further is {further!r}; allowed: a list of the invariants violated after the "
                f"first, fewer than max_violations ({most})"
            )
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
                max_violations=most,
            ),
            states,
            budget,
            refines,
            None if further is None else tuple(further),
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
    if entry.further is not None and tuple(row.further) != entry.further:
        failures.append(Failure(Kind.VERDICT, f"further violations: expected {list(entry.further)}, got {row.further}"))
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
