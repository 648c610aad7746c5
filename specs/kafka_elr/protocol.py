"""KIP-966 (Eligible Leader Replicas) with KIP-704 and KIP-460, one partition.

`Kip966` is the full design (variant `kip966`). Other variants subclass it
and redefine only what differs (variants.py). Its rules are in one file a
role, so that each can be read against the KIP alone: controller.py,
broker.py (the data plane), metadata.py (what a broker acts on),
operators.py, and invariants.py (what is checked); this file composes them
with the engine interface. Each action says who performs it and is one
disjunct of TLA+'s Next: a function of the state and its arguments that
returns the next state, or None when its guard fails. docs/model.md gives
the KIP source of every rule.
"""

from __future__ import annotations

import marshal
from typing import Any, ClassVar

from modelcheck.declare import Field, SpecDefinitionError, SymmetryError
from modelcheck.ops import popcount
from modelcheck.refinement import Refinement
from modelcheck.spec import Spec

from .arguments import (
    ACKS_NAMES,
    DESIGNATION,
    LONGEST_LOG_AGGRESSIVE,
    LONGEST_LOG_BALANCED,
    PREFERRED,
    STRATEGIES,
    UNCLEAN,
)
from .broker import Broker
from .controller import Controller
from .invariants import Invariants
from .metadata import Metadata
from .operators import Operators
from .presentation import KafkaPresentation
from .story import KafkaStory
from .temporal import Temporal
from .types import (
    ALWAYS,
    BOUNDS,
    ELR_VERSION,
    NEW,
    NO_LEADER,
    OLD,
    ORDERED,
    PROPAGATED,
    REASSIGNING,
    STAGED,
    SWITCHING,
    VERSION_NAMES,
    VERSIONED,
    State,
    class_size,
    describe,
    initial,
    members,
    symmetric_representative,
)
from .types import layout as declared_layout
from .versions import Versions


class Kip966(
    Controller, Broker, Metadata, Operators, Versions, Invariants, Temporal, KafkaStory, KafkaPresentation, Spec
):
    """The full KIP-966 design: ELR, LastKnownELR/LastKnownLeader, the HWM
    rule, clean-shutdown detection and the unclean recovery manager."""

    abstract = False
    variant = "kip966"  # its config name: a subclass that names its own registers itself
    protocol = True  # a protocol, not a mutant of one (read from the class's own body)
    state_type = State
    admin_types: tuple[int, ...] = (PREFERRED, UNCLEAN, LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED, DESIGNATION)
    # `modelcheck refines kip966 legacy`: the KIP's state with its new variables projected away
    refinements: tuple[Refinement, ...] = (
        Refinement(
            "elr-projected-away",
            "legacy",
            "ELR, LastKnownELR and LastKnownLeader, which legacy does not have, read as {}, {} and none",
            constant={"elr": 0, "last_known_elr": 0, "last_known_leader": NO_LEADER},
        ),
    )
    # whether the variant has eligible.leader.replicas.version (legacy predates it), and
    # whether the controller refuses a version a broker's software does not support
    has_versions = True
    upgrade_needs_software = True
    # every variant and mutant, in the catalog's order (set by catalog.py, which
    # imports the modules that define them): the classes one kernel compiles
    family: tuple[type[Kip966], ...] = ()
    # whether the replica list's order can change (kafka-4 with reassignments: `listed_last`)
    orders_replicas = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "variant" in vars(cls):
            register(cls)

    def __init__(self, config: dict[str, Any]):
        self.config = config
        # the replication factor, and every broker of the cluster: the first
        # rf brokers are the partition's replicas at first, the spares may
        # become replicas through a reassignment
        self.rf = config["brokers"]
        n = self.n = self.rf + config["spare_brokers"]
        for bound in BOUNDS:
            setattr(self, bound.key, config[bound.key])
        self.switch_at_min_isr = config["elr_switch_when"] == "at-min-isr"
        software = config["software"]
        self.start_software = tuple(
            VERSION_NAMES.index(software if isinstance(software, str) else software[b]) for b in range(n)
        )
        self.start_metadata_version = VERSION_NAMES.index(config["metadata_version"])
        changing = (OLD, NEW)
        # the values each version variable takes (VARIABLES: the kernel's packing)
        self.version_range = {
            "metadata_version": changing if self.max_version_changes else (self.start_metadata_version,) * 2,
            "elr_version": changing if self.max_version_changes else (config["elr_version"],) * 2,
            "software": changing if self.max_software_changes else (min(self.start_software), max(self.start_software)),
        }
        # shown in traces where a version is not the newest or can change
        self.versioned = bool(
            self.max_version_changes
            or self.max_software_changes
            or self.start_metadata_version != NEW
            or not config["elr_version"]
            or OLD in self.start_software
        )
        self.acks_modes = tuple(ACKS_NAMES.index(a) for a in sorted(config["acks"]))
        self.fence_cuts_data_plane = config["fence_cuts_data_plane"]
        self.propagated = config["metadata"] == "propagated"
        self.staged_shutdown = config["controlled_shutdown"] == "staged"
        # the strategy while unclean.leader.election.enable is false (`strategy_in`)
        self.configured_strategy = STRATEGIES.index(config["unclean_recovery_strategy"])
        self.brokers = tuple(range(n))
        self.assigned = (1 << self.rf) - 1  # the initial replica set
        self.zeros = (0,) * n
        # ShrinkIsr/ExpandIsr groups: non-empty sets of brokers, smallest first, then lexicographic
        self.broker_sets = tuple(sorted(range(1, 1 << n), key=lambda m: (popcount(m), members(m))))
        self.targets = tuple(m for m in self.broker_sets if popcount(m) == self.rf)
        self.visible = (
            ALWAYS,
            *((PROPAGATED,) if self.propagated else ()),
            *((REASSIGNING,) if self.max_reassignments else ()),
            *((SWITCHING,) if self.max_unclean_switches else ()),
            *((STAGED,) if self.staged_shutdown else ()),
            *((ORDERED,) if self.orders_replicas else ()),
            *((VERSIONED,) if self.versioned else ()),
        )
        self._checked = config["invariants"] if config["invariants"] is not None else self.default_invariants()

    # ---- engine interface ---------------------------------------------------
    def init_states(self) -> list[State]:
        """One initial state, each variable at its `start` (VARIABLES): broker
        0 leads the first rf brokers' ISR; under "propagated" metadata every
        broker has seen that ("atomic" keeps the views constant)."""
        return [initial(self)]

    # NoAckedLoss, ConsistentRead and ElrHasDataToHwm unless legacy's exposure happened
    UNDER_ELR = ("NoAckedLossUnderElr", "ConsistentReadUnderElr", "ElrHasDataToHwmUnderElr")

    def default_invariants(self) -> list[str]:
        """All the variant's invariants, the UNDER_ELR ones where the ELR feature
        can be off, in place of those they qualify (whose first violation
        there is legacy's "last replica standing"); elsewhere the two agree,
        and the plain ones are checked."""
        if self.version_range["elr_version"][0] == 1:
            return [n for n in self.invariants if n not in self.UNDER_ELR]
        qualified = [n.removesuffix("UnderElr") for n in self.UNDER_ELR]
        return [n for n in self.invariants if n not in qualified]

    def kernel_family(self) -> tuple[type[Spec], ...]:
        """Every variant and mutant (catalog.py): those alike in actions and
        invariants share one compiled kernel a broker count."""
        return Kip966.family

    def layout(self) -> list[Field]:
        """Value ranges for the kernel's packing, as VARIABLES declare them."""
        return declared_layout(self)

    def checked_invariants(self) -> list[str]:
        return self._checked

    def checked_properties(self) -> list[str]:
        return self.config["properties"] or []

    def describe(self, state: State) -> dict[str, Any]:
        """MODEL.md's named variables, less those this config keeps constant:
        the brokers' views under "atomic" metadata (every broker sees the
        controller's state), the replica set without reassignments."""
        return describe(state, self.visible)

    # the operator's steps on versions (Versions, versions.py): set below, from their `needs`
    VERSION_STEPS: ClassVar[tuple[str, ...]]

    def never_enabled(self) -> frozenset[str]:
        dormant = {a for a, bound in self.bounds.items() if not self.config[bound]}  # never below a bound of 0
        if not self.max_reassignments:  # nothing to complete or cancel
            dormant |= {"CompleteReassignment", "CancelReassignment"}
        if not self.staged_shutdown:
            dormant |= {"BeginControlledShutdown"}
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
            raise SymmetryError(
                "--symmetry: admin UNCLEAN elections pick the first live replica (KIP-460), "
                "so brokers are not interchangeable with max_admin_elections > 0"
            )
        self.symmetric = True


Kip966.VERSION_STEPS = tuple(a for a in Kip966.actions if Kip966.needs.get(a) == ELR_VERSION)


# every class that names its own `variant`, by that name, in the order defined
REGISTERED: dict[str, type[Kip966]] = {}


def register(cls: type[Kip966]) -> None:
    """Register a variant class by its config name (Kip966's subclasses do so
    when defined; catalog.py lists those of its modules)."""
    if cls.variant in REGISTERED:
        raise SpecDefinitionError(f"{cls.__name__}: variant {cls.variant!r} is {REGISTERED[cls.variant].__name__}'s")
    REGISTERED[cls.variant] = cls


register(Kip966)
