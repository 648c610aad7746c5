"""Apache Kafka 4.0.0's KRaft controller for one partition, transliterated
imperatively from the Java: an oracle for the kafka-4 variant that shares
nothing with specs/kafka_elr's controller.

Source: apache/kafka tag 4.0.0 = commit 985bc99521dd22bbf620591b8db8613c54f596b2
(read from aiven/inkless, a fork carrying the upstream tags). Line numbers
are at that commit: PCB, RCM, ClusterCM, CCM, BHM, PR are
`PartitionChangeBuilder`, `ReplicationControlManager`,
`ClusterControlManager`, `ConfigurationControlManager`,
`BrokerHeartbeatManager` (metadata/src/main/java/org/apache/kafka/controller/)
and `PartitionRegistration` (.../kafka/metadata/).

Fixed here as the kafka-4 variant runs them: the ELR feature on
(`eligibleLeaderReplicasEnabled`), `useLastKnownLeaderInBalancedRecovery`
true (PCB:105; its setter has no caller), metadata version 4.0 (no leader
epoch bump on ISR shrink, PCB:386-407), one topic of one partition, one
log directory that never fails (`LeaderAcceptor`'s `hasOnlineDir` is
true, directories are left out). ISR and ELR lists are kept in ascending
order, which is how Kafka's HashSets of small broker ids iterate (PCB:557,
565) and how the model's bitmasks read; an ISR that differs only in order
is therefore never seen. The replica list keeps Kafka's order; a
reassignment's target list is given in ascending order (the model's
targets are sets), and one reassignment is in progress at a time (the
model's bound). PRR and PRRevert are `PartitionReassignmentReplicas` and
`PartitionReassignmentRevert`.

Records are generated against the state as it is, then replayed, as the
QuorumController does with a write event's records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

NO_LEADER = -1  # LeaderConstants.NO_LEADER
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE
RECOVERED, RECOVERING = 0, 1  # LeaderRecoveryState
NO_CHANGE = -1  # LeaderRecoveryState.NO_CHANGE

# PartitionChangeBuilder.Election
ONLINE, PREFERRED, UNCLEAN = "ONLINE", "PREFERRED", "UNCLEAN"


@dataclass(frozen=True)
class PartitionRegistration:
    """The controller's record of the partition (PR)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()

    def merge(self, record: PartitionChangeRecord) -> PartitionRegistration:
        """PR:241-280: every record bumps the partition epoch; a leader field
        (even the same leader, or none) bumps the leader epoch."""
        if record.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = record.leader, self.leader_epoch + 1
        return PartitionRegistration(
            replicas=self.replicas if record.replicas is None else tuple(record.replicas),
            isr=self.isr if record.isr is None else tuple(record.isr),
            leader=leader,
            # LeaderRecoveryState.changeTo (PR:265)
            leader_recovery_state=self.leader_recovery_state
            if record.leader_recovery_state == NO_CHANGE
            else record.leader_recovery_state,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            elr=self.elr if record.eligible_leader_replicas is None else tuple(record.eligible_leader_replicas),
            last_known_elr=self.last_known_elr if record.last_known_elr is None else tuple(record.last_known_elr),
            removing_replicas=self.removing_replicas
            if record.removing_replicas is None
            else tuple(record.removing_replicas),
            adding_replicas=self.adding_replicas if record.adding_replicas is None else tuple(record.adding_replicas),
        )

    def has_leader(self) -> bool:  # PR:357-359
        return self.leader != NO_LEADER

    def preferred_replica(self) -> int:  # PR:365-367
        return NO_LEADER if not self.replicas else self.replicas[0]

    def has_preferred_leader(self) -> bool:  # PR:361-363
        return self.leader == self.preferred_replica()

    def is_reassignment_in_progress(self) -> bool:  # PRR:77-94
        return bool(self.removing_replicas or self.adding_replicas)


@dataclass
class PartitionChangeRecord:
    """A PartitionChangeRecord: None (or NO_CHANGE / NO_LEADER_CHANGE) leaves a field as it is."""

    isr: list[int] | None = None
    leader: int = NO_LEADER_CHANGE
    leader_recovery_state: int = NO_CHANGE
    eligible_leader_replicas: list[int] | None = None
    last_known_elr: list[int] | None = None
    replicas: list[int] | None = None
    removing_replicas: list[int] | None = None
    adding_replicas: list[int] | None = None

    def is_no_op(self) -> bool:
        """PCB:54-64 (directories never set here)."""
        return (
            self.isr is None
            and self.eligible_leader_replicas is None
            and self.last_known_elr is None
            and self.leader == NO_LEADER_CHANGE
            and self.replicas is None
            and self.removing_replicas is None
            and self.adding_replicas is None
            and self.leader_recovery_state == NO_CHANGE
        )


@dataclass(frozen=True)
class BrokerRegistration:
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord:
    broker_id: int
    fenced: bool | None = None  # BrokerRegistrationFencingChange: None = no change
    in_controlled_shutdown: bool | None = None


@dataclass(frozen=True)
class RegisterBrokerRecord:
    broker_id: int
    broker_epoch: int
    fenced: bool = True  # RegisterBrokerRecord.json: "Fenced" defaults to true
    in_controlled_shutdown: bool = False


MIN_IN_SYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


@dataclass(frozen=True)
class ConfigRecord:
    """A config set on the topic (resource TOPIC) or the cluster (BROKER, name "")."""

    topic_level: bool
    name: str
    value: int | bool


@dataclass(frozen=True)
class ClearElrRecord:
    pass  # for one topic or for all: the same here (one topic)


def maybe_complete_reassignment(
    removing: list[int], adding: list[int], replicas: list[int], target_isr: list[int]
) -> tuple[list[int], list[int]] | None:
    """PRR:97-130: (replicas, ISR) once every target replica is in the ISR
    without the removing ones; None while the reassignment must wait."""
    if not removing and not adding:
        return None
    new_target_isr, new_target_replicas = list(target_isr), replicas
    if removing:
        new_target_isr = [r for r in target_isr if r not in removing]
        if not new_target_isr:
            return None
        new_target_replicas = [r for r in replicas if r not in removing]
        if not new_target_replicas:
            return None
    if not set(new_target_replicas) <= set(new_target_isr):
        return None
    return list(new_target_replicas), new_target_isr


def reassignment_replicas(current: list[int], target: list[int]) -> tuple[list[int], list[int], list[int]]:
    """PRR:53-63: (removing, adding, replicas); the differences are TreeSets (ascending)."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return removing, adding, list(target) + removing


def reassignment_revert(partition: PartitionRegistration) -> tuple[list[int], list[int], bool]:
    """PRRevert:33-62: (replicas, ISR, unclean): the original replicas in
    their order, the ISR without the adding ones, else the first original
    replica (an unclean choice)."""
    replicas = [r for r in partition.replicas if r not in partition.adding_replicas]  # PRR.originalReplicas
    isr = [r for r in partition.isr if r not in partition.adding_replicas]
    if isr:
        return replicas, isr, False
    return replicas, [replicas[0]], True


class PartitionChangeBuilder:
    """PCB, with ELR on and the last known leader kept in lastKnownElr."""

    def __init__(self, partition: PartitionRegistration, is_acceptable_leader, min_isr: int, elr_enabled: bool = True):
        self.partition = partition
        self.elr_enabled = elr_enabled  # setEligibleLeaderReplicasEnabled (PCB:180), the feature's flag
        self.is_acceptable_leader = is_acceptable_leader
        self.min_isr = min_isr
        # PCB:123-129
        self.target_isr = list(partition.isr)
        self.target_replicas = list(partition.replicas)
        self.target_removing = list(partition.removing_replicas)
        self.target_adding = list(partition.adding_replicas)
        self.target_elr = list(partition.elr)
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.unclean_shutdown_replicas: list[int] | None = None
        self.election = ONLINE

    def set_target_isr(self, isr: list[int]) -> PartitionChangeBuilder:
        self.target_isr = list(isr)
        return self

    def set_target_replicas(self, replicas: list[int]) -> PartitionChangeBuilder:
        self.target_replicas = list(replicas)
        return self

    def set_target_removing(self, replicas: list[int]) -> PartitionChangeBuilder:
        self.target_removing = list(replicas)
        return self

    def set_target_adding(self, replicas: list[int]) -> PartitionChangeBuilder:
        self.target_adding = list(replicas)
        return self

    def set_unclean_shutdown_replicas(self, replicas: list[int]) -> PartitionChangeBuilder:
        self.unclean_shutdown_replicas = list(replicas)
        return self

    def set_election(self, election: str) -> PartitionChangeBuilder:
        self.election = election
        return self

    def set_target_leader_recovery_state(self, state: int) -> PartitionChangeBuilder:
        self.target_leader_recovery_state = state
        return self

    # ---- the election (PCB:221-326) ---------------------------------------------------
    def elect_leader(self) -> tuple[int, bool]:
        """PCB:221-227: (node, unclean)."""
        if self.election == PREFERRED:
            return self.elect_preferred_leader()
        return self.elect_any_leader()

    def elect_preferred_leader(self) -> tuple[int, bool]:
        """PCB:232-256."""
        preferred = self.target_replicas[0]
        if self.is_valid_new_leader(preferred):
            return preferred, False
        if self.is_valid_new_leader(self.partition.leader):
            return self.partition.leader, False
        for replica in self.target_replicas[1:]:
            if self.is_valid_new_leader(replica):
                return replica, False
        if self.can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
        return NO_LEADER, False

    def elect_any_leader(self) -> tuple[int, bool]:
        """PCB:261-289."""
        if self.is_valid_new_leader(self.partition.leader):
            return self.partition.leader, False
        for replica in self.target_replicas:
            if self.is_valid_new_leader(replica):
                return replica, False
        if self.can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
        if self.election == UNCLEAN:
            for replica in self.target_replicas:
                if self.is_acceptable_leader(replica):
                    return replica, True
        return NO_LEADER, False

    def can_elect_last_known_leader(self) -> bool:
        """PCB:291-320: lines 315-318 only log when the last known leader is
        acceptable; it is elected alive or not (KAFKA-19522, fixed in 4.1)."""
        if not self.elr_enabled or self.target_elr or self.target_isr:
            return False
        return len(self.partition.last_known_elr) == 1

    def is_valid_new_leader(self, replica: int) -> bool:
        """PCB:322-326."""
        return (replica in self.target_isr or (not self.target_isr and replica in self.target_elr)) and (
            self.is_acceptable_leader(replica)
        )

    def try_election(self, record: PartitionChangeRecord) -> None:
        """PCB:328-360."""
        node, unclean = self.elect_leader()
        if node == self.partition.leader:
            return
        if node in self.target_elr:
            self.target_isr = [node]
            self.target_elr = [r for r in self.target_elr if r != node]
        record.leader = node
        if unclean:
            record.isr = [node]
            if self.partition.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING

    # ---- reassignment (PCB:362-378, 409-428, 472-493) ----------------------------------
    def trigger_leader_epoch_bump_for_replica_reassignment_if_needed(self, record: PartitionChangeRecord) -> None:
        """PCB:368-378: a replica list that loses a broker bumps the leader epoch."""
        if record.leader != NO_LEADER_CHANGE:
            return
        if not set(self.partition.replicas) <= set(self.target_replicas):  # Replicas.contains
            record.leader = self.partition.leader

    def complete_reassignment_if_needed(self) -> None:
        """PCB:409-428 with PRR.maybeCompleteReassignment (PRR:97-130)."""
        completed = maybe_complete_reassignment(
            self.target_removing, self.target_adding, self.target_replicas, self.target_isr
        )
        if completed is None:
            return
        self.target_replicas, self.target_isr = completed
        self.target_removing, self.target_adding = [], []

    def set_assignment_changes(self, record: PartitionChangeRecord) -> None:
        """PCB:472-493 (without directories)."""
        if self.target_replicas and self.target_replicas != list(self.partition.replicas):
            record.replicas = list(self.target_replicas)
        if self.target_removing != list(self.partition.removing_replicas):
            record.removing_replicas = list(self.target_removing)
        if self.target_adding != list(self.partition.adding_replicas):
            record.adding_replicas = list(self.target_adding)

    # ---- build (PCB:430-470) ----------------------------------------------------------
    def build(self) -> PartitionChangeRecord | None:
        record = PartitionChangeRecord()
        self.complete_reassignment_if_needed()
        self.maybe_populate_target_elr()
        self.try_election(record)
        self.trigger_leader_epoch_bump_for_replica_reassignment_if_needed(record)
        self.maybe_update_record_elr(record)
        # PCB:446-453 (only with the ELR on may the ISR become empty)
        if record.isr is None and (self.target_isr or self.elr_enabled) and self.target_isr != list(self.partition.isr):
            record.isr = list(self.target_isr)
        self.maybe_update_last_known_leader(record)
        self.set_assignment_changes(record)
        if self.target_leader_recovery_state != self.partition.leader_recovery_state:  # PCB:461-463
            record.leader_recovery_state = self.target_leader_recovery_state
        return None if record.is_no_op() else record

    def maybe_update_last_known_leader(self, record: PartitionChangeRecord) -> None:
        """PCB:495-506."""
        if not self.elr_enabled:
            return
        p = self.partition
        emptied = record.isr is not None and not record.isr
        if emptied and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader):
            record.last_known_elr = [p.leader]
        elif (record.leader >= 0 or (p.leader != NO_LEADER and record.leader != NO_LEADER)) and p.last_known_elr:
            record.last_known_elr = []

    def maybe_update_record_elr(self, record: PartitionChangeRecord) -> None:
        """PCB:508-536. With useLastKnownLeaderInBalancedRecovery the method
        returns (531) before it writes targetLastKnownElr, so that target
        (PCB:128, 515, 522-527, 544, 562-568) never reaches a record and is
        left out here: the lastKnownElr field is maybe_update_last_known_leader's."""
        clean_election = record.isr is None
        if not clean_election or not self.elr_enabled:
            self.target_elr = []
        if self.target_elr != list(self.partition.elr):
            record.eligible_leader_replicas = list(self.target_elr)

    def maybe_populate_target_elr(self) -> None:
        """PCB:538-569."""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = []
            return
        target_isr_set = set(self.target_isr)
        candidates = set(self.target_elr) | set(self.partition.isr)
        self.target_elr = sorted(
            r
            for r in candidates
            if r not in target_isr_set
            and (self.unclean_shutdown_replicas is None or r not in self.unclean_shutdown_replicas)
        )


class Controller:
    """The controller's state for one topic of one partition, and the
    handlers of ReplicationControlManager, ClusterControlManager and
    ConfigurationControlManager that the model's actions stand for."""

    def __init__(
        self,
        partition: PartitionRegistration,
        registrations: dict[int, BrokerRegistration],
        min_isr: int,
        unclean_leader_election: bool,
        elr_enabled: bool = True,
    ):
        self.partition = partition
        self.registrations = dict(registrations)
        self.min_isr = min_isr  # min.insync.replicas (no topic override: the cluster's value)
        self.unclean_leader_election = unclean_leader_election
        self.elr_enabled = elr_enabled  # FeatureControlManager.isElrFeatureEnabled

    # ---- replay ------------------------------------------------------------------------
    def replay(self, records: list) -> None:
        for record in records:
            if isinstance(record, PartitionChangeRecord):
                self.partition = self.partition.merge(record)
            elif isinstance(record, BrokerRegistrationChangeRecord):  # ClusterCM:619-660
                reg = self.registrations[record.broker_id]
                if record.fenced is not None:
                    reg = replace(reg, fenced=record.fenced)
                if record.in_controlled_shutdown is not None:
                    reg = replace(reg, in_controlled_shutdown=record.in_controlled_shutdown)
                self.registrations[record.broker_id] = reg
            elif isinstance(record, RegisterBrokerRecord):  # ClusterCM:540-570
                self.registrations[record.broker_id] = BrokerRegistration(
                    record.broker_epoch, record.fenced, record.in_controlled_shutdown
                )
            elif isinstance(record, ConfigRecord) and record.name == MIN_IN_SYNC_REPLICAS:
                self.min_isr = int(record.value)
            elif isinstance(record, ConfigRecord):  # uncleanLeaderElectionEnabledForTopic reads it (CCM:691-697)
                self.unclean_leader_election = bool(record.value)
            elif isinstance(record, ClearElrRecord):
                self.remove_topic_elrs()
            else:
                raise TypeError(f"no replay for {record!r}")

    def remove_topic_elrs(self) -> None:
        """RCM:604-616: ELR and LastKnownELR cleared in a record, nothing recomputed."""
        p = self.partition
        if p.elr or p.last_known_elr:
            self.partition = p.merge(PartitionChangeRecord(eligible_leader_replicas=[], last_known_elr=[]))

    # ---- queries -------------------------------------------------------------------------
    def is_active(self, broker: int) -> bool:
        """ClusterCM:730-734: registered, not fenced, not in controlled shutdown."""
        reg = self.registrations.get(broker)
        return reg is not None and not reg.in_controlled_shutdown and not reg.fenced

    def effective_min_isr(self) -> int:
        """RCM:2344-2350."""
        return min(self.min_isr, len(self.partition.replicas))

    def builder(self, is_acceptable_leader=None) -> PartitionChangeBuilder:
        """A builder as the handlers make one; LeaderAcceptor (RCM:2424-2447)
        defaults to isActive and adds hasOnlineDir (always true here)."""
        acceptable = is_acceptable_leader or self.is_active
        return PartitionChangeBuilder(self.partition, acceptable, self.effective_min_isr(), self.elr_enabled)

    # ---- RCM: leader and ISR updates for a broker ------------------------------------------
    def generate_leader_and_isr_updates(
        self, broker_to_remove: int, broker_to_add: int, broker_with_unclean_shutdown: int, records: list
    ) -> None:
        """RCM:1975-2056, for the one partition (the caller decides whether
        the iterator holds it)."""

        def is_acceptable_leader(r: int) -> bool:
            return r not in (broker_to_remove, broker_with_unclean_shutdown) and (
                r == broker_to_add or self.is_active(r)
            )

        builder = self.builder(is_acceptable_leader)
        if self.unclean_leader_election:
            builder.set_election(UNCLEAN)
        if broker_with_unclean_shutdown != NO_LEADER:
            builder.set_unclean_shutdown_replicas([broker_with_unclean_shutdown])
        builder.set_target_isr(
            [r for r in self.partition.isr if r not in (broker_to_remove, broker_with_unclean_shutdown)]
        )
        record = builder.build()
        if record is not None:
            records.append(record)

    def in_isr(self, broker: int) -> bool:
        """BrokersToIsrs.partitionsWithBrokerInIsr holds the partition."""
        return broker in self.partition.isr

    def handle_broker_fenced(self, broker: int, records: list) -> None:
        """RCM:1363-1374."""
        if self.in_isr(broker):
            self.generate_leader_and_isr_updates(broker, NO_LEADER, NO_LEADER, records)
        records.append(BrokerRegistrationChangeRecord(broker, fenced=True))

    def handle_broker_unfenced(self, broker: int, records: list) -> None:
        """RCM:1408-1415: the unfencing record comes first, but is replayed
        after, so the broker is named acceptable (`brokerToAdd`)."""
        records.append(BrokerRegistrationChangeRecord(broker, fenced=False))
        if not self.partition.has_leader():  # partitionsWithNoLeader
            self.generate_leader_and_isr_updates(NO_LEADER, broker, NO_LEADER, records)

    def handle_broker_in_controlled_shutdown(self, broker: int, records: list) -> None:
        """RCM:1428-1437."""
        if not self.registrations[broker].in_controlled_shutdown:
            records.append(BrokerRegistrationChangeRecord(broker, in_controlled_shutdown=True))
        if self.in_isr(broker):
            self.generate_leader_and_isr_updates(broker, NO_LEADER, NO_LEADER, records)

    def handle_broker_shutdown(self, broker: int, is_clean_shutdown: bool, records: list) -> None:
        """RCM:1446-1458: with the ELR off, every shutdown is handled as a fence."""
        if self.elr_enabled and not is_clean_shutdown:
            if self.in_isr(broker):
                self.generate_leader_and_isr_updates(NO_LEADER, NO_LEADER, broker, records)
            if broker in self.partition.elr:  # partitionsWithBrokerInElr
                self.generate_leader_and_isr_updates(NO_LEADER, NO_LEADER, broker, records)
        elif self.in_isr(broker):
            self.generate_leader_and_isr_updates(broker, NO_LEADER, NO_LEADER, records)

    # ---- the events the model's actions stand for ------------------------------------------
    def fence_stale_broker(self, broker: int) -> None:
        """RCM:1667-1695 maybeFenceOneStaleBroker: the session timed out."""
        records: list = []
        self.handle_broker_fenced(broker, records)
        self.replay(records)

    def enter_controlled_shutdown(self, broker: int) -> None:
        """RCM:1608-1628 with BHM:440-444: an unfenced broker with leaderships
        asks to shut down and enters CONTROLLED_SHUTDOWN, still unfenced."""
        records: list = []
        self.handle_broker_in_controlled_shutdown(broker, records)
        self.replay(records)

    def heartbeat_unfence(self, broker: int) -> None:
        """RCM:1608-1628 with BHM:406-416: a fenced broker caught up with its registration."""
        records: list = []
        self.handle_broker_unfenced(broker, records)
        self.replay(records)

    def heartbeat_shutdown(self, broker: int) -> None:
        """A broker asks to shut down (RCM:1608-1628). Fenced, it is granted
        SHUTDOWN_NOW at once (BHM:406-410). Unfenced with leaderships, it
        enters CONTROLLED_SHUTDOWN first (BHM:440-444, its own write event),
        and once out of them or once its session times out it is fenced
        too (SHUTDOWN_NOW, BHM:453-466, or the timeout). Unfenced without
        leaderships, SHUTDOWN_NOW (BHM:445-448). SHUTDOWN_NOW is handleBrokerFenced."""
        fenced = self.registrations[broker].fenced
        if not fenced and self.partition.leader == broker:  # BrokersToIsrs.hasLeaderships
            records: list = []
            self.handle_broker_in_controlled_shutdown(broker, records)
            self.replay(records)
        self.fence_stale_broker(broker)

    def register_broker(self, broker: int, previous_broker_epoch: int, new_broker_epoch: int) -> None:
        """ClusterCM:335-460 for a new incarnation, clean-shutdown detection
        on (request version >= 3, QC:2014-2015): clean iff the stored epoch is
        the one the broker's clean-shutdown file names (352-356, 422-426)."""
        records: list = []
        stored = self.registrations[broker].epoch if broker in self.registrations else -2
        self.handle_broker_shutdown(broker, stored == previous_broker_epoch, records)
        records.append(RegisterBrokerRecord(broker, new_broker_epoch))
        self.replay(records)

    def alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        leader_epoch: int,
        partition_epoch: int,
        new_isr_with_epochs: list[tuple[int, int]],
        leader_recovery_state: int,
    ) -> str:
        """RCM:1065-1180 for the one partition; returns the error name (NONE if accepted)."""
        reg = self.registrations.get(broker_id)
        if reg is None or reg.epoch != broker_epoch:  # ClusterCM.checkBrokerEpoch, 746-756
            return "STALE_BROKER_EPOCH"
        error = self.validate_alter_partition_data(
            broker_id, leader_epoch, partition_epoch, new_isr_with_epochs, leader_recovery_state
        )
        if error != "NONE":
            return error
        builder = self.builder()
        if self.unclean_leader_election:
            builder.set_election(UNCLEAN)
        record = (
            builder.set_target_isr([b for b, _ in new_isr_with_epochs])
            .set_target_leader_recovery_state(leader_recovery_state)
            .build()
        )
        if record is not None:
            self.replay([record])
        return "NONE"

    def validate_alter_partition_data(
        self,
        broker_id: int,
        leader_epoch: int,
        partition_epoch: int,
        new_isr_with_epochs: list[tuple[int, int]],
        leader_recovery_state: int,
    ) -> str:
        """RCM:1231-1330."""
        p = self.partition
        if leader_epoch > p.leader_epoch or partition_epoch > p.partition_epoch:
            return "NOT_CONTROLLER"
        if leader_epoch < p.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if broker_id != p.leader:
            return "INVALID_REQUEST"
        if partition_epoch < p.partition_epoch:
            return "INVALID_UPDATE_VERSION"
        new_isr = [b for b, _ in new_isr_with_epochs]
        if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(p.replicas):  # Replicas.validateIsr
            return "INVALID_REQUEST"
        if p.leader not in new_isr:
            return "INVALID_REQUEST"
        if leader_recovery_state == RECOVERING and len(new_isr) > 1:
            return "INVALID_REQUEST"
        if p.leader_recovery_state == RECOVERED and leader_recovery_state == RECOVERING:
            return "INVALID_REQUEST"
        if self.ineligible_replicas_for_isr(new_isr_with_epochs):
            return "INELIGIBLE_REPLICA"
        return "NONE"

    def ineligible_replicas_for_isr(self, new_isr_with_epochs: list[tuple[int, int]]) -> list[int]:
        """RCM:1332-1352 (KIP-903)."""
        ineligible = []
        for broker, epoch in new_isr_with_epochs:
            reg = self.registrations.get(broker)
            if reg is None or reg.in_controlled_shutdown or reg.fenced or (epoch != -1 and reg.epoch != epoch):
                ineligible.append(broker)
        return ineligible

    def elect_leader(self, election_type: str) -> str:
        """RCM:1555-1602 (ElectLeaders for the one partition; election_type
        PREFERRED or UNCLEAN, ElectionType's names)."""
        p = self.partition
        if election_type == PREFERRED and p.has_preferred_leader() or election_type == UNCLEAN and p.has_leader():
            return "ELECTION_NOT_NEEDED"
        record = self.builder().set_election(PREFERRED if election_type == PREFERRED else UNCLEAN).build()
        if record is None:
            return "PREFERRED_LEADER_NOT_AVAILABLE" if election_type == PREFERRED else "ELIGIBLE_LEADERS_NOT_AVAILABLE"
        self.replay([record])
        return "NONE"

    def maybe_balance_partition_leaders(self) -> None:
        """RCM:1717-1758: a PREFERRED build on each imbalanced partition
        (replay: the partition is imbalanced iff it lacks its preferred leader, RCM:469-473)."""
        if not self.partition.has_preferred_leader():
            record = self.builder().set_election(PREFERRED).build()
            if record is not None:
                self.replay([record])

    def maybe_elect_unclean_leaders(self) -> None:
        """RCM:1768-1804: with unclean.leader.election.enable, an UNCLEAN
        election on each leaderless partition."""
        if not self.partition.has_leader() and self.unclean_leader_election:
            self.elect_leader(UNCLEAN)

    def change_partition_reassignment(self, target: list[int]) -> None:
        """RCM:2182-2213 (alterPartitionReassignments with target replicas;
        validateManualPartitionAssignment passes: every broker is registered)."""
        p = self.partition
        removing, adding, replicas = reassignment_replicas(list(p.replicas), target)
        builder = self.builder()
        if replicas != list(p.replicas):
            builder.set_target_replicas(replicas)
        if removing:
            builder.set_target_removing(removing)
        if adding:
            builder.set_target_adding(adding)
        record = builder.build()
        if record is not None:
            self.replay([record])

    def cancel_partition_reassignment(self) -> str:
        """RCM:2119-2153 (alterPartitionReassignments with null replicas);
        returns the error name (NONE if accepted)."""
        if not self.partition.is_reassignment_in_progress():
            return "NO_REASSIGNMENT_IN_PROGRESS"
        replicas, isr, unclean = reassignment_revert(self.partition)
        if unclean and not self.unclean_leader_election:
            return "INVALID_REPLICA_ASSIGNMENT"
        builder = self.builder()
        if self.unclean_leader_election:
            builder.set_election(UNCLEAN)
        builder.set_target_isr(isr).set_target_replicas(replicas).set_target_removing([]).set_target_adding([])
        record = builder.build()
        if record is not None:
            self.replay([record])
        return "NONE"

    def incremental_alter_config(self, name: str, value: int | bool, topic_level: bool) -> None:
        """CCM:199-238, 256-316: a SET of config `name`, either of the topic's
        own override (the value in force: a record only if it changes) or of
        the cluster's value with no topic override (a record always,
        KAFKA-14136, CCM:303-304); each record naming min.insync.replicas
        brings a ClearElrRecord (createClearElrRecordsAsNeeded). Nothing is
        elected: QuorumController.incrementalAlterConfigs (QC:1883-1899)
        appends only these records; the periodic electUnclean task
        (maybe_elect_unclean_leaders) reads unclean.leader.election.enable later."""
        current = self.min_isr if name == MIN_IN_SYNC_REPLICAS else self.unclean_leader_election
        records = [] if value == current and topic_level else [ConfigRecord(topic_level, name, value)]
        self.replay(records + (clear_elr_records_as_needed(records) if self.elr_enabled else []))


def clear_elr_records_as_needed(records: list) -> list:
    """CCM:218-238 createClearElrRecordsAsNeeded: a ClearElrRecord for each
    ConfigRecord naming min.insync.replicas (ELR on)."""
    return [ClearElrRecord() for r in records if isinstance(r, ConfigRecord) and r.name == MIN_IN_SYNC_REPLICAS]
