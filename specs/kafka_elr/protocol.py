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

from modelcheck.ops import popcount
from modelcheck.spec import Field, Spec, SymmetryError

from . import logs
from .arguments import (ACKS_NAMES, DESIGNATION, LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED, PREFERRED,
                        PREFERRED_REPLICA, STRATEGIES, STRATEGY_AGGRESSIVE, UNCLEAN)
from .broker import Broker
from .controller import Controller
from .invariants import Properties
from .metadata import Metadata
from .operators import Operators
from .presentation import KafkaPresentation
from .story import KafkaStory
from .types import NO_EPOCH, NO_LEADER, NO_PROPOSAL, RECOVERED, RUNNING, State, class_size, describe, members, \
    symmetric_representative


class Kip966(Controller, Broker, Metadata, Operators, Properties, KafkaStory, KafkaPresentation, Spec):
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

