"""State of one Kafka partition, its controller and its brokers.

Every field is an int or a tuple of ints (one a broker), so the same state
runs in the interpreted spec and in the compiled kernel: sets of brokers
are bitmasks (bit b is broker b), logs are packed ints (logs.py), "none" is
a sentinel value. Each variable is declared once, in VARIABLES: its kind,
range and meaning; the State type, the kernel's layout, `describe`
(MODEL.md's named variables, for traces), the ITF types and the renaming
of brokers (symmetry) all follow from it.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from modelcheck.declare import Field
from modelcheck.formats.itf import BOOL, INT, STR, Fun, Option, Seq, Set, Tup, Type
from modelcheck.ops import popcount, replace_at

from . import logs

NO_LEADER = -1
PREFERRED_REPLICA = 0  # the first replica of the assignment, and the first leader
NO_EPOCH = -1  # an empty CleanShutdownFile / no last-written epoch
NO_PROPOSAL = -1  # pending_isr when no AlterPartition is in flight
RECOVERED, RECOVERING = 0, 1
RUNNING, OFFLINE_CLEAN, OFFLINE_DIRTY = 0, 1, 2
STATUS_NAMES = ("RUNNING", "OFFLINE_CLEAN", "OFFLINE_DIRTY")
RECOVERY_NAMES = ("RECOVERED", "RECOVERING")
# a metadata version or a broker's software: before KIP-966's (OLD) or from it on (NEW);
# docs/model.md "Upgrades and downgrades" maps them to Kafka's releases
OLD, NEW = 0, 1
VERSION_NAMES = ("old", "new")
# features a variant may lack (`Spec.lacks`): the rules and claims that `need` one go with it
ELR = "eligible leader replicas"
RECOVERY_MANAGER = "unclean recovery manager"
ELR_VERSION = "eligible.leader.replicas.version"


# ---- the state variables, each declared once ----------------------------------------
# A variable's kind says how its ints read (describe, ITF) and how a
# renaming of the brokers acts on it (symmetry).
NUMBER = "number"  # an int: a count, an epoch, an offset
FLAG = "flag"  # 0 or 1, read as a boolean
NAMED = "named"  # an index into the variable's `names`
BROKER_ID = "broker id"  # a broker, or -1 for none
BROKERS = "broker set"  # a set of brokers (bit b: broker b)
PROPOSAL = "proposal"  # a set of brokers, or NO_PROPOSAL (-1) for none
RECORDS = "record set"  # a set of record numbers (bit r: record r)
LOG = "log"  # a packed log (logs.py)

ALWAYS, PROPAGATED, REASSIGNING, NEVER = "always", "propagated", "reassigning", "never"
SWITCHING = "switching"  # shown where unclean.leader.election.enable may change (max_unclean_switches > 0)
STAGED = "staged"  # shown where a controlled shutdown is a state (controlled_shutdown = "staged")
ORDERED = "ordered"  # shown where the replica list's order can change (kafka-4 with reassignments)
VERSIONED = "versioned"  # shown where versions are not the newest or can change (docs/model.md "Upgrades")


@dataclass(frozen=True)
class Seen:
    """One value of a broker's view (`view`: what symmetry sorts the brokers
    by): an expression of the state `s` and the broker `b`, the bits
    `view_key` packs it in, and whether it sorts before every other."""

    expr: str
    bits: int
    first: bool = False


@dataclass(frozen=True)
class Var:
    """A state variable: MODEL.md's name, its kind, its range in a spec
    instance (`lo`, `hi`: functions of the Kip966 instance, for the
    kernel's packing), whether it holds one value per broker, what it
    means, and when traces show it (a variable constant in a config is
    hidden there). A `derived` one is computed from the state (shown, not
    stored). `start` is its value in the initial state."""

    name: str
    kind: str
    lo: Callable[[Any], int]
    hi: Callable[[Any], int]
    meaning: str
    per_broker: bool = False
    names: tuple[str, ...] = ()
    shown: str = ALWAYS
    derived: Callable[[Any], int] | None = None
    # its value in the initial state: a constant, or a function of the spec
    # instance (of the instance and the broker, for a per-broker variable)
    start: int | Callable[..., int] = 0
    # what it tells of broker b in b's view (symmetry's sort key): None for
    # its kind's default (`_seen`), () with `unseen` saying why it is left out
    seen: tuple[Seen, ...] | None = None
    unseen: str = ""


@dataclass(frozen=True)
class Bound:
    """A config bound on some steps, declared once: its config key (also
    the spec instance's attribute, and the `bound=` of the actions it
    bounds), its default, what it bounds (the key's help), the state
    variable that counts those steps (range 0..bound) and what that
    counter means; `most` caps the key where the state's packing must."""

    key: str
    default: int
    bounds: str
    counter: str
    counts: str
    shown: str = ALWAYS
    most: int | None = None


# in the config schema's order (schema.py), which is also the counters' order in VARIABLES
BOUNDS = (
    Bound("max_records", 2, "records clients may produce", "produced", "records produced", most=logs.MAX_RECORDS),
    Bound(
        "max_unclean_shutdowns",
        1,
        "crashes that lose an unflushed suffix",
        "unclean_shutdowns",
        "unclean shutdowns so far",
    ),
    Bound(
        "max_clean_shutdowns",
        0,
        "orderly stops (CleanShutdown, StopBroker)",
        "clean_shutdowns",
        "clean shutdowns so far",
    ),
    Bound(
        "max_fences",
        1,
        "fencings of a live broker (network partition)",
        "fences",
        "fencings of a running broker so far",
    ),
    Bound("max_isr_shrinks", 1, "leader-initiated ISR shrinks", "isr_shrinks", "ISR shrinks proposed so far"),
    Bound("max_min_isr_changes", 0, "AlterMinIsr steps", "min_isr_changes", "min ISR changes so far"),
    Bound("max_admin_elections", 0, "AdminElectLeaders steps", "admin_elections", "admin elections so far"),
    Bound(
        "max_unclean_switches",
        0,
        "AlterUncleanLeaderElection steps (unclean.leader.election.enable changed at run time)",
        "unclean_switches",
        "changes of unclean.leader.election.enable so far",
        shown=SWITCHING,
    ),
    Bound(
        "max_reassignments",
        0,
        "operator reassignments of the partition (AlterPartitionReassignments, ReassignPartition)",
        "reassignments",
        "reassignments started so far",
        shown=REASSIGNING,
    ),
    Bound(
        "max_version_changes",
        0,
        "operator upgrades and downgrades of metadata.version and eligible.leader.replicas.version",
        "version_changes",
        "operator changes of metadata.version and eligible.leader.replicas.version so far",
        shown=VERSIONED,
    ),
    Bound(
        "max_software_changes",
        0,
        "brokers' software upgrades and downgrades",
        "software_changes",
        "brokers' software upgrades and downgrades so far",
        shown=VERSIONED,
    ),
)


def _counters(*keys: str) -> tuple[Var, ...]:
    """The state variables that count the steps of the bounds named."""
    return tuple(Var(b.counter, NUMBER, _zero, _bound(b.key), b.counts, shown=b.shown) for b in BOUNDS if b.key in keys)


def _assigned(c) -> int:
    """The initial replica set (and ISR): the first rf brokers."""
    return c.assigned


def _config_min_isr(c) -> int:
    return c.config["min_isr"]


def _sets(c) -> int:
    return (1 << c.n) - 1


def _restarts(c) -> int:
    """A broker epoch grows by one a restart, and a restart needs a shutdown."""
    return c.max_unclean_shutdowns + c.max_clean_shutdowns


def _log(c) -> int:
    return (1 << logs.ENTRY_BITS * c.max_records) - 1


def _unclean(c) -> int:
    """unclean.leader.election.enable in the config: the switch's constant value without switches."""
    return int(c.config["unclean_leader_election"])


def _min_isr(c) -> int:
    return max(c.rf, c.config["min_isr"])


def _when(flag: str, hi: Callable[[Any], int], off: int = 0) -> Callable[[Any], int]:
    """`hi` where the config lets the variable change, else its constant `off`."""
    return lambda c: hi(c) if getattr(c, flag) else off


def _none(c) -> int:
    return -1


def _zero(c) -> int:
    return 0


def _one(c) -> int:
    return 1


def _last_broker(c) -> int:
    return c.n - 1


def _bound(key: str) -> Callable[[Any], int]:
    return lambda c: c.config[key]


def _versions(name: str) -> tuple[Callable[[Any], int], Callable[[Any], int]]:
    """The range of a version variable (the spec instance's `version_range`:
    its values at the start, and both where the config lets it change)."""
    return (lambda c: c.version_range[name][0]), (lambda c: c.version_range[name][1])


def _max_epoch(c) -> int:
    """The leader epoch is held to what a log entry can store."""
    return logs.MAX_EPOCH


VARIABLES = (
    # controller: the metadata log's view of the partition
    Var("leader", BROKER_ID, _none, _last_broker, "the partition's leader, -1 for none", start=PREFERRED_REPLICA),
    Var("leader_epoch", NUMBER, _zero, _max_epoch, "bumped on every leader change"),
    Var("isr", BROKERS, _zero, _sets, "the in-sync replicas (the committed ISR)", start=_assigned),
    Var("elr", BROKERS, _zero, _sets, "KIP-966 eligible leader replicas"),
    Var("last_known_elr", BROKERS, _zero, _sets, "ELR members removed on an unclean shutdown (KIP-966)"),
    Var(
        "last_known_leader",
        BROKER_ID,
        _none,
        _last_broker,
        "the last ISR member when the ISR emptied, -1",
        start=NO_LEADER,
    ),
    Var("leader_recovery", NAMED, _zero, _one, "KIP-704's is_unclean", names=RECOVERY_NAMES, start=RECOVERED),
    Var("fenced", BROKERS, _zero, _sets, "brokers the controller has fenced"),
    Var(
        "in_controlled_shutdown",
        BROKERS,
        _zero,
        _when("staged_shutdown", _sets),
        "brokers whose registration is in controlled shutdown (registered, maybe unfenced)",
        shown=STAGED,
        unseen="only kafka-4 sets it, and kafka-4 refuses symmetry",
    ),
    Var(
        "broker_epoch",
        NUMBER,
        _one,
        lambda c: 1 + _restarts(c),
        "the epoch of each broker's registration",
        per_broker=True,
        start=1,
        seen=(Seen("s.broker_epoch[b]", 9),),
    ),
    Var("min_isr", NUMBER, _one, _min_isr, "min.insync.replicas now (AlterMinIsr changes it)", start=_config_min_isr),
    Var(
        "unclean_election",
        FLAG,
        lambda c: 0 if c.max_unclean_switches else _unclean(c),
        lambda c: 1 if c.max_unclean_switches else _unclean(c),
        "unclean.leader.election.enable now (AlterUncleanLeaderElection changes it)",
        shown=SWITCHING,
        start=_unclean,
    ),
    # the assignment (max_reassignments > 0; else constant): the replica set
    # (during a reassignment the original and the target replicas together)
    # and, while one is in progress, its adding and removing replicas
    Var(
        "replicas",
        BROKERS,
        lambda c: 1 if c.max_reassignments else c.assigned,
        lambda c: _sets(c) if c.max_reassignments else c.assigned,
        "the partition's replica set",
        shown=REASSIGNING,
        start=_assigned,
        seen=(Seen("1 - (s.replicas >> b & 1)", 1, first=True),),
    ),
    Var("adding", BROKERS, _zero, _when("max_reassignments", _sets), "replicas a reassignment adds", shown=REASSIGNING),
    Var(
        "removing",
        BROKERS,
        _zero,
        _when("max_reassignments", _sets),
        "replicas a reassignment removes",
        shown=REASSIGNING,
    ),
    # kafka-4's replica list: the replicas in ascending order, then those
    # listed last (the removing ones; after a cancellation the ones it
    # restored); constant 0 elsewhere (docs/model.md "Reassignment under kafka-4")
    Var(
        "listed_last",
        BROKERS,
        _zero,
        _when("orders_replicas", _sets),
        "replicas Kafka's replica list names after the others",
        shown=ORDERED,
        unseen="only kafka-4 sets it, and kafka-4 refuses symmetry",
    ),
    # the cluster's versions (KIP-966 "Compatibility, Deprecation, and Migration Plan"):
    # the finalized metadata version and eligible.leader.replicas.version, and
    # each broker's software; constant at their start unless the config lets
    # operators change them
    Var(
        "metadata_version",
        NAMED,
        *_versions("metadata_version"),
        "the finalized metadata.version: before KIP-966's (old) or from it on (new)",
        names=VERSION_NAMES,
        shown=VERSIONED,
        start=lambda c: c.start_metadata_version,
    ),
    Var(
        "elr_version",
        NUMBER,
        *_versions("elr_version"),
        "eligible.leader.replicas.version >= 1: the controller keeps the ELR",
        shown=VERSIONED,
        start=lambda c: c.config["elr_version"],
    ),
    Var(
        "software",
        NAMED,
        *_versions("software"),
        "each broker's software: before KIP-966's broker changes (old) or with them (new)",
        per_broker=True,
        names=VERSION_NAMES,
        shown=VERSIONED,
        start=lambda c, b: c.start_software[b],
        seen=(Seen("s.software[b]", 1),),
    ),
    # brokers
    Var(
        "status",
        NAMED,
        _zero,
        lambda c: OFFLINE_DIRTY,
        "each broker's process",
        per_broker=True,
        names=STATUS_NAMES,
        start=RUNNING,
        seen=(Seen("s.status[b]", 2),),
    ),
    Var(
        "clean_shutdown_epoch",
        NUMBER,
        _none,
        lambda c: 1 + _restarts(c),
        "what each broker's CleanShutdownFile holds, -1 if none",
        per_broker=True,
        start=NO_EPOCH,
        seen=(Seen("s.clean_shutdown_epoch[b] + 1", 9),),
    ),
    Var(
        "log",
        LOG,
        _zero,
        _log,
        "each broker's log: entries (leader epoch, record)",
        per_broker=True,
        start=logs.EMPTY,
        unseen="sorted_renaming compares logs apart (a log is wider than a view)",
    ),
    Var(
        "hwm",
        NUMBER,
        _zero,
        lambda c: c.max_records,
        "each broker's high watermark",
        per_broker=True,
        seen=(Seen("s.hwm[b]", 3),),
    ),
    Var(
        "pending_isr",
        PROPOSAL,
        _none,
        _sets,
        "the ISR the leader's AlterPartition in flight proposes",
        start=NO_PROPOSAL,
        unseen="pending_epochs shows it: a member's epoch there, 0 for none",
    ),
    Var(
        "pending_epochs",
        NUMBER,
        _zero,
        lambda c: 1 + _restarts(c),
        "each proposed member's broker epoch then (KIP-903), 0 if not proposed",
        per_broker=True,
        shown=NEVER,
        seen=(Seen("s.pending_epochs[b]", 10),),
    ),
    Var("pending_stale", FLAG, _zero, _one, "the partition changed since the proposal (its partition epoch is old)"),
    # each broker's view: the metadata last delivered to it (metadata =
    # "propagated"; constant under "atomic", where every broker sees the
    # controller's state). ISR and min ISR only matter to a broker that sees
    # itself as leader, so they are 0 for the others (one state, not many).
    Var(
        "pending_from",
        BROKER_ID,
        _none,
        _when("propagated", _last_broker, -1),
        "the broker that made the proposal",
        shown=PROPAGATED,
        start=NO_LEADER,
    ),
    Var(
        "seen_leader",
        BROKER_ID,
        _none,
        _when("propagated", _last_broker, -1),
        "the leader each broker knows",
        per_broker=True,
        shown=PROPAGATED,
        start=lambda c, b: PREFERRED_REPLICA if c.propagated else NO_LEADER,
        seen=(Seen("int(s.seen_leader[b] == b)", 1), Seen("int(s.seen_leader[b] == s.leader)", 1)),
    ),
    Var(
        "seen_epoch",
        NUMBER,
        _zero,
        _when("propagated", _max_epoch),
        "the leader epoch each broker knows",
        per_broker=True,
        shown=PROPAGATED,
        seen=(Seen("s.seen_epoch[b]", 6),),
    ),
    Var(
        "seen_isr",
        BROKERS,
        _zero,
        _when("propagated", _sets),
        "the ISR a broker that leads knows",
        per_broker=True,
        shown=PROPAGATED,
        start=lambda c, b: c.assigned if c.propagated and b == PREFERRED_REPLICA else 0,
        seen=(Seen("popcount(s.seen_isr[b])", 4),),
    ),
    Var(
        "seen_min_isr",
        NUMBER,
        _zero,
        _when("propagated", _min_isr),
        "the min ISR a broker that leads knows",
        per_broker=True,
        shown=PROPAGATED,
        start=lambda c, b: c.config["min_isr"] if c.propagated and b == PREFERRED_REPLICA else 0,
        seen=(Seen("s.seen_min_isr[b]", 6),),
    ),
    # ghosts (for invariants) and bound counters; all part of the identity,
    # since each can change a later verdict (see docs/model.md)
    Var("acked", RECORDS, _zero, lambda c: (1 << c.max_records + 1) - 1, "records acknowledged to acks=all"),
    Var("acks_all", RECORDS, _zero, lambda c: (1 << c.max_records + 1) - 1, "records produced with acks=all"),
    Var(
        "exposed", LOG, _zero, _log, "the longest prefix a consumer may have read (the highest HWM's)", start=logs.EMPTY
    ),
    *_counters("max_records", "max_unclean_shutdowns"),
    Var(
        "lost_unregistered",
        BROKERS,
        _zero,
        _sets,
        "brokers that crashed dirty and have not re-registered",
        derived=lambda s: lost_unregistered(s),
        unseen="derived from the stored variables, not stored",
    ),
    Var(
        "crashed_without_elr",
        FLAG,
        _zero,
        lambda c: 1 if c.version_range["elr_version"][0] == 0 and c.max_unclean_shutdowns else 0,
        "an unclean shutdown happened while the ELR feature was off",
        shown=VERSIONED,
    ),
    *_counters(*(b.key for b in BOUNDS[2:])),
    Var(
        "below_min_isr_reassigned",
        FLAG,
        _zero,
        _when("max_reassignments", _one),
        "a completion or cancellation left the ISR under min ISR",
        shown=REASSIGNING,
    ),
)


PER_BROKER = frozenset(v.name for v in VARIABLES if v.per_broker)

# the stored variables, in VARIABLES' order: the kernel packs them so. Made
# from the table at run time; mypy reads the class below instead, which
# tests/test_declarations.py holds to the table (names, order, types).
if TYPE_CHECKING:

    class State(NamedTuple):
        """One state: MODEL.md's variables, VARIABLES' stored ones."""

        leader: int
        leader_epoch: int
        isr: int
        elr: int
        last_known_elr: int
        last_known_leader: int
        leader_recovery: int
        fenced: int
        in_controlled_shutdown: int
        broker_epoch: tuple[int, ...]
        min_isr: int
        unclean_election: int
        replicas: int
        adding: int
        removing: int
        listed_last: int
        metadata_version: int
        elr_version: int
        software: tuple[int, ...]
        status: tuple[int, ...]
        clean_shutdown_epoch: tuple[int, ...]
        log: tuple[int, ...]
        hwm: tuple[int, ...]
        pending_isr: int
        pending_epochs: tuple[int, ...]
        pending_stale: int
        pending_from: int
        seen_leader: tuple[int, ...]
        seen_epoch: tuple[int, ...]
        seen_isr: tuple[int, ...]
        seen_min_isr: tuple[int, ...]
        acked: int
        acks_all: int
        exposed: int
        produced: int
        unclean_shutdowns: int
        crashed_without_elr: int
        clean_shutdowns: int
        fences: int
        isr_shrinks: int
        min_isr_changes: int
        admin_elections: int
        unclean_switches: int
        reassignments: int
        version_changes: int
        software_changes: int
        below_min_isr_reassigned: int

else:
    State = NamedTuple(
        "State", [(v.name, tuple[int, ...] if v.per_broker else int) for v in VARIABLES if v.derived is None]
    )


_FIELD = {name: i for i, name in enumerate(State._fields)}


def _replace(self: State, **changes: int | tuple[int, ...]) -> State:
    """NamedTuple._replace without its loop over all the fields in Python: a
    step changes one to four of them, and this is the commonest operation
    of the interpreted hot path (typing.NamedTuple forbids defining it in
    the class). The kernel compiles `_replace` into a constructor call."""
    values = list(self)
    for name, value in changes.items():
        values[_FIELD[name]] = value
    return tuple.__new__(State, values)


State._replace = _replace  # type: ignore[method-assign, assignment]  # the fast one; mypy reads NamedTuple's


def bit(b: int) -> int:
    return 1 << b


def size(mask: int) -> int:
    return popcount(mask)


# named set operations (a set of brokers or records is a bitmask)
def contains(group: int, b: int) -> bool:
    return group >> b & 1 == 1


def with_(group: int, b: int) -> int:
    return group | 1 << b


def without(group: int, b: int) -> int:
    return group & ~(1 << b)


def members(mask: int) -> list[int]:
    """Broker ids in a bitmask, ascending (for traces; rules loop over ids)."""
    out, b = [], 0
    while mask:
        if mask & 1:
            out.append(b)
        mask >>= 1
        b += 1
    return out


def mask_of(brokers) -> int:
    m = 0
    for b in brokers:
        m |= 1 << b
    return m


def with_status(s: State, status: int) -> int:
    """The brokers whose status is `status`, as a bitmask."""
    m = 0
    for b in range(len(s.status)):
        if s.status[b] == status:
            m |= 1 << b
    return m


def lost_unregistered(s: State) -> int:
    """Brokers that crashed dirty and have not re-registered (derived: they
    are exactly the OFFLINE_DIRTY ones)."""
    return with_status(s, OFFLINE_DIRTY)


def running_mask(s: State) -> int:
    """Brokers whose process runs."""
    return with_status(s, RUNNING)


def proposed(s: State) -> int:
    """Brokers of the in-flight AlterPartition proposal (0 if none)."""
    return 0 if s.pending_isr == NO_PROPOSAL else s.pending_isr


def shown_value(v: Var, x: int) -> Any:
    """One value of variable `v` as MODEL.md names it: sets as sorted
    lists, logs as lists of [epoch, record], named values by name."""
    if v.kind == FLAG:
        return bool(x)
    if v.kind == NAMED:
        return v.names[x]
    if v.kind in (BROKERS, RECORDS):
        return members(x)
    if v.kind == PROPOSAL:
        return None if x == NO_PROPOSAL else members(x)
    if v.kind == LOG:
        return [list(e) for e in logs.entries(x)]
    return x


def describe(
    s: State, shown: tuple[str, ...] = (ALWAYS, PROPAGATED, REASSIGNING, SWITCHING, STAGED, ORDERED, VERSIONED)
) -> dict:
    """MODEL.md's named variables, JSON-friendly (those whose `shown` is in `shown`)."""
    named = {}
    for v in VARIABLES:
        if v.shown in shown:
            x: Any = v.derived(s) if v.derived is not None else s[_FIELD[v.name]]
            named[v.name] = [shown_value(v, e) for e in x] if v.per_broker else shown_value(v, x)
    return named


def initial(c: Any) -> State:
    """The initial state of spec instance `c`, each variable at its `start`."""

    def start(v: Var, *b: int) -> int:
        return v.start(c, *b) if callable(v.start) else v.start

    return State._make(
        tuple(start(v, b) for b in range(c.n)) if v.per_broker else start(v) for v in VARIABLES if v.derived is None
    )


def layout(c: Any) -> list[Field]:
    """Each stored variable's range in spec instance `c`, for the kernel's packing."""
    return [Field(v.name, v.lo(c), v.hi(c), c.n if v.per_broker else None) for v in VARIABLES if v.derived is None]


ITF_KINDS: dict[str, Type] = {
    NUMBER: INT,
    BROKER_ID: INT,
    FLAG: BOOL,
    NAMED: STR,
    BROKERS: Set(INT),
    RECORDS: Set(INT),
    PROPOSAL: Option(Set(INT)),
    LOG: Seq(Tup(INT, INT)),
}
# the Apalache type of each described variable (a per-broker one is a function of the broker)
ITF_TYPES = {
    v.name: Fun(ITF_KINDS[v.kind]) if v.per_broker else ITF_KINDS[v.kind] for v in VARIABLES if v.shown != NEVER
}


# ---- symmetry over the brokers -------------------------------------------------------


def renamed_mask(m: int, to: tuple[int, ...]) -> int:
    out = 0
    for b in range(len(to)):
        if m >> b & 1:
            out |= 1 << to[b]
    return out


def renamed_id(b: int, to: tuple[int, ...]) -> int:
    return b if b < 0 else to[b]


def renamed_per_broker(t: tuple[int, ...], to: tuple[int, ...]) -> tuple[int, ...]:
    out = t
    for b in range(len(to)):
        out = replace_at(out, to[b], t[b])
    return out


def renamed_ids_per_broker(t: tuple[int, ...], to: tuple[int, ...]) -> tuple[int, ...]:
    """A per-broker tuple of broker ids: indices and values renamed."""
    out = t
    for b in range(len(to)):
        out = replace_at(out, to[b], renamed_id(t[b], to))
    return out


def renamed_masks_per_broker(t: tuple[int, ...], to: tuple[int, ...]) -> tuple[int, ...]:
    """A per-broker tuple of broker sets: indices and members renamed."""
    out = t
    for b in range(len(to)):
        out = replace_at(out, to[b], renamed_mask(t[b], to))
    return out


def _renaming(v: Var) -> str | None:
    """How renaming the brokers acts on `v` (an expression of `s` and
    `to`), None where it holds no broker (records and epochs stay)."""
    x = f"s.{v.name}"
    if v.per_broker:  # indices are brokers; so may the values be
        return {BROKER_ID: "renamed_ids_per_broker", BROKERS: "renamed_masks_per_broker"}.get(
            v.kind, "renamed_per_broker"
        ) + f"({x}, to)"
    if v.kind == BROKER_ID:
        return f"renamed_id({x}, to)"
    if v.kind == BROKERS:
        return f"renamed_mask({x}, to)"
    if v.kind == PROPOSAL:
        return f"{x} if {x} == NO_PROPOSAL else renamed_mask({x}, to)"
    return None


def _generated(name: str, source: str) -> Callable:
    """Define function `name` of this module from `source`, kept in
    linecache so that inspect.getsource (the kernel compiles from it)
    finds the text, as for a function written here."""
    filename = f"<{__name__}.{name}, generated from VARIABLES>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), globals())
    return globals()[name]


PERMUTE_SOURCE = (
    "def permute(s: State, to: tuple[int, ...]) -> State:\n"
    '    """`s` with broker b renamed to[b] everywhere a broker id appears."""\n'
    "    return s._replace(\n"
    + "".join(f"        {v.name}={_renaming(v)},\n" for v in VARIABLES if v.derived is None and _renaming(v))
    + "    )\n"
)
permute = _generated("permute", PERMUTE_SOURCE)


def _seen(v: Var) -> tuple[Seen, ...]:
    """What `v` tells of broker b in b's view: its declaration, else its
    kind's default (b's membership of a set, whether b is the broker named);
    a variable that holds brokers but shows nothing must say why."""
    if v.seen is not None or v.unseen:
        return v.seen or ()
    if v.derived is None and not v.per_broker and v.kind == BROKER_ID:
        return (Seen(f"int(s.{v.name} == b)", 1),)
    if v.derived is None and not v.per_broker and v.kind == BROKERS:
        return (Seen(f"s.{v.name} >> b & 1", 1),)
    if (v.per_broker or v.kind in (BROKER_ID, BROKERS, PROPOSAL)) and not v.unseen:
        raise TypeError(
            f"VARIABLES: {v.name} holds brokers; declare how it shows in a broker's view (seen=) or why not"
        )
    return ()


SEEN = tuple(sorted((t for v in VARIABLES for t in _seen(v)), key=lambda t: not t.first))
VIEW_SOURCE = (
    "def view(s: State, b: int) -> tuple[int, ...]:\n"
    '    """Everything the state says about broker b, without its id (each\n'
    "    variable's `seen`, VARIABLES' order, the replica set first, so the sorted\n"
    '    form keeps it in the lowest ids, where it is constant without reassignments)."""\n'
    "    return (\n" + "".join(f"        {t.expr},\n" for t in SEEN) + "    )\n"
)
view = _generated("view", VIEW_SOURCE)

# the bits each of view()'s values takes in view_key: epochs below 512
# (CleanShutdownFile and registration) or 1024 (the proposal's), min ISR below
# 64 (an HWM is at most max_records, 7) (far beyond what a check reaches; past
# them two views could share a key, which costs reduction, never soundness)
VIEW_BITS = tuple(t.bits for t in SEEN)
if sum(VIEW_BITS) > 63:
    raise TypeError(f"VARIABLES: the views take {sum(VIEW_BITS)} bits; a view_key is one int64 (63)")


def view_key(s: State, b: int) -> int:
    """Broker b's view packed into one int (its log is compared apart), so
    that the sort computes each view once and compares ints."""
    v = view(s, b)
    key = 0
    for i in range(len(VIEW_BITS)):
        key = key << VIEW_BITS[i] | v[i]
    return key


def sorted_renaming(s: State, identity: tuple[int, ...]) -> tuple[int, ...]:
    """The renaming of the brokers that orders their views ascending (by
    key, then log): `to[b]` is b's rank. Brokers with equal views are
    interchangeable, so ties may go either way."""
    keys = identity
    for b in range(len(identity)):
        keys = replace_at(keys, b, view_key(s, b))
    order = identity  # order[k]: the broker that becomes k
    for k in range(1, len(identity)):  # insertion sort of the brokers by view
        j = k
        while j > 0 and (
            keys[order[j]] < keys[order[j - 1]]
            or keys[order[j]] == keys[order[j - 1]]
            and s.log[order[j]] < s.log[order[j - 1]]
        ):
            moved = order[j - 1]
            order = replace_at(replace_at(order, j - 1, order[j]), j, moved)
            j -= 1
    to = identity
    for k in range(len(identity)):
        to = replace_at(to, order[k], k)
    return to


def class_size(s: State, identity: tuple[int, ...]) -> int:
    """How many states s's class holds: the N! renamings over those that
    leave s unchanged. Only brokers of equal views can be exchanged; where
    exchanging any two of them leaves s unchanged (always, unless a
    broker's own metadata view names a third broker) those are all the
    k1! k2! ... renamings within groups of equal views; else each renaming
    is tried."""
    renamings, fixing, swaps_fix = 1, 1, True
    for b in range(len(identity)):
        renamings *= b + 1
        same = 1  # b and the brokers before it with b's view
        for a in range(b):
            if view(s, a) == view(s, b) and s.log[a] == s.log[b]:
                same += 1
                if permute(s, replace_at(replace_at(identity, a, b), b, a)) != s:
                    swaps_fix = False
        fixing *= same
    if swaps_fix:
        return renamings // fixing
    fixing = 0
    for number in range(renamings):
        if permute(s, nth_renaming(number, identity)) == s:
            fixing += 1
    return renamings // fixing


def nth_renaming(number: int, identity: tuple[int, ...]) -> tuple[int, ...]:
    """Renaming `number` (0..N!-1) of the brokers, by its Lehmer code."""
    n = len(identity)
    to, used, rest, step = identity, 0, number, 1
    for k in range(1, n):
        step *= k  # (n-1)!
    for i in range(n):
        pick = rest // step
        rest -= pick * step
        if i < n - 1:
            step //= n - 1 - i
        seen = -1
        for b in range(n):
            if not used >> b & 1:
                seen += 1
                if seen == pick:
                    to = replace_at(to, i, b)
                    used |= 1 << b
                    seen = n  # taken: no other b matches
    return to


def symmetric_representative(s: State, identity: tuple[int, ...]) -> State:
    """The member of s's class (states equal up to renaming the brokers)
    whose brokers have ascending views: equal for two states iff one is
    the other renamed, with one sort instead of N! tries."""
    return permute(s, sorted_renaming(s, identity))
