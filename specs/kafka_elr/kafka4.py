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

from typing import Any

from modelcheck.spec import SymmetryError

from .protocol import PREFERRED_REPLICA, Kip966, Step
from .types import NO_LEADER, RECOVERING, State, bit, members, size

ONLINE, PREFERRED, UNCLEAN = "ONLINE", "PREFERRED", "UNCLEAN"


class Kafka4(Kip966):
    """Apache Kafka 4.0.0's controller: ISR, then ELR (only when the ISR is
    empty), then the last known leader (unclean), then, with
    unclean.leader.election.enable, the first live replica (unclean)."""

    variant = "kafka-4"
    admin_types = ("PREFERRED", "UNCLEAN")      # ElectLeaders: ElectionType PREFERRED / UNCLEAN
    omit = frozenset({"UncleanRecovery"})       # no unclean recovery manager in 4.0

    def enable_symmetry(self) -> None:
        raise SymmetryError("--symmetry: kafka-4 elects the first valid replica in assignment order "
                            "(PartitionChangeBuilder.electAnyLeader), so brokers are not interchangeable")

    def alive(self, s: State, r: int) -> bool:
        """ReplicationControlManager's isAcceptableLeader: registered, unfenced,
        not in controlled shutdown (our CleanShutdown fences at once)."""
        return r != NO_LEADER and self.unfenced(s, r)

    def online_election(self) -> str:
        """The election ReplicationControlManager asks for on broker and ISR
        changes: UNCLEAN when the topic enables unclean leader election."""
        return UNCLEAN if self.config["unclean_leader_election"] else ONLINE

    # ---- PartitionChangeBuilder ---------------------------------------------------
    def build(self, s: State, target_isr: int, election: str | None = None, unclean_shutdown: int = 0) -> State:
        """The partition after one PartitionChangeRecord (or `s` if none)."""
        election = election or self.online_election()
        # maybePopulateTargetElr
        if size(target_isr) >= self.eff_min_isr(s):
            elr = 0
        else:
            elr = (s.elr | s.isr) & ~target_isr & ~unclean_shutdown
        # tryElection
        leader, unclean = self.elect_in_build(s, target_isr, elr, election)
        isr, recovery = target_isr, s.leader_recovery
        if leader != s.leader:
            if leader != NO_LEADER and elr & bit(leader):     # an ELR election is clean
                isr, elr = bit(leader), elr & ~bit(leader)
            if unclean:
                isr, recovery = bit(leader), RECOVERING
        # maybeUpdateRecordElr: an unclean election wipes the ELR
        if unclean:
            elr = 0
        # maybeUpdateLastKnownLeader: the field holds the leader the partition
        # had when its ISR first became empty; cleared once it has a leader.
        lkelr = s.last_known_elr
        if not isr and s.isr:
            if lkelr != bit(s.leader) and s.leader != NO_LEADER:
                lkelr = bit(s.leader)
        elif leader != NO_LEADER:
            lkelr = 0
        t = s._replace(isr=isr, elr=elr, last_known_elr=lkelr)
        if leader == s.leader:
            return t
        # a leader change bumps the leader epoch; the recovery state changes
        # only if the election was unclean (targetLeaderRecoveryState)
        return t._replace(leader=leader, leader_epoch=s.leader_epoch + 1, pending_isr=None,
                          leader_recovery=recovery)

    def elect_in_build(self, s: State, isr: int, elr: int, election: str) -> tuple[int, bool]:
        """electPreferredLeader / electAnyLeader: (leader, unclean)."""
        def valid(r: int) -> bool:
            return r != NO_LEADER and bool(isr & bit(r) or (not isr and elr & bit(r))) and self.alive(s, r)

        order = list(range(self.n))     # the assignment order; replica 0 is preferred
        if election == PREFERRED:
            ranked = [PREFERRED_REPLICA, s.leader] + order[1:]
        else:
            ranked = [s.leader] + order
        for r in ranked:
            if valid(r):
                return r, False
        # canElectLastKnownLeader: no liveness check in 4.0 (KAFKA-19522)
        if not isr and not elr and size(s.last_known_elr) == 1:
            return members(s.last_known_elr)[0], True
        if election == UNCLEAN:
            for r in order:
                if self.alive(s, r):
                    return r, True
        return NO_LEADER, False

    # ---- ReplicationControlManager --------------------------------------------------
    def change_isr(self, s: State, proposed: int) -> State:
        """alterPartition: a validated proposal goes through build()."""
        return self.build(s, proposed)

    def remove_broker(self, s: State, b: int, args: dict[str, Any]) -> Step:
        """handleBrokerFenced / handleBrokerInControlledShutdown: one build()
        for the partition if `b` is in its ISR (an ELR member is left alone)."""
        s = s._replace(fenced=s.fenced | bit(b))
        t = self.build(s, s.isr & ~bit(b)) if s.isr & bit(b) else s
        yield ({**args, "leader": t.leader} if t.leader != s.leader and t.leader != NO_LEADER else args), t

    def elections(self, s: State) -> list[tuple[int, State]]:
        """handleBrokerUnfenced: build() on every leaderless partition, the ISR
        unchanged."""
        t = self.build(s, s.isr)
        return [(t.leader, t)] if t.leader != NO_LEADER else []

    def unclean_registration(self, s: State, b: int) -> State:
        """handleBrokerShutdown(isCleanShutdown=false): build() with `b` out of
        the ISR and named an unclean-shutdown replica, so it leaves ISR and
        ELR (the partition may elect in the same record)."""
        if not (s.isr | s.elr) & bit(b):
            return s
        return self.build(s, s.isr & ~bit(b), unclean_shutdown=bit(b))

    def min_isr_changed(self, s: State) -> State:
        """ConfigurationControlManager appends a ClearElrRecord for every
        min.insync.replicas change: ELR and LastKnownELR are wiped, not
        recomputed, and nothing is re-elected."""
        return s._replace(elr=0, last_known_elr=0)

    def admin_choices(self, s: State, kind: str) -> Step:
        """electLeader(ElectLeadersRequest): ELECTION_NOT_NEEDED when PREFERRED
        and the preferred replica leads, or UNCLEAN and there is a leader."""
        if kind == PREFERRED and s.leader == PREFERRED_REPLICA or kind == UNCLEAN and s.leader != NO_LEADER:
            return
        t = self.build(s, s.isr, election=kind)
        if t != s:
            yield {"leader": t.leader}, t

    def elect_leader(self, s: State) -> Step:
        """The controller's periodic tasks: the auto leader rebalance (a
        PREFERRED election on partitions whose leader is not the preferred
        replica, leaderless ones included) and, with unclean leader election
        enabled, an UNCLEAN election on leaderless partitions."""
        tasks = [PREFERRED] if s.leader != PREFERRED_REPLICA else []
        if s.leader == NO_LEADER and self.config["unclean_leader_election"]:
            tasks.append(UNCLEAN)
        outcomes: list[State] = []
        for kind in tasks:
            t = self.build(s, s.isr, election=kind)
            if t.leader != s.leader and t not in outcomes:
                outcomes.append(t)
                yield {"leader": t.leader}, t
