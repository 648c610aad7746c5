"""What a check must see happen: reachability goals (what a "holds" must
have exercised) and temporal properties with the fairness they assume
(docs/model.md "Temporal properties"), each property with the words that
say how a lasso's last state misses it.
"""

from __future__ import annotations

from typing import Any

from modelcheck.declare import goal, leads_to, weak

from . import logs
from .arguments import STRATEGY_BALANCED
from .parts import Parts
from .types import (
    ELR,
    NO_LEADER,
    OFFLINE_CLEAN,
    OFFLINE_DIRTY,
    RECOVERED,
    RECOVERING,
    RECOVERY_MANAGER,
    RUNNING,
    State,
    contains,
    describe,
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


def _down(d: dict[str, Any]) -> list[int]:
    """The brokers not running, in a described state."""
    return [b for b, st in enumerate(d["status"]) if st != "RUNNING"]


class Temporal(Parts):
    """Goals and temporal properties (mixed into Kip966, protocol.py)."""

    @goal("ElrMemberElected", needs=ELR)
    def elr_member_elected(self, s: State, t: State) -> bool:
        """An ELR member becomes leader (KIP-966: "If there are unfenced ELR
        members, choose an ELR member")."""
        return t.leader != NO_LEADER and t.leader != s.leader and contains(s.elr, t.leader)

    @goal("RecoveryElects", "UncleanRecovery", needs=RECOVERY_MANAGER)
    def recovery_elects(self, s: State, t: State) -> bool:
        """The unclean recovery manager elects a leader (with the configured strategy)."""
        return t.leader != NO_LEADER

    @goal("BalancedRecoveryWaitsForLastKnownElr", "UncleanRecovery", needs=RECOVERY_MANAGER)
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
    def _leaderless_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"the partition stays without a leader for ever: ISR {d['isr']}, ELR {d['elr']}, "
            f"LastKnownELR {d['last_known_elr']}, fenced {d['fenced']}, not running {_down(d)}"
        )

    @leads_to("LeaderlessGetsLeader", *CONTROLLER, explain=_leaderless_told)
    def leaderless_gets_leader(self, s: State) -> tuple[bool, bool]:
        """KIP-966: with the ELR, "the controller can elect a new leader from
        the ELR members" when the ISR is empty: a leaderless partition gets a
        leader again while the controller keeps acting, even if a broker that
        stopped never comes back (the config bounds the faults). Before
        KIP-966 the last ISR member had to come back."""
        return s.leader == NO_LEADER, s.leader != NO_LEADER

    @leads_to("LeaderlessGetsLeaderOnceBrokersRestart", *CONTROLLER, *RESTARTS, explain=_leaderless_told)
    def leaderless_gets_leader_once_brokers_restart(self, s: State) -> tuple[bool, bool]:
        """KIP-966's unclean recovery: when ISR and ELR are empty, Balanced
        and Aggressive elect once the replicas they wait for answer, while
        None "stops the partition" until an operator elects: a leaderless
        partition gets a leader if every stopped broker comes back."""
        return s.leader == NO_LEADER, s.leader != NO_LEADER

    @leads_to("BalancedElectsOnceLastKnownElrIsBack", *CONTROLLER, *RESTARTS, explain=_leaderless_told)
    def balanced_elects_once_last_known_elr_is_back(self, s: State) -> tuple[bool, bool]:
        """KIP-966 Balanced recovery "requires all the LastKnownELR members to
        reply": once each of them runs again, a leaderless partition whose
        ISR and ELR are empty gets a leader."""
        back = s.last_known_elr != 0 and s.last_known_elr & ~running_mask(s) == 0
        return s.leader == NO_LEADER and s.isr == 0 and s.elr == 0 and back, s.leader != NO_LEADER

    def _hwm_stuck_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"leader {s.leader}'s HWM stays at {d['hwm'][s.leader]} below its log end "
            f"{len(d['log'][s.leader])} for ever with ISR {d['isr']} at min ISR {d['min_isr']}"
        )

    @leads_to("HwmAdvancesAtMinIsr", *CONTROLLER, *REPLICATION, *RESTARTS, explain=_hwm_stuck_told)
    def hwm_advances_at_min_isr(self, s: State) -> tuple[bool, bool]:
        """KIP-966's HWM rule holds the HWM while the ISR is below min ISR;
        once the ISR has min ISR members the HWM advances again: a leader's
        records above its HWM are eventually below it (or the ISR drops
        under min ISR, or leadership moves)."""
        ld = s.leader
        stuck = ld != NO_LEADER and size(s.isr) >= self.eff_min_isr(s) and s.hwm[ld] < logs.length(s.log[ld])
        return stuck, not stuck

    @leads_to("HwmAdvancesAtMinIsrWithoutRestarts", *CONTROLLER, *REPLICATION, explain=_hwm_stuck_told)
    def hwm_advances_at_min_isr_without_restarts(self, s: State) -> tuple[bool, bool]:
        """HwmAdvancesAtMinIsr, even if a broker that stopped never comes
        back: only the committed ISR (and a proposal in flight) bounds the
        HWM, and a stopped member is fenced out of it, so a replica that
        cannot fetch cannot hold the HWM for ever (KAFKA-15021: the leader
        waited for a caught-up replica shutting down)."""
        return self.hwm_advances_at_min_isr(s)

    def _recovery_unwritten_told(self, s: State) -> str:
        return (
            f"the partition stays RECOVERING for ever under leader {s.leader} (ISR {describe(s)['isr']}): "
            f"RECOVERED is never written"
        )

    @leads_to("RecoveringLeaderRecovers", *CONTROLLER, *REPLICATION, explain=_recovery_unwritten_told)
    def recovering_leader_recovers(self, s: State) -> tuple[bool, bool]:
        """KIP-704: a leader elected uncleanly recovers and the controller
        writes RECOVERED; the partition does not stay RECOVERING under a
        leader (it may lose the leader first: a clean re-election keeps
        RECOVERING, and the new leader recovers in turn)."""
        return (
            s.leader != NO_LEADER and s.leader_recovery == RECOVERING,
            s.leader == NO_LEADER or s.leader_recovery == RECOVERED,
        )

    def _reassignment_unended_told(self, s: State) -> str:
        d = describe(s)
        return (
            f"the reassignment (adding {d['adding']}, removing {d['removing']}) never ends: ISR {d['isr']}, "
            f"leader {s.leader}, fenced {d['fenced']}, not running {_down(d)}"
        )

    @leads_to(
        "ReassignmentEnds", *CONTROLLER, *REPLICATION, *RESTARTS, *REASSIGNMENT, explain=_reassignment_unended_told
    )
    def reassignment_ends(self, s: State) -> tuple[bool, bool]:
        """A reassignment is eventually completed or cancelled: the adding
        replicas catch up and join the ISR, and the controller completes
        it once KIP-966's min ISR condition holds."""
        moving = s.adding | s.removing != 0
        return moving, not moving
