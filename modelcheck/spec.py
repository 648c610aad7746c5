"""The interface between the engine and a protocol.

A spec is a class. An `@action` is a guarded transition written as TLA+
writes one under an existential, `\\E b \\in Broker : FenceBroker(b)`: a
method `(self, state, *args) -> next state | None` (None: disabled for
these arguments), whose arguments range over declared domains (`Param`).
`@invariant` methods are named predicates. Both are collected by
introspection when the class is defined, so a variant is a subclass that
redefines only what differs, and mistakes surface at definition time.

The same methods run in two ways: as Python here (the reference engine,
replay, traces, the viewers) and compiled by engine/kernel/ for the fast
and Spark engines. So the code reachable from actions, invariants and
`representative` keeps to what both can run: ints, bools and fixed-length
tuples of ints, a NamedTuple state (`state_type`) updated with `_replace`,
loops over ranges, early returns, and the primitives of modelcheck.ops; no
lists, dicts, sets, strings or generators. `layout` declares the value range
of every state field, from which the kernel packs states into machine words.
"""

from __future__ import annotations

import copy
import io
import pickle
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from itertools import product
from typing import Any, ClassVar

from .declare import (
    LEADS_TO,
    Explanation,
    Fairness,
    Field,
    Param,
    SpecDefinitionError,
    SymmetryError,
    _check_params,
    _collect,
    _declared,
)
from .presentation import Presentation

Args = dict[str, Any]
State = Any  # any immutable value whose canonical() is deterministic


class Spec(Presentation):
    """Base class of every protocol spec.

    Subclasses define `init_states`, `@action`s, `@invariant`s, `@goal`s and
    temporal properties (`@leads_to`, `@always_eventually`,
    `@eventually_always`, each with its fairness), and may set `omit` to
    drop inherited actions, invariants, goals or properties by name
    (a variant that lacks a mechanism). Actions are enumerated in sorted name order so that
    exploration order, and so every result, is deterministic.
    """

    omit: ClassVar[frozenset[str]] = frozenset()
    # features of the protocol the spec lacks: what `needs` one is omitted
    lacks: ClassVar[frozenset[str]] = frozenset()
    actions: ClassVar[dict[str, Callable]] = {}
    params: ClassVar[dict[str, dict[str, Param]]] = {}  # action -> its arguments, in order
    coverage_by: ClassVar[dict[str, str | None]] = {}  # action -> the argument its coverage splits on
    invariants: ClassVar[dict[str, Callable]] = {}
    goals: ClassVar[dict[str, Callable]] = {}
    goal_actions: ClassVar[dict[str, tuple[str, ...]]] = {}  # goal -> the actions it is about (empty: all)
    properties: ClassVar[dict[str, Callable]] = {}  # temporal properties: name -> their predicate(s)
    property_form: ClassVar[dict[str, str]] = {}  # name -> ALWAYS_EVENTUALLY, EVENTUALLY_ALWAYS or LEADS_TO
    fairness: ClassVar[dict[str, tuple[Fairness, ...]]] = {}  # name -> the fairness it is checked under
    explanations: ClassVar[dict[str, Explanation]] = {}  # invariant or property -> its declared explanation
    needs: ClassVar[dict[str, str]] = {}  # action, invariant or goal -> the feature it needs (if any)
    bounds: ClassVar[dict[str, str]] = {}  # action -> the config key that bounds it (if declared)
    told: ClassVar[dict[str, Callable[[Any], str]]] = {}  # action -> its words for a step (if declared)
    decides: ClassVar[dict[str, Callable[[Any, Args, Any], dict[str, Any]]]] = {}  # action -> its decisions
    state_type: ClassVar[Any] = tuple  # the NamedTuple class of the spec's states
    symmetric: bool = False  # set by enable_symmetry()
    n: int  # processes (a state's per-process tuples): a kernel is compiled for n
    config: dict[str, Any]  # the config the instance was made from, every key resolved

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        acts = _collect(cls, "_mc_action")
        invs = _collect(cls, "_mc_invariant")
        goals = _collect(cls, "_mc_goal")
        props = _collect(cls, "_mc_property")
        unknown = sorted(cls.omit - acts.keys() - invs.keys() - goals.keys() - props.keys())
        if unknown:
            raise SpecDefinitionError(f"{cls.__name__}.omit names nothing defined: {unknown}")
        needs = {
            n: f for found in (acts, invs, goals) for n, (_, m) in found.items() if (f := _declared(m, "_mc_needs"))
        }
        unknown = sorted(cls.lacks - set(needs.values()))
        if unknown:
            raise SpecDefinitionError(f"{cls.__name__}.lacks names no feature anything needs: {unknown}")
        omit = cls.omit | {n for n, feature in needs.items() if feature in cls.lacks}
        cls.actions = {n: acts[n][0] for n in sorted(acts) if n not in omit}
        cls.params = {n: acts[n][1][0]._mc_params for n in cls.actions}
        cls.coverage_by = {n: acts[n][1][0]._mc_coverage_by for n in cls.actions}
        cls.bounds = {n: b for n in cls.actions if (b := _declared(acts[n][1], "_mc_bound")) is not None}
        cls.told = {n: f for n in cls.actions if (f := _declared(acts[n][1], "_mc_told")) is not None}
        cls.decides = {n: f for n in cls.actions if (f := _declared(acts[n][1], "_mc_decides")) is not None}
        for n, fn in cls.actions.items():
            _check_params(cls, n, fn, cls.params[n])
        cls.invariants = {n: invs[n][0] for n in sorted(invs) if n not in omit}
        cls.goals = {n: goals[n][0] for n in sorted(goals) if n not in omit}
        cls.goal_actions = {n: goals[n][1][0]._mc_goal_actions for n in cls.goals}
        for n, about in cls.goal_actions.items():
            unknown = [a for a in about if a not in acts]
            if unknown:
                raise SpecDefinitionError(f"{cls.__name__}: goal {n!r} names no action {unknown[0]!r}")
        cls.properties = {n: props[n][0] for n in sorted(props) if n not in omit}
        cls.property_form = {n: props[n][1][0]._mc_form for n in cls.properties}
        cls.needs = {n: f for n, f in needs.items() if n not in omit}
        cls.explanations = {
            n: e
            for found, names in ((invs, cls.invariants), (props, cls.properties))
            for n in names
            if (e := _declared(found[n][1], "_mc_explain")) is not None
        }
        cls.fairness = {}
        for n in cls.properties:
            for f in props[n][1][0]._mc_fairness:
                if f.action not in acts:
                    raise SpecDefinitionError(
                        f"{cls.__name__}: property {n!r}: fairness of {f.action!r}, which is not an action of it"
                    )
                if f.each is not None and f.each not in acts[f.action][1][0]._mc_params:
                    raise SpecDefinitionError(
                        f"{cls.__name__}: property {n!r}: {f}: {f.action} has no argument {f.each!r}"
                    )
            # an action a variant omits is never enabled: fairness of it asks nothing
            cls.fairness[n] = tuple(f for f in props[n][1][0]._mc_fairness if f.action in cls.actions)
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

    # the invariants a search that goes on after violations has found
    # violated already, and no longer checks (--max-violations)
    violated_before: frozenset[str] = frozenset()

    def to_check(self) -> list[str]:
        """The invariants a search checks: checked_invariants(), less those
        it found violated before (the engines read this one)."""
        return [n for n in self.checked_invariants() if n not in self.violated_before]

    def going_on_past(self, found: Iterable[str]) -> Spec:
        """A copy whose search no longer checks the invariants `found`."""
        other = copy.copy(self)
        other.__dict__.pop("_checks", None)  # cached from the invariants checked before
        other.violated_before = self.violated_before | frozenset(found)
        return other

    def checked_properties(self) -> list[str]:
        """Names of the temporal properties to check (default: none; each
        costs the behaviour graph's edges and a search for fair cycles)."""
        return []

    def kernel_family(self) -> Sequence[type[Spec]]:
        """Classes whose rules are compiled into one kernel with this one's,
        each instance running its own class's by a run-time switch: variants
        that share a kernel compile once (the engine keeps those alike in
        state, actions, invariants, goals and properties). Default: its own."""
        return (type(self),)

    def layout(self) -> list[Field]:
        """The range of every field of `state_type`, in its order (what the
        kernel packs); a spec without one runs on the reference engine only."""
        raise NotImplementedError(f"{type(self).__name__} declares no layout")

    def class_size(self, state: State) -> int:
        """How many states the class of `state` (a representative) holds:
        1 unless symmetry is enabled. Engines sum it over the classes they
        visit, to report what the reduction saved."""
        return 1

    def representative(self, state: State) -> State:
        """The state that stands for `state`'s class: itself, unless symmetry
        is enabled (then the one member of its class the spec picks). Both
        executions identify states by it."""
        return state

    def canonical(self, state: State) -> bytes:
        """The bytes that identify a state: its representative's encoding."""
        return self.encode(self.representative(state))

    def encode(self, state: State) -> bytes:
        """Lossless bytes of a state, equal for equal states (default:
        pickle without its memo, which would write a value two fields
        share as a back-reference, so equal states could differ in bytes)."""
        out = io.BytesIO()
        pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
        pickler.fast = True  # no memo: a state holds no cycles
        pickler.dump(state)
        return out.getvalue()

    def enable_symmetry(self) -> None:
        """From now on representative() maps states that differ only by a
        permutation the spec's rules cannot tell apart (TLC's SYMMETRY) to
        one of them, so each class is explored once (the engines still
        explore the states themselves). A spec that declares no symmetry,
        or whose rules are order-dependent in this config, raises
        SymmetryError."""
        raise SymmetryError(f"{type(self).__name__} declares no symmetry")

    def describe(self, state: State) -> dict[str, Any]:
        """Named, JSON-friendly variables of a state, for traces."""
        return dict(state._asdict())

    # --- what the engine uses ----------------------------------------------
    def never_enabled(self) -> frozenset[str]:
        """Actions this instance's config can never enable (e.g. a fault whose
        bound is 0); successors() does not call them. Default: none."""
        return frozenset()

    def domains(self, name: str) -> list[list[int]]:
        """The values each argument of action `name` ranges over here."""
        return [list(p.domain(self)) for p in self.params[name].values()]

    def argument_values(self, name: str, arg: str) -> list[Any]:
        """The values argument `arg` of action `name` takes here, as traces
        and scenarios name them."""
        p = self.params[name][arg]
        return [v if p.show is None else p.show(v) for v in p.domain(self) if v != p.absent]

    def arguments(self, name: str, values: Sequence[int]) -> Args:
        """An instance's arguments as traces and scenarios name them."""
        params = self.params[name]
        return {k: v if p.show is None else p.show(v) for (k, p), v in zip(params.items(), values) if v != p.absent}

    @cached_property
    def _instances(self) -> dict[str, list[tuple[tuple[int, ...], Args]]]:
        """Every action's argument tuples, in enumeration order, with their
        arguments as named (computed once: the hot path only looks them up)."""
        return {
            name: [(values, self.arguments(name, values)) for values in product(*self.domains(name))]
            for name in self.actions
        }

    @cached_property
    def _live_actions(self) -> list[tuple[str, Callable, list[tuple[tuple[int, ...], Args]]]]:
        dormant = self.never_enabled()
        return [(name, fn, self._instances[name]) for name, fn in self.actions.items() if name not in dormant]

    @cached_property
    def coverage_labels(self) -> list[str]:
        """What coverage counts, in order: each action by name, or, for an
        action with `coverage_by`, each value of that argument as
        `Name(value)` (its domain here, in order)."""
        labels = []
        for name in self.actions:
            labels += self.labels_of(name)
        return labels

    def labels_of(self, name: str) -> list[str]:
        """Action `name`'s coverage labels, in order: none if it has no
        instance here (an argument's domain is empty in this config)."""
        if not self._instances[name]:
            return []
        by = self.coverage_by[name]
        if by is None:
            return [name]
        p = self.params[name][by]
        return [f"{name}({v if p.show is None else p.show(v)})" for v in p.domain(self)]

    def first_label(self, name: str) -> int:
        """The place in coverage_labels of action `name`'s first label (0 for
        an action without instances: it never fires)."""
        labels = self.labels_of(name)
        return self.coverage_labels.index(labels[0]) if labels else 0

    def coverage_label(self, name: str, values: Sequence[int]) -> int:
        """The place in coverage_labels of an instance of `name` with argument values `values`."""
        base = self.first_label(name)
        by = self.coverage_by[name]
        if by is None:
            return base
        at = list(self.params[name]).index(by)
        return base + list(self.params[name][by].domain(self)).index(values[at])

    @cached_property
    def instance_base(self) -> dict[str, int]:
        """Every action instance has a number, the same in both executions:
        actions in order, each one's argument tuples in enumeration order;
        an action's first instance is its base."""
        base, at = {}, 0
        for name in self.actions:
            base[name] = at
            at += len(self._instances[name])
        return base

    @cached_property
    def instance_count(self) -> int:
        return sum(len(i) for i in self._instances.values())

    def instance(self, number: int) -> tuple[str, tuple[int, ...]]:
        """The action and argument values of instance `number`."""
        name = next(n for n in reversed(self.actions) if self.instance_base[n] <= number)
        return name, self._instances[name][number - self.instance_base[name]][0]

    @cached_property
    def _labelled_actions(self) -> list[tuple[str, Callable, list[tuple[tuple[int, ...], Args, int, int]]]]:
        return [
            (
                name,
                fn,
                [
                    (values, args, self.coverage_label(name, values), self.instance_base[name] + i)
                    for i, (values, args) in enumerate(instances)
                ],
            )
            for name, fn, instances in self._live_actions
        ]

    def successors(self, state: State) -> list[tuple[str, Args, State]]:
        """Every enabled action instance, in deterministic order: actions by
        name, each one's arguments in their domains' order."""
        return [(name, args, nxt) for name, args, nxt, _label, _instance in self.labelled_successors(state)]

    def labelled_successors(self, state: State) -> list[tuple[str, Args, State, int, int]]:
        """successors(), each with its place in coverage_labels and its instance number."""
        out = []
        for name, fn, instances in self._labelled_actions:
            for values, args, label, number in instances:
                nxt = fn(self, state, *values)
                if nxt is not None:
                    out.append((name, dict(args), nxt, label, number))
        return out

    def instances(self, name: str, state: State) -> list[tuple[Args, State]]:
        """The enabled instances of one action."""
        fn = self.actions[name]
        return [
            (dict(args), nxt) for values, args in self._instances[name] if (nxt := fn(self, state, *values)) is not None
        ]

    def violated(self, state: State, names: Iterable[str] | None = None) -> list[str]:
        """The invariants (of `names`, default the checked ones) that fail."""
        names = self.to_check() if names is None else names
        return [n for n in names if not self.invariants[n](self, state)]

    @cached_property
    def goals_of(self) -> dict[str, list[tuple[str, Callable]]]:
        """action -> the goals about its steps."""
        return {
            a: [(g, fn) for g, fn in self.goals.items() if not self.goal_actions[g] or a in self.goal_actions[g]]
            for a in self.actions
        }

    def reached_goals(self, name: str, before: State, after: State, reached: dict[str, bool]) -> bool:
        """Mark in `reached` the goals a step of action `name` satisfies;
        whether it reached one not reached before."""
        new = False
        for goal_name, holds in self.goals_of[name]:
            if not reached[goal_name] and holds(self, before, after):
                reached[goal_name] = new = True
        return new

    def property_labels(self, state: State) -> int:
        """The temporal properties' predicates in `state`, as bits: property
        i (in `properties` order) puts P at bit 2i and, for a leads-to, Q at
        bit 2i+1 (what the compiled kernel's labels compute)."""
        bits = 0
        for i, (name, fn) in enumerate(self.properties.items()):
            value = fn(self, state)
            p, q = value if self.property_form[name] == LEADS_TO else (value, False)
            bits |= (bool(p) << 2 * i) | (bool(q) << 2 * i + 1)
        return bits

    @cached_property
    def _checks(self) -> list[tuple[str, Callable]]:
        return [(n, self.invariants[n]) for n in self.to_check()]

    def first_violation(self, state: State) -> str | None:
        """The first checked invariant that fails (the hot path's form of violated())."""
        for name, holds in self._checks:
            if not holds(self, state):
                return name
        return None
