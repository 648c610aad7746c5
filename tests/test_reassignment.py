"""Partition reassignment (KIP-966 4): verdicts, traces, engines and
symmetry agreeing, the rules' effects, and bad configs."""

from __future__ import annotations

import tomllib

import pytest
from click.testing import CliRunner
from derived_specs import ReassignmentKeepingDroppedElr
from symmetry_classes import class_of, reachable

from cli import main
from modelcheck.config import ConfigError
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.trace import apply_step
from specs.kafka_elr import load
from specs.kafka_elr.arguments import DESIGNATION
from specs.kafka_elr.kafka4 import ELECTION_UNCLEAN
from specs.kafka_elr.types import NO_LEADER, mask_of, members

# two replicas move within three brokers, once; one record, one unclean shutdown
SMALL = dict(brokers=2, min_isr=2, spare_brokers=1, max_reassignments=1, max_records=1, max_fences=0)


def check(engine: str = "bfs", symmetry: bool = False, workers: int = 1, **config):
    spec = load({**SMALL, **config})
    if symmetry:
        spec.enable_symmetry()
    return run(spec, CheckOptions.of(engine=engine, workers=workers))


def actions(r) -> list[tuple]:
    return [(s.action, s.args) for s in r.trace[1:]]


def test_kip966_holds_and_every_reassignment_action_fired():
    r = check(max_isr_shrinks=0)
    assert (r.verdict, r.distinct_states) == ("holds", 5_687)
    assert all(r.coverage[a] > 0 for a in ("ReassignPartition", "CompleteReassignment", "CancelReassignment"))
    assert r.goals["AddingReplicaJoinsIsr"] and r.goals["ReassignmentMovesLeader"]


@pytest.mark.slow
def test_engines_and_symmetry_agree():
    """bfs and the compiled engine reach the same states; --symmetry (the
    spare broker interchangeable with replica 1) fewer, with the same
    verdict, on both engines."""
    plain = check("bfs", max_isr_shrinks=0)
    fast = check("fast", workers=2, max_isr_shrinks=0)
    assert (fast.verdict, fast.distinct_states, fast.generated_states, fast.coverage) == (
        plain.verdict,
        plain.distinct_states,
        plain.generated_states,
        plain.coverage,
    )
    sym, fast_sym = check("bfs", symmetry=True, max_isr_shrinks=0), check("fast", symmetry=True, max_isr_shrinks=0)
    assert sym.verdict == fast_sym.verdict == plain.verdict == "holds"
    assert sym.distinct_states == fast_sym.distinct_states < plain.distinct_states


def test_the_pre_kip966_rule_ends_a_reassignment_under_min_isr():
    """4b: the old rule cancels with any non-empty ISR. Broker 0 crashes
    while 0 -> 2 is under way; 1 leads alone, and cancelling leaves ISR {1}."""
    r = check(variant="reassignment-ignores-min-isr", max_isr_shrinks=0)
    assert (r.verdict, r.invariant) == ("violated", "ReassignmentKeepsMinIsr")
    assert actions(r) == [
        ("ReassignPartition", {"replicas": [0, 2]}),
        ("UncleanShutdown", {"broker": 0, "keep": 0}),
        ("FenceBroker", {"broker": 0, "leader": 1}),
        ("CancelReassignment", {}),
    ]
    last = r.trace[-1].state
    assert (members(last.replicas), members(last.isr), last.adding, last.removing) == ([0, 1], [1], 0, 0)
    story = load({**SMALL, "variant": "reassignment-ignores-min-isr"}).story(r.trace, r.invariant)
    assert story.startswith(
        "From the initial state (leader 0, ISR all of replicas {0,1}, spare {2}), "
        "an operator reassigns the partition to {0,2} (adding {2}, removing {1})"
    )


@pytest.mark.slow
def test_what_the_pre_kip966_rule_loses_within_the_tolerance():
    """The kip966 rule holds NoAckedLoss with these bounds; the old rule loses
    r1: the adding replica holds it with the leader, the cancellation drops
    it (it cannot stay in the ELR), and the leader crashes."""
    assert check().verdict == "holds"
    r = check(variant="reassignment-ignores-min-isr", invariants=["NoAckedLoss"])
    assert (r.verdict, r.invariant) == ("violated", "NoAckedLoss")
    assert actions(r) == [
        ("Produce", {"acks": "all"}),
        ("ReassignPartition", {"replicas": [0, 2]}),
        ("ExpandIsr", {"brokers": [2]}),
        ("CommitAlterPartition", {}),
        ("Fetch", {"broker": 2}),
        ("ShrinkIsr", {"brokers": [1]}),
        ("CommitAlterPartition", {}),
        ("AdvanceHwm", {}),
        ("CancelReassignment", {}),
        ("UncleanShutdown", {"broker": 0, "keep": 0}),
    ]


def test_legacy_has_the_pre_kip966_rule_too():
    r = check(variant="legacy", max_isr_shrinks=0)
    assert (r.verdict, r.invariant, len(r.trace) - 1) == ("violated", "ReassignmentKeepsMinIsr", 4)


def test_a_reassignment_ends_unless_none_waits_for_an_operator():
    holds = check("fast", max_isr_shrinks=0, properties=["ReassignmentEnds"])
    assert holds.verdict == "holds" and holds.triggers["ReassignmentEnds"] > 0
    stuck = check(
        "fast",
        max_isr_shrinks=0,
        max_unclean_shutdowns=2,
        unclean_recovery_strategy="none",
        invariants=["TypeOK"],
        properties=["ReassignmentEnds"],
    )
    assert (stuck.verdict, stuck.invariant) == ("violated", "ReassignmentEnds")
    looped = stuck.trace[stuck.loop].state
    assert looped.adding and looped.leader == NO_LEADER and looped.isr == looped.elr == 0


# ---- the rules, step by step ------------------------------------------------------------


def test_completion_moves_the_partition_and_its_leader():
    spec = load({**SMALL, "brokers": 3, "spare_brokers": 1})
    s = spec.init_states()[0]
    assert spec.reassign_partition(s, s.replicas) is None  # nothing to move
    t = spec.reassign_partition(s, mask_of([1, 2, 3]))
    assert (members(t.replicas), members(t.adding), members(t.removing)) == ([0, 1, 2, 3], [3], [0])
    assert spec.reassign_partition(t, mask_of([0, 1, 3])) is None  # one at a time
    assert spec.complete_reassignment(t, NO_LEADER) is None  # 3 is not in the ISR yet
    t = t._replace(isr=mask_of([0, 1, 2, 3]), log=(5, 5, 5, 5), hwm=(1, 1, 1, 1))
    assert spec.complete_reassignment(t, NO_LEADER) is None  # the leader 0 leaves: elect
    done = spec.complete_reassignment(t, 2)
    assert (done.leader, done.leader_epoch, members(done.replicas), members(done.isr)) == (2, 1, [1, 2, 3], [1, 2, 3])
    assert (done.log[0], done.hwm[0], done.adding, done.removing) == (0, 0, 0, 0)  # 0's replica is deleted
    # cancelled instead: 3 leaves, 0 stays leader and keeps its epoch
    back = spec.cancel_reassignment(t, NO_LEADER)
    assert (back.leader, back.leader_epoch, members(back.replicas), members(back.isr)) == (0, 0, [0, 1, 2], [0, 1, 2])


def test_a_kept_leader_still_acks_what_it_appended_before_the_reassignment_ended():
    """Kafka's DelayedProduce has no epoch check: a leader that stays acks
    its pending acks=all record once the HWM passes it (when the end of a
    reassignment bumped the epoch, the model failed it silently)."""
    spec = load({**SMALL, "acks": ["all"]})
    s = spec.init_states()[0]
    for name, args in [
        ("Produce", {}),
        ("ReassignPartition", {"replicas": [0, 2]}),
        ("Fetch", {"broker": 1}),
        ("Fetch", {"broker": 2}),
        ("ExpandIsr", {"brokers": [2]}),
        ("CommitAlterPartition", {}),
        ("CompleteReassignment", {}),
        ("AdvanceHwm", {}),
    ]:
        ((_, s),) = apply_step(spec, s, name, args)
    assert (s.leader, s.leader_epoch, members(s.replicas), members(s.acked)) == (0, 0, [0, 2], [1])


def test_the_min_isr_rule_refuses_and_the_elr_keeps_only_final_replicas():
    spec = load({**SMALL, "brokers": 3, "spare_brokers": 1})
    old = load({**SMALL, "brokers": 3, "spare_brokers": 1, "variant": "reassignment-ignores-min-isr"})
    s = spec.reassign_partition(spec.init_states()[0], mask_of([1, 2, 3]))
    # ISR {0,3}, the removing 0 leads: without it one replica is left
    s = s._replace(isr=mask_of([0, 3]), elr=0)
    assert spec.complete_reassignment(s, 3) is None
    t = old.complete_reassignment(s, 3)
    assert (t.leader, members(t.isr), t.elr, t.below_min_isr_reassigned) == (3, [3], 0, 1)
    assert old.elr_within_replicas(t) and not old.reassignment_keeps_min_isr(t)


def test_the_effective_min_isr_counts_the_adding_replicas_as_kafka_does():
    """Issue 31: with min.insync.replicas above the replication factor, a
    reassignment raises the effective min ISR to the replica list's size
    (Kafka's getTopicEffectiveMinIsr and Partition.effectiveMinIsr), so
    acks=all is refused and the HWM held until the adding replica is in the
    ISR; the reassignment ends against the target's min ISR."""
    spec = load({**SMALL, "min_isr": 3})
    s = spec.init_states()[0]
    assert spec.eff_min_isr(s) == 2 and spec.produce(s, 1, NO_LEADER) is not None
    s = spec.reassign_partition(spec.produce(s, 0, NO_LEADER), mask_of([0, 2]))
    assert spec.eff_min_isr(s) == 3 and spec.final_min_isr(s) == 2
    assert spec.produce(s, 1, NO_LEADER) is None  # acks=all: NOT_ENOUGH_REPLICAS
    s = spec.fetch(s, 1)
    assert spec.advance_hwm(s, NO_LEADER) is None  # ISR {0, 1}: 2 < 3
    s = spec.fetch(s, 2)
    s = spec.commit_alter_partition(spec.expand_isr(s, mask_of([2]), NO_LEADER))
    assert members(s.isr) == [0, 1, 2] and spec.advance_hwm(s, NO_LEADER) is not None
    t = spec.complete_reassignment(s, NO_LEADER)
    assert (members(t.replicas), members(t.isr), spec.eff_min_isr(t)) == ([0, 2], [0, 2], 2)


@pytest.mark.slow
def test_elr_within_replicas_catches_a_missing_filter():
    """Under kip966 the ELR is empty whenever a reassignment ends (4a/4b), so
    the filter is tested where the old rule lets one end under min ISR: the
    variant holds ElrWithinReplicas, and without the filter it breaks."""
    config = {**SMALL, "variant": "reassignment-ignores-min-isr", "invariants": ["ElrWithinReplicas"]}
    assert check(**config).verdict == "holds"
    r = run(ReassignmentKeepingDroppedElr(load({**SMALL, **config}).config), CheckOptions.of(engine="bfs"))
    assert (r.verdict, r.invariant) == ("violated", "ElrWithinReplicas")
    assert actions(r) == [
        ("ReassignPartition", {"replicas": [0, 2]}),
        ("ExpandIsr", {"brokers": [2]}),
        ("CommitAlterPartition", {}),
        ("ShrinkIsr", {"brokers": [1, 2]}),
        ("CommitAlterPartition", {}),
        ("CancelReassignment", {}),
    ]


def test_spare_brokers_neither_fetch_nor_join_the_isr():
    spec = load({**SMALL, "max_reassignments": 0})
    s = spec.produce(spec.init_states()[0], 1, NO_LEADER)
    assert spec.fetch(s, 2) is None and spec.fetch(s, 1) is not None
    assert spec.caught_up(s._replace(isr=mask_of([0])), 0) == mask_of([1])  # not the spare 2


def test_the_assignment_shows_only_where_it_can_change():
    plain = load({})
    assert "replicas" not in plain.describe(plain.init_states()[0])
    spec = load(SMALL)
    d = spec.describe(spec.init_states()[0])
    assert (d["replicas"], d["adding"], d["removing"], d["below_min_isr_reassigned"]) == ([0, 1], [], [], False)


# ---- bad configs: one line, exit 2 -----------------------------------------------------


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            ["brokers=5", "spare_brokers=4"],
            "config key 'spare_brokers': 4 with 5 brokers makes 9 (allowed: brokers + spare_brokers <= 8)",
        ),
        (["spare_brokers=-1"], "config key 'spare_brokers'"),
        (
            ["max_reassignments=1", 'metadata="propagated"', 'variant="kafka-4"'],
            "config key 'max_reassignments': 1 with metadata = \"propagated\" is not modelled",
        ),
        (
            ["spare_brokers=1", 'metadata="propagated"'],
            "config key 'spare_brokers': 1 with metadata = \"propagated\" is not modelled",
        ),
    ],
)
def test_bad_reassignment_configs_exit_2_in_one_line(settings, message):
    args = ["check"] + [x for s in settings for x in ("--set", s)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert message in r.output and len(r.output.strip().splitlines()) == 1
    with pytest.raises(ConfigError, match="spare_brokers|max_reassignments"):
        load(tomllib.loads("\n".join(settings)))


@pytest.mark.slow
def test_symmetry_keeps_exactly_one_state_per_class():
    """Replica 1 and the spare 2 are interchangeable once the replica set is
    part of each broker's view: the reduced count is the number of classes
    of the full state space under renaming the brokers (brute force)."""
    spec = load({**SMALL, "max_isr_shrinks": 0})
    seen = reachable(spec)
    classes = {class_of(spec, s) for s in seen.values()}
    sym = check("fast", symmetry=True, max_isr_shrinks=0)
    assert len(seen) == 5_687 and sym.distinct_states == len(classes) < len(seen)


def test_an_admin_designation_elects_only_a_replica():
    """KIP-966 DESIGNATION names the new leader; a spare broker (or one a
    reassignment dropped) does not host the partition."""
    spec = load({**SMALL, "max_admin_elections": 1})
    s = spec.init_states()[0]._replace(leader=NO_LEADER, isr=0, elr=0)
    assert spec.admin_elect_leaders(s, DESIGNATION, NO_LEADER, 2) is None
    t = spec.admin_elect_leaders(s, DESIGNATION, NO_LEADER, 1)
    assert (t.leader, members(t.isr)) == (1, [1]) and spec.type_ok(t)


# ---- kafka-4: Kafka 4.0.0's reassignment (docs/model.md "Reassignment under kafka-4") ----
def kafka4_moving(**config):
    """kafka-4 with {0, 1} moving to {1, 2} (list [1, 2, 0]), and the state."""
    spec = load({**SMALL, "variant": "kafka-4", **config})
    ((args, moving),) = [
        (a, t) for a, t in spec.instances("ReassignPartition", spec.init_states()[0]) if a["replicas"] == [1, 2]
    ]
    return spec, moving


def test_kafka4_lists_the_target_first_and_its_preferred_replica_leads():
    """PRR:53-63: the list is [1, 2, 0]; the auto rebalance moves leadership to its first replica."""
    spec, s = kafka4_moving()
    assert (members(s.replicas), members(s.adding), members(s.removing), members(s.listed_last)) == (
        [0, 1, 2],
        [2],
        [0],
        [0],
    )
    ((_, t),) = spec.instances("ElectLeader", s)
    assert (t.leader, t.leader_epoch) == (1, 1)


def test_kafka4_completes_a_reassignment_in_the_alter_partition_that_allows_it():
    """completeReassignmentIfNeeded runs in every build: no CompleteReassignment action."""
    spec, s = kafka4_moving()
    assert "CompleteReassignment" not in spec.actions
    s = s._replace(pending_isr=mask_of([0, 1, 2]), pending_epochs=(1, 1, 1))
    ((_, t),) = spec.instances("CommitAlterPartition", s)
    assert (members(t.replicas), members(t.isr), t.adding, t.removing, t.listed_last, t.leader) == (
        [1, 2],
        [1, 2],
        0,
        0,
        0,
        1,
    )
    assert t.log[0] == 0 and t.hwm[0] == 0  # 0's replica is deleted


def test_kafka4_unclean_election_never_elects_a_spare_broker():
    """PCB:278-286 scan the replica list: with the replicas 0 and 1 fenced,
    an UNCLEAN election elects nobody, though the spare 2 is alive."""
    spec = load({**SMALL, "variant": "kafka-4", "unclean_leader_election": True})
    s = spec.init_states()[0]._replace(leader=NO_LEADER, isr=0, fenced=mask_of([0, 1]))
    assert spec.elect_in_build(s, 0, 0, ELECTION_UNCLEAN, s.replicas, s.listed_last) == (NO_LEADER, False)
    assert spec.elect_in_build(s._replace(fenced=mask_of([0])), 0, 0, ELECTION_UNCLEAN, s.replicas, 0) == (1, True)


@pytest.mark.parametrize("unclean, leader", [(False, None), (True, 1)])
def test_kafka4_cancels_with_no_min_isr_check_and_an_unclean_revert_needs_the_switch(unclean, leader):
    """PRRevert:50-64, RCM:2126-2131: the ISR {2} is all adding, so the revert
    names the list's first original replica, 1 ([1, 0] after the revert);
    without unclean.leader.election.enable Kafka refuses. The build then
    elects 1 from the target ISR, a clean election (no RECOVERING)."""
    spec, s = kafka4_moving(unclean_leader_election=unclean)
    s = s._replace(leader=2, isr=mask_of([2]))
    outcomes = [t for _a, t in spec.instances("CancelReassignment", s)]
    if leader is None:
        assert outcomes == []
        return
    ((t),) = outcomes
    assert (members(t.replicas), members(t.listed_last), members(t.isr), t.leader, t.leader_recovery) == (
        [0, 1],
        [0],
        [1],
        1,
        0,
    )
    assert t.below_min_isr_reassigned == 1
