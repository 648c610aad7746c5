"""State of one Kafka partition, its controller and its brokers.

Sets of brokers are bitmasks (bit b is broker b): immutable, cheap to
compare, and with a canonical encoding for free. `describe` turns a state into
the named variables of MODEL.md (sets as sorted lists) for traces.
"""

from __future__ import annotations

from typing import NamedTuple

NO_LEADER = -1
NO_EPOCH = -1            # an empty CleanShutdownFile / no last-written epoch
RECOVERED, RECOVERING = 0, 1
RUNNING, OFFLINE_CLEAN, OFFLINE_DIRTY = 0, 1, 2
STATUS_NAMES = ("RUNNING", "OFFLINE_CLEAN", "OFFLINE_DIRTY")
RECOVERY_NAMES = ("RECOVERED", "RECOVERING")

Entry = tuple[int, int]          # (leader_epoch, record_id)
Log = tuple[Entry, ...]


class State(NamedTuple):
    # controller: the metadata log's view of the partition
    leader: int
    leader_epoch: int
    isr: int
    elr: int
    last_known_elr: int
    last_known_leader: int
    leader_recovery: int
    fenced: int
    broker_epoch: tuple[int, ...]
    min_isr: int
    # brokers
    status: tuple[int, ...]
    clean_shutdown_epoch: tuple[int, ...]
    log: tuple[Log, ...]
    hwm: tuple[int, ...]
    pending_isr: tuple[tuple[int, int], ...] | None   # (broker, broker epoch) pairs
    # ghosts (for invariants) and bound counters; all part of the identity,
    # since each can change a later verdict (see docs/model.md)
    acked: int
    acks_all: int
    exposed: Log
    produced: int
    unclean_shutdowns: int
    clean_shutdowns: int
    fences: int
    isr_shrinks: int
    min_isr_changes: int
    admin_elections: int


def bit(b: int) -> int:
    return 1 << b


def members(mask: int) -> list[int]:
    """Broker ids in a bitmask, ascending."""
    out, b = [], 0
    while mask:
        if mask & 1:
            out.append(b)
        mask >>= 1
        b += 1
    return out


def size(mask: int) -> int:
    return mask.bit_count()


def mask_of(brokers) -> int:
    m = 0
    for b in brokers:
        m |= 1 << b
    return m


def replace_at(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def lost_unregistered(s: State) -> int:
    """Brokers that crashed dirty and have not re-registered (derived: they
    are exactly the OFFLINE_DIRTY ones)."""
    return mask_of(b for b, st in enumerate(s.status) if st == OFFLINE_DIRTY)


def pending_mask(s: State) -> int:
    """Brokers of the in-flight AlterPartition proposal (0 if none)."""
    return mask_of(b for b, _epoch in s.pending_isr) if s.pending_isr is not None else 0


def describe(s: State) -> dict:
    """MODEL.md's named variables, JSON-friendly."""
    return {
        "leader": s.leader,
        "leader_epoch": s.leader_epoch,
        "isr": members(s.isr),
        "elr": members(s.elr),
        "last_known_elr": members(s.last_known_elr),
        "last_known_leader": s.last_known_leader,
        "leader_recovery": RECOVERY_NAMES[s.leader_recovery],
        "fenced": members(s.fenced),
        "broker_epoch": list(s.broker_epoch),
        "min_isr": s.min_isr,
        "status": [STATUS_NAMES[x] for x in s.status],
        "clean_shutdown_epoch": list(s.clean_shutdown_epoch),
        "log": [[list(e) for e in lg] for lg in s.log],
        "hwm": list(s.hwm),
        "pending_isr": None if s.pending_isr is None else members(pending_mask(s)),
        "acked": members(s.acked),
        "acks_all": members(s.acks_all),
        "exposed": [list(e) for e in s.exposed],
        "produced": s.produced,
        "unclean_shutdowns": s.unclean_shutdowns,
        "lost_unregistered": members(lost_unregistered(s)),
        "clean_shutdowns": s.clean_shutdowns,
        "fences": s.fences,
        "isr_shrinks": s.isr_shrinks,
        "min_isr_changes": s.min_isr_changes,
        "admin_elections": s.admin_elections,
    }


def permute(s: State, p: tuple[int, ...]) -> State:
    """`s` with broker b renamed p[b] everywhere a broker id appears (records
    and epochs are not broker ids and stay)."""
    def mask(m: int) -> int:
        return mask_of(p[b] for b in members(m))

    def per_broker(t: tuple) -> tuple:
        out = [None] * len(t)
        for b, v in enumerate(t):
            out[p[b]] = v
        return tuple(out)

    def one(b: int) -> int:
        return b if b < 0 else p[b]

    return s._replace(
        leader=one(s.leader), isr=mask(s.isr), elr=mask(s.elr), last_known_elr=mask(s.last_known_elr),
        last_known_leader=one(s.last_known_leader), fenced=mask(s.fenced),
        broker_epoch=per_broker(s.broker_epoch), status=per_broker(s.status),
        clean_shutdown_epoch=per_broker(s.clean_shutdown_epoch), log=per_broker(s.log), hwm=per_broker(s.hwm),
        pending_isr=None if s.pending_isr is None else tuple(sorted((p[b], e) for b, e in s.pending_isr)))
