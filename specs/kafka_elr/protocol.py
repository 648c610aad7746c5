"""KIP-966 (Eligible Leader Replicas) with KIP-704 and KIP-460, one partition.

`Kip966` is the full design (variant `kip966`). Other variants subclass it
and redefine only what differs (variants.py). Actions are grouped by actor;
each says who performs it and is one disjunct of TLA+'s Next: a function
of the state and its arguments that returns the next state, or None when
its guard fails. docs/model.md gives the KIP source of every rule.
"""

from __future__ import annotations

import marshal
from typing import Any

from modelcheck.ops import lowest_bit, popcount, replace_at
from modelcheck.spec import Field, Param, Spec, SymmetryError, action, goal, invariant, leads_to, weak

from . import logs, rules
from .presentation import KafkaPresentation
from .story import KafkaStory
from .types import (NO_EPOCH, NO_LEADER, NO_PROPOSAL, OFFLINE_CLEAN, OFFLINE_DIRTY, RECOVERED, RECOVERING,
                    RUNNING, State, bit, class_size, describe, lost_unregistered, members, proposed, running_mask,
                    size, symmetric_representative)

PREFERRED_REPLICA = 0   # the first replica of the assignment
ACKS_NAMES = ("1", "all")
ACKS_1, ACKS_ALL = 0, 1
ADMIN_TYPES = ("PREFERRED", "UNCLEAN", "LONGEST_LOG_AGGRESSIVE", "LONGEST_LOG_BALANCED", "DESIGNATION")
PREFERRED, UNCLEAN, LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED, DESIGNATION = range(5)
STRATEGIES = ("none", "balanced", "aggressive")
STRATEGY_NONE, STRATEGY_BALANCED, STRATEGY_AGGRESSIVE = range(3)

# ---- action arguments (MODEL.md "Action arguments") ----------------------------------
BROKER = Param(lambda spec: range(spec.n))
LEADER = Param(lambda spec: range(spec.n))
# the leader elected in the same record as the change that triggered it;
# absent (-1) when the change elects nobody
ELECTED = Param(lambda spec: range(-1, spec.n), absent=NO_LEADER)
BROKER_SET = Param(lambda spec: spec.broker_sets, show=members)
KEEP = Param(lambda spec: range(spec.max_records + 1))
ACKS = Param(lambda spec: spec.acks_modes, show=ACKS_NAMES.__getitem__)
ADMIN_TYPE = Param(lambda spec: spec.admin_types, show=ADMIN_TYPES.__getitem__)
MIN_ISR = Param(lambda spec: range(1, spec.rf + 1))
# a reassignment's target: a replica set of replication-factor size
TARGET = Param(lambda spec: spec.targets, show=members)
# the broker acting as leader (metadata = "propagated": whoever believes it
# leads); absent under "atomic", where it is the controller's leader
AT = Param(lambda spec: spec.brokers if spec.propagated else (NO_LEADER,), absent=NO_LEADER)
# a broker receiving metadata: none under "atomic"
RECEIVER = Param(lambda spec: spec.brokers if spec.propagated else ())

# ---- fairness: what the temporal properties assume keeps happening -----------------
# (an action a variant lacks asks nothing; docs/model.md "Temporal properties")
# the controller acts: it fences a broker that stops heartbeating (and, within
# max_fences, one cut off), unfences a running registered one, elects, runs the
# unclean recovery and answers AlterPartition requests
CONTROLLER = (*weak("FenceBroker", "UnfenceBroker", each="broker"),
              *weak("ElectLeader", "UncleanRecovery", "CommitAlterPartition"))
# replication goes on: followers fetch, the leader advances its HWM, grows the
# ISR and finishes a recovery; propagated metadata reaches every running broker
REPLICATION = (*weak("Fetch", "MetadataUpdate", each="broker"),
               *weak("AdvanceHwm", "ExpandIsr", "CompleteRecovery"))
# a stopped broker comes back
RESTARTS = weak("StartBroker", each="broker")
# the controller completes a reassignment it may complete
REASSIGNMENT = weak("CompleteReassignment")


class Kip966(KafkaStory, KafkaPresentation, Spec):
    """The full KIP-966 design: ELR, LastKnownELR/LastKnownLeader, the HWM
    rule, clean-shutdown detection and the unclean recovery manager."""

    abstract = False
    variant = "kip966"
    state_type = State
    admin_types = (PREFERRED, UNCLEAN, LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED, DESIGNATION)

    def __init__(self, config: dict[str, Any]):
        self.config = config
        # the replication factor, and every broker of the cluster: the first
        # rf brokers are the partition's replicas at first, the spares may
        # become replicas through a reassignment
        self.rf = config["brokers"]
        n = self.n = self.rf + config["spare_brokers"]
        for bound in ("max_records", "max_unclean_shutdowns", "max_clean_shutdowns", "max_fences",
                      "max_isr_shrinks", "max_min_isr_changes", "max_admin_elections", "max_reassignments"):
            setattr(self, bound, config[bound])
        self.acks_modes = tuple(ACKS_NAMES.index(a) for a in sorted(config["acks"]))
        self.unclean_leader_election = config["unclean_leader_election"]
        self.fence_cuts_data_plane = config["fence_cuts_data_plane"]
        self.propagated = config["metadata"] == "propagated"
        # KIP-966 compatibility: unclean.leader.election.enable=true maps to
        # the Aggressive recovery strategy.
        self.strategy = STRATEGY_AGGRESSIVE if self.unclean_leader_election else \
            STRATEGIES.index(config["unclean_recovery_strategy"])
        self.brokers = tuple(range(n))
        self.assigned = (1 << self.rf) - 1      # the initial replica set
        self.zeros = (0,) * n
        # ShrinkIsr/ExpandIsr groups: non-empty sets of brokers, smallest first, then lexicographic
        self.broker_sets = tuple(sorted(range(1, 1 << n), key=lambda m: (popcount(m), members(m))))
        self.targets = tuple(m for m in self.broker_sets if popcount(m) == self.rf)
        self._checked = config["invariants"] if config["invariants"] is not None else list(self.invariants)

    # ---- engine interface ---------------------------------------------------
    def init_states(self) -> list[State]:
        n, m = self.n, self.config["min_isr"]
        views = self.propagated     # every broker has seen the initial metadata; "atomic" keeps them constant
        return [State(
            leader=PREFERRED_REPLICA, leader_epoch=0, isr=self.assigned, elr=0, last_known_elr=0,
            last_known_leader=NO_LEADER, leader_recovery=RECOVERED, fenced=0,
            broker_epoch=(1,) * n, min_isr=self.config["min_isr"], replicas=self.assigned, adding=0, removing=0,
            status=(RUNNING,) * n, clean_shutdown_epoch=(NO_EPOCH,) * n,
            log=(logs.EMPTY,) * n, hwm=(0,) * n, pending_isr=NO_PROPOSAL, pending_epochs=self.zeros,
            pending_stale=0, pending_from=NO_LEADER,
            seen_leader=(PREFERRED_REPLICA if views else NO_LEADER,) * n, seen_epoch=self.zeros,
            seen_isr=tuple(self.assigned if views and b == PREFERRED_REPLICA else 0 for b in range(n)),
            seen_min_isr=tuple(m if views and b == PREFERRED_REPLICA else 0 for b in range(n)), acked=0, acks_all=0, exposed=logs.EMPTY, produced=0, unclean_shutdowns=0,
            clean_shutdowns=0, fences=0, isr_shrinks=0, min_isr_changes=0, admin_elections=0, reassignments=0,
            below_min_isr_reassigned=0)]

    def layout(self) -> list[Field]:
        """Value ranges for the kernel's packing. Every bound follows from
        the config: a broker epoch grows by one a restart, a restart needs a
        shutdown; the leader epoch is held to what a log entry can store."""
        n, r = self.n, self.max_records
        restarts = self.max_unclean_shutdowns + self.max_clean_shutdowns
        sets, records, log = (1 << n) - 1, (1 << r + 1) - 1, (1 << logs.ENTRY_BITS * r) - 1
        return [Field("leader", -1, n - 1), Field("leader_epoch", 0, logs.MAX_EPOCH), Field("isr", 0, sets),
                Field("elr", 0, sets), Field("last_known_elr", 0, sets), Field("last_known_leader", -1, n - 1),
                Field("leader_recovery", 0, 1), Field("fenced", 0, sets),
                Field("broker_epoch", 1, 1 + restarts, n), Field("min_isr", 1, max(self.rf, self.config["min_isr"])),
                *self.assignment_layout(sets),
                Field("status", 0, 2, n), Field("clean_shutdown_epoch", -1, 1 + restarts, n),
                Field("log", 0, log, n), Field("hwm", 0, r, n), Field("pending_isr", -1, sets),
                Field("pending_epochs", 0, 1 + restarts, n), Field("pending_stale", 0, 1),
                *self.view_layout(sets), Field("acked", 0, records),
                Field("acks_all", 0, records), Field("exposed", 0, log), Field("produced", 0, r),
                Field("unclean_shutdowns", 0, self.max_unclean_shutdowns),
                Field("clean_shutdowns", 0, self.max_clean_shutdowns), Field("fences", 0, self.max_fences),
                Field("isr_shrinks", 0, self.max_isr_shrinks), Field("min_isr_changes", 0, self.max_min_isr_changes),
                Field("admin_elections", 0, self.max_admin_elections),
                Field("reassignments", 0, self.max_reassignments),
                Field("below_min_isr_reassigned", 0, 1 if self.max_reassignments else 0)]

    def assignment_layout(self, sets: int) -> list[Field]:
        """The replica set: constant without reassignments (no bits)."""
        if not self.max_reassignments:
            return [Field("replicas", self.assigned, self.assigned), Field("adding", 0, 0), Field("removing", 0, 0)]
        return [Field("replicas", 1, sets), Field("adding", 0, sets), Field("removing", 0, sets)]

    def view_layout(self, sets: int) -> list[Field]:
        """The brokers' views: constant under "atomic" (no bits)."""
        n = self.n
        if not self.propagated:
            return [Field("pending_from", -1, -1), Field("seen_leader", -1, -1, n), Field("seen_epoch", 0, 0, n),
                    Field("seen_isr", 0, 0, n), Field("seen_min_isr", 0, 0, n)]
        return [Field("pending_from", -1, n - 1), Field("seen_leader", -1, n - 1, n),
                Field("seen_epoch", 0, logs.MAX_EPOCH, n), Field("seen_isr", 0, sets, n),
                Field("seen_min_isr", 0, max(self.rf, self.config["min_isr"]), n)]

    def checked_invariants(self) -> list[str]:
        return self._checked

    def checked_properties(self) -> list[str]:
        return self.config["properties"] or []

    VIEW_FIELDS = ("pending_from", "seen_leader", "seen_epoch", "seen_isr", "seen_min_isr")
    ASSIGNMENT_FIELDS = ("replicas", "adding", "removing", "reassignments", "below_min_isr_reassigned")

    def describe(self, state: State) -> dict[str, Any]:
        named = describe(state)
        if not self.propagated:     # every broker sees the controller's state: no views to show
            for name in self.VIEW_FIELDS:
                del named[name]
        if not self.max_reassignments:  # the replica set never changes: nothing to show
            for name in self.ASSIGNMENT_FIELDS:
                del named[name]
        return named

    # the unclean recovery manager's properties and goals (a variant without it omits them)
    RECOVERY_MANAGER = ("RecoveryKeepsLastKnownElrData", "NoneNeverElectsUnclean", "RecoveryElects",
                        "BalancedRecoveryWaitsForLastKnownElr")

    # reassignment's actions, invariants, goals and property
    REASSIGNMENT_NAMES = ("ReassignPartition", "CompleteReassignment", "CancelReassignment", "ElrWithinReplicas",
                          "ReassignmentKeepsMinIsr", "AddingReplicaJoinsIsr", "ReassignmentMovesLeader",
                          "ReassignmentEnds")

    # actions whose first guard is `counter >= config[bound]`, the counter
    # starting at 0 and never decreasing: never enabled when the bound is 0
    BOUNDED = {"UncleanShutdown": "max_unclean_shutdowns", "CleanShutdown": "max_clean_shutdowns",
               "ShrinkIsr": "max_isr_shrinks", "AlterMinIsr": "max_min_isr_changes",
               "AdminElectLeaders": "max_admin_elections", "ReassignPartition": "max_reassignments"}

    def never_enabled(self) -> frozenset[str]:
        dormant = {a for a, bound in self.BOUNDED.items() if not self.config[bound]}
        if not self.max_reassignments:      # nothing to complete or cancel
            dormant |= {"CompleteReassignment", "CancelReassignment"}
        return frozenset(dormant if self.propagated else dormant | {"MetadataUpdate"})

    # States are tuples of ints and tuples of ints: marshal (format 2, which
    # has no back-references, so equal states give equal bytes) encodes them
    # deterministically, four times faster than repr.
    def encode(self, state: State) -> bytes:
        return marshal.dumps(tuple(state), 2)

    def representative(self, s: State) -> State:
        return symmetric_representative(s, self.brokers) if self.symmetric else s

    def class_size(self, s: State) -> int:
        return class_size(s, self.brokers) if self.symmetric else 1

    def enable_symmetry(self) -> None:
        """The brokers are interchangeable: every rule that picks a broker
        offers each candidate as its own choice, and no invariant names one.
        Broker 0 is the first leader, which only the initial state says
        (states reachable from a renamed initial state are renamed states,
        so classes need no symmetric start); it is also the preferred
        replica, which only PREFERRED admin elections read, and admin
        UNCLEAN elections pick the *first* live replica (KIP-460), so admin
        elections forbid symmetry."""
        if self.config["max_admin_elections"]:
            raise SymmetryError("--symmetry: admin UNCLEAN elections pick the first live replica (KIP-460), "
                                "so brokers are not interchangeable with max_admin_elections > 0")
        self.symmetric = True

    # ---- derived values -------------------------------------------------------
    def eff_min_isr(self, s: State) -> int:
        """KIP-966: "the effective min.insync.replicas will be
        min(min.insync.replicas, replication factor)" (a reassignment keeps
        the replication factor: its target has `brokers` replicas)."""
        return min(s.min_isr, self.rf)

    def running(self, s: State, b: int) -> bool:
        return s.status[b] == RUNNING

    def unfenced(self, s: State, b: int) -> bool:
        return not s.fenced >> b & 1

    # ---- what a broker acts on: the controller's state under metadata =
    # "atomic", the metadata last delivered to it under "propagated" ----------
    def acting_leader(self, s: State, at: int) -> int:
        """The broker acting as leader in an instance with argument `at`:
        the controller's leader ("atomic"), or `at` if it believes it leads."""
        if not self.propagated:
            return s.leader
        return at if s.seen_leader[at] == at else NO_LEADER

    def leader_seen_by(self, s: State, b: int) -> int:
        return s.seen_leader[b] if self.propagated else s.leader

    def epoch_seen_by(self, s: State, b: int) -> int:
        return s.seen_epoch[b] if self.propagated else s.leader_epoch

    def isr_seen_by(self, s: State, ld: int) -> int:
        """The ISR leader `ld` acts on (its committed ISR)."""
        return s.seen_isr[ld] if self.propagated else s.isr

    def min_isr_seen_by(self, s: State, ld: int) -> int:
        """The effective min ISR leader `ld` acts on."""
        return min(s.seen_min_isr[ld], self.rf) if self.propagated else self.eff_min_isr(s)

    def proposed_by(self, s: State, ld: int) -> int:
        """The members of `ld`'s own AlterPartition in flight (0 if none)."""
        return proposed(s) if not self.propagated or s.pending_from == ld else 0

    def follows(self, s: State, b: int, ld: int) -> bool:
        """Follower b fetches from leader `ld` in `ld`'s epoch, so `ld` knows
        its log end (Partition.makeLeader resets what a new leader knows of
        each follower: only a fetch in its epoch tells it)."""
        return not self.propagated or (s.seen_leader[b] == ld and s.seen_epoch[b] == s.seen_epoch[ld])

    def view_is_current(self, s: State, ld: int) -> bool:
        """`ld` has seen the partition as the controller has it now (so an
        AlterPartition it makes carries the current partition epoch; the
        fields it does not see cannot change what it proposes)."""
        return not self.propagated or (s.seen_leader[ld] == s.leader and s.seen_epoch[ld] == s.leader_epoch
                                       and s.seen_isr[ld] == s.isr)

    def delivered(self, s: State, b: int, with_min_isr: bool) -> State:
        """`s` once broker b has the controller's latest partition metadata
        (and, `with_min_isr`, the latest min.insync.replicas: an
        AlterPartition response carries only the partition)."""
        leads = s.leader == b
        min_isr = (s.min_isr if with_min_isr else s.seen_min_isr[b]) if leads else 0
        return s._replace(seen_leader=replace_at(s.seen_leader, b, s.leader),
                          seen_epoch=replace_at(s.seen_epoch, b, s.leader_epoch),
                          seen_isr=replace_at(s.seen_isr, b, s.isr if leads else 0),
                          seen_min_isr=replace_at(s.seen_min_isr, b, min_isr))

    def forgotten(self, s: State, b: int) -> State:
        """`s` with broker b's view dropped (it stopped; it catches up when it starts)."""
        if not self.propagated:
            return s
        return s._replace(seen_leader=replace_at(s.seen_leader, b, NO_LEADER),
                          seen_epoch=replace_at(s.seen_epoch, b, 0), seen_isr=replace_at(s.seen_isr, b, 0),
                          seen_min_isr=replace_at(s.seen_min_isr, b, 0))

    # ---- policy hooks that variants redefine --------------------------------
    def change_isr(self, s: State, proposal: int) -> State:
        """Apply a proposed ISR with the KIP-966 ELR update rule."""
        isr, elr, clean_lkelr = rules.update_elr(s.isr, s.elr, proposal, self.eff_min_isr(s))
        return self.recorded(s, s._replace(isr=isr, elr=elr, last_known_elr=0 if clean_lkelr else s.last_known_elr))

    def reported_recovery(self, s: State) -> int:
        """The recovery state the leader's AlterPartition carries: its own,
        until it completes recovery (KIP-704, CompleteRecovery)."""
        return s.leader_recovery

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        """KIP-966: the HWM advances only while the committed ISR (not the
        maximal ISR) has at least min ISR members."""
        return size(self.isr_seen_by(s, ld)) >= self.min_isr_seen_by(s, ld)

    def hwm_quorum(self, s: State, ld: int) -> int:
        """Replicas whose logs bound the HWM: the maximal ISR."""
        return self.isr_seen_by(s, ld) | self.proposed_by(s, ld)

    def registration_is_clean(self, s: State, b: int) -> bool:
        return rules.registration_is_clean(s.clean_shutdown_epoch[b], s.broker_epoch[b])

    def unclean_registration(self, s: State, b: int) -> State:
        """The controller has detected that `b` shut down uncleanly: KIP-966
        removes it from ISR and ELR; an ELR member goes to LastKnownELR."""
        return self.recorded(s, s._replace(isr=s.isr & ~bit(b), elr=s.elr & ~bit(b),
                                           last_known_elr=s.last_known_elr | (s.elr & bit(b))))

    def min_isr_changed(self, s: State) -> State:
        """KIP-966: "When updating the config min.insync.replicas, if the new
        min ISR <= current ISR, the ELR will be removed" (LastKnownELR too: the
        ISR has reached min ISR)."""
        return self.recorded(s, s._replace(elr=0, last_known_elr=0)) if self.eff_min_isr(s) <= size(s.isr) else s

    def candidates(self, s: State) -> tuple[int, bool]:
        """Whom the controller may elect on its own in leaderless state `s`,
        and whether that election is unclean: ISR members, then unfenced ELR
        members (clean). The unclean recovery is the UncleanRecovery action."""
        return rules.clean_candidates(s.isr, s.elr, s.fenced), False

    def recovery_winners(self, s: State, strategy: int) -> int:
        """KIP-966 unclean recovery (GetReplicaLogInfo): the replicas that can
        win. A replica answers if it is running and unfenced; in Balanced
        mode every LastKnownELR member must have answered and the winner
        ranks at least as high as each of them."""
        if s.leader != NO_LEADER or strategy == STRATEGY_NONE or rules.clean_candidates(s.isr, s.elr, s.fenced):
            return 0
        if s.isr or (s.elr and strategy != STRATEGY_AGGRESSIVE):
            return 0    # wait for the fenced ISR/ELR members to come back
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
            if answered >> w & 1 and self.outranks_all(s, w, must):
                winners |= bit(w)
        return winners

    def outranks_all(self, s: State, w: int, others: int) -> bool:
        for m in range(self.n):
            if others >> m & 1 and rules.recovery_rank(s.log[w]) < rules.recovery_rank(s.log[m]):
                return False
        return True

    # ---- shared effects -----------------------------------------------------------
    def no_proposal(self, s: State) -> State:
        return s._replace(pending_isr=NO_PROPOSAL, pending_epochs=self.zeros, pending_stale=0, pending_from=NO_LEADER)

    def recorded(self, s: State, t: State) -> State:
        """`t`, a PartitionChangeRecord applied to `s`: if it changed the
        partition, the partition epoch moved on, and an AlterPartition in
        flight (made at the old one) is stale (Kafka: INVALID_UPDATE_VERSION).
        Only that equality matters, so the epoch itself is not kept."""
        if t.pending_isr == NO_PROPOSAL or (t.leader, t.leader_epoch, t.isr, t.elr, t.last_known_elr,
                                            t.last_known_leader, t.leader_recovery, t.replicas, t.adding,
                                            t.removing) == \
                (s.leader, s.leader_epoch, s.isr, s.elr, s.last_known_elr, s.last_known_leader, s.leader_recovery,
                 s.replicas, s.adding, s.removing):
            return t
        return t._replace(pending_stale=1)

    def set_leader(self, s: State, leader: int, unclean: bool) -> State:
        """A leader change: one PartitionChangeRecord, one epoch bump; the old
        leader's in-flight AlterPartition is fenced by the epoch. An unclean
        election sets RECOVERING; any other change carries the recovery
        state through: only the leader ends it (KIP-704, CompleteRecovery)."""
        if leader == s.leader:
            return s
        return self.no_proposal(s)._replace(
            leader=leader, leader_epoch=s.leader_epoch + 1,
            leader_recovery=RECOVERING if unclean else s.leader_recovery,
            last_known_leader=NO_LEADER if leader != NO_LEADER else s.last_known_leader)

    def elect(self, s: State, c: int, unclean: bool) -> State:
        """Make `c` leader. Outside the ISR (an ELR or unclean choice) the ISR
        becomes {c}; an unclean choice also empties the ELR and is RECOVERING
        (KIP-704)."""
        if unclean:
            return self.set_leader(s._replace(isr=bit(c), elr=0), c, True)
        if not s.isr & bit(c):
            s = self.change_isr(s._replace(elr=s.elr & ~bit(c)), bit(c))
        return self.set_leader(s, c, False)

    def reelect(self, s: State, leader: int) -> State | None:
        """The election in the record that left the partition leaderless:
        `leader` must be a candidate, or NO_LEADER when there is none."""
        choices, unclean = self.candidates(s)
        if leader == NO_LEADER:
            return None if choices else self.set_leader(s, NO_LEADER, False)
        return self.elect(s, leader, unclean) if choices >> leader & 1 else None

    def remove_broker(self, s: State, b: int, leader: int) -> State | None:
        """The controller fences `b` (FenceBroker, CleanShutdown): it leaves
        the ISR through the ELR update; if the ISR empties, it is the
        LastKnownLeader; if it led, elect in the same record."""
        if s.leader != b and leader != NO_LEADER:
            return None     # nothing to elect
        s = s._replace(fenced=s.fenced | bit(b))
        if s.isr & bit(b):
            s = self.change_isr(s, s.isr & ~bit(b))
            if not s.isr:
                s = s._replace(last_known_leader=b)
        return s if s.leader != b else self.reelect(s, leader)

    # ---- clients and the leader: data plane -----------------------------------
    @action("Produce", acks=ACKS, at=AT)
    def produce(self, s: State, acks: int, at: int) -> State | None:
        """A client produces to the leader (running; under "propagated", any
        broker that believes it leads, in the epoch it knows)."""
        ld = self.acting_leader(s, at)
        if ld == NO_LEADER or not self.running(s, ld) or s.produced >= self.max_records:
            return None
        if acks == ACKS_ALL and size(self.isr_seen_by(s, ld)) < self.min_isr_seen_by(s, ld):
            return None     # NOT_ENOUGH_REPLICAS
        record = s.produced + 1
        entry = logs.entry(self.epoch_seen_by(s, ld), record)
        return s._replace(log=replace_at(s.log, ld, logs.append(s.log[ld], entry)),
                          produced=record, acks_all=s.acks_all | bit(record) if acks == ACKS_ALL else s.acks_all)

    @action("Fetch", broker=BROKER)
    def fetch(self, s: State, b: int) -> State | None:
        """A running follower (a replica of the partition: one a reassignment
        adds starts with an empty log) fetches (a fenced one too unless fencing cuts
        it off from the leader, fence_cuts_data_plane): truncate a divergent
        suffix, else copy the next entry; hwm := min(leader hwm, own log end).
        Under "propagated" it fetches from the leader it knows, which answers
        only at its own leader epoch (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
        NOT_LEADER_OR_FOLLOWER otherwise)."""
        ld = self.leader_seen_by(s, b)
        if ld == NO_LEADER or b == ld or not self.running(s, ld) or not self.running(s, b):
            return None
        if not s.replicas >> b & 1:
            return None
        if self.fence_cuts_data_plane and s.fenced & (bit(b) | bit(ld)):
            return None
        if self.acting_leader(s, ld) != ld or self.epoch_seen_by(s, b) != self.epoch_seen_by(s, ld):
            return None
        own, lead_log = s.log[b], s.log[ld]
        k = logs.common_prefix_len(own, lead_log)
        new = logs.prefix(own, k) if k < logs.length(own) else logs.prefix(lead_log, logs.length(own) + 1)
        hwm = min(s.hwm[ld], logs.length(new))
        if new == own and hwm == s.hwm[b]:
            return None
        return s._replace(log=replace_at(s.log, b, new), hwm=replace_at(s.hwm, b, hwm))

    @action("AdvanceHwm", at=AT)
    def advance_hwm(self, s: State, at: int) -> State | None:
        """The leader raises its HWM to the smallest matching log end over the
        maximal ISR; acks=all records below it become acked."""
        ld = self.acting_leader(s, at)
        if ld == NO_LEADER or not self.running(s, ld) or not self.hwm_may_advance(s, ld):
            return None
        lead_log = s.log[ld]
        quorum = self.hwm_quorum(s, ld)
        new = logs.length(lead_log)
        for b in range(self.n):
            if quorum >> b & 1 and b != ld:
                if not self.follows(s, b, ld):
                    return None     # it has not fetched in this epoch: its log end is unknown
                new = min(new, logs.common_prefix_len(s.log[b], lead_log))
        if new <= s.hwm[ld]:
            return None
        return s._replace(hwm=replace_at(s.hwm, ld, new), acked=s.acked | self.newly_acked(s, ld, new),
                          exposed=logs.prefix(lead_log, new) if new > logs.length(s.exposed) else s.exposed)

    def newly_acked(self, s: State, ld: int, new_hwm: int) -> int:
        """acks=all records this leader appended that the HWM now passes, if
        the ISR has min ISR members then (KIP-966: respond "when the message
        is persisted in all the ISR members' local log and the size of the ISR
        member is larger than min ISR"). Otherwise, and for records of older
        epochs, the producer gets an error instead of an ack."""
        if size(self.isr_seen_by(s, ld)) < self.min_isr_seen_by(s, ld):
            return 0
        covered = 0
        epoch = self.epoch_seen_by(s, ld)
        for i in range(s.hwm[ld], new_hwm):
            e = logs.at(s.log[ld], i)
            if logs.epoch_of(e) == epoch:
                covered |= bit(logs.record_of(e))
        return covered & s.acks_all

    # ---- the leader: AlterPartition -------------------------------------------
    def may_propose(self, s: State, ld: int) -> bool:
        """`ld` leads (as far as it knows), runs, and no AlterPartition is in
        flight (one at a time: a stale leader's is rejected anyway)."""
        return ld != NO_LEADER and self.running(s, ld) and s.pending_isr == NO_PROPOSAL

    def propose(self, s: State, ld: int, isr: int) -> State:
        """An AlterPartition request from `ld`: each member with its broker
        epoch (KIP-903), so that the controller can refuse a replica that has
        restarted since; made from a stale view, it carries an old partition
        epoch and is rejected."""
        epochs = self.zeros
        for b in range(self.n):
            if isr >> b & 1:
                epochs = replace_at(epochs, b, s.broker_epoch[b])
        t = s._replace(pending_isr=isr, pending_epochs=epochs)
        if not self.propagated:
            return t
        return t._replace(pending_from=ld, pending_stale=0 if self.view_is_current(s, ld) else 1)

    @action("ShrinkIsr", brokers=BROKER_SET, at=AT)
    def shrink_isr(self, s: State, group: int, at: int) -> State | None:
        """The leader proposes to drop slow followers (any may be slow)."""
        ld = self.acting_leader(s, at)
        if not self.may_propose(s, ld) or s.isr_shrinks >= self.max_isr_shrinks:
            return None
        isr = self.isr_seen_by(s, ld)
        if group & ~(isr & ~bit(ld)):
            return None
        return self.propose(s._replace(isr_shrinks=s.isr_shrinks + 1), ld, isr & ~group)

    @action("ExpandIsr", brokers=BROKER_SET, at=AT)
    def expand_isr(self, s: State, group: int, at: int) -> State | None:
        """The leader proposes to add caught-up followers. A RECOVERING leader
        does not grow the ISR (KIP-704)."""
        ld = self.acting_leader(s, at)
        if not self.may_propose(s, ld) or self.reported_recovery(s) == RECOVERING \
                or group & ~self.caught_up(s, ld):
            return None
        return self.propose(s, ld, self.isr_seen_by(s, ld) | group)

    def caught_up(self, s: State, ld: int) -> int:
        """Running, unfenced followers outside the ISR whose log matches the
        leader's up to at least its HWM and its epoch start offset (a fenced
        one would be rejected, with no other effect)."""
        lead_log = s.log[ld]
        floor = max(s.hwm[ld], rules.epoch_start_offset(lead_log, self.epoch_seen_by(s, ld)))
        outside = running_mask(s) & ~s.fenced & s.replicas & ~self.isr_seen_by(s, ld)
        found = 0
        for b in range(self.n):
            if outside >> b & 1 and logs.length(s.log[b]) >= floor and logs.is_prefix(s.log[b], lead_log) \
                    and self.follows(s, b, ld):
                found |= bit(b)
        return found

    @action("CommitAlterPartition")
    def commit_alter_partition(self, s: State) -> State | None:
        """The controller validates the proposal (made at the current
        partition epoch, members unfenced and registered with the epoch the
        leader saw, leader in it, not RECOVERING with more than one member)
        and applies it with the ELR update, or rejects it."""
        if s.pending_isr == NO_PROPOSAL or s.leader == NO_LEADER:
            return None
        p = s.pending_isr
        recovery = self.reported_recovery(s)
        valid = (not s.pending_stale and p & bit(s.leader) != 0 and not p & s.fenced and self.epochs_current(s)
                 and not (recovery == RECOVERING and size(p) > 1))
        t = self.no_proposal(s)
        if not valid:
            return t
        t = self.change_isr(t._replace(leader_recovery=recovery), p)
        # the AlterPartition response: the leader adopts the partition it carries
        return self.delivered(t, s.pending_from, False) if self.propagated else t

    def epochs_current(self, s: State) -> bool:
        """Every proposed member is still registered with the epoch the leader saw."""
        for b in range(self.n):
            if s.pending_isr >> b & 1 and s.pending_epochs[b] != s.broker_epoch[b]:
                return False
        return True

    # ---- controller and broker lifecycle ----------------------------------------
    @action("FenceBroker", broker=BROKER, leader=ELECTED)
    def fence_broker(self, s: State, b: int, leader: int) -> State | None:
        """The controller fences a broker that missed heartbeats: crashed
        (free) or cut off while running (bounded by max_fences)."""
        if s.fenced & bit(b):
            return None
        if self.running(s, b):
            if s.fences >= self.max_fences:
                return None
            s = s._replace(fences=s.fences + 1)
        return self.remove_broker(s, b, leader)

    @action("UnfenceBroker", broker=BROKER, leader=ELECTED)
    def unfence_broker(self, s: State, b: int, leader: int) -> State | None:
        """A running, registered broker is unfenced; with no leader, elect
        (an ELR member when the ISR is empty)."""
        if not s.fenced & bit(b) or not self.running(s, b):
            return None
        t = s._replace(fenced=s.fenced & ~bit(b))
        if t.leader != NO_LEADER:
            return t if leader == NO_LEADER else None
        return self.reelect(t, leader)

    @action("UncleanShutdown", broker=BROKER, keep=KEEP)
    def unclean_shutdown(self, s: State, b: int, keep: int) -> State | None:
        """A broker's process dies; its unflushed suffix is lost (any `keep`
        entries survive). No CleanShutdownFile is written."""
        if s.unclean_shutdowns >= self.max_unclean_shutdowns or not self.running(s, b) \
                or keep > logs.length(s.log[b]):
            return None
        s = self.forgotten(s, b)
        return s._replace(status=replace_at(s.status, b, OFFLINE_DIRTY),
                          log=replace_at(s.log, b, logs.prefix(s.log[b], keep)),
                          hwm=replace_at(s.hwm, b, min(s.hwm[b], keep)),
                          clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH),
                          unclean_shutdowns=s.unclean_shutdowns + 1)

    @action("CleanShutdown", broker=BROKER, leader=ELECTED)
    def clean_shutdown(self, s: State, b: int, leader: int) -> State | None:
        """Controlled shutdown: the broker writes its epoch to its
        CleanShutdownFile, leadership moves, it leaves the ISR."""
        if s.clean_shutdowns >= self.max_clean_shutdowns or not self.running(s, b) or s.fenced & bit(b):
            return None
        t = self.forgotten(s, b)._replace(status=replace_at(s.status, b, OFFLINE_CLEAN),
                       clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, s.broker_epoch[b]),
                       clean_shutdowns=s.clean_shutdowns + 1)
        return self.remove_broker(t, b, leader)

    @action("StartBroker", broker=BROKER)
    def start_broker(self, s: State, b: int) -> State | None:
        """A stopped broker restarts and registers with the epoch from its
        CleanShutdownFile; a mismatch is an unclean shutdown: the controller
        removes it from ISR and ELR (an ELR member goes to LastKnownELR). It
        gets a new broker epoch and stays fenced."""
        if not s.fenced & bit(b) or self.running(s, b):
            return None
        t = s._replace(status=replace_at(s.status, b, RUNNING),
                       broker_epoch=replace_at(s.broker_epoch, b, s.broker_epoch[b] + 1),
                       clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH))
        if not self.registration_is_clean(s, b):
            t = self.unclean_registration(t, b)
        # it serves only once its metadata has caught up (BrokerServer waits for it)
        return self.delivered(t, b, True) if self.propagated else t

    @action("ElectLeader", leader=LEADER)
    def elect_leader(self, s: State, leader: int) -> State | None:
        """The controller elects a leader that no other change triggered."""
        return self.reelect(s, leader) if s.leader == NO_LEADER else None

    @action("UncleanRecovery", leader=LEADER)
    def unclean_recovery(self, s: State, leader: int) -> State | None:
        """The KIP-966 unclean recovery manager elects by GetReplicaLogInfo."""
        winners = self.recovery_winners(s, self.strategy)
        return self.elect(s, leader, True) if winners >> leader & 1 else None

    @action("CompleteRecovery")
    def complete_recovery(self, s: State) -> State | None:
        """A RECOVERING leader finishes recovery (KIP-704: aborts open
        transactions, then tells the controller it is RECOVERED)."""
        ld = s.leader
        if ld == NO_LEADER or s.leader_recovery != RECOVERING or not self.running(s, ld) \
                or self.epoch_seen_by(s, ld) != s.leader_epoch or self.leader_seen_by(s, ld) != ld:
            return None     # under "propagated", only once it knows it leads
        return self.recorded(s, s._replace(leader_recovery=RECOVERED))

    @action("MetadataUpdate", broker=RECEIVER)
    def metadata_update(self, s: State, b: int) -> State | None:
        """Metadata = "propagated": a running broker catches up with the
        metadata log (the partition's latest record and min.insync.replicas),
        fenced or not; a no-op if nothing it acts on changed."""
        if not self.running(s, b):
            return None
        t = self.delivered(s, b, True)
        if t.seen_leader[b] == s.seen_leader[b] and t.seen_epoch[b] == s.seen_epoch[b] \
                and t.seen_isr[b] == s.seen_isr[b] and t.seen_min_isr[b] == s.seen_min_isr[b]:
            return None
        return t

    # ---- operators --------------------------------------------------------------
    @action("AdminElectLeaders", coverage_by="type", type=ADMIN_TYPE, leader=ELECTED, desired=ELECTED)
    def admin_elect_leaders(self, s: State, kind: int, leader: int, desired: int) -> State | None:
        """KIP-460 / KIP-966 admin elections (bounded by max_admin_elections):
        PREFERRED only if the leader is not the preferred replica, the others
        only when there is no leader."""
        if s.admin_elections >= self.max_admin_elections:
            return None
        s = s._replace(admin_elections=s.admin_elections + 1)
        p = PREFERRED_REPLICA
        if kind == PREFERRED:
            if leader != NO_LEADER or desired != NO_LEADER or s.leader == p or not s.isr & bit(p) \
                    or not self.unfenced(s, p):
                return None
            return self.elect(s, p, False)
        if s.leader != NO_LEADER:
            return None
        if kind == DESIGNATION:
            if leader != NO_LEADER or desired == NO_LEADER or not self.unfenced(s, desired) \
                    or not s.replicas >> desired & 1:
                return None
            return self.elect(s, desired, not (s.isr | s.elr) & bit(desired))
        if desired != NO_LEADER or leader == NO_LEADER:
            return None
        if kind == UNCLEAN:
            # KIP-460: "elects the first live replica if there are no in-sync replica"
            clean = rules.clean_candidates(s.isr, s.elr, s.fenced)
            if clean:
                return self.elect(s, leader, False) if leader == lowest_bit(clean) else None
            live = s.replicas & ~s.fenced
            return self.elect(s, leader, True) if live and leader == lowest_bit(live) else None
        strategy = STRATEGY_AGGRESSIVE if kind == LONGEST_LOG_AGGRESSIVE else STRATEGY_BALANCED
        return self.elect(s, leader, True) if self.recovery_winners(s, strategy) >> leader & 1 else None

    @action("AlterMinIsr", min_isr=MIN_ISR)
    def alter_min_isr(self, s: State, v: int) -> State | None:
        """min.insync.replicas changes (bounded by max_min_isr_changes)."""
        if s.min_isr_changes >= self.max_min_isr_changes or v == s.min_isr:
            return None
        return self.min_isr_changed(s._replace(min_isr=v, min_isr_changes=s.min_isr_changes + 1))

    @action("ReassignPartition", replicas=TARGET)
    def reassign_partition(self, s: State, target: int) -> State | None:
        """An operator moves the partition to a new replica set
        (AlterPartitionReassignments, bounded by max_reassignments): until
        the controller completes or cancels it, the partition is assigned the
        old and new replicas together, the new ones adding, the old ones
        removing (PartitionReassignmentReplicas). The adding replicas fetch
        and join the ISR through the leader's AlterPartition as any follower."""
        if s.reassignments >= self.max_reassignments or s.adding | s.removing or target == s.replicas:
            return None
        return self.recorded(s, s._replace(replicas=s.replicas | target, adding=target & ~s.replicas,
                                           removing=s.replicas & ~target, reassignments=s.reassignments + 1))

    # ---- the controller ends a reassignment -----------------------------------------
    @action("CompleteReassignment", leader=ELECTED)
    def complete_reassignment(self, s: State, leader: int) -> State | None:
        """The controller completes the reassignment once every adding replica
        is in the ISR and the ISR without the removing replicas is one the
        variant accepts (KIP-966 4a: at least min ISR members): the removing
        replicas leave the partition."""
        if not s.adding | s.removing or s.adding & ~s.isr or not self.may_end_reassignment(s, s.isr & ~s.removing):
            return None
        return self.reassigned(s, s.removing, leader)

    @action("CancelReassignment", leader=ELECTED)
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
        result in 1 replica in ISR")."""
        return size(isr) >= self.eff_min_isr(s)

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
        moved = led != NO_LEADER and dropped >> led & 1 == 1
        if not moved and leader != NO_LEADER:
            return None     # nothing to elect
        final = s.replicas & ~dropped
        t = self.change_isr(s._replace(replicas=final, adding=0, removing=0), s.isr & ~dropped)
        log, hwm = s.log, s.hwm
        for b in range(self.n):
            if dropped >> b & 1:
                log, hwm = replace_at(log, b, logs.EMPTY), replace_at(hwm, b, 0)
        lkl = s.last_known_leader
        t = t._replace(elr=t.elr & final, last_known_elr=t.last_known_elr & final, log=log, hwm=hwm,
                       last_known_leader=NO_LEADER if lkl != NO_LEADER and dropped >> lkl & 1 else lkl,
                       below_min_isr_reassigned=1 if size(t.isr) < self.eff_min_isr(s)
                       else s.below_min_isr_reassigned)
        if moved:
            return self.reelect(t, leader)
        return self.no_proposal(t)

    # ---- invariants --------------------------------------------------------------
    @invariant("TypeOK")
    def type_ok(self, s: State) -> bool:
        """Every variable is in its domain."""
        n = self.n
        # sets are bitmasks: their union is in 0..2^N-1 iff each is (a negative one makes it negative)
        sets = s.isr | s.elr | s.last_known_elr | s.fenced | proposed(s) | s.replicas
        if not (-1 <= s.leader < n and -1 <= s.last_known_leader < n and s.leader_epoch >= 0
                and 0 <= sets < 1 << n and 0 <= s.leader_recovery <= 1 and s.min_isr >= 1
                and s.pending_isr >= NO_PROPOSAL
                and len(s.broker_epoch) == len(s.status) == len(s.clean_shutdown_epoch) == len(s.log) == len(s.hwm)
                == len(s.pending_epochs) == n):
            return False
        for b in range(n):
            if not (RUNNING <= s.status[b] <= OFFLINE_DIRTY and 0 <= s.hwm[b] <= logs.length(s.log[b])):
                return False
        # the assignment: ISR and leader are replicas; adding and removing
        # split the replicas beyond the original and the target sets
        leader = bit(s.leader) if s.leader != NO_LEADER else 0
        return not (s.isr | leader | s.adding | s.removing) & ~s.replicas and not s.adding & s.removing \
            and size(s.replicas & ~s.adding) == size(s.replicas & ~s.removing) == self.rf

    @invariant("ElrDisjointIsr")
    def elr_disjoint_isr(self, s: State) -> bool:
        """KIP-966: "The member of ELR should not be in ISR"."""
        return not s.isr & s.elr

    @invariant("ElrOnlyUnderMinIsr")
    def elr_only_under_min_isr(self, s: State) -> bool:
        """KIP-966: "If ELR is not empty, the ISR is under min ISR"."""
        return not s.elr or size(s.isr) < self.eff_min_isr(s)

    @invariant("ElrHasDataToHwm")
    def elr_has_data_to_hwm(self, s: State) -> bool:
        """KIP-966: "The member of ELR should have the data at least to HWM"
        (brokers that crashed dirty and have not re-registered excepted)."""
        checked = s.elr & ~lost_unregistered(s)
        for b in range(self.n):
            if checked >> b & 1 and not logs.is_prefix(s.exposed, s.log[b]):
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
        return s.leader == NO_LEADER or s.isr >> s.leader & 1 == 1

    @invariant("LeaderUnfenced")
    def leader_unfenced(self, s: State) -> bool:
        """The leader is registered and unfenced: the controller elected a
        live broker."""
        return s.leader == NO_LEADER or self.unfenced(s, s.leader)

    @invariant("ElectableAtLeastMinIsr")
    def electable_at_least_min_isr(self, s: State) -> bool:
        """KIP-966: "ELR + ISR size will not be dropped below the min ISR
        unless the controller discovers an ELR member has an unclean
        shutdown"."""
        if size(s.isr | s.elr) >= self.eff_min_isr(s):
            return True
        return s.unclean_shutdowns - size(lost_unregistered(s)) > 0   # some unclean shutdown was detected

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
        still elect cleanly (ISR, ELR): KIP-966's headline claim."""
        if not s.acked:
            return True
        holders = s.isr | s.elr | (bit(s.leader) if s.leader != NO_LEADER else 0)
        held = 0
        for b in range(self.n):
            if holders >> b & 1:
                held |= logs.records(s.log[b])
        return not s.acked & ~held

    @invariant("RecoveryKeepsLastKnownElrData")
    def recovery_keeps_last_known_elr_data(self, s: State) -> bool:
        """KIP-966 unclean recovery: Balanced elects once "all the
        LastKnownELR members have replied", so any replica it may elect holds
        every acknowledged record a LastKnownELR member still holds (electing
        after a fixed number of replies "does not give enough protection").
        Checked on every replica the configured strategy may elect here."""
        winners = self.recovery_winners(s, self.strategy)
        if not winners or not s.acked:
            return True
        kept = 0
        for m in range(self.n):
            if s.last_known_elr >> m & 1:
                kept |= logs.records(s.log[m])
        for w in range(self.n):
            if winners >> w & 1 and kept & s.acked & ~logs.records(s.log[w]):
                return False
        return True

    @invariant("NoneNeverElectsUnclean")
    def none_never_elects_unclean(self, s: State) -> bool:
        """KIP-966: with unclean.recovery.strategy=None "the controller will
        not attempt to elect a leader. Waiting for the user operations": no
        election outside ISR and ELR (which makes the partition RECOVERING)
        unless an operator ran one."""
        return self.strategy != STRATEGY_NONE or s.leader_recovery == RECOVERED or s.admin_elections > 0

    @invariant("ConsistentRead")
    def consistent_read(self, s: State) -> bool:
        """A serving leader's log holds everything consumers may have read."""
        ld = s.leader
        return ld == NO_LEADER or not self.running(s, ld) or logs.is_prefix(s.exposed, s.log[ld])

    # ---- reachability goals: what a "holds" must have exercised -------------------
    @goal("ElrMemberElected")
    def elr_member_elected(self, s: State, t: State) -> bool:
        """An ELR member becomes leader (KIP-966: "If there are unfenced ELR
        members, choose an ELR member")."""
        return t.leader != NO_LEADER and t.leader != s.leader and s.elr >> t.leader & 1 == 1

    @goal("RecoveryElects", "UncleanRecovery")
    def recovery_elects(self, s: State, t: State) -> bool:
        """The unclean recovery manager elects a leader (with the configured strategy)."""
        return t.leader != NO_LEADER

    @goal("BalancedRecoveryWaitsForLastKnownElr", "UncleanRecovery")
    def balanced_recovery_waits(self, s: State, t: State) -> bool:
        """A Balanced recovery elects with a LastKnownELR member among the
        replies: the case the strategy exists for."""
        return self.strategy == STRATEGY_BALANCED and s.last_known_elr != 0

    @goal("RecoveryCompletes", "CompleteRecovery")
    def recovery_completes(self, s: State, t: State) -> bool:
        """A RECOVERING leader finishes its recovery (KIP-704)."""
        return True

    @goal("RecoveringSurvivesReelection")
    def recovering_survives_reelection(self, s: State, t: State) -> bool:
        """A leaderless RECOVERING partition elects a leader cleanly and stays
        RECOVERING (KIP-704: only the leader ends the recovery)."""
        return s.leader == NO_LEADER and s.leader_recovery == RECOVERING and t.leader != NO_LEADER \
            and t.leader_recovery == RECOVERING and t.leader_epoch == s.leader_epoch + 1 and s.isr | s.elr != 0

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
        return s.leader != NO_LEADER and s.removing >> s.leader & 1 == 1

    # ---- temporal properties (checked when the config names them: `properties`) --
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

    @leads_to("ReassignmentEnds", *CONTROLLER, *REPLICATION, *RESTARTS, *REASSIGNMENT)
    def reassignment_ends(self, s: State) -> tuple[bool, bool]:
        """A reassignment is eventually completed or cancelled: the adding
        replicas catch up and join the ISR, and the controller completes
        it once KIP-966's min ISR condition holds."""
        moving = s.adding | s.removing != 0
        return moving, not moving
