"""What operators do: admin elections (KIP-460, KIP-966's unclean
recovery types), min.insync.replicas changes, and partition reassignment
(KIP-966 4), which the controller completes or the operator cancels.
"""

from __future__ import annotations

from modelcheck.declare import action
from modelcheck.ops import lowest_bit, replace_at

from . import logs, rules, story
from .arguments import (
    ADMIN_TYPE,
    DESIGNATION,
    ELECTED,
    LONGEST_LOG_AGGRESSIVE,
    MIN_ISR,
    PREFERRED,
    PREFERRED_REPLICA,
    STRATEGY_AGGRESSIVE,
    STRATEGY_BALANCED,
    SWITCH,
    TARGET,
    UNCLEAN,
)
from .parts import Parts
from .types import NO_LEADER, State, contains, size


def _reassignment_ended(t: story.Told) -> str:
    """The end of a reassignment, completed or cancelled, and what it left."""
    b = t.b
    return (
        f"the reassignment: replicas {story.brokers(b['replicas'])}, ISR {story.brokers(b['isr'])}, "
        f"ELR {story.brokers(b['elr'])}{t.elected}"
    )


class Operators(Parts):
    """Operator actions (mixed into Kip966, protocol.py)."""

    # ---- admin elections and min ISR ------------------------------------------------------
    @staticmethod
    def _admin_elect_leaders_told(t: story.Told) -> str:
        return t.elects(f"an admin {t.args.get('type', '')} election makes")

    @action(
        "AdminElectLeaders",
        coverage_by="type",
        bound="max_admin_elections",
        type=ADMIN_TYPE,
        leader=ELECTED,
        desired=ELECTED,
        told=_admin_elect_leaders_told,
    )
    def admin_elect_leaders(self, s: State, kind: int, leader: int, desired: int) -> State | None:
        """KIP-460 / KIP-966 admin elections (bounded by max_admin_elections):
        PREFERRED only if the leader is not the preferred replica, the others
        only when there is no leader."""
        if s.admin_elections >= self.max_admin_elections:
            return None
        s = s._replace(admin_elections=s.admin_elections + 1)
        p = PREFERRED_REPLICA
        if kind == PREFERRED:
            if (
                leader != NO_LEADER
                or desired != NO_LEADER
                or s.leader == p
                or not contains(s.isr, p)
                or not self.unfenced(s, p)
            ):
                return None
            return self.elect(s, p, False)
        if s.leader != NO_LEADER:
            return None
        if kind == DESIGNATION:
            if (
                leader != NO_LEADER
                or desired == NO_LEADER
                or not self.unfenced(s, desired)
                or not contains(s.replicas, desired)
            ):
                return None
            return self.elect(s, desired, not contains(s.isr | self.elr_in_force(s), desired))
        if desired != NO_LEADER or leader == NO_LEADER:
            return None
        if kind == UNCLEAN:
            # KIP-460: "elects the first live replica if there are no in-sync replica"
            clean = rules.clean_candidates(s.isr, self.elr_in_force(s), s.fenced)
            if clean:
                return self.elect(s, leader, False) if leader == lowest_bit(clean) else None
            live = s.replicas & ~s.fenced
            return self.elect(s, leader, True) if live and leader == lowest_bit(live) else None
        strategy = STRATEGY_AGGRESSIVE if kind == LONGEST_LOG_AGGRESSIVE else STRATEGY_BALANCED
        return self.elect(s, leader, True) if contains(self.recovery_winners(s, strategy), leader) else None

    @staticmethod
    def _alter_min_isr_told(t: story.Told) -> str:
        return f"min.insync.replicas becomes {t.args['min_isr']} (ELR {story.brokers(t.b['elr'])})"

    @action("AlterMinIsr", bound="max_min_isr_changes", min_isr=MIN_ISR, told=_alter_min_isr_told)
    def alter_min_isr(self, s: State, v: int) -> State | None:
        """min.insync.replicas changes (bounded by max_min_isr_changes)."""
        if s.min_isr_changes >= self.max_min_isr_changes or not self.min_isr_record_written(s, v):
            return None
        return self.min_isr_changed(s._replace(min_isr=v, min_isr_changes=s.min_isr_changes + 1))

    def min_isr_record_written(self, s: State, v: int) -> bool:
        """Whether setting min.insync.replicas to `v` is a change: KIP-966
        speaks of "updating the config", so setting the current value is none."""
        return v != s.min_isr

    def min_isr_changed(self, s: State) -> State:
        """KIP-966: "When updating the config min.insync.replicas, if the new
        min ISR <= current ISR, the ELR will be removed" (LastKnownELR too: the
        ISR has reached min ISR)."""
        return self.recorded(s, s._replace(elr=0, last_known_elr=0)) if self.eff_min_isr(s) <= size(s.isr) else s

    @action("AlterUncleanLeaderElection", bound="max_unclean_switches", enable=SWITCH)
    def alter_unclean_leader_election(self, s: State, v: int) -> State | None:
        """unclean.leader.election.enable changes at run time (bounded by
        max_unclean_switches): a config record, which changes no partition
        (an AlterPartition in flight stays current) and elects nobody in the
        same step. The rules that read it (`candidates`, `strategy_in`,
        kafka-4's `online_election`) read the new value from then on, and the
        elections it enables (ElectLeader, UncleanRecovery) may follow at any
        later step, as Kafka 4.0.0's periodic electUnclean task does."""
        if s.unclean_switches >= self.max_unclean_switches or v == s.unclean_election:
            return None
        return s._replace(unclean_election=v, unclean_switches=s.unclean_switches + 1)

    # ---- reassignment: the operator starts it, the controller completes it or the operator cancels it
    @staticmethod
    def _reassign_partition_told(t: story.Told) -> str:
        return (
            f"an operator reassigns the partition to {story.brokers(t.args['replicas'])} "
            f"(adding {story.brokers(t.b['adding'])}, removing {story.brokers(t.b['removing'])})"
        )

    @action("ReassignPartition", bound="max_reassignments", replicas=TARGET, told=_reassign_partition_told)
    def reassign_partition(self, s: State, target: int) -> State | None:
        """An operator moves the partition to a new replica set
        (AlterPartitionReassignments, bounded by max_reassignments): until
        the controller completes or cancels it, the partition is assigned the
        old and new replicas together, the new ones adding, the old ones
        removing (PartitionReassignmentReplicas). The adding replicas fetch
        and join the ISR through the leader's AlterPartition as any follower."""
        if s.reassignments >= self.max_reassignments or s.adding | s.removing or target == s.replicas:
            return None
        return self.reassignment_started(s._replace(reassignments=s.reassignments + 1), target)

    def reassignment_started(self, s: State, target: int) -> State:
        """The PartitionChangeRecord that starts a reassignment to `target`."""
        return self.recorded(
            s, s._replace(replicas=s.replicas | target, adding=target & ~s.replicas, removing=s.replicas & ~target)
        )

    @staticmethod
    def _complete_reassignment_told(t: story.Told) -> str:
        return f"the controller completes {_reassignment_ended(t)}"

    @action("CompleteReassignment", leader=ELECTED, told=_complete_reassignment_told)
    def complete_reassignment(self, s: State, leader: int) -> State | None:
        """The controller completes the reassignment once every adding replica
        is in the ISR and the ISR without the removing replicas is one the
        variant accepts (KIP-966 4a: at least min ISR members): the removing
        replicas leave the partition."""
        if not s.adding | s.removing or s.adding & ~s.isr or not self.may_end_reassignment(s, s.isr & ~s.removing):
            return None
        return self.reassigned(s, s.removing, leader)

    @staticmethod
    def _cancel_reassignment_told(t: story.Told) -> str:
        return f"an operator cancels {_reassignment_ended(t)}"

    @action("CancelReassignment", leader=ELECTED, told=_cancel_reassignment_told)
    def cancel_reassignment(self, s: State, leader: int) -> State | None:
        """An operator cancels the reassignment: the adding replicas leave the
        partition and the original replica set is back (PartitionReassignmentRevert),
        under the same ISR condition as a completion (KIP-966 4b: "This min ISR
        requirement is also enforced when the reassignment is canceled")."""
        if not s.adding | s.removing or not self.may_end_reassignment(s, s.isr & ~s.adding):
            return None
        return self.reassigned(s, s.adding, leader)

    def may_end_reassignment(self, s: State, isr: int) -> bool:
        """KIP-966 4a/4b: a reassignment ends only with an ISR of at least min
        ISR members (before it, any non-empty ISR would do: "This behavior can
        result in 1 replica in ISR"), counted against the min ISR of the
        final replica set."""
        return size(isr) >= self.final_min_isr(s)

    def reassigned(self, s: State, dropped: int, leader: int) -> State | None:
        """The PartitionChangeRecord that ends a reassignment: the `dropped`
        replicas leave the replica set and the ISR (with the ELR update), and
        KIP-966 4: "the ELR only contains replicas in the final replica set"
        (LastKnownELR and LastKnownLeader too: a broker that no longer hosts
        the partition cannot lead it). Their logs are deleted (StopReplica).
        A dropped leader is replaced in the same record by the variant's
        election (`reelect`: for kip966 a clean candidate, or none if every
        one is fenced). A kept leader keeps its epoch: Kafka bumps it to
        fence the removed replicas' fetches, which here stop with their
        membership, and the leader still acks its pending records (an epoch
        change reads as a leader change in `newly_acked`)."""
        led = s.leader
        moved = led != NO_LEADER and contains(dropped, led)
        if not moved and leader != NO_LEADER:
            return None  # nothing to elect
        final = s.replicas & ~dropped
        t = self.change_isr(s._replace(replicas=final, adding=0, removing=0), s.isr & ~dropped)
        lkl = s.last_known_leader
        t = self.reassignment_ended(
            s,
            t._replace(
                elr=t.elr & final,
                last_known_elr=t.last_known_elr & final,
                last_known_leader=NO_LEADER if lkl != NO_LEADER and contains(dropped, lkl) else lkl,
            ),
        )
        if not self.elr_enabled(t):  # a record written with the feature off: no ELR fields
            t = self.written_without_elr(t)
        if moved:
            return self.reelect(t, leader)
        return self.no_proposal(t)

    def reassignment_ended(self, s: State, t: State) -> State:
        """`t`, the partition after the record that ended `s`'s reassignment:
        the replicas it dropped lose their logs (StopReplica with delete:
        empty log, HWM 0), and the ghost notes an ISR left under the final
        replica set's min ISR (KIP-966 4a/4b, `ReassignmentKeepsMinIsr`)."""
        log, hwm = t.log, t.hwm
        for b in range(self.n):
            if contains(s.replicas & ~t.replicas, b):
                log, hwm = replace_at(log, b, logs.EMPTY), replace_at(hwm, b, 0)
        below = 1 if size(t.isr) < self.final_min_isr(s) else t.below_min_isr_reassigned
        return t._replace(log=log, hwm=hwm, below_min_isr_reassigned=below)
