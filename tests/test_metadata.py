"""Issue #14 section 4: metadata = "propagated". Each broker acts on the
metadata last delivered to it: stale leaders, followers of deposed
leaders, leader-epoch checks on fetch, and a leader that disagrees with
the controller on min ISR (KAFKA-16540)."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelcheck.config import ConfigError, read_file
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from specs.kafka_elr import load
from specs.kafka_elr.arguments import ACKS_1
from specs.kafka_elr.types import describe

SCENARIOS = Path(__file__).parent.parent / "specs" / "scenarios"
PROPAGATED = {"metadata": "propagated", "fence_cuts_data_plane": False}
# everything but the two invariants a min ISR change breaks by itself
# (ElectableAtLeastMinIsr at once when raised; NoAckedLoss's tolerance when lowered)
MIN_ISR_CHANGE = {
    "max_records": 1,
    "max_unclean_shutdowns": 0,
    "max_min_isr_changes": 1,
    "invariants": [
        "TypeOK",
        "ElrDisjointIsr",
        "ElrOnlyUnderMinIsr",
        "ElrHasDataToHwm",
        "LeaderInIsr",
        "LeaderUnfenced",
        "LogMatching",
        "RecoveringIsrSingleton",
        "NoAckedLoss",
        "ConsistentRead",
    ],
}


def steps(config: dict, raw: list[dict]):
    spec = load(config)
    return replay(spec, parse_steps(spec, raw, "test"))[1]


def test_metadata_must_be_atomic_or_propagated():
    with pytest.raises(ConfigError, match="metadata.*atomic \\| propagated"):
        load({"metadata": "eventual"})


def test_atomic_metadata_has_no_views_no_updates_and_no_acting_broker():
    spec = load({})
    assert "MetadataUpdate" in spec.never_enabled() and "MetadataUpdate" not in spec.coverage_labels
    assert not any(k.startswith("seen_") for k in spec.describe(spec.init_states()[0]))
    assert [args for args, _ in spec.instances("Produce", spec.init_states()[0])] == [{"acks": "1"}, {"acks": "all"}]


def test_a_deposed_leader_serves_on_its_stale_view_until_metadata_reaches_it():
    reports = steps(
        PROPAGATED,
        [
            {"action": "FenceBroker", "broker": 0, "leader": 1, "expect": {"leader": 1, "seen_leader": [0, 0, 0]}},
            # broker 0 still believes it leads at epoch 0 and takes a record
            {"action": "Produce", "acks": "1", "at": 0, "expect": {"log": [[[0, 1]], [], []]}},
            # broker 2 still follows it, at epoch 0
            {"action": "Fetch", "broker": 2, "expect": {"log": [[[0, 1]], [], [[0, 1]]]}},
            {"action": "MetadataUpdate", "broker": 2, "expect": {"seen_leader": [0, 0, 1], "seen_epoch": [0, 0, 1]}},
        ],
    )
    assert all(r.ok for r in reports)
    # broker 1 has not yet seen its own election: it does not lead, so broker 2 cannot fetch from it
    after = steps(
        PROPAGATED,
        [
            {"action": "FenceBroker", "broker": 0, "leader": 1},
            {"action": "MetadataUpdate", "broker": 2},
            {"action": "Fetch", "broker": 2},
        ],
    )
    assert [r.enabled for r in after] == [True, True, False]


def test_fetch_is_refused_across_leader_epochs():
    """Broker 2 has seen epoch 1 (leader 1); broker 1 has too, and leads; broker 0,
    deposed, still answers at epoch 0 only: 2 fetches from 1, never from 0."""
    reports = steps(
        PROPAGATED,
        [
            {"action": "FenceBroker", "broker": 0, "leader": 1},
            {"action": "Produce", "acks": "1", "at": 0},
            {"action": "MetadataUpdate", "broker": 1},
            {"action": "MetadataUpdate", "broker": 2},
            {"action": "Produce", "acks": "1", "at": 1, "expect": {"log": [[[0, 1]], [[1, 2]], []]}},
            {"action": "Fetch", "broker": 2, "expect": {"log": [[[0, 1]], [[1, 2]], [[1, 2]]]}},
        ],
    )
    assert all(r.ok for r in reports)


def test_a_new_leader_counts_a_follower_only_once_it_has_fetched_in_its_epoch():
    common = [
        {"action": "Produce", "acks": "all", "at": 0},
        {"action": "Fetch", "broker": 1},
        {"action": "Fetch", "broker": 2},
        {"action": "AdvanceHwm", "at": 0, "expect": {"acked": [1]}},
        {"action": "FenceBroker", "broker": 0, "leader": 1},
        {"action": "MetadataUpdate", "broker": 1},
        {"action": "Produce", "acks": "all", "at": 1},
    ]
    config = {"metadata": "propagated", "max_records": 2}
    blocked = steps(config, [*common, {"action": "AdvanceHwm", "at": 1}])
    assert [r.enabled for r in blocked] == [True] * len(common) + [False]
    caught_up = steps(
        config,
        [
            *common,
            {"action": "MetadataUpdate", "broker": 2},
            {"action": "Fetch", "broker": 2},
            {"action": "AdvanceHwm", "at": 1, "expect": {"acked": [1, 2], "hwm": [1, 2, 0]}},
        ],
    )
    assert all(r.ok for r in caught_up)


def test_a_raised_min_isr_the_leader_has_not_seen_loses_an_acked_record():
    """KAFKA-16540, replayed: the controller puts broker 2 into the ELR
    against min ISR 3, the leader acks against min ISR 2; two unclean
    shutdowns (within min ISR 3's tolerance) lose the record."""
    name = "stale-min-isr-loses-acked.toml"
    config, raw = split_scenario(read_file(SCENARIOS / name), name)
    spec = load(config)
    reports = replay(spec, parse_steps(spec, raw, name))[1]
    assert all(r.ok for r in reports)
    assert [r.violated for r in reports][5] == ["ElrHasDataToHwm"] and reports[-1].state["leader"] == 2
    # atomic: the leader sees min ISR 3 at once and the HWM stays where it is
    atomic = steps(
        {**config, "metadata": "atomic"},
        [{k: v for k, v in s.items() if k not in ("at", "expect", "violates")} for s in raw[:6]],
    )
    assert [r.enabled for r in atomic] == [True] * 5 + [False]


@pytest.mark.parametrize("variant, states", [("kip966", 13_312), ("kafka-4", 22_106)])
@pytest.mark.slow
def test_a_min_isr_change_breaks_elr_data_only_when_brokers_lag(variant, states):
    atomic = run(load({**MIN_ISR_CHANGE, "variant": variant}), CheckOptions.of(engine="fast"))
    assert atomic.holds and atomic.distinct_states == states
    lagging = run(
        load({**MIN_ISR_CHANGE, "variant": variant, "metadata": "propagated"}), CheckOptions.of(engine="fast")
    )
    assert (lagging.verdict, lagging.invariant, len(lagging.trace) - 1) == ("violated", "ElrHasDataToHwm", 6)
    assert [s.action for s in lagging.trace[1:]] == [
        "AlterMinIsr",
        "Produce",
        "Fetch",
        "ShrinkIsr",
        "CommitAlterPartition",
        "AdvanceHwm",
    ]


@pytest.mark.slow
def test_propagated_holds_with_deposed_leaders_serving():
    r = run(load({"max_records": 1, "metadata": "propagated"}), CheckOptions.of(engine="fast"))
    assert r.holds and r.distinct_states == 462_528
    assert r.coverage["MetadataUpdate"] > 0
    assert {g for g, reached in r.goals.items() if reached} >= {
        "DeposedLeaderAppends",
        "FollowerFetchesFromDeposedLeader",
        "ElrMemberElected",
        "StaleAlterPartitionRejected",
    }
    assert not r.goals["LeaderActsOnStaleMinIsr"]  # no min ISR change in this config


def test_stories_name_the_deposed_leader_a_step_acts_on():
    spec = load(PROPAGATED)
    states = [spec.describe(spec.init_states()[0])] + [
        r.state
        for r in steps(
            PROPAGATED,
            [
                {"action": "FenceBroker", "broker": 0, "leader": 1},
                {"action": "Produce", "acks": "1", "at": 0},
                {"action": "Fetch", "broker": 2},
            ],
        )
    ]
    fenced = spec.fence_broker(spec.init_states()[0], 0, 1)
    assert (
        spec.phrase("Produce", {"acks": "1", "at": 0}, states[1], states[2], fenced)
        == "leader 0 (deposed: the controller's leader is 1) appends r1 (acks=1)"
    )
    # whom broker 2 fetches from is the spec's answer on the raw state: deposed leader 0
    raw = spec.produce(fenced, ACKS_1, 0)
    assert spec.describe(raw) == states[2]
    assert (
        spec.phrase("Fetch", {"broker": 2}, states[2], states[3], raw)
        == "broker 2 fetches from deposed leader 0 and holds [r1]"
    )
    # under atomic metadata the views are constant (-1): a follower fetches from the leader
    atomic = load({})
    a = describe(atomic.init_states()[0])
    assert atomic.phrase("Fetch", {"broker": 1}, a, a, atomic.init_states()[0]) == "broker 1 fetches and holds nothing"
