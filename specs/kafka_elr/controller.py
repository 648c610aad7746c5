"""The controller: the partition's metadata as the metadata log records it.
It elects leaders (KIP-966's ELR rules), fences and unfences brokers,
validates AlterPartition requests, detects unclean shutdowns at broker
registration, and runs the unclean recovery manager (KIP-966, KIP-704).
"""

from __future__ import annotations

from typing import Any

from modelcheck.declare import action
from modelcheck.spec import Args

from . import rules, story
from .arguments import BROKER, ELECTED, LEADER, STRATEGY_AGGRESSIVE, STRATEGY_BALANCED, STRATEGY_NONE
from .parts import Parts
from .types import (
    NEW,
    NO_LEADER,
    NO_PROPOSAL,
    RECOVERED,
    RECOVERING,
    RECOVERY_MANAGER,
    State,
    bit,
    contains,
    running_mask,
    size,
    with_,
    without,
)


class Controller(Parts):
    """The controller's rules (mixed into Kip966, protocol.py)."""

    # ---- derived values -------------------------------------------------------------------
    def eff_min_isr(self, s: State) -> int:
        """KIP-966: "the effective min.insync.replicas will be
        min(min.insync.replicas, replication factor)", the replication factor
        counted as Kafka counts it: the partition's replica list, which during
        a reassignment holds the adding and removing replicas too (controller
        getTopicEffectiveMinIsr; broker Partition.effectiveMinIsr)."""
        return min(s.min_isr, size(s.replicas))

    def final_min_isr(self, s: State) -> int:
        """The effective min ISR of the partition a reassignment leaves:
        min(min.insync.replicas, replication factor of the target)."""
        return min(s.min_isr, self.rf)

    def strategy_in(self, s: State) -> int:
        """The unclean recovery strategy in force: KIP-966 "Other", item 3,
        maps unclean.leader.election.enable=true to Aggressive; while it is
        false, unclean.recovery.strategy's."""
        return STRATEGY_AGGRESSIVE if s.unclean_election else self.configured_strategy

    def unfenced(self, s: State, b: int) -> bool:
        return not contains(s.fenced, b)

    # ---- the ISR and ELR (policy hooks that variants redefine) ----------------------------
    def change_isr(self, s: State, proposal: int) -> State:
        """Apply a proposed ISR with the KIP-966 ELR update rule; with the
        feature off, as before KIP-966: the ISR never empties (the last
        member stays: "the leader can only enable empty ISR after the new
        metadata version")."""
        if not self.elr_enabled(s):
            return self.recorded(s, s._replace(isr=proposal if proposal else s.isr))
        isr, elr, clean_lkelr = rules.update_elr(s.isr, s.elr, proposal, self.eff_min_isr(s))
        return self.recorded(s, s._replace(isr=isr, elr=elr, last_known_elr=0 if clean_lkelr else s.last_known_elr))

    def reported_recovery(self, s: State) -> int:
        """The recovery state the leader's AlterPartition carries: its own,
        until it completes recovery (KIP-704, CompleteRecovery)."""
        return s.leader_recovery

    # ---- PartitionChangeRecords -----------------------------------------------------------
    def no_proposal(self, s: State) -> State:
        return s._replace(pending_isr=NO_PROPOSAL, pending_epochs=self.zeros, pending_stale=0, pending_from=NO_LEADER)

    def partition_changed(self, s: State, t: State) -> bool:
        """`t`'s partition differs from `s`'s: a PartitionChangeRecord is written."""
        return (
            t.leader,
            t.leader_epoch,
            t.isr,
            t.elr,
            t.last_known_elr,
            t.last_known_leader,
            t.leader_recovery,
            t.replicas,
            t.adding,
            t.removing,
        ) != (
            s.leader,
            s.leader_epoch,
            s.isr,
            s.elr,
            s.last_known_elr,
            s.last_known_leader,
            s.leader_recovery,
            s.replicas,
            s.adding,
            s.removing,
        )

    def recorded(self, s: State, t: State) -> State:
        """`t`, a PartitionChangeRecord applied to `s`: if it changed the
        partition, the partition epoch moved on, and an AlterPartition in
        flight (made at the old one) is stale (Kafka: INVALID_UPDATE_VERSION).
        Only that equality matters, so the epoch itself is not kept. Written
        while the ELR feature is off, the record has no ELR fields."""
        if not self.partition_changed(s, t):
            return t
        return self.written(s, t)

    def written(self, s: State, t: State) -> State:
        """`t`, a PartitionChangeRecord that changed `s`'s partition, applied."""
        if not self.elr_enabled(t):
            t = self.written_without_elr(t)
        return t if t.pending_isr == NO_PROPOSAL else t._replace(pending_stale=1)

    def written_without_elr(self, t: State) -> State:
        """A partition change written while the feature is off (kip966: its
        ELR fields removed; kafka-4's build clears what it clears itself)."""
        return self.without_elr_fields(t)

    def set_leader(self, s: State, leader: int, unclean: bool) -> State:
        """A leader change: one PartitionChangeRecord, one epoch bump; the old
        leader's in-flight AlterPartition is fenced by the epoch. An unclean
        election sets RECOVERING; any other change carries the recovery
        state through: only the leader ends it (KIP-704, CompleteRecovery)."""
        if leader == s.leader:
            return s
        t = self.no_proposal(s)._replace(
            leader=leader,
            leader_epoch=s.leader_epoch + 1,
            leader_recovery=RECOVERING if unclean else s.leader_recovery,
            last_known_leader=NO_LEADER if leader != NO_LEADER else s.last_known_leader,
        )
        return t if self.elr_enabled(t) else self.written_without_elr(t)

    def elect(self, s: State, c: int, unclean: bool) -> State:
        """Make `c` leader. Outside the ISR (an ELR or unclean choice) the ISR
        becomes {c}; an unclean choice also empties the ELR and is RECOVERING
        (KIP-704)."""
        if unclean:
            return self.set_leader(s._replace(isr=bit(c), elr=0), c, True)
        if not contains(s.isr, c):
            s = self.change_isr(s._replace(elr=without(s.elr, c)), bit(c))
        return self.set_leader(s, c, False)

    def reelect(self, s: State, leader: int) -> State | None:
        """The election in the record that left the partition leaderless:
        `leader` must be a candidate, or NO_LEADER when there is none."""
        choices, unclean = self.candidates(s)
        if leader == NO_LEADER:
            return None if choices else self.set_leader(s, NO_LEADER, False)
        return self.elect(s, leader, unclean) if contains(choices, leader) else None

    def candidates(self, s: State) -> tuple[int, bool]:
        """Whom the controller may elect on its own in leaderless state `s`,
        and whether that election is unclean: ISR members, then unfenced ELR
        members (clean). The unclean recovery is the UncleanRecovery action.
        With the feature off, as before KIP-966 (`candidates_without_elr`)."""
        if not self.elr_enabled(s):
            return self.candidates_without_elr(s)
        return rules.clean_candidates(s.isr, s.elr, s.fenced), False

    def candidates_without_elr(self, s: State) -> tuple[int, bool]:
        """Before KIP-966: an unfenced ISR member; else, with
        unclean.leader.election.enable, any unfenced replica (RECOVERING)."""
        clean = rules.clean_candidates(s.isr, 0, s.fenced)
        if clean or not s.unclean_election:
            return clean, False
        return s.replicas & ~s.fenced, True

    # ---- AlterPartition -------------------------------------------------------------------
    @staticmethod
    def _commit_alter_partition_told(t: story.Told) -> str:
        if not t.facts["accepted"]:
            return "the controller rejects the ISR proposal"
        return f"the controller commits ISR {story.brokers(t.b['isr'])} with ELR {story.brokers(t.b['elr'])}"

    def _commit_alter_partition_decides(self, args: Args, s: State) -> dict[str, Any]:
        return {"accepted": self.alter_partition_valid(s)}

    @action("CommitAlterPartition", told=_commit_alter_partition_told, decides=_commit_alter_partition_decides)
    def commit_alter_partition(self, s: State) -> State | None:
        """The controller validates the proposal (made at the current
        partition epoch, members unfenced and registered with the epoch the
        leader saw, leader in it, not RECOVERING with more than one member)
        and applies it with the ELR update, or rejects it."""
        if s.pending_isr == NO_PROPOSAL or s.leader == NO_LEADER:
            return None
        t = self.no_proposal(s)
        if not self.alter_partition_valid(s):
            return t
        t = self.change_isr(t._replace(leader_recovery=self.reported_recovery(s)), s.pending_isr)
        # the AlterPartition response: the leader adopts the partition it carries
        return self.delivered(t, s.pending_from, False) if self.propagated else t

    def alter_partition_valid(self, s: State) -> bool:
        """The controller accepts the AlterPartition in flight."""
        p = s.pending_isr
        return (
            not s.pending_stale
            and contains(p, s.leader)
            and self.isr_eligible(s, p)
            and self.epochs_current(s)
            and not (self.reported_recovery(s) == RECOVERING and size(p) > 1)
        )

    def isr_eligible(self, s: State, proposed: int) -> bool:
        """KIP-841: no proposed member is fenced or in controlled shutdown
        (else INELIGIBLE_REPLICA)."""
        return not proposed & (s.fenced | s.in_controlled_shutdown)

    def epochs_current(self, s: State) -> bool:
        """Every proposed member is still registered with the epoch the leader saw."""
        for b in range(self.n):
            if contains(s.pending_isr, b) and s.pending_epochs[b] != s.broker_epoch[b]:
                return False
        return True

    # ---- fencing and broker registration --------------------------------------------------
    @staticmethod
    def _fence_broker_told(t: story.Told) -> str:
        b = t.b
        return (
            f"the controller fences broker {t.who} (ISR {story.brokers(b['isr'])}, "
            f"ELR {story.brokers(b['elr'])}){t.elected}"
        )

    @action("FenceBroker", broker=BROKER, leader=ELECTED, told=_fence_broker_told)
    def fence_broker(self, s: State, b: int, leader: int) -> State | None:
        """The controller fences a broker that missed heartbeats: crashed
        (free) or cut off while running (bounded by max_fences)."""
        if contains(s.fenced, b):
            return None
        if self.running(s, b):
            if s.fences >= self.max_fences:
                return None
            s = s._replace(fences=s.fences + 1)
        return self.remove_broker(s, b, leader)

    @staticmethod
    def _unfence_broker_told(t: story.Told) -> str:
        return f"broker {t.who} is unfenced{t.elected}"

    @action("UnfenceBroker", broker=BROKER, leader=ELECTED, told=_unfence_broker_told)
    def unfence_broker(self, s: State, b: int, leader: int) -> State | None:
        """A running, registered broker is unfenced; with no leader, elect
        (an ELR member when the ISR is empty)."""
        if not contains(s.fenced, b) or not self.running(s, b) or contains(s.in_controlled_shutdown, b):
            return None  # one in controlled shutdown asks to shut down, not to be unfenced
        t = s._replace(fenced=without(s.fenced, b))
        if t.leader != NO_LEADER:
            return t if leader == NO_LEADER else None
        return self.reelect(t, leader)

    def remove_broker(self, s: State, b: int, leader: int) -> State | None:
        """The controller fences `b` (FenceBroker, CleanShutdown): it leaves
        the ISR through the ELR update; if the ISR empties, it is the
        LastKnownLeader; if it led, elect in the same record."""
        if s.leader != b and leader != NO_LEADER:
            return None  # nothing to elect
        s = s._replace(fenced=with_(s.fenced, b))
        if contains(s.isr, b):
            s = self.change_isr(s, without(s.isr, b))
            if not s.isr:
                s = s._replace(last_known_leader=b)
        return s if s.leader != b else self.reelect(s, leader)

    def registration_is_clean(self, s: State, b: int) -> bool:
        """KIP-966's detection: guarded by the new metadata version ("Before
        that, the controller will treat all the registrations with unclean
        shutdowns"); old software sends no epoch (BrokerRegistration before
        version 3 has no PreviousBrokerEpoch)."""
        return (
            s.metadata_version == NEW
            and s.software[b] == NEW
            and rules.registration_is_clean(s.clean_shutdown_epoch[b], s.broker_epoch[b])
        )

    def clean_registration(self, s: State, b: int) -> State:
        """The controller takes `b`'s registration as clean: Kafka handles it
        as a fence of `b` (handleBrokerShutdown with isCleanShutdown). `b` is
        fenced already, and a fenced broker is outside KIP-966's ISR (and is
        left as the last member in legacy's, as fencing left it): nothing changes."""
        return s

    def unclean_registration(self, s: State, b: int) -> State:
        """The controller has detected that `b` shut down uncleanly: KIP-966
        removes it from ISR and ELR; an ELR member goes to LastKnownELR. With
        the feature off the ELR is ignored, and the registration is handled
        as a fence (`clean_registration`)."""
        if not self.elr_enabled(s):
            return self.clean_registration(s, b)
        return self.recorded(
            s,
            s._replace(
                isr=without(s.isr, b), elr=without(s.elr, b), last_known_elr=s.last_known_elr | (s.elr & bit(b))
            ),
        )

    # ---- elections and the unclean recovery manager ---------------------------------------
    @staticmethod
    def _elect_leader_told(t: story.Told) -> str:
        return t.elects("the controller elects")

    @action("ElectLeader", leader=LEADER, told=_elect_leader_told)
    def elect_leader(self, s: State, leader: int) -> State | None:
        """The controller elects a leader that no other change triggered."""
        return self.reelect(s, leader) if s.leader == NO_LEADER else None

    @staticmethod
    def _unclean_recovery_told(t: story.Told) -> str:
        return t.elects("the unclean recovery elects")

    @action("UncleanRecovery", leader=LEADER, needs=RECOVERY_MANAGER, told=_unclean_recovery_told)
    def unclean_recovery(self, s: State, leader: int) -> State | None:
        """The KIP-966 unclean recovery manager elects by GetReplicaLogInfo."""
        winners = self.recovery_winners(s, self.strategy_in(s))
        return self.elect(s, leader, True) if contains(winners, leader) else None

    def recovery_winners(self, s: State, strategy: int) -> int:
        """KIP-966 unclean recovery (GetReplicaLogInfo): the replicas that can
        win. A replica answers if it is running and unfenced; in Balanced
        mode every LastKnownELR member must have answered and the winner
        ranks at least as high as each of them."""
        if (
            s.leader != NO_LEADER
            or strategy == STRATEGY_NONE
            or not self.elr_enabled(s)
            or rules.clean_candidates(s.isr, s.elr, s.fenced)
        ):
            return 0  # the recovery manager works from the ELR state: none while the feature is off
        if s.isr or (s.elr and strategy != STRATEGY_AGGRESSIVE):
            return 0  # wait for the fenced ISR/ELR members to come back
        answered = running_mask(s) & ~s.fenced & s.replicas
        if strategy == STRATEGY_BALANCED:
            return self.balanced_winners(s, answered)
        return answered

    def balanced_winners(self, s: State, answered: int) -> int:
        """Balanced: "all the LastKnownELR members have replied, plus the
        replicas replied within the timeout"; the winner ranks at least as
        high as every LastKnownELR member."""
        must = s.last_known_elr
        if must & ~answered:
            return 0
        winners = 0
        for w in range(self.n):
            if contains(answered, w) and self.outranks_all(s, w, must):
                winners |= bit(w)
        return winners

    def outranks_all(self, s: State, w: int, others: int) -> bool:
        for m in range(self.n):
            if contains(others, m) and rules.recovery_rank(s.log[w]) < rules.recovery_rank(s.log[m]):
                return False
        return True

    @staticmethod
    def _complete_recovery_told(t: story.Told) -> str:
        return f"leader {t.b['leader']} completes its recovery"

    @action("CompleteRecovery", told=_complete_recovery_told)
    def complete_recovery(self, s: State) -> State | None:
        """A RECOVERING leader finishes recovery (KIP-704: aborts open
        transactions, then tells the controller it is RECOVERED)."""
        ld = s.leader
        if (
            ld == NO_LEADER
            or s.leader_recovery != RECOVERING
            or not self.running(s, ld)
            or self.epoch_seen_by(s, ld) != s.leader_epoch
            or self.leader_seen_by(s, ld) != ld
        ):
            return None  # under "propagated", only once it knows it leads
        return self.recorded(s, s._replace(leader_recovery=RECOVERED))
