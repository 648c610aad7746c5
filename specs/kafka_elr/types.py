"""State of one Kafka partition, its controller and its brokers.

Every field is an int or a tuple of ints (one a broker), so the same state
runs in the interpreted spec and in the compiled kernel: sets of brokers
are bitmasks (bit b is broker b), logs are packed ints (logs.py), "none" is
a sentinel value. `describe` turns a state into MODEL.md's named variables
(sets as sorted lists, logs as lists of [epoch, record]) for traces.
"""

from __future__ import annotations

from typing import NamedTuple

from modelcheck.ops import popcount, replace_at

from . import logs

NO_LEADER = -1
NO_EPOCH = -1            # an empty CleanShutdownFile / no last-written epoch
NO_PROPOSAL = -1         # pending_isr when no AlterPartition is in flight
RECOVERED, RECOVERING = 0, 1
RUNNING, OFFLINE_CLEAN, OFFLINE_DIRTY = 0, 1, 2
STATUS_NAMES = ("RUNNING", "OFFLINE_CLEAN", "OFFLINE_DIRTY")
RECOVERY_NAMES = ("RECOVERED", "RECOVERING")


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
    # the assignment (max_reassignments > 0; else constant): the replica set
    # (during a reassignment the original and the target replicas together)
    # and, while one is in progress, its adding and removing replicas
    replicas: int
    adding: int
    removing: int
    # brokers
    status: tuple[int, ...]
    clean_shutdown_epoch: tuple[int, ...]
    log: tuple[int, ...]                # packed (logs.py)
    hwm: tuple[int, ...]
    pending_isr: int                    # the proposed ISR, or NO_PROPOSAL
    pending_epochs: tuple[int, ...]     # each proposed member's broker epoch then (0: not proposed)
    pending_stale: int                  # 1: the partition changed since the proposal (its partition epoch is behind)
    pending_from: int                   # the broker that proposed it (metadata = "propagated"; else NO_LEADER)
    # each broker's view: the metadata last delivered to it (metadata =
    # "propagated"; constant under "atomic", where every broker sees the
    # controller's state). ISR and min ISR only matter to a broker that sees
    # itself as leader, so they are 0 for the others (one state, not many).
    seen_leader: tuple[int, ...]
    seen_epoch: tuple[int, ...]
    seen_isr: tuple[int, ...]
    seen_min_isr: tuple[int, ...]
    # ghosts (for invariants) and bound counters; all part of the identity,
    # since each can change a later verdict (see docs/model.md)
    acked: int
    acks_all: int
    exposed: int                        # packed (logs.py)
    produced: int
    unclean_shutdowns: int
    clean_shutdowns: int
    fences: int
    isr_shrinks: int
    min_isr_changes: int
    admin_elections: int
    reassignments: int
    below_min_isr_reassigned: int       # 1: a completion or cancellation left the ISR under min ISR


_FIELD = {name: i for i, name in enumerate(State._fields)}


def _replace(self: State, **changes) -> State:
    """NamedTuple._replace without its loop over all the fields in Python: a
    step changes one to four of them, and this is the commonest operation
    of the interpreted hot path (typing.NamedTuple forbids defining it in
    the class). The kernel compiles `_replace` into a constructor call."""
    values = list(self)
    for name, value in changes.items():
        values[_FIELD[name]] = value
    return tuple.__new__(State, values)


State._replace = _replace


def bit(b: int) -> int:
    return 1 << b


def size(mask: int) -> int:
    return popcount(mask)


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


def describe(s: State) -> dict:
    """MODEL.md's named variables, JSON-friendly."""
    def entries(log: int) -> list[list[int]]:
        return [list(e) for e in logs.entries(log)]

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
        "replicas": members(s.replicas),
        "adding": members(s.adding),
        "removing": members(s.removing),
        "status": [STATUS_NAMES[x] for x in s.status],
        "clean_shutdown_epoch": list(s.clean_shutdown_epoch),
        "log": [entries(lg) for lg in s.log],
        "hwm": list(s.hwm),
        "pending_isr": None if s.pending_isr == NO_PROPOSAL else members(s.pending_isr),
        "pending_stale": bool(s.pending_stale),
        "pending_from": s.pending_from,
        "seen_leader": list(s.seen_leader),
        "seen_epoch": list(s.seen_epoch),
        "seen_isr": [members(m) for m in s.seen_isr],
        "seen_min_isr": list(s.seen_min_isr),
        "acked": members(s.acked),
        "acks_all": members(s.acks_all),
        "exposed": entries(s.exposed),
        "produced": s.produced,
        "unclean_shutdowns": s.unclean_shutdowns,
        "lost_unregistered": members(lost_unregistered(s)),
        "clean_shutdowns": s.clean_shutdowns,
        "fences": s.fences,
        "isr_shrinks": s.isr_shrinks,
        "min_isr_changes": s.min_isr_changes,
        "admin_elections": s.admin_elections,
        "reassignments": s.reassignments,
        "below_min_isr_reassigned": bool(s.below_min_isr_reassigned),
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


def permute(s: State, to: tuple[int, ...]) -> State:
    """`s` with broker b renamed to[b] everywhere a broker id appears (records
    and epochs are not broker ids and stay)."""
    return s._replace(
        leader=renamed_id(s.leader, to), isr=renamed_mask(s.isr, to), elr=renamed_mask(s.elr, to),
        last_known_elr=renamed_mask(s.last_known_elr, to), last_known_leader=renamed_id(s.last_known_leader, to),
        fenced=renamed_mask(s.fenced, to), replicas=renamed_mask(s.replicas, to),
        adding=renamed_mask(s.adding, to), removing=renamed_mask(s.removing, to), broker_epoch=renamed_per_broker(s.broker_epoch, to),
        status=renamed_per_broker(s.status, to),
        clean_shutdown_epoch=renamed_per_broker(s.clean_shutdown_epoch, to),
        log=renamed_per_broker(s.log, to), hwm=renamed_per_broker(s.hwm, to),
        pending_isr=s.pending_isr if s.pending_isr == NO_PROPOSAL else renamed_mask(s.pending_isr, to),
        pending_epochs=renamed_per_broker(s.pending_epochs, to), pending_from=renamed_id(s.pending_from, to),
        seen_leader=renamed_ids_per_broker(s.seen_leader, to), seen_epoch=renamed_per_broker(s.seen_epoch, to),
        seen_isr=renamed_masks_per_broker(s.seen_isr, to), seen_min_isr=renamed_per_broker(s.seen_min_isr, to))


def view(s: State, b: int) -> tuple[int, ...]:
    """Everything the state says about broker b, without its id (its
    membership of the proposal is its epoch there, 0 if none; its own view
    by how its leader relates to it and to the controller's). Replicas
    come first, so the sorted form keeps the replica set in the lowest ids
    (where it is constant, without reassignments, it stays so). The log
    is left out: `view_key` compares it apart."""
    return (1 - (s.replicas >> b & 1), s.status[b], s.clean_shutdown_epoch[b] + 1, s.broker_epoch[b], s.hwm[b],
            s.isr >> b & 1, s.elr >> b & 1, s.last_known_elr >> b & 1, s.fenced >> b & 1, int(s.leader == b),
            int(s.last_known_leader == b), s.pending_epochs[b], int(s.pending_from == b),
            int(s.seen_leader[b] == b), int(s.seen_leader[b] == s.leader), s.seen_epoch[b],
            popcount(s.seen_isr[b]), s.seen_min_isr[b], s.adding >> b & 1, s.removing >> b & 1)


# the bits each of view()'s values takes in view_key (63 in all): epochs below
# 1024, min ISR below 64 (an HWM is at most max_records, 7) (far beyond what a check reaches; past
# them two views could share a key, which costs reduction, never soundness)
VIEW_BITS = (1, 2, 10, 10, 3, 1, 1, 1, 1, 1, 1, 10, 1, 1, 1, 6, 4, 6, 1, 1)


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
    order = identity                   # order[k]: the broker that becomes k
    for k in range(1, len(identity)):  # insertion sort of the brokers by view
        j = k
        while j > 0 and (keys[order[j]] < keys[order[j - 1]]
                         or keys[order[j]] == keys[order[j - 1]] and s.log[order[j]] < s.log[order[j - 1]]):
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
        same = 1                        # b and the brokers before it with b's view
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
        step *= k                       # (n-1)!
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
                    seen = n            # taken: no other b matches
    return to


def symmetric_representative(s: State, identity: tuple[int, ...]) -> State:
    """The member of s's class (states equal up to renaming the brokers)
    whose brokers have ascending views: equal for two states iff one is
    the other renamed, with one sort instead of N! tries."""
    return permute(s, sorted_renaming(s, identity))
