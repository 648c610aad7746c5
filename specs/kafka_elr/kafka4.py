"""`kafka-4`: the KRaft controller as shipped in Apache Kafka 4.0.0, with
the ELR feature on (eligible.leader.replicas.version=1).

One function, `build`, mirrors PartitionChangeBuilder.build() (ELR on,
useLastKnownLeaderInBalancedRecovery=true as ReplicationControlManager
always leaves it); the actions call it where ReplicationControlManager
does. The broker side (produce, fetch, HWM, ISR expansion) is KIP-966's, as
Partition.scala implements it. docs/model.md cites the code line by line,
oddities included: elections are deterministic (assignment order), the last
known leader is elected without a liveness check, a clean election keeps
RECOVERING, and a min.insync.replicas change wipes the ELR.
"""

from __future__ import annotations

from modelcheck.declare import Param, SymmetryError, action
from modelcheck.ops import lowest_bit
from modelcheck.refinement import Refinement

from . import rules
from .arguments import ADMIN_TYPE, BROKER, ELECTED, PREFERRED, UNCLEAN
from .protocol import Kip966
from .types import NEW, NO_LEADER, RECOVERED, RECOVERY_MANAGER, State, bit, size

# PartitionChangeBuilder's election types
ELECTION_ONLINE, ELECTION_PREFERRED, ELECTION_UNCLEAN = range(3)
# the leader a build chose, shown even when it is none (-1)
BUILT_LEADER = Param(lambda spec: range(-1, spec.n))


class Kafka4(Kip966):
    """Apache Kafka 4.0.0's controller: ISR, then ELR (only when the ISR is
    empty), then the last known leader (unclean), then, with
    unclean.leader.election.enable, the first live replica (unclean)."""

    variant = "kafka-4"
    protocol = True
    admin_types = (PREFERRED, UNCLEAN)  # ElectLeaders: ElectionType PREFERRED / UNCLEAN
    # no unclean recovery manager in 4.0, no separate end of recovery (reported_recovery), and
    # no separate completion of a reassignment: every build() completes one that may be
    # (completeReassignmentIfNeeded), so the goal and the property naming that action go too
    lacks = frozenset({RECOVERY_MANAGER})
    omit = frozenset(
        {
            "CompleteRecovery",
            "RecoveryCompletes",
            "RecoveringLeaderRecovers",
            "CompleteReassignment",
            "ReassignmentMovesLeader",
            "ReassignmentEnds",
            # 4.0-IV1 changed the metadata (didMetadataChange): a downgrade below it is
            # refused (FeatureControlManager.updateMetadataVersion, MetadataVersion:352-377)
            "DowngradeMetadataVersion",
        }
    )
    orders_replicas = False  # set by each instance; a class default lets the variants share a kernel

    def __init__(self, config: dict) -> None:
        self.orders_replicas = config["max_reassignments"] > 0  # listed_last can change
        super().__init__(config)

    # `modelcheck refines kafka-4 kip966`: how a 4.0 partition reads as the KIP's
    refinements = (
        Refinement(
            "last-known-leader",
            "kip966",
            "4.0 keeps the last known leader in LastKnownELR (maybeUpdateLastKnownLeader): read as "
            "kip966's LastKnownLeader; 4.0 records no ELR member's unclean shutdown, so kip966's "
            "LastKnownELR reads as {}; the KIP orders no replica list",
            constant={"last_known_elr": 0, "listed_last": 0},
            computed={"last_known_leader": "last_known_leader_kept"},
        ),
    )

    def last_known_leader_kept(self, s: State) -> int:
        """The last known leader 4.0 keeps in LastKnownELR (one member), else none."""
        return lowest_bit(s.last_known_elr) if size(s.last_known_elr) == 1 else NO_LEADER

    def enable_symmetry(self) -> None:
        raise SymmetryError(
            "--symmetry: kafka-4 elects the first valid replica in assignment order "
            "(PartitionChangeBuilder.electAnyLeader), so brokers are not interchangeable"
        )

    def elr_in_force(self, s: State) -> int:
        """4.0 elects from the partition's ELR whatever the feature
        (isValidNewLeader reads the target ELR, which is the partition's own
        while the feature is off, PCB:127, 322-326)."""
        return s.elr

    def written_without_elr(self, t: State) -> State:
        """build() clears what 4.0 clears with the feature off (the ELR, not
        LastKnownELR) and a ClearElrRecord is not written then: nothing more."""
        return t

    def registration_is_clean(self, s: State, b: int) -> bool:
        """ClusterControlManager.registerBroker compares the epochs for every
        BrokerRegistration of version 3 or later (QC:2016, CCM:424-425), the
        new software's; no metadata version guards it."""
        return s.software[b] == NEW and rules.registration_is_clean(s.clean_shutdown_epoch[b], s.broker_epoch[b])

    def alive(self, s: State, r: int) -> bool:
        """ReplicationControlManager's isAcceptableLeader: registered, unfenced,
        not in controlled shutdown (ClusterControlManager.isActive)."""
        return r != NO_LEADER and self.unfenced(s, r) and not s.in_controlled_shutdown & bit(r)

    def never_enabled(self) -> frozenset[str]:
        dormant = super().never_enabled()
        if not self.staged_shutdown or not self.max_clean_shutdowns:
            dormant |= {"BeginControlledShutdown"}
        return dormant

    @action("BeginControlledShutdown", bound="max_clean_shutdowns", broker=BROKER, leader=ELECTED)
    def begin_controlled_shutdown(self, s: State, b: int, leader: int) -> State | None:
        """controlled_shutdown = "staged": a running, unfenced broker asks to
        shut down and the controller answers CONTROLLED_SHUTDOWN
        (BrokerHeartbeatManager, for a broker with leaderships; ours may lead
        another partition): handleBrokerInControlledShutdown writes the
        registration change and takes it out of the ISR, electing away from
        it (isr_without: it is no longer acceptable). It stays registered and
        unfenced until CleanShutdown (SHUTDOWN_NOW), FenceBroker (session
        timeout) or a crash; StartBroker's new registration clears it."""
        if not self.staged_shutdown or not self.may_stop_cleanly(s, b):
            return None
        if s.fenced & bit(b) or s.in_controlled_shutdown & bit(b):
            return None
        return self.removed(s._replace(in_controlled_shutdown=s.in_controlled_shutdown | bit(b)), b, leader)

    def reported_recovery(self, s: State) -> int:
        """Partition.makeLeader marks a RECOVERING leader RECOVERED at once (4.0
        has no recovery to run), and its next AlterPartition carries RECOVERED,
        which the controller validates and writes: the ISR may grow at once."""
        return RECOVERED

    def online_election(self, s: State) -> int:
        """The election ReplicationControlManager asks for on broker and ISR
        changes: UNCLEAN when the topic enables unclean leader election
        (uncleanLeaderElectionEnabledForTopic, read at each change: CCM:691-697)."""
        return ELECTION_UNCLEAN if s.unclean_election else ELECTION_ONLINE

    # ---- the replica list (PartitionRegistration.replicas, in order) ------------------
    def listed(self, replicas: int, last: int, k: int) -> int:
        """Position `k` of a scan of the replica list `replicas`: the
        replicas not listed last in ascending order (k < n), then those
        listed `last` in ascending order (k >= n); NO_LEADER where the scan
        meets no replica. A reassignment's target list is taken in
        ascending order, so every list Kafka can reach from it has this
        form (docs/model.md "Reassignment under kafka-4")."""
        r = k % self.n
        part = replicas & last if k >= self.n else replicas & ~last
        return r if part >> r & 1 else NO_LEADER

    def preferred(self, replicas: int, last: int) -> int:
        """The list's first replica (PartitionRegistration.preferredReplica, PR:365-367)."""
        for k in range(2 * self.n):
            r = self.listed(replicas, last, k)
            if r != NO_LEADER:
                return r
        return NO_LEADER

    # ---- PartitionChangeBuilder ---------------------------------------------------
    def build(self, s: State, target_isr: int, election: int, unclean_shutdown: int) -> State:
        """The partition after one PartitionChangeRecord (or `s` if none),
        its assignment unchanged unless the build completes a reassignment."""
        return self.build_change(
            s, target_isr, election, unclean_shutdown, s.replicas, s.adding, s.removing, s.listed_last
        )

    def build_change(
        self,
        s: State,
        target_isr: int,
        election: int,
        unclean_shutdown: int,
        replicas: int,
        adding: int,
        removing: int,
        last: int,
    ) -> State:
        """build() with a target assignment: the replica list (`replicas`,
        `last` listed last), its adding and removing replicas. The min ISR is
        the partition's as it is (getTopicEffectiveMinIsr, RCM:2344-2350,
        counts the current replica list)."""
        # completeReassignmentIfNeeded (PCB:409-428, PartitionReassignmentReplicas:97-130):
        # every target replica in the ISR without the removing ones
        if adding | removing:
            isr_left, replicas_left = target_isr & ~removing, replicas & ~removing
            if isr_left and replicas_left and not replicas_left & ~isr_left:
                target_isr, replicas, last, adding, removing = isr_left, replicas_left, last & ~removing, 0, 0
        # maybePopulateTargetElr (ELR on only; off, the target ELR is the partition's)
        on = self.elr_enabled(s)
        if not on:
            elr = s.elr
        elif size(target_isr) >= self.eff_min_isr(s):
            elr = 0
        else:
            elr = (s.elr | s.isr) & ~target_isr & ~unclean_shutdown
        # tryElection
        leader, unclean = self.elect_in_build(s, target_isr, elr, election, replicas, last)
        isr = target_isr
        if leader != s.leader:
            if leader != NO_LEADER and elr & bit(leader):  # an ELR election is clean
                isr, elr = bit(leader), elr & ~bit(leader)
            if unclean:
                isr = bit(leader)
        # maybeUpdateRecordElr: an unclean election wipes the ELR, and so does
        # any change with the feature off
        if unclean or not on:
            elr = 0
        # the ISR may be written empty only with the feature on (PCB:445-453)
        if not isr and not on:
            isr = s.isr
        # maybeUpdateLastKnownLeader (feature on only: off, the field is left as
        # it is): it holds the leader the partition had when its ISR first
        # became empty; cleared once it has a leader.
        lkelr = s.last_known_elr
        if not on:
            pass
        elif not isr and s.isr:
            if s.leader != NO_LEADER and lkelr != bit(s.leader):
                lkelr = bit(s.leader)
        elif leader != NO_LEADER:
            lkelr = 0
        # a leader change bumps the leader epoch; the recovery state changes
        # only if the election was unclean (targetLeaderRecoveryState);
        # setAssignmentChanges (PCB:472-493) writes the assignment
        t = s._replace(
            isr=isr,
            elr=elr,
            last_known_elr=lkelr,
            replicas=replicas,
            adding=adding,
            removing=removing,
            listed_last=last,
        )
        t = self.set_leader(t, leader, unclean)
        if s.adding | s.removing and not adding | removing:
            t = self.reassignment_ended(s, t)
        return self.recorded(s, t)

    def valid_in_build(self, s: State, isr: int, elr: int, r: int) -> bool:
        """A replica electAnyLeader may take: in the target ISR, or in the ELR
        when the target ISR is empty, and acceptable."""
        return r != NO_LEADER and (isr & bit(r) != 0 or (not isr and elr & bit(r) != 0)) and self.alive(s, r)

    def elect_in_build(self, s: State, isr: int, elr: int, election: int, replicas: int, last: int) -> tuple[int, bool]:
        """electPreferredLeader / electAnyLeader over the target replica list
        (PCB:232-289): (leader, unclean). Preferred ranks the list's first
        replica, the current leader, then the list; the others the current
        leader, then the list. (A replica the scan meets twice was invalid
        the first time, so skip(1) needs no counterpart.)"""
        first = self.preferred(replicas, last) if election == ELECTION_PREFERRED else s.leader
        then = s.leader if election == ELECTION_PREFERRED else NO_LEADER
        if self.valid_in_build(s, isr, elr, first):
            return first, False
        if self.valid_in_build(s, isr, elr, then):
            return then, False
        for k in range(2 * self.n):
            r = self.listed(replicas, last, k)
            if self.valid_in_build(s, isr, elr, r):
                return r, False
        # canElectLastKnownLeader: feature on only, no liveness check in 4.0 (KAFKA-19522)
        if self.elr_enabled(s) and not isr and not elr and size(s.last_known_elr) == 1:
            return lowest_bit(s.last_known_elr), True
        if election == ELECTION_UNCLEAN:  # the first acceptable replica of the list, ISR or not
            for k in range(2 * self.n):
                r = self.listed(replicas, last, k)
                if r != NO_LEADER and self.alive(s, r):
                    return r, True
        return NO_LEADER, False

    # ---- ReplicationControlManager --------------------------------------------------
    def change_isr(self, s: State, proposal: int) -> State:
        """alterPartition: a validated proposal goes through build()."""
        return self.build(s, proposal, self.online_election(s), 0)

    def remove_broker(self, s: State, b: int, leader: int) -> State | None:
        """handleBrokerFenced / handleBrokerInControlledShutdown: `b` is
        fenced and leaves the ISR (isr_without). The instance names the
        leader the build elected, if it changed."""
        return self.removed(s._replace(fenced=s.fenced | bit(b)), b, leader)

    def removed(self, s: State, b: int, leader: int) -> State | None:
        """`b`, no longer acceptable, out of the ISR (isr_without); the
        instance names the leader the build elected, if it changed."""
        t = self.isr_without(s, b)
        elected = t.leader if t.leader != s.leader else NO_LEADER
        return t if leader == elected else None

    def isr_without(self, s: State, b: int) -> State:
        """generateLeaderAndIsrUpdates with brokerToRemove = `b`: one build()
        for the partition if `b` is in its ISR (an ELR member is left alone),
        `b` not acceptable as leader (it is fenced)."""
        return self.build(s, s.isr & ~bit(b), self.online_election(s), 0) if s.isr & bit(b) else s

    def clean_registration(self, s: State, b: int) -> State:
        """handleBrokerShutdown(isCleanShutdown=true), handled as a fence
        (RCM:1453-1456): a fenced broker is in the ISR only as the last known
        leader elected while fenced (KAFKA-19522, below), and its clean
        restart demotes it: ISR {}, ELR {b}, no leader, a new leader epoch;
        its unfencing elects it again from the ELR."""
        return self.isr_without(s, b)

    def reelect(self, s: State, leader: int) -> State | None:
        """handleBrokerUnfenced: build() on every leaderless partition, the ISR
        unchanged. With the feature on nothing is written unless it elects;
        off, a partition that still has an ELR gets it cleared all the same
        (maybeUpdateRecordElr), elected or not."""
        t = self.build(s, s.isr, self.online_election(s), 0)
        if t.leader == NO_LEADER:
            return t if leader == NO_LEADER else None
        return t if leader == t.leader else None

    def unclean_registration(self, s: State, b: int) -> State:
        """handleBrokerShutdown(isCleanShutdown=false): build() with `b` out of
        the ISR and named an unclean-shutdown replica, so it leaves ISR and
        ELR (the partition may elect in the same record). With the feature
        off it is handled as a fence (RCM:1446-1458): `clean_registration`."""
        if not self.elr_enabled(s):
            return self.clean_registration(s, b)
        if not (s.isr | s.elr) & bit(b):
            return s
        return self.build(s, s.isr & ~bit(b), self.online_election(s), bit(b))

    def min_isr_changed(self, s: State) -> State:
        """ConfigurationControlManager appends a ClearElrRecord for every
        min.insync.replicas change while the feature is on (CCM:219-221): ELR
        and LastKnownELR are wiped, not recomputed, and nothing is re-elected."""
        if not self.elr_enabled(s):
            return s
        return self.recorded(s, s._replace(elr=0, last_known_elr=0))

    def min_isr_record_written(self, s: State, v: int) -> bool:
        """Always: a cluster-level alter writes a ConfigRecord even when it sets
        the current value (KAFKA-14136, CCM:303-304, 453-454), and a
        cluster-level change that the topic's override masks writes one too;
        each is followed by a ClearElrRecord (CCM:218-238)."""
        return True

    @action("AdminElectLeaders", coverage_by="type", type=ADMIN_TYPE, leader=BUILT_LEADER)
    def admin_elect_leaders(self, s: State, kind: int, leader: int) -> State | None:
        """electLeader(ElectLeadersRequest): ELECTION_NOT_NEEDED when PREFERRED
        and the preferred replica leads, or UNCLEAN and there is a leader;
        otherwise the build's outcome, if it changes anything."""
        if s.admin_elections >= self.max_admin_elections:
            return None
        s = s._replace(admin_elections=s.admin_elections + 1)
        preferred = self.preferred(s.replicas, s.listed_last)
        if kind == PREFERRED and s.leader == preferred or kind == UNCLEAN and s.leader != NO_LEADER:
            return None
        t = self.build(s, s.isr, ELECTION_PREFERRED if kind == PREFERRED else ELECTION_UNCLEAN, 0)
        return t if t != s and t.leader == leader else None

    @action("ElectLeader", leader=BUILT_LEADER)
    def elect_leader(self, s: State, leader: int) -> State | None:
        """The controller's periodic tasks: the auto leader rebalance (a
        PREFERRED election on partitions whose leader is not the preferred
        replica, leaderless ones included) and, with unclean leader election
        enabled, an UNCLEAN election on leaderless partitions."""
        if s.leader != self.preferred(s.replicas, s.listed_last):
            t = self.build(s, s.isr, ELECTION_PREFERRED, 0)
            if t != s and t.leader == leader:
                return t  # build().ifPresent(records::add): with the feature off, also an ELR cleared
        if s.leader == NO_LEADER and s.unclean_election:
            t = self.build(s, s.isr, ELECTION_UNCLEAN, 0)
            if t != s and t.leader == leader:
                return t
        return None

    # ---- reassignment (alterPartitionReassignments) -----------------------------------
    def reassignment_started(self, s: State, target: int) -> State:
        """changePartitionReassignment (RCM:2182-2213): one build() with the
        target list (ascending) followed by the removing replicas
        (PartitionReassignmentReplicas:53-63), the ISR unchanged, an ONLINE
        election (the builder's default: a leaderless partition may elect)."""
        removing = s.replicas & ~target
        return self.build_change(
            s, s.isr, ELECTION_ONLINE, 0, s.replicas | target, target & ~s.replicas, removing, removing
        )

    @action("CancelReassignment", leader=ELECTED)
    def cancel_reassignment(self, s: State, leader: int) -> State | None:
        """cancelPartitionReassignment (RCM:2119-2153) with
        PartitionReassignmentRevert: the original replicas in their list
        order (the kept ones, then the removing ones), the ISR without the
        adding replicas, or, if that is empty, the list's first replica,
        which needs unclean.leader.election.enable (else
        InvalidReplicaAssignmentException: nothing changes). No min ISR
        check (KIP-966 4b is not in 4.0). The instance names the leader the
        build elected, if it changed."""
        if not s.adding | s.removing:
            return None
        original, isr = s.replicas & ~s.adding, s.isr & ~s.adding
        if not isr:
            if not s.unclean_election:
                return None
            isr = bit(self.preferred(original, s.removing))
        t = self.build_change(s, isr, self.online_election(s), 0, original, 0, 0, s.removing)
        elected = t.leader if t.leader != s.leader else NO_LEADER
        return t if leader == elected else None
