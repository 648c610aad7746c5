"""The batch layer every compiled engine shares (TLC's FPSet and its
queues, a level at a time): candidate batches of packed states, the
visited set with one test-and-set operation, and the accounting that makes
an engine report what the reference engine reports.

A state is a row of uint64 words (the kernel's packing) and a key: the
packed representative itself (one or two words, mixed by a bijection:
exact) or its 64- or 128-bit fingerprint. The visited set keeps a shard's
keys in sorted arrays, bucketed by their top bits: 8 or 16 bytes a state,
grown by merging a sorted level into each bucket (never more than one
bucket is held twice). `insert_new` is its test-and-set (`contains` only
tests): given a level's candidate keys in the reference engine's order, it
adds the new ones and says which occurrences were new, the first
occurrence of a key winning, exactly as the reference engine's `put` would
have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numba import njit, uint64

from ..result import collision_probability


jit = njit(cache=True, nogil=True)

BUCKET_BITS = 8                 # a shard's visited set is 256 sorted arrays
LINK_DTYPE = np.dtype([("parent", np.uint32), ("index", np.uint16)])    # 6 bytes a state


@dataclass
class Candidates:
    """Successors in the order the reference engine generates them: packed
    rows, keys, the frontier row of each one's parent, its index among the
    parent's successors, the action that made it (its coverage label) and
    the action instance (Spec.instance numbers them)."""
    words: np.ndarray       # uint64 [m, W]
    keys: np.ndarray        # uint64 [m, K]
    parents: np.ndarray     # int64 [m]
    index: np.ndarray       # uint16 [m]
    action: np.ndarray      # uint8 [m]
    instance: np.ndarray    # uint16 [m]

    FIELDS = ("words", "keys", "parents", "index", "action", "instance")

    @staticmethod
    def empty(words: int, key_words: int, m: int = 0) -> "Candidates":
        return Candidates(np.empty((m, words), np.uint64), np.empty((m, key_words), np.uint64),
                          np.empty(m, np.int64), np.empty(m, np.uint16), np.empty(m, np.uint8), np.empty(m, np.uint16))

    def __len__(self) -> int:
        return len(self.parents)

    def take(self, sel: np.ndarray | slice) -> "Candidates":
        return Candidates(*(getattr(self, f)[sel] for f in self.FIELDS))

    def grown(self, size: int, used: int) -> "Candidates":
        """A larger buffer holding the first `used` rows of this one."""
        bigger = Candidates.empty(self.words.shape[1], self.keys.shape[1], size)
        for f in self.FIELDS:
            getattr(bigger, f)[:used] = getattr(self, f)[:used]
        return bigger

    @staticmethod
    def concat(parts: list["Candidates"], words: int, key_words: int) -> "Candidates":
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Candidates.empty(words, key_words)
        return Candidates(*(np.concatenate([getattr(p, f) for p in parts]) for f in Candidates.FIELDS))


class Abandoned(Exception):
    """An expansion stopped before its end (`stop()` became true): nothing
    it made is kept, and nothing outside it has changed."""


def expand(kernel, frontier: np.ndarray, lo: int, hi: int, stop: Callable[[], bool] = lambda: False,
           done: Callable[[int], None] = lambda n: None, chunk: int = 1 << 14,
           reached: np.ndarray | None = None, per_row: float = 4.0) -> Candidates:
    """The successors of frontier rows lo..hi-1, in order, in one buffer
    the kernel fills a chunk of rows at a time (sized for `per_row`
    successors a row, doubled when full: the rows not yet expanded are
    resumed); the goals their steps reach are marked in `reached` (uint8,
    one a goal of the spec). Raises Abandoned once `stop()` is true."""
    if reached is None:
        reached = np.zeros(kernel.goal_count, np.uint8)
    out = Candidates.empty(kernel.words, kernel.key_words, max(1024, int(per_row * (hi - lo))))
    k = 0
    row = lo
    while row < hi:
        if stop():
            raise Abandoned
        rows, k, status = kernel.module.expand(kernel.params, kernel.tables, frontier, row, min(hi, row + chunk),
                                               out.words, out.keys, out.parents, out.index, out.action,
                                               out.instance, k, reached)
        if status < -1:
            raise kernel.field_error(-2 - status)
        if status == -1:
            out = out.grown(2 * len(out), k)
        row += rows
        done(rows)
    return out.take(slice(0, k))


# ---- sorting and the visited set -----------------------------------------------------

inlined = njit(cache=True, nogil=True, inline="always")


@inlined
def _less(a, i, b, j):
    """a[i] < b[j], lexicographically over the words."""
    for w in range(a.shape[1]):
        if a[i, w] != b[j, w]:
            return a[i, w] < b[j, w]
    return False


@inlined
def _equal(a, i, b, j):
    for w in range(a.shape[1]):
        if a[i, w] != b[j, w]:
            return False
    return True


@jit
def sort_keys(keys):
    """The rows of `keys` sorted (lexicographically over the words) with
    their original positions, stably: a counting pass on the top bits of
    the first word, whose keys are well mixed, moves keys and positions
    together, then an insertion sort orders each small bucket in place."""
    m, width = keys.shape
    bits = 0
    while bits < 24 and (m >> bits) > 8:
        bits += 1
    shift = uint64(64 - bits)
    count = np.zeros((1 << bits) + 1, np.int64)
    for i in range(m):
        count[(keys[i, 0] >> shift if bits else uint64(0)) + uint64(1)] += 1
    for b in range(1 << bits):
        count[b + 1] += count[b]
    order = np.empty(m, np.int64)
    ordered = np.empty((m, width), np.uint64)
    fill = count[:-1].copy()
    for i in range(m):
        b = keys[i, 0] >> shift if bits else uint64(0)
        order[fill[b]] = i
        ordered[fill[b]] = keys[i]
        fill[b] += 1
    moving = np.empty(width, np.uint64)
    for b in range(1 << bits):
        for i in range(count[b] + 1, count[b + 1]):
            j = i - 1
            if not _less(ordered, i, ordered, j):
                continue
            x = order[i]
            moving[:] = ordered[i]
            while True:
                order[j + 1] = order[j]
                ordered[j + 1] = ordered[j]
                j -= 1
                if j < count[b] or not _less_row(moving, ordered, j):
                    break
            order[j + 1] = x
            ordered[j + 1] = moving
    return order, ordered


@inlined
def _less_row(row, a, j):
    for w in range(a.shape[1]):
        if row[w] != a[j, w]:
            return row[w] < a[j, w]
    return False


@jit
def _merge_bucket(visited, ordered, order, lo, hi, winner):
    """Sorted candidates ordered[lo:hi] (equal keys in candidate order;
    order[i] is each one's position) against one sorted bucket: mark the
    first occurrence of each key not visited in `winner`, and return the
    bucket with the new keys merged in."""
    new = 0
    j = 0
    i = lo
    while i < hi:
        while j < len(visited) and _less(visited, j, ordered, i):
            j += 1
        if not (j < len(visited) and _equal(visited, j, ordered, i)):
            winner[order[i]] = True
            new += 1
        first = i
        i += 1
        while i < hi and _equal(ordered, i, ordered, first):
            i += 1
    if new == 0:
        return visited
    out = np.empty((len(visited) + new, ordered.shape[1]), np.uint64)
    j = 0
    k = 0
    for i in range(lo, hi):
        if not winner[order[i]]:
            continue
        while j < len(visited) and _less(visited, j, ordered, i):
            out[k] = visited[j]
            k += 1
            j += 1
        out[k] = ordered[i]
        k += 1
    while j < len(visited):
        out[k] = visited[j]
        k += 1
        j += 1
    return out


@jit
def _firsts(ordered, order):
    """Positions of the first occurrence of each key, in sorted-key order."""
    out = np.empty(len(order), np.int64)
    n = 0
    for i in range(len(order)):
        if i == 0 or not _equal(ordered, i, ordered, i - 1):
            out[n] = order[i]
            n += 1
    return out[:n]


@jit
def _member(visited, ordered, order, lo, hi, found):
    """Mark in `found` the candidates of ordered[lo:hi] already in a bucket."""
    j = 0
    for i in range(lo, hi):
        while j < len(visited) and _less(visited, j, ordered, i):
            j += 1
        if j < len(visited) and _equal(visited, j, ordered, i):
            found[order[i]] = True


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Positions (ascending) of the first occurrence of each distinct key."""
    if not len(keys):
        return np.empty(0, np.int64)
    order, ordered = sort_keys(keys)
    return np.sort(_firsts(ordered, order))


@jit
def _bucket_bounds(ordered):
    """Where each visited bucket's candidates start among the sorted keys."""
    bounds = np.zeros((1 << BUCKET_BITS) + 1, np.int64)
    for i in range(len(ordered)):
        bounds[(ordered[i, 0] >> uint64(64 - BUCKET_BITS)) + uint64(1)] += 1
    for b in range(1 << BUCKET_BITS):
        bounds[b + 1] += bounds[b]
    return bounds


class Visited:
    """One shard's visited keys: sorted arrays by the top bits of the key."""

    def __init__(self, key_words: int):
        self.buckets = [np.empty((0, key_words), np.uint64) for _ in range(1 << BUCKET_BITS)]
        self.count = 0

    def insert_new(self, keys: np.ndarray) -> np.ndarray:
        """Add `keys` (a level's candidates, in the reference engine's order)
        and return which rows were new: the first occurrence of a key not
        seen before."""
        winner = np.zeros(len(keys), dtype=np.bool_)
        if not len(keys):
            return winner
        order, ordered = sort_keys(keys)
        bounds = _bucket_bounds(ordered)
        for b in np.flatnonzero(np.diff(bounds)).tolist():
            self.buckets[b] = _merge_bucket(self.buckets[b], ordered, order, bounds[b], bounds[b + 1], winner)
        self.count += int(winner.sum())
        return winner

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Which rows of `keys` are in the set (nothing is added)."""
        found = np.zeros(len(keys), dtype=np.bool_)
        if len(keys):
            order, ordered = sort_keys(keys)
            bounds = _bucket_bounds(ordered)
            for b in np.flatnonzero(np.diff(bounds)).tolist():
                _member(self.buckets[b], ordered, order, bounds[b], bounds[b + 1], found)
        return found

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buckets)


def reshard(buckets: list[np.ndarray], shards: int) -> list[Visited]:
    """Visited sets for `shards` shards holding the keys of `buckets`
    (bucket b: the keys whose top bits are b, from any number of shards of
    any count, in any order): a checkpoint resumed on another number of
    workers."""
    out = [Visited(buckets[0].shape[1]) for _ in range(shards)]
    for b, keys in enumerate(buckets):
        owner = shard_of(keys, shards)
        for s, visited in enumerate(out):
            mine = keys[owner == s] if shards > 1 else keys
            visited.buckets[b] = sort_keys(np.ascontiguousarray(mine))[1] if len(mine) else visited.buckets[b]
            visited.count += len(mine)
    return out


def shard_of(keys: np.ndarray, shards: int) -> np.ndarray:
    """Owner shard of each key: its top bits (TLC's MultiFPSet), taken below
    the visited set's own bucket bits so that a shard's buckets stay even."""
    return ((keys[:, 0] << np.uint64(BUCKET_BITS)) >> np.uint64(32)) * np.uint64(shards) >> np.uint64(32)


def run_info(kernel, distinct: int, generated: int) -> dict[str, Any]:
    """What a compiled check says about how it identified states."""
    info: dict[str, Any] = {"kernel": "compiled", "state_bits": kernel.bits,
                            "state_keys": "exact" if kernel.exact else "fingerprint"}
    if not kernel.exact:
        info["fingerprint_bits"] = kernel.fingerprint_bits
        info["collision_probability"] = collision_probability(distinct, generated, kernel.fingerprint_bits)
    return info
