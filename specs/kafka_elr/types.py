"""State of one Kafka partition, its controller and its brokers.

Sets of brokers are bitmasks (bit b is broker b): immutable, cheap to
compare, and with a canonical encoding for free. `describe` turns a state into
the named variables of MODEL.md (sets as sorted lists) for traces.
"""

from __future__ import annotations

from functools import lru_cache
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


_FIELD = {name: i for i, name in enumerate(State._fields)}


def _replace(self: State, **changes) -> State:
    """NamedTuple._replace without its loop over all 25 fields in Python: a
    step changes one to four of them, and this is the commonest operation
    of the hot path (typing.NamedTuple forbids defining it in the class)."""
    values = list(self)
    for name, value in changes.items():
        values[_FIELD[name]] = value
    return tuple.__new__(State, values)


State._replace = _replace

# members() of every set of brokers (at most 8), for the hot path
MEMBERS: tuple[tuple[int, ...], ...] = tuple(tuple(b for b in range(8) if m >> b & 1) for m in range(256))
_dirty: dict[tuple[int, ...], int] = {}
_running: dict[tuple[int, ...], int] = {}
_pending: dict[tuple[tuple[int, int], ...], int] = {}


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
    are exactly the OFFLINE_DIRTY ones). Memoised: there are 3^N statuses."""
    m = _dirty.get(s.status)
    if m is None:
        m = _dirty[s.status] = mask_of(b for b, st in enumerate(s.status) if st == OFFLINE_DIRTY)
    return m


def running_mask(s: State) -> int:
    """Brokers whose process runs. Memoised: there are 3^N statuses."""
    m = _running.get(s.status)
    if m is None:
        m = _running[s.status] = mask_of(b for b, st in enumerate(s.status) if st == RUNNING)
    return m


def pending_mask(s: State) -> int:
    """Brokers of the in-flight AlterPartition proposal (0 if none).
    Memoised: proposals are few."""
    p = s.pending_isr
    if p is None:
        return 0
    m = _pending.get(p)
    if m is None:
        m = _pending[p] = mask_of(b for b, _epoch in p)
    return m


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


def permute(s: State, to: list[int] | tuple[int, ...]) -> State:
    """`s` with broker b renamed to[b] everywhere a broker id appears (records
    and epochs are not broker ids and stay): the renamings --symmetry
    identifies states under (tests check symmetric_form against it)."""
    old = [0] * len(to)             # old[new id] = old id
    for b, q in enumerate(to):
        old[q] = b

    def mask(m: int) -> int:
        return sum(1 << to[b] for b in MEMBERS[m])

    def per_broker(t: tuple) -> tuple:
        return tuple(t[b] for b in old)

    def one(b: int) -> int:
        return b if b < 0 else to[b]

    return s._replace(
        leader=one(s.leader), isr=mask(s.isr), elr=mask(s.elr), last_known_elr=mask(s.last_known_elr),
        last_known_leader=one(s.last_known_leader), fenced=mask(s.fenced),
        broker_epoch=per_broker(s.broker_epoch), status=per_broker(s.status),
        clean_shutdown_epoch=per_broker(s.clean_shutdown_epoch), log=per_broker(s.log), hwm=per_broker(s.hwm),
        pending_isr=None if s.pending_isr is None else tuple(sorted((to[b], e) for b, e in s.pending_isr)))


# BITS[n][m][b]: whether broker b (of n) is in the set m
BITS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple(m >> b & 1 for b in range(n)) for m in range(1 << n)) for n in range(9))


@lru_cache(maxsize=None)
def _proposed(pending: tuple[tuple[int, int], ...] | None, n: int) -> tuple[int, ...]:
    """Each broker's epoch in the proposal, 0 if absent (epochs start at 1)."""
    epochs = dict(pending or ())
    return tuple(epochs.get(b, 0) for b in range(n))


def symmetric_form(s: State) -> tuple:
    """A value equal for two states iff one is the other with brokers
    1..N-1 renamed: the broker-independent variables, broker 0's view, and
    the sorted views of brokers 1..N-1, a view being everything the state
    says about one broker without its id. Renaming permutes the views, and
    the state can be rebuilt from the form up to renaming, so no (N-1)!
    permutations are tried."""
    n = len(s.status)
    bits = BITS[n]
    views = list(zip(s.status, s.clean_shutdown_epoch, s.broker_epoch, s.hwm, s.log, bits[s.isr], bits[s.elr],
                     bits[s.last_known_elr], bits[s.fenced], bits[1 << s.leader if s.leader >= 0 else 0],
                     bits[1 << s.last_known_leader if s.last_known_leader >= 0 else 0],
                     _proposed(s.pending_isr, n)))
    rest = views[1:]
    rest.sort()
    return (s.leader_epoch, s.leader_recovery, s.min_isr, s.pending_isr is None, s.acked, s.acks_all,
            s.exposed, s.produced, s.unclean_shutdowns, s.clean_shutdowns, s.fences, s.isr_shrinks,
            s.min_isr_changes, s.admin_elections, views[0], *rest)
