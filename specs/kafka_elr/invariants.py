"""What is checked: invariants (each state), reachability goals (what a
"holds" must have exercised) and temporal properties with the fairness
they assume (docs/model.md "Temporal properties").
"""

from __future__ import annotations

from modelcheck.spec import goal, invariant, leads_to, weak

from . import logs, rules
from .arguments import STRATEGY_BALANCED, STRATEGY_NONE
from .types import (
    NO_LEADER,
    NO_PROPOSAL,
    OFFLINE_CLEAN,
    OFFLINE_DIRTY,
    RECOVERED,
    RECOVERING,
    RUNNING,
    State,
    bit,
    contains,
    lost_unregistered,
    proposed,
    running_mask,
    size,
)

# ---- fairness: what the temporal properties assume keeps happening -----------------
# (an action a variant lacks asks nothing; docs/model.md "Temporal properties")
# the controller acts: it fences a broker that stops heartbeating (and, within
# max_fences, one cut off), unfences a running registered one, elects, runs the
# unclean recovery and answers AlterPartition requests
CONTROLLER = (
    *weak("FenceBroker", "UnfenceBroker", each="broker"),
    *weak("ElectLeader", "UncleanRecovery", "CommitAlterPartition"),
)
# replication goes on: followers fetch, the leader advances its HWM, grows the
# ISR and finishes a recovery; propagated metadata reaches every running broker
REPLICATION = (*weak("Fetch", "MetadataUpdate", each="broker"), *weak("AdvanceHwm", "ExpandIsr", "CompleteRecovery"))
# a stopped broker comes back
RESTARTS = weak("StartBroker", each="broker")
# the controller completes a reassignment it may complete
REASSIGNMENT = weak("CompleteReassignment")


class Properties:
    """Invariants, goals and temporal properties (mixed into Kip966, protocol.py)."""

    # ---- invariants -----------------------------------------------------------------------
    @invariant("TypeOK")
    def type_ok(self, s: State) -> bool:
        """Every variable is in its domain."""
        n = self.n
        # sets are bitmasks: their union is in 0..2^N-1 iff each is (a negative one makes it negative)
        sets = s.isr | s.elr | s.last_known_elr | s.fenced | proposed(s) | s.replicas
        if not (
            -1 <= s.leader < n
            and -1 <= s.last_known_leader < n
            and s.leader_epoch >= 0
            and 0 <= sets < 1 << n
            and 0 <= s.leader_recovery <= 1
            and s.min_isr >= 1
            and s.pending_isr >= NO_PROPOSAL
            and len(s.broker_epoch)
            == len(s.status)
            == len(s.clean_shutdown_epoch)
            == len(s.log)
            == len(s.hwm)
            == len(s.pending_epochs)
            == n
        ):
            return False
        for b in range(n):
            if not (RUNNING <= s.status[b] <= OFFLINE_DIRTY and 0 <= s.hwm[b] <= logs.length(s.log[b])):
                return False
        # the assignment: ISR and leader are replicas; adding and removing
        # split the replicas beyond the original and the target sets
        leader = bit(s.leader) if s.leader != NO_LEADER else 0
        return (
            not (s.isr | leader | s.adding | s.removing) & ~s.replicas
            and not s.adding & s.removing
            and size(s.replicas & ~s.adding) == size(s.replicas & ~s.removing) == self.rf
        )

    @invariant("ElrDisjointIsr")
    def elr_disjoint_isr(self, s: State) -> bool:
        """KIP-966: "The member of ELR should not be in ISR" (the ELR the
        controller elects from: none while the feature is off, in kip966)."""
        return not s.isr & self.elr_in_force(s)

    @invariant("ElrOnlyUnderMinIsr")
    def elr_only_under_min_isr(self, s: State) -> bool:
        """KIP-966: "If ELR is not empty, the ISR is under min ISR"."""
        return not self.elr_in_force(s) or size(s.isr) < self.eff_min_isr(s)

    @invariant("ElrHasDataToHwm")
    def elr_has_data_to_hwm(self, s: State) -> bool:
        """KIP-966: "The member of ELR should have the data at least to HWM"
        (brokers that crashed dirty and have not re-registered excepted)."""
        checked = self.elr_in_force(s) & ~lost_unregistered(s)
        for b in range(self.n):
            if contains(checked, b) and not logs.is_prefix(s.exposed, s.log[b]):
                return False
        return True

    @invariant("ElrWithinReplicas")
    def elr_within_replicas(self, s: State) -> bool:
        """KIP-966 4: "upon completion, the ELR only contains replicas in the
        final replica set" (and LastKnownELR: neither names a broker that no
        longer hosts the partition)."""
        return not (s.elr | s.last_known_elr) & ~s.replicas

    @invariant("ReassignmentKeepsMinIsr")
    def reassignment_keeps_min_isr(self, s: State) -> bool:
        """KIP-966 4a/4b: no completion or cancellation of a reassignment has
        left the ISR with fewer than min ISR members."""
        return s.below_min_isr_reassigned == 0

    @invariant("LeaderInIsr")
    def leader_in_isr(self, s: State) -> bool:
        """The leader is a member of the ISR."""
        return s.leader == NO_LEADER or contains(s.isr, s.leader)

    @invariant("LeaderUnfenced")
    def leader_unfenced(self, s: State) -> bool:
        """The leader is registered and unfenced: the controller elected a
        live broker."""
        return s.leader == NO_LEADER or self.unfenced(s, s.leader)

    @invariant("IsrMembersEligible")
    def isr_members_eligible(self, s: State) -> bool:
        """KIP-841: no fenced or shutting-down replica is in the ISR (the
        controller takes it out, and refuses an AlterPartition that brings it
        back: INELIGIBLE_REPLICA), but for the last member an ISR keeps when
        it cannot empty (the ELR off), which leaves the partition leaderless."""
        bad = s.isr & (s.fenced | s.in_controlled_shutdown)
        return not bad or (s.leader == NO_LEADER and s.isr == bad and size(bad) == 1)

    @invariant("ElectableAtLeastMinIsr")
    def electable_at_least_min_isr(self, s: State) -> bool:
        """KIP-966: "ELR + ISR size will not be dropped below the min ISR
        unless the controller discovers an ELR member has an unclean
        shutdown" (a claim of the ELR: none while the feature is off)."""
        if not self.elr_enabled(s) or size(s.isr | s.elr) >= self.eff_min_isr(s):
            return True
        return s.unclean_shutdowns - size(lost_unregistered(s)) > 0  # some unclean shutdown was detected

    @invariant("LogMatching")
    def log_matching(self, s: State) -> bool:
        """Two logs with the same entry at an offset agree below it."""
        return rules.logs_match(s.log)

    @invariant("RecoveringIsrSingleton")
    def recovering_isr_singleton(self, s: State) -> bool:
        """KIP-704: "if the 'is unclean' field is true then the ISR is
        guaranteed to have a size of 1": the leader alone, or, while the
        RECOVERING partition is leaderless, at most one member."""
        if s.leader_recovery == RECOVERED:
            return True
        return s.isr == bit(s.leader) if s.leader != NO_LEADER else size(s.isr) <= 1

    @invariant("NoAckedLoss")
    def no_acked_loss(self, s: State) -> bool:
        """Every acked record is on the leader or on a replica the protocol may
        still elect cleanly (ISR, the ELR it elects from): KIP-966's headline claim."""
        if not s.acked:
            return True
        holders = s.isr | self.elr_in_force(s) | (bit(s.leader) if s.leader != NO_LEADER else 0)
        held = 0
        for b in range(self.n):
            if contains(holders, b):
                held |= logs.records(s.log[b])
        return not s.acked & ~held

    # ---- the same, for a cluster that turns the ELR on or off at run time ---------------
    # A crash while the feature is off meets legacy's rules ("last replica
    # standing", KIP-966's motivation, loses data with one): these ask the
    # three of the runs whose crashes all happened with the ELR on.
    @invariant("NoAckedLossUnderElr")
    def no_acked_loss_under_elr(self, s: State) -> bool:
        """NoAckedLoss, unless a crash happened with the ELR off."""
        return s.crashed_without_elr == 1 or self.no_acked_loss(s)

    @invariant("ConsistentReadUnderElr")
    def consistent_read_under_elr(self, s: State) -> bool:
        """ConsistentRead, unless a crash happened with the ELR off."""
        return s.crashed_without_elr == 1 or self.consistent_read(s)

    @invariant("ElrHasDataToHwmUnderElr")
    def elr_has_data_to_hwm_under_elr(self, s: State) -> bool:
        """ElrHasDataToHwm, unless a crash happened with the ELR off (turning
        the ELR on can move legacy's data-less last member into the ELR)."""
        return s.crashed_without_elr == 1 or self.elr_has_data_to_hwm(s)

    @invariant("RecoveryKeepsLastKnownElrData")
    def recovery_keeps_last_known_elr_data(self, s: State) -> bool:
        """KIP-966 unclean recovery: Balanced elects once "all the
        LastKnownELR members have replied", so any replica it may elect holds
        every acknowledged record a LastKnownELR member still holds (electing
        after a fixed number of replies "does not give enough protection").
        Checked on every replica the configured strategy may elect here."""
        winners = self.recovery_winners(s, self.strategy_in(s))
        if not winners or not s.acked:
            return True
        kept = 0
        for m in range(self.n):
            if contains(s.last_known_elr, m):
                kept |= logs.records(s.log[m])
        for w in range(self.n):
            if contains(winners, w) and kept & s.acked & ~logs.records(s.log[w]):
                return False
        return True

    @invariant("NoneNeverElectsUnclean")
    def none_never_elects_unclean(self, s: State) -> bool:
        """KIP-966: with unclean.recovery.strategy=None "the controller will
        not attempt to elect a leader. Waiting for the user operations": no
        election outside ISR and ELR (which makes the partition RECOVERING)
        unless an operator ran one, or switched unclean.leader.election.enable
        (true is Aggressive) and may have switched it back."""
        return (
            self.strategy_in(s) != STRATEGY_NONE
            or s.leader_recovery == RECOVERED
            or s.admin_elections > 0
            or s.unclean_switches > 0
        )

    @invariant("ConsistentRead")
    def consistent_read(self, s: State) -> bool:
        """A serving leader's log holds everything consumers may have read."""
        ld = s.leader
        return ld == NO_LEADER or not self.running(s, ld) or logs.is_prefix(s.exposed, s.log[ld])

    # ---- reachability goals: what a "holds" must have exercised ---------------------------
    @goal("ElrMemberElected")
    def elr_member_elected(self, s: State, t: State) -> bool:
        """An ELR member becomes leader (KIP-966: "If there are unfenced ELR
        members, choose an ELR member")."""
        return t.leader != NO_LEADER and t.leader != s.leader and contains(s.elr, t.leader)

    @goal("RecoveryElects", "UncleanRecovery")
    def recovery_elects(self, s: State, t: State) -> bool:
        """The unclean recovery manager elects a leader (with the configured strategy)."""
        return t.leader != NO_LEADER

    @goal("BalancedRecoveryWaitsForLastKnownElr", "UncleanRecovery")
    def balanced_recovery_waits(self, s: State, t: State) -> bool:
        """A Balanced recovery elects with a LastKnownELR member among the
        replies: the case the strategy exists for."""
        return self.strategy_in(s) == STRATEGY_BALANCED and s.last_known_elr != 0

    @goal("RecoveryCompletes", "CompleteRecovery")
    def recovery_completes(self, s: State, t: State) -> bool:
        """A RECOVERING leader finishes its recovery (KIP-704)."""
        return True

    @goal("RecoveringSurvivesReelection")
    def recovering_survives_reelection(self, s: State, t: State) -> bool:
        """A leaderless RECOVERING partition elects a leader cleanly and stays
        RECOVERING (KIP-704: only the leader ends the recovery)."""
        return (
            s.leader == NO_LEADER
            and s.leader_recovery == RECOVERING
            and t.leader != NO_LEADER
            and t.leader_recovery == RECOVERING
            and t.leader_epoch == s.leader_epoch + 1
            and s.isr | s.elr != 0
        )

    @goal("CleanShutdownRegistersClean", "StartBroker")
    def clean_shutdown_registers_clean(self, s: State, t: State) -> bool:
        """A broker that shut down cleanly re-registers as clean (KIP-966:
        the epoch in its CleanShutdownFile matches its registration)."""
        for b in range(self.n):
            if s.status[b] == OFFLINE_CLEAN and t.status[b] == RUNNING:
                return self.registration_is_clean(s, b)
        return False

    @goal("UncleanShutdownDetected", "StartBroker")
    def unclean_shutdown_detected(self, s: State, t: State) -> bool:
        """A broker that crashed re-registers and the controller detects the
        unclean shutdown (KIP-966: the epochs mismatch)."""
        for b in range(self.n):
            if s.status[b] == OFFLINE_DIRTY and t.status[b] == RUNNING:
                return not self.registration_is_clean(s, b)
        return False

    @goal("DeposedLeaderAppends", "Produce")
    def deposed_leader_appends(self, s: State, t: State) -> bool:
        """Metadata = "propagated": a broker the controller no longer has as
        leader still takes a produce request on its stale view."""
        for b in range(self.n):
            if t.log[b] != s.log[b]:
                return b != s.leader
        return False

    @goal("FollowerFetchesFromDeposedLeader", "Fetch")
    def follower_fetches_from_deposed_leader(self, s: State, t: State) -> bool:
        """Metadata = "propagated": a follower replicates from a leader the
        controller has deposed (both still at its old epoch)."""
        for b in range(self.n):
            if t.log[b] != s.log[b] or t.hwm[b] != s.hwm[b]:
                return self.leader_seen_by(s, b) != s.leader
        return False

    @goal("LeaderActsOnStaleMinIsr", "AdvanceHwm")
    def leader_acts_on_stale_min_isr(self, s: State, t: State) -> bool:
        """Metadata = "propagated": a leader advances the HWM judging the ISR
        against a min.insync.replicas the controller has since changed
        (KAFKA-16540: brokers and controller disagree on min ISR)."""
        for b in range(self.n):
            if t.hwm[b] != s.hwm[b]:
                return self.min_isr_seen_by(s, b) != self.eff_min_isr(s)
        return False

    @goal("StaleAlterPartitionRejected", "CommitAlterPartition")
    def stale_alter_partition_rejected(self, s: State, t: State) -> bool:
        """The controller rejects an AlterPartition made at an old partition
        epoch (Kafka: INVALID_UPDATE_VERSION)."""
        return s.pending_stale == 1

    @goal("AddingReplicaJoinsIsr", "CommitAlterPartition")
    def adding_replica_joins_isr(self, s: State, t: State) -> bool:
        """A replica a reassignment adds has caught up and joins the ISR."""
        return t.isr & s.adding & ~s.isr != 0

    @goal("ReassignmentMovesLeader", "CompleteReassignment")
    def reassignment_moves_leader(self, s: State, t: State) -> bool:
        """A completion removes the leader and elects another replica in
        the same record."""
        return s.leader != NO_LEADER and contains(s.removing, s.leader)

    # ---- temporal properties (checked when the config names them: `properties`) -----------
    @leads_to("LeaderlessGetsLeader", *CONTROLLER)
    def leaderless_gets_leader(self, s: State) -> tuple[bool, bool]:
        """KIP-966: with the ELR, "the controller can elect a new leader from
        the ELR members" when the ISR is empty: a leaderless partition gets a
        leader again while the controller keeps acting, even if a broker that
        stopped never comes back (the config bounds the faults). Before
        KIP-966 the last ISR member had to come back."""
        return s.leader == NO_LEADER, s.leader != NO_LEADER

    @leads_to("LeaderlessGetsLeaderOnceBrokersRestart", *CONTROLLER, *RESTARTS)
    def leaderless_gets_leader_once_brokers_restart(self, s: State) -> tuple[bool, bool]:
        """KIP-966's unclean recovery: when ISR and ELR are empty, Balanced
        and Aggressive elect once the replicas they wait for answer, while
        None "stops the partition" until an operator elects: a leaderless
        partition gets a leader if every stopped broker comes back."""
        return s.leader == NO_LEADER, s.leader != NO_LEADER

    @leads_to("BalancedElectsOnceLastKnownElrIsBack", *CONTROLLER, *RESTARTS)
    def balanced_elects_once_last_known_elr_is_back(self, s: State) -> tuple[bool, bool]:
        """KIP-966 Balanced recovery "requires all the LastKnownELR members to
        reply": once each of them runs again, a leaderless partition whose
        ISR and ELR are empty gets a leader."""
        back = s.last_known_elr != 0 and s.last_known_elr & ~running_mask(s) == 0
        return s.leader == NO_LEADER and s.isr == 0 and s.elr == 0 and back, s.leader != NO_LEADER

    @leads_to("HwmAdvancesAtMinIsr", *CONTROLLER, *REPLICATION, *RESTARTS)
    def hwm_advances_at_min_isr(self, s: State) -> tuple[bool, bool]:
        """KIP-966's HWM rule holds the HWM while the ISR is below min ISR;
        once the ISR has min ISR members the HWM advances again: a leader's
        records above its HWM are eventually below it (or the ISR drops
        under min ISR, or leadership moves)."""
        ld = s.leader
        stuck = ld != NO_LEADER and size(s.isr) >= self.eff_min_isr(s) and s.hwm[ld] < logs.length(s.log[ld])
        return stuck, not stuck

    @leads_to("HwmAdvancesAtMinIsrWithoutRestarts", *CONTROLLER, *REPLICATION)
    def hwm_advances_at_min_isr_without_restarts(self, s: State) -> tuple[bool, bool]:
        """HwmAdvancesAtMinIsr, even if a broker that stopped never comes
        back: only the committed ISR (and a proposal in flight) bounds the
        HWM, and a stopped member is fenced out of it, so a replica that
        cannot fetch cannot hold the HWM for ever (KAFKA-15021: the leader
        waited for a caught-up replica shutting down)."""
        return self.hwm_advances_at_min_isr(s)

    @leads_to("RecoveringLeaderRecovers", *CONTROLLER, *REPLICATION)
    def recovering_leader_recovers(self, s: State) -> tuple[bool, bool]:
        """KIP-704: a leader elected uncleanly recovers and the controller
        writes RECOVERED; the partition does not stay RECOVERING under a
        leader (it may lose the leader first: a clean re-election keeps
        RECOVERING, and the new leader recovers in turn)."""
        return (
            s.leader != NO_LEADER and s.leader_recovery == RECOVERING,
            s.leader == NO_LEADER or s.leader_recovery == RECOVERED,
        )

    @leads_to("ReassignmentEnds", *CONTROLLER, *REPLICATION, *RESTARTS, *REASSIGNMENT)
    def reassignment_ends(self, s: State) -> tuple[bool, bool]:
        """A reassignment is eventually completed or cancelled: the adding
        replicas catch up and join the ISR, and the controller completes
        it once KIP-966's min ISR condition holds."""
        moving = s.adding | s.removing != 0
        return moving, not moving
