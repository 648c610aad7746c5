"""A replica's log: a sequence of entries (leader_epoch, record_id), held
as one int so that a state stays a tuple of ints (which the kernel packs
into machine words) and a log compares, truncates and appends in a few
integer operations.

Entry i occupies bits 8i..8i+7: the leader epoch in the top 5 bits, the
record id (1..7, never 0) in the low 3. An entry is never 0, so a log's
length is the number of its non-zero bytes and a prefix is a mask. A log
holds each record id at most once (a record lives at the offset where its
leader appended it), so it has at most MAX_RECORDS entries: 56 bits.
"""

from __future__ import annotations

EMPTY = 0
ENTRY_BITS = 8
RECORD_BITS = 3
MAX_RECORDS = (1 << RECORD_BITS) - 1  # 7
MAX_EPOCH = (1 << ENTRY_BITS - RECORD_BITS) - 1  # 31


def entry(epoch: int, record: int) -> int:
    """The entry of record `record` appended in leader epoch `epoch`."""
    if epoch > MAX_EPOCH:
        raise OverflowError("a log entry's leader epoch exceeds 31, the most a packed log entry holds")
    return epoch << RECORD_BITS | record


def epoch_of(e: int) -> int:
    return e >> RECORD_BITS


def record_of(e: int) -> int:
    return e & MAX_RECORDS


def length(log: int) -> int:
    n = 0
    while log >> ENTRY_BITS * n:
        n += 1
    return n


def at(log: int, i: int) -> int:
    """The entry at offset i (0 past the end)."""
    return log >> ENTRY_BITS * i & 0xFF


def prefix(log: int, k: int) -> int:
    """The first k entries (Python's log[:k])."""
    return log & (1 << ENTRY_BITS * k) - 1


def append(log: int, e: int) -> int:
    return log | e << ENTRY_BITS * length(log)


def is_prefix(a: int, b: int) -> bool:
    """Whether log `a` is a prefix of log `b` (b[:len(a)] == a)."""
    return prefix(b, length(a)) == a


def common_prefix_len(a: int, b: int) -> int:
    """Length of the longest common prefix: where Kafka's leader-epoch based
    truncation leaves a follower whose log diverged from its leader's (the
    first offset at which they differ, one of them possibly ended)."""
    differ = a ^ b
    if not differ:
        return length(a)
    i = 0
    while not differ >> ENTRY_BITS * i & 0xFF:
        i += 1
    return i


def last_epoch(log: int, none: int) -> int:
    """The leader epoch of the last entry, `none` for an empty log."""
    n = length(log)
    return epoch_of(at(log, n - 1)) if n else none


def records(log: int) -> int:
    """The record ids the log holds, as a bitmask (bit r: record r)."""
    held = 0
    for i in range(length(log)):
        held |= 1 << record_of(at(log, i))
    return held


def entries(log: int) -> list[tuple[int, int]]:
    """The log as a list of (leader_epoch, record_id), for traces."""
    return [(epoch_of(at(log, i)), record_of(at(log, i))) for i in range(length(log))]


def from_entries(items) -> int:
    """The packed log of a sequence of (leader_epoch, record_id)."""
    log = EMPTY
    for epoch, record in items:
        log = append(log, entry(epoch, record))
    return log
