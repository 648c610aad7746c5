"""Real bugs: mutants that put back a mistake Apache Kafka shipped or nearly
shipped in the rules this spec models, each redefining one rule the way
the code did before its fix. `source` names the JIRA or pull request;
docs/verdicts.md ("Real bugs") says which invariant and configuration
kill each, and specs/gate.toml requires the gate to kill every one by a
verdict, not only by a moved count (issue 42)."""

from __future__ import annotations

from typing import Any

from . import logs
from .kafka4 import ELECTION_ONLINE, ELECTION_PREFERRED, Kafka4
from .protocol import Kip966
from .types import State, bit, contains
from .variants import ElrOnly


class FencedLastKnownLeader(ElrOnly):
    """KAFKA-19522: with ISR and ELR empty, the controller elects the last
    known leader without checking that it is unfenced (4.0's
    canElectLastKnownLeader logs the inverted test and returns true); the
    fix, apache/kafka PR 20200, is ElrOnly's `self.unfenced(s, lkl)`."""

    variant = "fenced-last-known-leader"
    source = "KAFKA-19522, apache/kafka PR 20200 (Kafka 4.1.0)"

    def last_known_leader_electable(self, s: State, lkl: int) -> bool:
        return True


class MinIsrChangeKeepsElr(Kip966):
    """KAFKA-16540, before apache/kafka PR 18148: a min.insync.replicas
    change is a ConfigRecord only; every partition keeps its ELR and
    LastKnownELR until its next change, even where the new min ISR makes
    the ISR large enough (4.0 writes a ClearElrRecord instead)."""

    variant = "min-isr-change-keeps-elr"
    source = "KAFKA-16540, apache/kafka PR 18148 (Kafka 4.0.0)"

    def min_isr_changed(self, s: State) -> State:
        return s


class LeaderOwnMinIsr(Kip966):
    """KAFKA-16540, before apache/kafka PR 17952: the leader applies its own
    (static or broker-level) min.insync.replicas to the HWM and acks=all,
    while the controller fills the ELR against the cluster's dynamic one;
    4.0 keeps one cluster-level value and refuses broker-level ones."""

    variant = "leader-own-min-isr"
    source = "KAFKA-16540, apache/kafka PR 17952 (Kafka 4.0.0)"
    broker_min_isr = 0  # set by each instance; a class default lets the variants share a kernel

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self.broker_min_isr = config["min_isr"]  # the value each broker started with

    def min_isr_seen_by(self, s: State, ld: int) -> int:
        return min(self.broker_min_isr, self.rf)


class StaleBrokerEpochAccepted(Kip966):
    """KAFKA-14139 (KIP-903): the controller checks that the proposed ISR's
    members are registered and unfenced, not that each is the incarnation
    the leader saw caught up, so a replica that restarted with an empty or
    truncated log rejoins the ISR through an AlterPartition from before
    its restart ("Replaced disk can lead to loss of committed data even
    with non-empty ISR")."""

    variant = "stale-broker-epoch-accepted"
    source = "KAFKA-14139, KIP-903, apache/kafka PRs 13323, 13408, 13489 (Kafka 3.5.0)"

    def epochs_current(self, s: State) -> bool:
        return True


class FencedReplicaJoinsIsr(Kip966):
    """KAFKA-13916 (KIP-841): the controller accepts an AlterPartition whose
    new ISR holds a fenced or shutting-down replica (the leader still saw
    it caught up), where KIP-841 answers INELIGIBLE_REPLICA."""

    variant = "fenced-replica-joins-isr"
    source = "KAFKA-13916, KIP-841, apache/kafka PRs 12181, 12240 (Kafka 3.3.0)"

    def isr_eligible(self, s: State, proposed: int) -> bool:
        return True


class Kafka4NoUncleanDetection(Kafka4):
    """KAFKA-18635: Kafka 4.0's release candidates took every registration
    as clean, so a broker that lost its unflushed suffix stayed in the ELR
    (apache/kafka PR 18277 turned the detection back on before 4.0.0)."""

    variant = "kafka-4-no-unclean-detection"
    source = "KAFKA-18635, apache/kafka PR 18277 (Kafka 4.0.0)"

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True


class RebootedFollowerEpochRace(Kip966):
    """KAFKA-15221: the leader took "caught up" from the follower's old
    incarnation and the broker epoch from its new one's first fetch, so an
    AlterPartition readmitted a follower that restarted with a shorter log
    whenever the new incarnation was running (apache/kafka PR 14053 takes
    both from one replica state)."""

    variant = "rebooted-follower-epoch-race"
    source = "KAFKA-15221, apache/kafka PR 14053 (Kafka 3.6.0)"

    def epochs_current(self, s: State) -> bool:
        for b in range(self.n):
            if contains(s.pending_isr, b) and s.pending_epochs[b] != s.broker_epoch[b] and not self.running(s, b):
                return False
        return True


class UncleanConfigIgnored(Kafka4):
    """KAFKA-12670: the KRaft controller ignored unclean.leader.election.enable
    (ConfigurationControlManager's uncleanLeaderElectionEnabledForTopic
    returned false, "TODO: support configuring unclean leader election"):
    broker and ISR changes elected ONLINE only, and no periodic task elected
    a leaderless partition uncleanly, so it stayed leaderless until the last
    ISR member came back; only an ElectLeaders request could elect. The
    fix, apache/kafka PR 16866, reads the topic's config at every change
    and adds maybeElectUncleanLeaders."""

    variant = "unclean-config-ignored"
    source = "KAFKA-12670, apache/kafka PR 16866 (Kafka 3.9.0)"

    def online_election(self, s: State) -> int:
        return ELECTION_ONLINE

    def elect_leader(self, s: State, leader: int) -> State | None:
        if s.leader != self.preferred(s.replicas, s.listed_last):
            t = self.build(s, s.isr, ELECTION_PREFERRED, 0)
            if t != s and t.leader == leader:
                return t
        return None  # no maybeElectUncleanLeaders


class HwmWaitsForIneligible(Kip966):
    """KAFKA-15021: the leader's HWM counted every caught-up replica
    (Partition.maybeIncrementLeaderHW: `isCaughtUp || maximalIsr.contains`),
    one that had left the ISR to shut down and stopped fetching included, so
    the HWM stalled and acks=all produces timed out until
    replica.lag.time.max.ms (for ever here: no clock). apache/kafka PR 13765
    counts a caught-up replica only if it may join the ISR. Caught up here:
    its log is a prefix of the leader's and reaches the leader's HWM."""

    variant = "hwm-waits-for-ineligible"
    source = "KAFKA-15021, apache/kafka PR 13765 (Kafka 3.6.0)"

    def hwm_quorum(self, s: State, ld: int) -> int:
        lead, caught = s.log[ld], 0
        for b in range(self.n):
            if (
                b != ld
                and contains(s.replicas, b)
                and logs.length(s.log[b]) >= s.hwm[ld]
                and logs.is_prefix(s.log[b], lead)
            ):
                caught |= bit(b)  # fenced, shutting down or stopped: each counts
        return self.isr_seen_by(s, ld) | self.proposed_by(s, ld) | caught


class RecoveryChangeDropped(Kip966):
    """apache/kafka PR 12073: when KIP-704 added LeaderRecoveryState to the
    PartitionChangeRecord, PartitionChangeBuilder's no-op check was not
    updated, so the RECOVERING leader's AlterPartition that changed only the
    recovery state (to RECOVERED) built a record judged empty and not
    written: the partition stayed RECOVERING under its leader, whose ISR
    cannot grow (KIP-704). The fix checks leaderRecoveryState too."""

    variant = "recovery-change-dropped"
    source = "KAFKA-13587 (KIP-704) follow-up, apache/kafka PR 12073 (Kafka 3.3.0)"

    def recorded(self, s: State, t: State) -> State:
        same = t._replace(leader_recovery=s.leader_recovery)
        if not self.partition_changed(s, same):
            return same  # changeRecordIsNoOp ignored the recovery state: nothing written
        return self.written(s, t)
