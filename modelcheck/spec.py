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

import json
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import Any, ClassVar

from .config import ConfigError

Args = dict[str, Any]
State = Any  # any immutable value whose canonical() is deterministic
Cell = list[tuple[str, str]]  # a trace view cell: (text, rich style) segments


class SpecDefinitionError(TypeError):
    """A spec class is malformed (raised when the class is defined)."""


class SymmetryError(ConfigError):
    """The spec's rules tell some processes apart, so symmetry reduction
    would merge states that behave differently (the message says why)."""


@dataclass(frozen=True)
class Param:
    """An action's argument: the ints it ranges over in a spec instance, in
    the order instances are enumerated, and how a value reads in traces and
    scenarios (`show`). A value equal to `absent` means the argument does
    not apply to this instance (e.g. no election happened): it is left out
    of the instance's arguments."""

    domain: Callable[[Any], Sequence[int]]
    show: Callable[[int], Any] | None = None
    absent: int | None = None


@dataclass(frozen=True)
class Field:
    """A state field's value range (each element's, for a tuple field of
    `length` elements): the kernel packs the field in just enough bits, and
    a value outside the range stops a check with an error naming it."""

    name: str
    lo: int
    hi: int
    length: int | None = None


def action(
    name: str,
    coverage_by: str | None = None,
    *,
    needs: str | None = None,
    bound: str | None = None,
    told: Callable[[Any], str] | None = None,
    decides: Callable[[Any, Args, Any], dict[str, Any]] | None = None,
    **params: Param,
) -> Callable:
    """Mark a method `(self, state, *args) -> State | None` as the action
    `name`, its arguments ranging over `params` (in this order). With
    `coverage_by` (one of the arguments), coverage counts each value of it
    apart, as `Name(value)`: an action that multiplexes several kinds of
    step (an election type) then shows which kinds fired. `needs` names
    the feature of the protocol it belongs to (see `Spec.lacks`); `bound`
    the config key that bounds its steps (its first guard is a counter
    below it, so a bound of 0 never enables it). So that
    a story's words sit beside the rule: `told(step)` says what a step of
    it did (the step as the spec's `story` hands it), `decides(self, args,
    state)` what the protocol decided in it, by the spec's predicates."""
    if coverage_by is not None and coverage_by not in params:
        raise SpecDefinitionError(f"action {name!r}: coverage_by={coverage_by!r} is not one of its arguments")

    def mark(fn: Any) -> Any:
        fn._mc_action = name
        fn._mc_params = params
        fn._mc_coverage_by = coverage_by
        fn._mc_needs = needs
        fn._mc_bound = bound
        fn._mc_told = told
        fn._mc_decides = decides
        return fn

    return mark


Explanation = Callable[[Any, Any], str]  # (spec, state) -> why the state breaks a check


def invariant(name: str, explain: Explanation | None = None, needs: str | None = None) -> Callable:
    """Mark a predicate method `(self, state) -> bool` that must always hold.
    `explain(self, state)` words why a state breaks it, beside the predicate
    so that both read one witness (default: the predicate's docstring);
    `needs` names the feature it is a claim of (see `Spec.lacks`)."""

    def mark(fn: Any) -> Any:
        fn._mc_invariant = name
        fn._mc_explain = explain
        fn._mc_needs = needs
        return fn

    return mark


def goal(name: str, *actions: str, needs: str | None = None) -> Callable:
    """Mark a predicate method `(self, before, after) -> bool` over steps
    (of `actions` only, if named) that some reachable step should satisfy:
    a reachability goal, as Stateright's `sometimes`. Engines report, for a
    complete search, which goals some step reached, so a "holds" in which
    the behaviour a claim is about never happened shows as such."""

    def mark(fn: Any) -> Any:
        fn._mc_goal = name
        fn._mc_goal_actions = actions
        fn._mc_needs = needs
        return fn

    return mark


@dataclass(frozen=True)
class Fairness:
    """TLA+'s WF_vars(A) (weak) or SF_vars(A) (strong) for an action A: the
    action as a whole (some instance of it), or, with `each` (one of its
    arguments), each set of its instances that share a value of that
    argument, as `\\A b \\in Broker : WF_vars(A(b))` writes it."""

    strong: bool
    action: str
    each: str | None = None

    def __str__(self) -> str:
        return f"{'SF' if self.strong else 'WF'}({self.action}{f', each {self.each}' if self.each else ''})"


def weak(*actions: str, each: str | None = None) -> tuple[Fairness, ...]:
    """Weak fairness of each named action: one continuously enabled is eventually taken."""
    return tuple(Fairness(False, a, each) for a in actions)


def strong(*actions: str, each: str | None = None) -> tuple[Fairness, ...]:
    """Strong fairness of each named action: one enabled infinitely often is eventually taken."""
    return tuple(Fairness(True, a, each) for a in actions)


# the forms of temporal property a spec may state, each over state predicates:
# []<>P (always eventually), <>[]P (eventually always), P ~> Q (leads to)
ALWAYS_EVENTUALLY, EVENTUALLY_ALWAYS, LEADS_TO = "[]<>", "<>[]", "~>"


def _temporal(form: str, name: str, fairness: tuple, explain: Explanation | None) -> Callable:
    flat = tuple(f for group in fairness for f in (group if isinstance(group, tuple) else (group,)))
    bad = [f for f in flat if not isinstance(f, Fairness)]
    if bad:
        raise SpecDefinitionError(f"property {name!r}: {bad[0]!r} is not weak(...) or strong(...) fairness")

    def mark(fn: Any) -> Any:
        fn._mc_property = name
        fn._mc_form = form
        fn._mc_fairness = flat
        fn._mc_explain = explain
        return fn

    return mark


def always_eventually(
    name: str, *fairness: Fairness | tuple[Fairness, ...], explain: Explanation | None = None
) -> Callable:
    """Mark a predicate `(self, state) -> bool` P as the property []<>P:
    every fair behaviour meets P again and again (`explain` as for an
    invariant: how a lasso's last state misses it)."""
    return _temporal(ALWAYS_EVENTUALLY, name, fairness, explain)


def eventually_always(
    name: str, *fairness: Fairness | tuple[Fairness, ...], explain: Explanation | None = None
) -> Callable:
    """Mark a predicate `(self, state) -> bool` P as the property <>[]P:
    every fair behaviour ends in states where P holds for good."""
    return _temporal(EVENTUALLY_ALWAYS, name, fairness, explain)


def leads_to(name: str, *fairness: Fairness | tuple[Fairness, ...], explain: Explanation | None = None) -> Callable:
    """Mark a method `(self, state) -> (bool, bool)`, the predicates (P, Q),
    as the property P ~> Q: in every fair behaviour, a state where P holds
    is followed (or accompanied) by one where Q holds."""
    return _temporal(LEADS_TO, name, fairness, explain)


def _collect(cls: type, marker: str) -> dict[str, tuple[Any, list[Any]]]:
    """Marked methods by declared name: (the method, the definitions along
    the MRO that carry the mark, nearest first). An override keeps the name
    (and, for an action, the arguments) its base declared, so a variant may
    redefine an action without re-marking it, or re-mark it to change its
    arguments; what a re-mark leaves out (None) it keeps from its base's."""
    found: dict[str, tuple[Any, list[Any]]] = {}
    for attr in dir(cls):  # dir() is sorted: deterministic
        marks = [d for d in (vars(k)[attr] for k in cls.__mro__ if attr in vars(k)) if hasattr(d, marker)]
        if not marks:
            continue
        name = getattr(marks[0], marker)
        if name in found:
            raise SpecDefinitionError(f"{cls.__name__}: two methods declare {name!r}")
        found[name] = (getattr(cls, attr), marks)
    return found


def _declared(marks: list[Any], key: str) -> Any:
    """What the nearest of `marks` that says declares as `key` (None if none does)."""
    return next((v for m in marks if (v := getattr(m, key, None)) is not None), None)


def _check_params(cls: type, name: str, fn: Callable, params: dict[str, Any]) -> None:
    bad = [k for k, p in params.items() if not isinstance(p, Param)]
    if bad:
        raise SpecDefinitionError(f"{cls.__name__}: action {name!r}: argument {bad[0]!r} is not a Param")
    code = fn.__code__
    if code.co_argcount != 2 + len(params):
        raise SpecDefinitionError(
            f"{cls.__name__}: action {name!r} declares {len(params)} argument(s) "
            f"({', '.join(params) or 'none'}) but its method takes "
            f"{code.co_argcount - 2} after (self, state)"
        )


class Spec:
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
        """Lossless bytes of a state (default: pickle)."""
        return pickle.dumps(state, pickle.HIGHEST_PROTOCOL)

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

    # --- presentation hooks (defaults suit any spec) ---------------------------
    # Variables the trace view shows (by default one column each); the others
    # appear in a view only when they change.
    trace_columns: ClassVar[tuple[str, ...]] = ()
    # One line read under a trace view: what its marks and colours mean.
    trace_legend: ClassVar[str] = ""
    # Apalache types of the described variables (modelcheck.views.itf constructors),
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
        """One sentence on why `state` violates `invariant`: its declared
        explanation, else (and for a temporal property without one) what it
        asks, its docstring's first paragraph."""
        if invariant in self.explanations:
            return self.explanations[invariant](self, state)
        fn = self.invariants[invariant] if invariant in self.invariants else self.properties[invariant]
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split())

    def story(self, trace: list, invariant: str, loop: int | None = None) -> str:
        """A counterexample in a few sentences (default: the actions, then
        the explanation); a spec may tell it in its own domain's words."""
        steps = ", ".join(s.action + (str(s.args) if s.args else "") for s in trace[1:])
        return (
            f"{steps}{self.loop_sentence(trace, loop)}: {invariant} breaks: {self.explain(invariant, trace[-1].state)}."
        )

    def loop_sentence(self, trace: list, loop: int | None) -> str:
        """How a lasso goes on for ever ("" for an invariant's trace)."""
        if loop is None:
            return ""
        if loop == len(trace) - 1:
            return ", then nothing changes for ever (every fair action taken or disabled)"
        return f", then steps {loop + 1}..{len(trace) - 1} repeat for ever (every fair action taken or disabled)"

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
        names = self.checked_invariants() if names is None else names
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
        return [(n, self.invariants[n]) for n in self.checked_invariants()]

    def first_violation(self, state: State) -> str | None:
        """The first checked invariant that fails (the hot path's form of violated())."""
        for name, holds in self._checks:
            if not holds(self, state):
                return name
        return None
