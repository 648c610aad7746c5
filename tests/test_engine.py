"""The engine on a small spec whose answers are known by hand, unrelated
to Kafka: the reference engine, and the kernel compiling a spec it was not
written for (the engine never imports the protocol)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from modelcheck.declare import Field, Param, SpecDefinitionError, action, invariant
from modelcheck.engine import run
from modelcheck.engine.bfs import check
from modelcheck.engine.options import CheckOptions
from modelcheck.fingerprint import fingerprint
from modelcheck.result import Step
from modelcheck.spec import Spec
from modelcheck.trace import TraceError, validate

ROOT = Path(__file__).parent.parent


class XY(NamedTuple):
    x: int
    y: int


class XYZ(NamedTuple):
    x: int
    y: int
    z: int


class Counters(Spec):
    """x and y in 0..limit; x can also double (a shortcut)."""

    abstract = False
    state_type = XY

    def __init__(self, limit: int = 4, bad: tuple[int, int] = (-1, -1)):
        self.limit, self.bad = limit, bad
        self.n = 1

    def init_states(self):
        return [XY(0, 0)]

    def layout(self):
        return [Field("x", 0, self.limit), Field("y", 0, self.limit)]

    @action("IncX")
    def inc_x(self, s):
        return s._replace(x=s.x + 1) if s.x < self.limit else None

    @action("IncY")
    def inc_y(self, s):
        return s._replace(y=s.y + 1) if s.y < self.limit else None

    @action("Double", by=Param(lambda spec: [2]))
    def double(self, s, by):
        if 0 < s.x and by * s.x <= self.limit:
            return s._replace(x=by * s.x)
        return None

    @invariant("NotBad")
    def not_bad(self, s):
        return (s.x, s.y) != self.bad


class Cube(Spec):
    """x, y, z in 0..limit, each step adds 1 to one of them: (limit+1)^3
    states in only 3*limit+1 levels (a wide space; tests/test_kernel.py
    races its compile against the interpreted engine)."""

    abstract = False
    state_type = XYZ

    def __init__(self, limit: int):
        self.limit, self.n = limit, 1

    def init_states(self):
        return [XYZ(0, 0, 0)]

    def layout(self):
        return [Field(name, 0, self.limit) for name in XYZ._fields]

    @action("Step", axis=Param(lambda spec: range(3)))
    def step(self, s, axis):
        if axis == 0:
            return s._replace(x=s.x + 1) if s.x < self.limit else None
        if axis == 1:
            return s._replace(y=s.y + 1) if s.y < self.limit else None
        return s._replace(z=s.z + 1) if s.z < self.limit else None

    @invariant("Bounded")
    def bounded(self, s):
        return s.x + s.y + s.z <= 3 * self.limit


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
        validate(spec, [good[0], Step("Double", {"by": 2}, XY(2, 0))], "NotBad")  # Double needs x > 0
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
                return None

    with pytest.raises(SpecDefinitionError, match="declares 1 argument.*takes 0"):

        class Arity(Counters):
            @action("Double", by=Param(lambda spec: [2]))
            def double(self, s):
                return None

    with pytest.raises(SpecDefinitionError, match="'by' is not a Param"):

        class NotAParam(Counters):
            @action("Double", by=[2])
            def double(self, s, by):
                return None


def test_a_variant_redefines_an_action_without_remarking_it_and_omits_another():
    class OnlyX(Counters):
        omit = frozenset({"IncY"})

        def double(self, s, by):  # same Python name: still the action "Double", its arguments kept
            return None

    assert list(OnlyX.actions) == ["Double", "IncX"]
    assert check(OnlyX(limit=3)).distinct_states == 4


@pytest.mark.parametrize("bad", [(-1, -1), (4, 1), (0, 0)], ids=["holds", "violated", "initial"])
def test_the_kernel_compiles_a_spec_it_was_not_written_for(bad):
    """The same answers from the compiled toy spec: the kernel knows only
    the Spec interface."""

    def summary(r):
        return (
            r.verdict,
            r.invariant,
            r.distinct_states,
            r.generated_states,
            r.depth,
            r.coverage,
            [(x.action, x.args, x.state) for x in r.trace],
        )

    reference = check(Counters(limit=4, bad=bad))
    for workers in (1, 2):
        got = run(Counters(limit=4, bad=bad), CheckOptions.of(engine="fast", workers=workers))
        assert got.run_info["kernel"] == "compiled" and got.run_info["state_keys"] == "exact"
        assert summary(got) == summary(reference)


# XXH3-64 (seed 0) of fixed bytes, computed once with xxhash: the first is
# the XXH3 specification's own test vector (empty input). Fingerprints
# identify states across processes and runs, so a changed hash function,
# seed or variant fails here, not as silently different counts.
XXH3_64 = {
    b"": 0x2D06800538D394C2,
    b"(0, 0)": 0xA763754B4D813419,
    b"(0, 1)": 0x6ECAE31C3F292CC7,
    bytes(range(256)): 0x9408A4433B952D71,
}

# fingerprints of the states two steps from the Kafka spec's initial state,
# computed the same way in this process and in another one
STATE_FINGERPRINTS = """
from modelcheck.fingerprint import fingerprint
from specs.kafka_elr import load
spec = load({"metadata": "propagated", "max_admin_elections": 1})
states = spec.init_states()
for _ in range(2):
    states += [t for s in states for _name, _args, t in spec.successors(s)]
fingerprints = [fingerprint(spec.canonical(s)) for s in states]
"""


def test_fingerprints_are_pinned_xxh3_64_values():
    assert {data: fingerprint(data) for data in XXH3_64} == XXH3_64


def test_fingerprints_are_the_same_in_a_process_with_another_hash_seed():
    """Python's hash() is salted per process (PYTHONHASHSEED); state
    fingerprints, and the encodings they hash, must not be."""
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            STATE_FINGERPRINTS + "import json\nprint(json.dumps([hash('modelcheck'), fingerprints]))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    child_hash, theirs = json.loads(child.stdout)
    here: dict = {}
    exec(STATE_FINGERPRINTS, here)
    assert child_hash != hash("modelcheck")  # the processes do salt hash() differently
    assert len(set(here["fingerprints"])) > 20 and theirs == here["fingerprints"]
