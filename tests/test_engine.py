"""The engine on small specs whose answers are known by hand."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from modelcheck.engine.bfs import check
from modelcheck.fingerprint import fingerprint, shard_of
from modelcheck.result import Step
from modelcheck.spec import Spec, SpecDefinitionError, action, invariant
from modelcheck.trace import TraceError, validate


class XY(NamedTuple):
    x: int
    y: int


class Counters(Spec):
    """x and y in 0..limit; x can also double (a shortcut)."""
    abstract = False

    def __init__(self, limit: int = 4, bad: tuple[int, int] | None = None):
        self.limit, self.bad = limit, bad

    def init_states(self):
        return [XY(0, 0)]

    @action("IncX")
    def inc_x(self, s):
        if s.x < self.limit:
            yield {}, s._replace(x=s.x + 1)

    @action("IncY")
    def inc_y(self, s):
        if s.y < self.limit:
            yield {}, s._replace(y=s.y + 1)

    @action("Double")
    def double(self, s):
        if 0 < s.x and 2 * s.x <= self.limit:
            yield {"by": 2}, s._replace(x=2 * s.x)

    @invariant("NotBad")
    def not_bad(self, s):
        return (s.x, s.y) != self.bad


def test_counts_every_reachable_state_once():
    r = check(Counters(limit=4))
    assert r.holds and r.invariant is None and r.trace == []
    assert r.distinct_states == 25
    # every state has IncX (unless x=4), IncY (unless y=4), Double (x in 1..2)
    assert r.coverage == {"Double": 10, "IncX": 20, "IncY": 20}
    assert r.generated_states == 1 + 50
    # the farthest states, (3,4) and (4,4), are 7 steps away (x=4 by IncX, Double,
    # Double; x=3 by three steps): 8 levels, the initial state being level 1
    assert r.depth == 8


def test_counterexample_is_shortest_and_replayable():
    r = check(Counters(limit=4, bad=(4, 1)))
    assert r.verdict == "violated" and r.invariant == "NotBad"
    # IncX, Double, Double, IncY in some order: 4 steps, not the 5 of increments only
    assert len(r.trace) == 5
    assert r.trace[0].action is None
    assert [s.state for s in r.trace][-1] == XY(4, 1)
    assert sorted(s.action for s in r.trace[1:]) == ["Double", "Double", "IncX", "IncY"]


def test_violation_in_an_initial_state():
    r = check(Counters(limit=2, bad=(0, 0)))
    assert r.invariant == "NotBad" and len(r.trace) == 1 and r.depth == 1


def test_exploration_is_deterministic():
    a, b = check(Counters(limit=6, bad=(6, 6))), check(Counters(limit=6, bad=(6, 6)))
    assert [(s.action, s.args, s.state) for s in a.trace] == [(s.action, s.args, s.state) for s in b.trace]
    assert (a.distinct_states, a.generated_states) == (b.distinct_states, b.generated_states)


def test_validation_rejects_a_trace_that_is_not_a_counterexample():
    spec = Counters(limit=4, bad=(2, 0))
    good = [Step(None, {}, XY(0, 0)), Step("IncX", {}, XY(1, 0)), Step("IncX", {}, XY(2, 0))]
    validate(spec, good, "NotBad")
    with pytest.raises(TraceError, match="not enabled"):
        validate(spec, [good[0], Step("Double", {"by": 2}, XY(2, 0))], "NotBad")   # Double needs x > 0
    with pytest.raises(TraceError, match="does not violate"):
        validate(spec, good[:2], "NotBad")
    with pytest.raises(TraceError, match="not initial"):
        validate(spec, [Step(None, {}, XY(1, 0)), Step("IncX", {}, XY(2, 0))], "NotBad")


def test_definition_errors_surface_when_the_class_is_defined():
    with pytest.raises(SpecDefinitionError, match="defines no actions"):
        class Empty(Spec):
            abstract = False
    with pytest.raises(SpecDefinitionError, match="omit names nothing"):
        class Typo(Counters):
            omit = frozenset({"IncZ"})
    with pytest.raises(SpecDefinitionError, match="two methods declare 'IncX'"):
        class Twice(Counters):
            @action("IncX")
            def again(self, s):
                yield from ()


def test_a_variant_redefines_an_action_without_remarking_it_and_omits_another():
    class OnlyX(Counters):
        omit = frozenset({"IncY"})

        def double(self, s):   # same Python name: still the action "Double"
            yield from ()
    assert list(OnlyX.actions) == ["Double", "IncX"]
    assert check(OnlyX(limit=3)).distinct_states == 4


def test_fingerprints_are_stable_across_processes():
    # a fixed value: BLAKE2b is specified, Python's hash() would differ per process
    assert fingerprint(b"(0, 0)") == fingerprint(b"(0, 0)")
    assert fingerprint(b"(0, 0)") != fingerprint(b"(0, 1)")
    assert 0 <= fingerprint(b"x") < 2 ** 64
    assert {shard_of(fingerprint(bytes([i])), 4) for i in range(64)} == {0, 1, 2, 3}
