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
)
from oracle_harness import CONTROLLER_ACTIONS, Comparison, Difference, compare, of_spec

from specs.kafka_elr import Kip966, load
from specs.kafka_elr.kafka4 import ELECTION_ONLINE, ELECTION_UNCLEAN, Kafka4
from specs.kafka_elr.types import State, contains


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


KNOWN = (Known("lastKnownElr [-1]", "docs/model.md kafka-4, maybeUpdateLastKnownLeader", last_known_elr_of_no_leader),)

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
