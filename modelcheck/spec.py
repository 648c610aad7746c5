"""The interface between the engine and a protocol.

A spec is a class: `@action` methods are guarded transitions (generators that
yield nothing when disabled, one `(args, next_state)` pair per enabled
instance), `@invariant` methods are named predicates. Both are collected by
introspection when the class is defined, so a variant is a subclass that
redefines only what differs, and mistakes surface at definition time.
"""

from __future__ import annotations

import json
import pickle
from functools import cached_property
from typing import Any, Callable, ClassVar, Iterable, Iterator

from .config import ConfigError

Args = dict[str, Any]
State = Any  # any immutable value whose canonical() is deterministic
Cell = list[tuple[str, str]]  # a trace view cell: (text, rich style) segments


class SpecDefinitionError(TypeError):
    """A spec class is malformed (raised when the class is defined)."""


class SymmetryError(ConfigError):
    """The spec's rules tell some processes apart, so symmetry reduction
    would merge states that behave differently (the message says why)."""


def action(name: str) -> Callable:
    """Mark a generator method `(self, state) -> Iterator[(args, state)]`."""
    def mark(fn: Callable) -> Callable:
        fn._mc_action = name
        return fn
    return mark


def invariant(name: str) -> Callable:
    """Mark a predicate method `(self, state) -> bool` that must always hold."""
    def mark(fn: Callable) -> Callable:
        fn._mc_invariant = name
        return fn
    return mark


def _collect(cls: type, marker: str) -> dict[str, Callable]:
    """Marked methods by declared name. An override keeps the name its
    base declared, so a variant may redefine an action without re-marking."""
    found: dict[str, Callable] = {}
    for attr in dir(cls):  # dir() is sorted: deterministic
        defs = [vars(k)[attr] for k in cls.__mro__ if attr in vars(k)]
        name = next((getattr(d, marker) for d in defs if hasattr(d, marker)), None)
        if name is None:
            continue
        if name in found:
            raise SpecDefinitionError(f"{cls.__name__}: two methods declare {name!r}")
        found[name] = getattr(cls, attr)
    return found


class Spec:
    """Base class of every protocol spec.

    Subclasses define `init_states`, `@action`s and `@invariant`s, and may set
    `omit` to drop inherited actions or invariants by name (a variant that
    lacks a mechanism). Actions are enumerated in sorted name order so that
    exploration order, and so every result, is deterministic.
    """

    omit: ClassVar[frozenset[str]] = frozenset()
    actions: ClassVar[dict[str, Callable]] = {}
    invariants: ClassVar[dict[str, Callable]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        acts = _collect(cls, "_mc_action")
        invs = _collect(cls, "_mc_invariant")
        unknown = sorted(cls.omit - acts.keys() - invs.keys())
        if unknown:
            raise SpecDefinitionError(f"{cls.__name__}.omit names nothing defined: {unknown}")
        cls.actions = {n: acts[n] for n in sorted(acts) if n not in cls.omit}
        cls.invariants = {n: invs[n] for n in sorted(invs) if n not in cls.omit}
        abstract = vars(cls).get("abstract", False)
        if not abstract and not cls.actions:
            raise SpecDefinitionError(f"{cls.__name__} defines no actions")

    abstract: ClassVar[bool] = True

    # --- what a spec provides -------------------------------------------
    def init_states(self) -> list[State]:
        raise NotImplementedError

    def checked_invariants(self) -> list[str]:
        """Names of the invariants to check (default: all of the spec's)."""
        return list(self.invariants)

    def canonical(self, state: State) -> bytes:
        """The bytes that identify a state (TLC's VIEW); default: its repr."""
        return repr(tuple(state)).encode()

    # Between processes the fast engine ships states as bytes: `encode` must
    # be lossless (decode(encode(s)) == s), unlike canonical(), which may
    # merge states (a VIEW, a symmetry). A spec whose canonical bytes are
    # also its encoding says so, and each successor is then encoded once.
    def encode(self, state: State) -> bytes:
        """Lossless bytes of a state (default: pickle)."""
        return pickle.dumps(state, pickle.HIGHEST_PROTOCOL)

    def decode(self, data: bytes) -> State:
        """The state that `encode` turned into `data`."""
        return pickle.loads(data)

    def canonical_is_encoding(self) -> bool:
        """Whether canonical(s) == encode(s) for every state (default: no)."""
        return False

    def enable_symmetry(self) -> None:
        """From now on canonical() gives the same bytes to states that differ
        only by a permutation the spec's rules cannot tell apart (TLC's
        SYMMETRY), and only to those, so each class is explored once (the
        engines still explore the states themselves). A spec that
        declares no symmetry, or whose rules are order-dependent in this
        config, raises SymmetryError."""
        raise SymmetryError(f"{type(self).__name__} declares no symmetry")

    def describe(self, state: State) -> dict[str, Any]:
        """Named, JSON-friendly variables of a state, for traces."""
        return dict(state._asdict())

    # --- presentation hooks (defaults suit any spec) ---------------------------
    # Variables the trace view shows (by default one column each); the others
    # appear in a view only when they change.
    trace_columns: ClassVar[tuple[str, ...]] = ()
    # One line read under a trace view: what its marks and colours mean.
    trace_legend: ClassVar[str] = ""
    # Apalache types of the described variables (modelcheck.itf constructors),
    # so an ITF export writes sets as sets and tuples as tuples; a variable
    # not listed is written by its JSON shape.
    itf_types: ClassVar[dict[str, Any]] = {}

    def format_value(self, name: str, value: Any) -> str:
        """How a variable's value is shown in a trace table."""
        return json.dumps(value, separators=(",", ":"))

    def trace_row(self, state: dict[str, Any]) -> tuple[dict[str, Cell], dict[str, Cell]]:
        """One row of a trace view from described variables: (columns,
        lanes), each label -> [(text, rich style)]. Lanes are per-process
        cells (one a broker), drawn side by side as in a timeline figure."""
        return {c: [(self.format_value(c, state[c]), "")] for c in self.trace_columns}, {}

    def explain(self, invariant: str, state: State) -> str:
        """One sentence on why `state` violates `invariant`."""
        doc = (self.invariants[invariant].__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split())

    def story(self, trace: list, invariant: str) -> str:
        """A counterexample in a few sentences (default: the actions, then
        the explanation); a spec may tell it in its own domain's words."""
        steps = ", ".join(s.action + (str(s.args) if s.args else "") for s in trace[1:])
        return f"{steps}: {invariant} breaks: {self.explain(invariant, trace[-1].state)}."

    # --- what the engine uses ----------------------------------------------
    def never_enabled(self) -> frozenset[str]:
        """Actions this instance's config can never enable (e.g. a fault whose
        bound is 0); successors() does not call them. Default: none."""
        return frozenset()

    @cached_property
    def _live_actions(self) -> list[tuple[str, Callable]]:
        dormant = self.never_enabled()
        return [(name, fn) for name, fn in self.actions.items() if name not in dormant]

    def successors(self, state: State) -> list[tuple[str, Args, State]]:
        """Every enabled action instance, in deterministic order (a list:
        cheaper than yielding through a second generator, on the hot path)."""
        return [(name, args, nxt) for name, fn in self._live_actions for args, nxt in fn(self, state)]

    def instances(self, name: str, state: State) -> Iterable[tuple[Args, State]]:
        return self.actions[name](self, state)

    def violated(self, state: State, names: Iterable[str] | None = None) -> list[str]:
        """The invariants (of `names`, default the checked ones) that fail."""
        names = self.checked_invariants() if names is None else names
        return [n for n in names if not self.invariants[n](self, state)]

    @cached_property
    def _checks(self) -> list[tuple[str, Callable]]:
        return [(n, self.invariants[n]) for n in self.checked_invariants()]

    def first_violation(self, state: State) -> str | None:
        """The first checked invariant that fails (the hot path's form of violated())."""
        for name, holds in self._checks:
            if not holds(self, state):
                return name
        return None
