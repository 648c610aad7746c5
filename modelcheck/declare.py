"""How a spec declares itself: `@action` (with its arguments' `Param`
domains, its bound, its sentence), `@invariant`, `@goal`, the temporal
properties and their fairness, and the `Field` ranges of a layout. Spec
(spec.py) collects what a class declares when the class is defined."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .config import ConfigError

Args = dict[str, Any]


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
    # the attributes some class of the MRO marks, sorted (deterministic); a
    # walk of dir(cls) looked at every attribute of every class, 0.4 s of
    # each process's start
    marked = sorted({attr for k in cls.__mro__ for attr, d in vars(k).items() if hasattr(d, marker)})
    for attr in marked:
        marks = [d for d in (vars(k)[attr] for k in cls.__mro__ if attr in vars(k)) if hasattr(d, marker)]
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
