"""kafka-4's controller against an oracle transliterated from Apache Kafka
4.0.0's Java (kafka_oracle.py), on every reachable state of small configs
(oracle_harness.py says how the model's actions map to Kafka's events).

A difference the spec is known to have (issue 31) is listed in KNOWN, by
name, with the issue's bullet and a predicate that matches it narrowly;
every other difference fails the test. Once the spec closes one, its
predicate matches nothing and `test_each_known_difference_is_still_there`
says to remove it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from kafka_oracle import (
    NO_LEADER,
    PREFERRED,
    RECOVERED,
    RECOVERING,
    UNCLEAN,
    BrokerRegistration,
    Controller,
    PartitionChangeBuilder,
    PartitionChangeRecord,
    PartitionRegistration,
    reassignment_replicas,
    reassignment_revert,
)
from oracle_harness import CONTROLLER_ACTIONS, Comparison, Difference, compare, of_spec, replica_list

from specs.kafka_elr import Kip966, load
from specs.kafka_elr.kafka4 import ELECTION_ONLINE, ELECTION_UNCLEAN, Kafka4
from specs.kafka_elr.types import State, contains, members


@dataclass(frozen=True)
class Known:
    """A difference the spec has today, not silently filtered: its name,
    where it is described (issue 31's bullet, or docs/model.md for a
    choice the model states), and a predicate matching exactly it."""

    name: str
    bullet: str
    matches: Callable[[Difference], bool]


def last_known_elr_of_no_leader(d: Difference) -> bool:
    """The ISR of a leaderless partition empties: Kafka writes
    lastKnownElr [partition.leader] = [-1] (PCB:497-500), which the model's
    bitmask cannot hold; it keeps the old value (docs/model.md, kafka-4).
    Otherwise the outcomes agree."""
    kept = of_spec(d.state).last_known_elr
    return (
        len(d.spec) == len(d.oracle) == 1
        and all(o.last_known_elr == (-1,) for o in d.oracle)
        and {replace(o, last_known_elr=kept) for o in d.oracle} == d.spec
    )


def no_epoch_bump_for_a_shrunk_replica_list(d: Difference) -> bool:
    """A record that drops replicas (a completed or cancelled reassignment)
    and keeps the leader: Kafka bumps the leader epoch
    (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded, PCB:368-378), the
    model keeps it (docs/model.md "Reassignment under kafka-4": the bump
    fences nothing here and would cost the leader's pending acks).
    Otherwise the outcomes agree."""
    before = set(replica_list(d.state))
    return (
        len(d.spec) == len(d.oracle) == 1
        and all(o.leader == d.state.leader and not before <= set(o.replicas) for o in d.oracle)
        and {replace(o, leader_epoch=o.leader_epoch - 1) for o in d.oracle} == d.spec
    )


KNOWN = (
    Known("lastKnownElr [-1]", "docs/model.md kafka-4, maybeUpdateLastKnownLeader", last_known_elr_of_no_leader),
    Known(
        "no epoch bump for a shrunk replica list",
        'docs/model.md "Reassignment under kafka-4"',
        no_epoch_bump_for_a_shrunk_replica_list,
    ),
)

# the configs compared (all without records: the controller never reads a
# log), with the known differences each must show; FAST ones take at most
# 1.5 s each on the 2-core machine, the others up to 6 s
CONFIGS: dict[str, tuple[dict[str, Any], set[str]]] = {
    "2 brokers, operators": (
        {"brokers": 2, "max_min_isr_changes": 1, "max_admin_elections": 1},
        set(),
    ),
    "2 brokers, fenced last known leader": (
        {"brokers": 2, "max_unclean_shutdowns": 2, "max_clean_shutdowns": 1},
        {"lastKnownElr [-1]"},
    ),
    "2 brokers, min ISR 1, fenced last known leader": (
        {"brokers": 2, "min_isr": 1, "max_unclean_shutdowns": 2},
        {"lastKnownElr [-1]"},
    ),
    "3 brokers, controlled shutdown": ({"brokers": 3, "max_fences": 0, "max_clean_shutdowns": 1}, set()),
    "2 brokers, staged controlled shutdown": (
        {"brokers": 2, "max_clean_shutdowns": 1, "controlled_shutdown": "staged"},
        set(),
    ),
    "3 brokers, min ISR 1": ({"brokers": 3, "min_isr": 1, "max_fences": 0, "max_unclean_shutdowns": 2}, set()),
    "unclean leader election": (
        {"brokers": 2, "unclean_leader_election": True, "max_admin_elections": 1, "max_clean_shutdowns": 1},
        set(),
    ),
    "propagated metadata": ({"brokers": 2, "metadata": "propagated", "max_clean_shutdowns": 1}, set()),
    "unclean leader election switched": ({"brokers": 2, "max_unclean_switches": 2, "max_clean_shutdowns": 1}, set()),
    "reassignment": (
        {"brokers": 2, "spare_brokers": 1, "max_reassignments": 1, "max_fences": 0},
        {"no epoch bump for a shrunk replica list"},
    ),
    "reassignment, unclean leader election": (
        {
            "brokers": 2,
            "spare_brokers": 1,
            "max_reassignments": 1,
            "max_fences": 0,
            "unclean_leader_election": True,
            "max_admin_elections": 1,
        },
        {"no epoch bump for a shrunk replica list"},
    ),
}
FAST = {"2 brokers, operators", "3 brokers, min ISR 1", "2 brokers, min ISR 1, fenced last known leader"}


def kafka4(**config) -> Kip966:
    return load({"variant": "kafka-4", "max_records": 0, **config})


_COMPARED: dict[str, Comparison] = {}


def compared(name: str) -> Comparison:
    """The comparison of config `name` (made once a session)."""
    if name not in _COMPARED:
        _COMPARED[name] = compare(kafka4(**CONFIGS[name][0]))
    return _COMPARED[name]


def unexplained(c: Comparison) -> list[Difference]:
    return [d for d in c.differences if not any(k.matches(d) for k in KNOWN)]


def shown(d: Difference) -> str:
    spec, oracle = sorted(d.spec, key=repr), sorted(d.oracle, key=repr)
    return f"{d.action} {d.args} in {d.state}\n  spec:   {spec}\n  oracle: {oracle}"


def each_config():
    return [pytest.param(name, marks=() if name in FAST else pytest.mark.slow) for name in CONFIGS]


@pytest.mark.parametrize("name", each_config())
def test_the_spec_controller_does_what_kafka_does_on_every_state(name):
    c = compared(name)
    wrong = unexplained(c)
    assert not wrong, f"{len(wrong)} difference(s) from Kafka 4.0.0, the nearest:\n" + shown(wrong[0])
    assert c.states > 250


@pytest.mark.parametrize("name", each_config())
def test_each_known_difference_is_still_there(name):
    """A known difference the spec no longer has must leave KNOWN."""
    c = compared(name)
    seen = {k.name for k in KNOWN for d in c.differences if k.matches(d)}
    assert seen == CONFIGS[name][1]


@pytest.mark.slow
def test_every_controller_action_was_compared_where_it_changes_something() -> None:
    """Both sides changed the controller, and agreed, for every controller
    action the model has (UncleanRecovery and CompleteRecovery are not
    kafka-4's): the comparison did compare."""
    agreed: Counter[str] = Counter()
    for name in CONFIGS:
        agreed += compared(name).agreed_changes
    assert [a for a in CONTROLLER_ACTIONS if not agreed[a]] == []


# ---- planted bugs: the comparison must catch a controller rule broken in the spec ----------
class ElrNeverElected(Kafka4):
    """isValidNewLeader without its ELR clause (PCB:324): only ISR members lead."""

    def valid_in_build(self, s: State, isr: int, elr: int, r: int) -> bool:
        return self.alive(s, r) and contains(isr, r)


class MinIsrChangeKeepsElr(Kafka4):
    """A min.insync.replicas change without its ClearElrRecord (CCM:218-238)."""

    def min_isr_changed(self, s: State) -> State:
        return s


class UncleanSwitchIgnored(Kafka4):
    """Partition changes read unclean.leader.election.enable from the run's
    config, not its value now (uncleanLeaderElectionEnabledForTopic, CCM:691-697)."""

    def online_election(self, s: State) -> int:
        return ELECTION_UNCLEAN if self.config["unclean_leader_election"] else ELECTION_ONLINE


class ShuttingDownStaysAcceptable(Kafka4):
    """isAcceptableLeader without its controlled-shutdown clause (ClusterControlManager.isActive)."""

    def alive(self, s: State, r: int) -> bool:
        return r != -1 and self.unfenced(s, r)


class ElectionsIgnoreTheListOrder(Kafka4):
    """Elections scan the replicas in broker id order, not in Kafka's list
    order (PCB:232-289: a reassignment lists the target first, PRR:53-63)."""

    def listed(self, replicas: int, last: int, k: int) -> int:
        r = k % self.n
        return r if k < self.n and replicas >> r & 1 else NO_LEADER


def test_a_planted_bug_in_the_replica_list_order_is_reported():
    """{0, 1} moving to {1, 2}: Kafka's list is [1, 2, 0], so its preferred
    replica is 1 and the auto rebalance moves leadership from 0 to 1; the
    mutant's preferred replica stays 0 and it elects nobody."""
    config = {"brokers": 2, "spare_brokers": 1, "max_reassignments": 1, "max_fences": 0}
    wrong = unexplained(compare(ElectionsIgnoreTheListOrder(kafka4(**config).config)))
    assert wrong, "the planted bug went unnoticed"
    d = wrong[0]  # the nearest
    assert (d.action, d.args, members(d.state.replicas), members(d.state.adding)) == ("ElectLeader", {}, [0, 1, 2], [2])
    assert [(o.leader, o.elr) for o in d.spec] == []
    assert [(o.leader, o.replicas) for o in d.oracle] == [(1, (1, 2, 0))]


@pytest.mark.parametrize(
    "mutant, config, action, args, spec_leader_elr, kafka_leader_elr",
    [
        # the leader (ISR [0], ELR [1]) is fenced: Kafka elects ELR member 1, the mutant nobody
        (ElrNeverElected, {"brokers": 2}, "FenceBroker", {"broker": 0}, (-1, (0, 1)), (1, (0,))),
        # min ISR 2 -> 1 with ELR [0]: Kafka clears the ELR, the mutant keeps it
        (
            MinIsrChangeKeepsElr,
            {"brokers": 2, "max_min_isr_changes": 1},
            "AlterMinIsr",
            {"min_isr": 1},
            (1, (0,)),
            (1, ()),
        ),
        # switched on, min ISR 1, the leader (ISR [0]) is fenced: Kafka elects 1 uncleanly, the mutant nobody
        (
            UncleanSwitchIgnored,
            {"brokers": 2, "min_isr": 1, "max_unclean_switches": 1},
            "FenceBroker",
            {"broker": 0},
            (-1, (0,)),
            (1, ()),
        ),
        # 0 entered controlled shutdown (ISR [1], ELR [0]), the leader 1 is fenced: Kafka elects
        # nobody (0 is not acceptable), the mutant elects 0 from the ELR
        (
            ShuttingDownStaysAcceptable,
            {"brokers": 2, "max_clean_shutdowns": 1, "controlled_shutdown": "staged"},
            "FenceBroker",
            {"broker": 1},
            (0, (1,)),
            (-1, (0, 1)),
        ),
    ],
)
def test_a_planted_bug_in_the_spec_is_reported(mutant, config, action, args, spec_leader_elr, kafka_leader_elr):
    wrong = unexplained(compare(mutant(kafka4(**config).config)))
    assert wrong, "the planted bug went unnoticed"
    d = wrong[0]  # the nearest
    assert (d.action, d.args) == (action, args), shown(d)
    assert [(o.leader, o.elr) for o in d.spec] == [spec_leader_elr]
    assert [(o.leader, o.elr) for o in d.oracle] == [kafka_leader_elr]


# ---- the oracle itself against Kafka 4.0.0's own PartitionChangeBuilderTest --------------
# (metadata/src/test/java/org/apache/kafka/controller/PartitionChangeBuilderTest.java, the
# ELR cases with useLastKnownLeaderInBalancedRecovery as ReplicationControlManager leaves it)
def registration(isr, elr, last_known_elr, leader) -> PartitionRegistration:
    """Replicas [1, 2, 3, 4], leader epoch 100, partition epoch 200, as the tests build them."""
    return PartitionRegistration(
        (1, 2, 3, 4), tuple(isr), leader, RECOVERED, 100, 200, tuple(elr), tuple(last_known_elr)
    )


def built(partition, acceptable, unclean_shutdown=None) -> PartitionChangeRecord | None:
    """The tests' builder: min ISR 3, PREFERRED, target ISR empty."""
    builder = PartitionChangeBuilder(partition, acceptable, 3).set_election(PREFERRED).set_target_isr([])
    if unclean_shutdown is not None:
        builder.set_unclean_shutdown_replicas(unclean_shutdown)
    return builder.build()


@pytest.mark.parametrize(
    "test, partition, acceptable, record",
    [
        (
            "testEligibleLeaderReplicas_ElrCanBeElected",
            registration([1], [3], [], 1),
            lambda r: r != 1,
            PartitionChangeRecord(isr=[3], leader=3, eligible_leader_replicas=[1]),
        ),
        (
            "testEligibleLeaderReplicas_IsrCanShrinkToZero",
            registration([1, 2, 3, 4], [], [], 1),
            lambda r: False,
            PartitionChangeRecord(isr=[], leader=-1, eligible_leader_replicas=[1, 2, 3, 4], last_known_elr=[1]),
        ),
        (
            "testEligibleLeaderReplicas_ElectLastKnownLeader",
            registration([], [], [1], -1),
            lambda r: True,
            PartitionChangeRecord(isr=[1], leader=1, leader_recovery_state=RECOVERING, last_known_elr=[]),
        ),
        (
            "testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail",
            registration([], [3], [1], -1),
            lambda r: r != 3,
            None,
        ),
    ],
)
def test_the_oracle_builds_the_records_kafkas_own_tests_expect(test, partition, acceptable, record):
    assert built(partition, acceptable) == record


def test_the_oracle_keeps_the_last_known_leader_through_an_unclean_shutdown_as_kafkas_test_expects():
    """testEligibleLeaderReplicas_IsrCanShrinkToZero, its second build: no lastKnownElr field."""
    record = built(registration([], [1, 2, 3, 4], [1], -1), lambda r: False, unclean_shutdown=[2])
    assert record is not None and record.last_known_elr is None


def test_in_kafka_a_last_known_elr_of_minus_one_blocks_even_an_unclean_election():
    """What the model cannot reach (docs/conformance.md): with
    lastKnownElr [-1], canElectLastKnownLeader answers -1 before the
    UNCLEAN fallback (PCB:274-286), so every broker alive and unfenced, no
    election elects anyone."""
    partition = PartitionRegistration((0, 1), (), NO_LEADER, RECOVERING, 4, 9, (), (NO_LEADER,))
    alive = {b: BrokerRegistration(epoch=2, fenced=False, in_controlled_shutdown=False) for b in (0, 1)}
    c = Controller(partition, alive, 1, True)
    assert c.elect_leader(UNCLEAN) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    c.maybe_elect_unclean_leaders()
    c.maybe_balance_partition_leaders()
    assert c.partition == partition
    c.partition = replace(partition, last_known_elr=())
    assert c.elect_leader(UNCLEAN) == "NONE" and c.partition.leader == 0


# the reassignment cases (PCB), the builder built as createFooBuilder / createBarBuilder do:
# min ISR 2, broker 3 not acceptable, ELR on (record version 2)
FOO = PartitionRegistration((2, 1, 3), (2, 1, 3), 1, RECOVERED, 100, 200, (), ())
BAR = PartitionRegistration(
    (1, 2, 3, 4), (1, 2, 3), 1, RECOVERED, 100, 200, (), (), removing_replicas=(1,), adding_replicas=(4,)
)


def foo_or_bar(partition: PartitionRegistration) -> PartitionChangeBuilder:
    return PartitionChangeBuilder(partition, lambda r: r != 3, 2)


def test_the_oracle_completes_a_reassignment_as_kafkas_own_tests_expect():
    """testIsrEnlargementCompletesReassignment (464): the ISR that takes in 4
    completes BAR's reassignment and replaces the removed leader 1."""
    record = foo_or_bar(BAR).set_target_isr([1, 2, 3, 4]).build()
    assert record == PartitionChangeRecord(
        isr=[2, 3, 4], leader=2, replicas=[2, 3, 4], removing_replicas=[], adding_replicas=[]
    )


def test_the_oracle_reverts_a_reassignment_as_kafkas_own_test_expects():
    """testRevertReassignment (484): BAR reverted keeps leader 1, whose epoch
    the shrunk replica list bumps (the field set to the same leader)."""
    replicas, isr, unclean = reassignment_revert(BAR)
    assert (replicas, isr, unclean) == ([1, 2, 3], [1, 2, 3], False)
    builder = foo_or_bar(BAR).set_target_replicas(replicas).set_target_isr(isr)
    record = builder.set_target_removing([]).set_target_adding([]).build()
    assert record == PartitionChangeRecord(leader=1, replicas=[1, 2, 3], removing_replicas=[], adding_replicas=[])


@pytest.mark.parametrize(
    "test, target, removing, adding, record",
    [
        # testRemovingReplicaReassignment (510): [2, 1, 3] -> [1, 2] completes at once
        ("removing", [1, 2], [3], [], PartitionChangeRecord(isr=[2, 1], leader=1, replicas=[1, 2])),
        # testAddingReplicaReassignment (535): [2, 1, 3] -> [1, 2, 3, 4] waits for 4
        ("adding", [1, 2, 3, 4], [], [4], PartitionChangeRecord(replicas=[1, 2, 3, 4], adding_replicas=[4])),
    ],
)
def test_the_oracle_starts_a_reassignment_as_kafkas_own_tests_expect(test, target, removing, adding, record):
    moved = reassignment_replicas(list(FOO.replicas), target)
    assert moved[:2] == (removing, adding)
    builder = foo_or_bar(FOO).set_target_replicas(moved[2])
    builder = builder.set_target_removing(removing) if removing else builder
    builder = builder.set_target_adding(adding) if adding else builder
    assert builder.build() == record


def test_in_kafka_a_cancelled_reassignment_leaves_its_adding_replica_in_the_elr():
    """docs/model.md "Reassignment under kafka-4": [0, 1, 2] moving to
    [0, 1, 3] (list [0, 1, 3, 2]) with ISR [0, 3], min ISR 2. The cancel
    keeps ISR [0], under min ISR (no KIP-966 4b), and maybePopulateTargetElr
    (PCB:555-560) takes the ELR from the old ISR: [3], which is no longer a
    replica. specs/scenarios/kafka4-cancel-leaves-adding-replica-in-elr.toml
    reaches the same record in the spec."""
    partition = PartitionRegistration(
        (0, 1, 3, 2), (0, 3), 0, RECOVERED, 0, 5, (), (), removing_replicas=(2,), adding_replicas=(3,)
    )
    alive = {b: BrokerRegistration(epoch=1, fenced=False, in_controlled_shutdown=False) for b in range(4)}
    c = Controller(partition, alive, 2, False)
    assert c.cancel_partition_reassignment() == "NONE"
    p = c.partition
    assert (p.replicas, p.isr, p.elr, p.leader, p.leader_epoch) == ((0, 1, 2), (0,), (3,), 0, 1)
    assert (p.adding_replicas, p.removing_replicas) == ((), ())
    assert c.cancel_partition_reassignment() == "NO_REASSIGNMENT_IN_PROGRESS"
