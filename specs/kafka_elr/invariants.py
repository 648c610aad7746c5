"""The invariants (checked on each state), each with the words that say
why a state breaks it beside its predicate; a witness helper (which
records, brokers or leader break it) is read by both. Goals and temporal
properties are in temporal.py.
"""

from __future__ import annotations

from modelcheck.declare import invariant

from . import logs, rules
from .arguments import STRATEGY_NONE
from .parts import Parts
from .types import (
    ELR,
    ELR_VERSION,
    NO_LEADER,
    NO_PROPOSAL,
    OFFLINE_DIRTY,
    RECOVERED,
    RECOVERY_MANAGER,
    RUNNING,
    State,
    bit,
    contains,
    describe,
    lost_unregistered,
    members,
    proposed,
    size,
)


class Invariants(Parts):
    """The invariants and their explanations (mixed into Kip966, protocol.py)."""

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

    def in_isr_and_elr(self, s: State) -> int:
        """The brokers in both the ISR and the ELR in force: ElrDisjointIsr's witness."""
        return s.isr & self.elr_in_force(s)

    def _in_isr_and_elr_told(self, s: State) -> str:
        d = describe(s)
        return f"broker(s) {members(self.in_isr_and_elr(s))} are in both ISR {d['isr']} and ELR {d['elr']}"

    @invariant("ElrDisjointIsr", explain=_in_isr_and_elr_told, needs=ELR)
    def elr_disjoint_isr(self, s: State) -> bool:
        """KIP-966: "The member of ELR should not be in ISR" (the ELR the
        controller elects from: none while the feature is off, in kip966)."""
        return not self.in_isr_and_elr(s)

    def _elr_at_min_isr_told(self, s: State) -> str:
        d = describe(s)
        return f"ELR {d['elr']} is not empty while the ISR {d['isr']} has min ISR ({self.eff_min_isr(s)}) members"

    @invariant("ElrOnlyUnderMinIsr", explain=_elr_at_min_isr_told, needs=ELR)
    def elr_only_under_min_isr(self, s: State) -> bool:
        """KIP-966: "If ELR is not empty, the ISR is under min ISR"."""
        return not self.elr_in_force(s) or size(s.isr) < self.eff_min_isr(s)

    def elr_without_data(self, s: State) -> int:
        """The ELR members (in force, re-registered) that lack a record below
        the HWM: ElrHasDataToHwm's witness."""
        checked = self.elr_in_force(s) & ~lost_unregistered(s)
        bad = 0
        for b in range(self.n):
            if contains(checked, b) and not logs.is_prefix(s.exposed, s.log[b]):
                bad |= bit(b)
        return bad

    def _elr_without_data_told(self, s: State) -> str:
        exposed = self.format_value("exposed", describe(s)["exposed"])
        return f"ELR member(s) {members(self.elr_without_data(s))} lack data below the high watermark ({exposed})"

    @invariant("ElrHasDataToHwm", explain=_elr_without_data_told, needs=ELR)
    def elr_has_data_to_hwm(self, s: State) -> bool:
        """KIP-966: "The member of ELR should have the data at least to HWM"
        (brokers that crashed dirty and have not re-registered excepted)."""
        return not self.elr_without_data(s)

    def _elr_outside_replicas_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"ELR {d['elr']} or LastKnownELR {d['last_known_elr']} names a broker outside "
            f"the replica set {d['replicas']}"
        )

    @invariant("ElrWithinReplicas", explain=_elr_outside_replicas_told, needs=ELR)
    def elr_within_replicas(self, s: State) -> bool:
        """KIP-966 4: "upon completion, the ELR only contains replicas in the
        final replica set" (and LastKnownELR: neither names a broker that no
        longer hosts the partition)."""
        return not (s.elr | s.last_known_elr) & ~s.replicas

    def _reassigned_below_min_isr_told(self, s: State) -> str:
        return f"a reassignment ended with ISR {describe(s)['isr']}, below min ISR ({self.eff_min_isr(s)})"

    @invariant("ReassignmentKeepsMinIsr", explain=_reassigned_below_min_isr_told)
    def reassignment_keeps_min_isr(self, s: State) -> bool:
        """KIP-966 4a/4b: no completion or cancellation of a reassignment has
        left the ISR with fewer than min ISR members."""
        return s.below_min_isr_reassigned == 0

    def _leader_outside_isr_told(self, s: State) -> str:
        return f"leader {s.leader} is not in the ISR {describe(s)['isr']}"

    @invariant("LeaderInIsr", explain=_leader_outside_isr_told)
    def leader_in_isr(self, s: State) -> bool:
        """The leader is a member of the ISR."""
        return s.leader == NO_LEADER or contains(s.isr, s.leader)

    def _fenced_leader_told(self, s: State) -> str:
        return (
            f"leader {s.leader} is fenced (fenced: {describe(s)['fenced']}): the controller elected a broker "
            f"it had not unfenced"
        )

    @invariant("LeaderUnfenced", explain=_fenced_leader_told)
    def leader_unfenced(self, s: State) -> bool:
        """The leader is registered and unfenced: the controller elected a
        live broker."""
        return s.leader == NO_LEADER or self.unfenced(s, s.leader)

    def ineligible_in_isr(self, s: State) -> int:
        """The ISR's fenced or shutting-down members: IsrMembersEligible's witness."""
        return s.isr & (s.fenced | s.in_controlled_shutdown)

    def _ineligible_in_isr_told(self, s: State) -> str:
        return (
            f"ISR {describe(s)['isr']} holds fenced or shutting-down broker(s) "
            f"{members(self.ineligible_in_isr(s))} (leader {s.leader})"
        )

    @invariant("IsrMembersEligible", explain=_ineligible_in_isr_told)
    def isr_members_eligible(self, s: State) -> bool:
        """KIP-841: no fenced or shutting-down replica is in the ISR (the
        controller takes it out, and refuses an AlterPartition that brings it
        back: INELIGIBLE_REPLICA), but for the last member an ISR keeps when
        it cannot empty (the ELR off), which leaves the partition leaderless."""
        bad = self.ineligible_in_isr(s)
        return not bad or (s.leader == NO_LEADER and s.isr == bad and size(bad) == 1)

    def _electable_below_min_isr_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"ISR {d['isr']} + ELR {d['elr']} is below min ISR "
            f"({self.eff_min_isr(s)}) and no unclean shutdown has been registered"
        )

    @invariant("ElectableAtLeastMinIsr", explain=_electable_below_min_isr_told, needs=ELR)
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

    def _recovering_isr_told(self, s: State) -> str:
        return f"the partition is RECOVERING with leader {s.leader} and ISR {describe(s)['isr']}"

    @invariant("RecoveringIsrSingleton", explain=_recovering_isr_told)
    def recovering_isr_singleton(self, s: State) -> bool:
        """KIP-704: "if the 'is unclean' field is true then the ISR is
        guaranteed to have a size of 1": the leader alone, or, while the
        RECOVERING partition is leaderless, at most one member."""
        if s.leader_recovery == RECOVERED:
            return True
        return s.isr == bit(s.leader) if s.leader != NO_LEADER else size(s.isr) <= 1

    def lost_acked(self, s: State) -> int:
        """The acked records on no replica the controller may elect cleanly
        (the leader, the ISR, the ELR in force): NoAckedLoss's witness."""
        if not s.acked:
            return 0
        holders = s.isr | self.elr_in_force(s) | (bit(s.leader) if s.leader != NO_LEADER else 0)
        held = 0
        for b in range(self.n):
            if contains(holders, b):
                held |= logs.records(s.log[b])
        return s.acked & ~held

    def _lost_acked_told(self, s: State) -> str:
        d, lost = describe(s), members(self.lost_acked(s))
        holders = {r: [b for b in range(len(s.log)) if logs.records(s.log[b]) & bit(r)] for r in lost}
        return (
            "acked record(s) "
            + ", ".join(f"r{r}" for r in lost)
            + f" are on no replica the controller may elect cleanly (leader {s.leader}, "
            f"ISR {d['isr']}, ELR {self.elr_shown(s)}); still held by "
            + "; ".join(f"r{r}: brokers {h or 'none'}" for r, h in holders.items())
        )

    @invariant("NoAckedLoss", explain=_lost_acked_told)
    def no_acked_loss(self, s: State) -> bool:
        """Every acked record is on the leader or on a replica the protocol may
        still elect cleanly (ISR, the ELR it elects from): KIP-966's headline claim."""
        return not self.lost_acked(s)

    def _unread_leader_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"leader {s.leader} does not hold what consumers may already have read "
            f"({self.format_value('exposed', d['exposed'])}): its log is "
            f"{self.format_value('exposed', d['log'][s.leader])}"
        )

    # ---- the same, for a cluster that turns the ELR on or off at run time ---------------
    # A crash while the feature is off meets legacy's rules ("last replica
    # standing", KIP-966's motivation, loses data with one): these ask the
    # three of the runs whose crashes all happened with the ELR on.
    @invariant("NoAckedLossUnderElr", explain=_lost_acked_told, needs=ELR_VERSION)
    def no_acked_loss_under_elr(self, s: State) -> bool:
        """NoAckedLoss, unless a crash happened with the ELR off."""
        return s.crashed_without_elr == 1 or self.no_acked_loss(s)

    @invariant("ConsistentReadUnderElr", explain=_unread_leader_told, needs=ELR_VERSION)
    def consistent_read_under_elr(self, s: State) -> bool:
        """ConsistentRead, unless a crash happened with the ELR off."""
        return s.crashed_without_elr == 1 or self.consistent_read(s)

    @invariant("ElrHasDataToHwmUnderElr", explain=_elr_without_data_told, needs=ELR_VERSION)
    def elr_has_data_to_hwm_under_elr(self, s: State) -> bool:
        """ElrHasDataToHwm, unless a crash happened with the ELR off (turning
        the ELR on can move legacy's data-less last member into the ELR)."""
        return s.crashed_without_elr == 1 or self.elr_has_data_to_hwm(s)

    @invariant("RecoveryKeepsLastKnownElrData", needs=RECOVERY_MANAGER)
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

    @invariant("NoneNeverElectsUnclean", needs=RECOVERY_MANAGER)
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

    @invariant("ConsistentRead", explain=_unread_leader_told)
    def consistent_read(self, s: State) -> bool:
        """A serving leader's log holds everything consumers may have read."""
        ld = s.leader
        return ld == NO_LEADER or not self.running(s, ld) or logs.is_prefix(s.exposed, s.log[ld])
