"""Temporal properties under --symmetry: the quotient proposes, the states
decide (modelcheck/engine/liveness/quotient.py). Each verdict is held to
the search without symmetry; every lasso is one of states, replayed.

The toys (tests/liveness_specs.py) are the two ways a quotient misleads:
- Token: the quotient's cycle is one step, the states' two;
- Relay: the quotient's cycle looks fair (no class enables both processes'
  Finish), the states' is not (one process's Finish is enabled throughout).
"""

from __future__ import annotations

import tomllib
from itertools import permutations
from pathlib import Path
from typing import NamedTuple

import pytest
from liveness_specs import Relay, Token, TokenState
from resuming import interrupted, resume
from symmetry_classes import rename

from modelcheck.config import ConfigError
from modelcheck.declare import SymmetryError
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.path import Step
from modelcheck.trace import TraceError, validate_lasso
from specs.kafka_elr import load

ROOT = Path(__file__).resolve().parent.parent


def symmetric(spec):
    spec.enable_symmetry()
    return spec


def test_a_one_step_cycle_of_classes_lifts_to_the_two_step_cycle_of_states():
    plain = run(Token(("Rests",)), CheckOptions.of(engine="bfs"))
    r = run(symmetric(Token(("Rests",))), CheckOptions.of(engine="bfs"))
    assert r.distinct_states == 1 < plain.distinct_states == 2
    assert (r.verdict, r.invariant, r.loop) == (plain.verdict, plain.invariant, plain.loop) == ("violated", "Rests", 0)
    assert [(s.action, s.args, s.state.holds) for s in r.trace] == [
        (None, {}, (1, 0)),
        ("Pass", {"p": 0}, (0, 1)),
        ("Pass", {"p": 1}, (1, 0)),
    ]
    assert r.run_info["liveness_under_symmetry"] == {"proposed": 1, "states_explored": 2}


def test_a_lasso_closed_only_up_to_a_renaming_is_refused():
    """validate_lasso compares states, not classes, even with symmetry on."""
    spec = symmetric(Token(("Rests",)))
    half = [Step(None, {}, TokenState((1, 0))), Step("Pass", {"p": 0}, TokenState((0, 1)))]
    with pytest.raises(TraceError, match="does not return to step 0"):
        validate_lasso(spec, half, 0, "Rests")


@pytest.mark.parametrize("prop, verdict", [("FinishesOften", "holds"), ("FinishesOftenUnfairly", "violated")])
def test_a_component_that_looks_fair_on_the_quotient_is_refuted_by_its_states(prop, verdict):
    plain = run(Relay((prop,)), CheckOptions.of(engine="bfs"))
    r = run(symmetric(Relay((prop,))), CheckOptions.of(engine="bfs"))
    assert plain.verdict == r.verdict == verdict and r.distinct_states < plain.distinct_states
    assert r.run_info["liveness_under_symmetry"]["proposed"] == 1  # the flipping component, proposed either way
    if verdict == "violated":
        assert [s.action for s in r.trace[r.loop + 1 :]] == ["Flip", "Flip"]
        validate_lasso(Relay((prop,)), r.trace, r.loop, prop)  # a lasso of states, without symmetry too


# ---- the Kafka spec ------------------------------------------------------------------

SMALL = dict(brokers=2, min_isr=1, max_records=1, max_unclean_shutdowns=2, max_fences=0, max_isr_shrinks=0)
SMALL_CASES = [
    (dict(properties=["BalancedElectsOnceLastKnownElrIsBack", "LeaderlessGetsLeaderOnceBrokersRestart"]), "holds"),
    (dict(properties=["LeaderlessGetsLeader"]), "violated"),
    (dict(unclean_recovery_strategy="none", properties=["LeaderlessGetsLeaderOnceBrokersRestart"]), "violated"),
    (dict(properties=["HwmAdvancesAtMinIsr"]), "holds"),
]


@pytest.mark.parametrize("config, verdict", SMALL_CASES)
@pytest.mark.parametrize("engine", ["bfs", "fast"])
def test_kafka_verdicts_are_the_same_with_and_without_symmetry(config, verdict, engine):
    config = {**SMALL, "acks": ["all"], "invariants": ["TypeOK"], **config}
    plain = run(load(config), CheckOptions.of(engine="fast"))
    r = run(symmetric(load(config)), CheckOptions.of(engine=engine))
    assert plain.verdict == r.verdict == verdict and plain.invariant == r.invariant
    assert r.distinct_states <= plain.distinct_states
    assert all(n > 0 for n in r.triggers.values())  # none held vacuously
    if verdict == "violated":
        assert len(r.trace) == len(plain.trace)  # both the nearest fair cycle's lasso
        validate_lasso(load(config), r.trace, r.loop, r.invariant)  # a lasso of states, without symmetry too


def test_kafka_properties_are_the_same_under_every_renaming():
    """What symmetry of temporal properties assumes of the spec (and its
    fairness constraints, each over an argument a renaming permutes): a
    property's predicates tell no broker apart, on states real walks reach."""
    spec = load({"max_records": 1, "max_fences": 0, "max_unclean_shutdowns": 2, "properties": []})
    states, frontier = [], spec.init_states()
    for _depth in range(8):
        frontier = [t for s in frontier for _n, _a, t in spec.successors(s)][::3]
        states += frontier
    assert len(states) > 400
    for s in states[::5]:
        assert len({spec.property_labels(rename(s, p)) for p in permutations(range(3))}) == 1


def _liveness_cells() -> list:
    """Every matrix cell with temporal properties, checked without symmetry
    there, whose variant allows it (kafka-4's elections tell brokers apart:
    it refuses it). The RF=5 cells, checked with symmetry, are too big for
    the search without."""
    cells = tomllib.loads((ROOT / "specs" / "matrix.toml").read_text())["cell"]
    out = []
    for cell in cells:
        if "properties" not in cell["config"] or cell.get("symmetry"):
            continue
        try:
            load(cell["config"]).enable_symmetry()
        except SymmetryError:
            continue
        out.append(pytest.param(cell["config"], id=cell["name"][:60]))
    return out


LIVENESS_CELLS = _liveness_cells()


def test_every_liveness_cell_but_kafka_4s_is_checked_with_symmetry():
    assert len(LIVENESS_CELLS) == 8


@pytest.mark.slow
@pytest.mark.parametrize("config", LIVENESS_CELLS)
def test_a_liveness_cell_keeps_its_verdict_and_lasso_length_with_symmetry(config):
    plain = run(load(config), CheckOptions.of(engine="fast", workers=2))
    r = run(symmetric(load(config)), CheckOptions.of(engine="fast", workers=2))
    assert (r.verdict, r.invariant, len(r.trace)) == (plain.verdict, plain.invariant, len(plain.trace))
    assert r.distinct_states < plain.distinct_states and r.triggers.keys() == plain.triggers.keys()


def test_a_checkpoint_of_a_spec_with_symmetry_enabled_on_it_is_resumed_only_with_symmetry(tmp_path):
    """The checkpoint's identity is the spec's symmetry, not only the
    option's: resumed without, the quotient's graph was read as the
    states' and the lasso's replay failed."""
    config = {**SMALL, "acks": ["all"], "invariants": ["TypeOK"], "properties": ["LeaderlessGetsLeader"]}
    interrupted(symmetric(load(config)), "fast", tmp_path, reports=2)
    with pytest.raises(ConfigError, match=r"the checkpoint is of another run \(symmetry was True, now False\)"):
        resume(config, "fast", tmp_path)
    assert resume(config, "fast", tmp_path, symmetry=True).verdict == "violated"


class Snapshot(NamedTuple):
    live: tuple
    snap: tuple


def test_equal_states_encode_equally_by_default():
    """pickle writes a tuple two fields share as a back-reference: equal
    states gave different bytes, and a lasso of them failed its replay."""
    shared = (0, 1)
    assert Token().encode(Snapshot(shared, shared)) == Token().encode(Snapshot((0, 1), tuple([0, 1])))
