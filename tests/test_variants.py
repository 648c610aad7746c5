"""Every variant's verdict at N=3 / min_isr=2, the KIP's tolerance claim, and
the recovery strategies, each pinned to what the checker found (see
docs/verdicts.md for the stories behind the counterexamples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelcheck.config import read_file
from modelcheck.engine.bfs import check
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from specs.kafka_elr import VARIANTS, load
from specs.kafka_elr.arguments import STRATEGY_AGGRESSIVE
from specs.kafka_elr.logs import from_entries
from specs.kafka_elr.types import NO_LEADER, RECOVERING, bit, mask_of, members

SCENARIOS = Path(__file__).parent.parent / "specs" / "scenarios"
SMALL = {"max_records": 1}  # N=3, min_isr=2; one record keeps holding checks to seconds


def verdict(config: dict) -> tuple[str | None, int | None, list]:
    r = check(load(config))
    return r.invariant, (len(r.trace) - 1 if r.trace else None), r.trace


@pytest.mark.parametrize(
    "variant, invariant, steps, actions",
    [
        ("hwm-ignores-min-isr", "ElrHasDataToHwm", 4, ["Produce", "ShrinkIsr", "CommitAlterPartition", "AdvanceHwm"]),
        (
            "hwm-on-maximal-isr",
            "ElrHasDataToHwm",
            6,  # the KIP's 3-replica example
            ["Produce", "Fetch", "ShrinkIsr", "CommitAlterPartition", "ExpandIsr", "AdvanceHwm"],
        ),
        (
            "no-unclean-detection",
            "ElrHasDataToHwm",
            7,
            ["FenceBroker", "Produce", "Fetch", "AdvanceHwm", "UncleanShutdown", "FenceBroker", "StartBroker"],
        ),
        (
            "legacy",
            "NoAckedLoss",
            7,
            ["FenceBroker", "Produce", "Fetch", "AdvanceHwm", "ShrinkIsr", "CommitAlterPartition", "UncleanShutdown"],
        ),
    ],
)
def test_mutants_are_violated_with_a_pinned_shortest_trace(variant, invariant, steps, actions):
    found, length, trace = verdict({"variant": variant})
    assert (found, length) == (invariant, steps)
    assert [s.action for s in trace[1:]] == actions


def test_the_maximal_isr_mutant_tells_the_kips_story():
    spec = load({"variant": "hwm-on-maximal-isr"})
    r = check(spec)
    last = spec.describe(r.trace[-1].state)
    assert last["isr"] == [0] and last["elr"] == [1, 2] and last["pending_isr"] == [0, 1]
    assert last["hwm"][0] == 1 and last["log"][2] == []  # ELR member 2 lacks r1 below the HWM
    assert "ELR member(s) [2] lack data below the high watermark" in spec.story(r.trace, r.invariant)


@pytest.mark.parametrize("variant", ["kip966", "kip966-elr-only", "balanced-fixed-responses", "kafka-4"])
@pytest.mark.slow
def test_designs_hold_with_min_isr_minus_one_unclean_shutdown(variant):
    assert verdict({"variant": variant, **SMALL})[:2] == (None, None)


@pytest.mark.parametrize("variant", ["kip966", "kip966-elr-only", "kafka-4", "balanced-fixed-responses"])
def test_min_isr_unclean_shutdowns_lose_an_acked_record(variant):
    """The KIP's tolerance (min_isr - 1) is tight: two ISR members crash and
    lose r1 in six steps, whatever the election rules."""
    found, length, trace = verdict({"variant": variant, **SMALL, "max_unclean_shutdowns": 2})
    assert (found, length) == ("NoAckedLoss", 6)
    assert [s.action for s in trace[-2:]] == ["UncleanShutdown", "UncleanShutdown"]


@pytest.mark.slow
def test_unclean_leader_election_maps_to_aggressive_which_breaks_the_electable_set():
    """KIP-966: Aggressive recovers even while ELR members are only fenced,
    so ISR + ELR drops below min ISR before any unclean shutdown is
    registered."""
    spec = load({"variant": "kip966", "unclean_leader_election": True})
    assert spec.strategy_in(spec.init_states()[0]) == STRATEGY_AGGRESSIVE
    r = check(spec)
    assert r.invariant == "ElectableAtLeastMinIsr" and r.trace[-1].action == "UncleanRecovery"
    last = spec.describe(r.trace[-1].state)
    assert last["unclean_shutdowns"] == len(last["lost_unregistered"])  # none registered yet
    assert last["leader_recovery"] == "RECOVERING" and last["elr"] == []


def test_every_variant_is_registered():
    assert set(VARIANTS) == {
        "kip966",
        "legacy",
        "kip966-elr-only",
        "kafka-4",
        "hwm-ignores-min-isr",
        "hwm-on-maximal-isr",
        "balanced-fixed-responses",
        "no-unclean-detection",
        "reassignment-ignores-min-isr",
        "elr-kept-on-downgrade",
        "elr-populated-on-upgrade",
        "detection-before-metadata-version",
        "elr-before-software",
    }


# ---- recovery strategies on a leaderless partition --------------------------------


def leaderless(spec, *, isr=(), elr=(), last_known_elr=(), fenced=(), logs=None):
    s = spec.init_states()[0]
    logs = logs or ((), (), ())
    return s._replace(
        leader=NO_LEADER,
        isr=mask_of(isr),
        elr=mask_of(elr),
        last_known_elr=mask_of(last_known_elr),
        fenced=mask_of(fenced),
        log=tuple(map(from_entries, logs)),
    )


LOGS = (((0, 1),), (), ((0, 1), (0, 2)))  # broker 2 has the longest log


def winners(strategy: str, **kw) -> list[int]:
    spec = load({"unclean_recovery_strategy": strategy})
    s = leaderless(spec, **kw)
    return members(spec.recovery_winners(s, spec.strategy_in(s)))


def test_strategy_none_never_elects():
    assert winners("none", logs=LOGS) == []
    assert winners("none", last_known_elr=[0], logs=LOGS) == []


def test_balanced_waits_for_every_last_known_elr_member():
    assert winners("balanced", last_known_elr=[0, 1], fenced=[1], logs=LOGS) == []
    # all answered: the winner ranks at least as high as every LastKnownELR member
    assert winners("balanced", last_known_elr=[0, 1], logs=LOGS) == [0, 2]
    assert winners("balanced", elr=[1], fenced=[1], logs=LOGS) == []  # a fenced ELR member: wait


def test_aggressive_elects_from_whoever_answered():
    assert winners("aggressive", last_known_elr=[0, 1], fenced=[0, 1], logs=LOGS) == [2]
    assert winners("aggressive", elr=[1], fenced=[1], logs=LOGS) == [0, 2]  # fenced ELR: recover anyway


def test_an_unclean_recovery_is_recovering_with_a_singleton_isr():
    spec = load({"unclean_recovery_strategy": "aggressive"})
    t = spec.unclean_recovery(leaderless(spec, logs=LOGS), 2)
    assert (t.leader, t.isr, t.elr, t.leader_recovery) == (2, bit(2), 0, RECOVERING)


# ---- the rejected alternative, on the KIP's own example ---------------------------


def replay_file(name: str):
    config, raw = split_scenario(read_file(SCENARIOS / name), name)
    spec = load(config)
    return replay(spec, parse_steps(spec, raw, name))[1]


def test_fixed_responses_elect_a_replica_that_lost_the_record():
    reports = replay_file("rejected-fixed-responses.toml")
    assert all(r.ok for r in reports)
    assert reports[-1].violated == ["ConsistentRead", "NoAckedLoss"] and reports[-1].state["leader"] == 1


def test_balanced_waits_and_elects_the_replica_that_kept_it():
    reports = replay_file("balanced-waits-for-last-known-elr.toml")
    assert all(r.ok for r in reports)
    assert reports[-1].violated == [] and reports[-1].state["leader"] == 0


# ---- kafka-4: the shipped controller's rules --------------------------------------


def test_kafka4_elects_deterministically_in_assignment_order():
    spec = load({"variant": "kafka-4"})
    s = spec.init_states()[0]
    ((args, t),) = [(a, t) for a, t in spec.instances("FenceBroker", s) if a["broker"] == 0]
    assert args == {"broker": 0, "leader": 1} and t.leader == 1  # the first valid replica, not any
    kip = load({})
    assert [a["leader"] for a, _t in kip.instances("FenceBroker", s) if a["broker"] == 0] == [1, 2]


def test_kafka4_elects_a_fenced_last_known_leader():
    """4.0's canElectLastKnownLeader has no liveness check (KAFKA-19522)."""
    spec = load({"variant": "kafka-4"})
    s = leaderless(spec, last_known_elr=[0], fenced=[0, 1])
    t = spec.build(s, 0, spec.online_election(s), 0)
    assert (t.leader, t.isr, t.leader_recovery) == (0, bit(0), RECOVERING)
    assert not spec.leader_unfenced(t)


def test_kafka4_min_isr_change_wipes_the_elr():
    spec = load({"variant": "kafka-4", "max_min_isr_changes": 1})
    s = spec.init_states()[0]._replace(isr=bit(0), elr=mask_of([1, 2]))
    outcomes = {a["min_isr"]: t for a, t in spec.instances("AlterMinIsr", s)}
    assert all(t.elr == 0 for t in outcomes.values())  # even when min ISR rises
    kip = load({"max_min_isr_changes": 1})
    assert {a["min_isr"]: t.elr for a, t in kip.instances("AlterMinIsr", s)} == {1: 0, 3: mask_of([1, 2])}


@pytest.mark.slow
def test_the_checker_finds_kafka_19522_in_kafka_4():
    """Without NoAckedLoss (which two unclean shutdowns break first), the
    shortest violation of the default invariants is 4.0's election of a fenced last known leader."""
    spec = load({"variant": "kafka-4", "max_unclean_shutdowns": 2})
    others = [n for n in spec.default_invariants() if n != "NoAckedLoss"]
    found, length, trace = verdict({"variant": "kafka-4", "max_unclean_shutdowns": 2, "invariants": others})
    assert (found, length) == ("IsrMembersEligible", 7)  # KIP-841's invariant is checked first, at that state
    assert {"IsrMembersEligible", "LeaderUnfenced"} <= set(spec.violated(trace[-1].state))
    last = spec.describe(trace[-1].state)
    assert trace[-1].action == "StartBroker" and last["leader"] == trace[-1].args["broker"]
    assert last["leader"] in last["fenced"] and last["leader_recovery"] == "RECOVERING"
