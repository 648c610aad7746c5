"""Sorted keys, compiled: sorting rows of uint64 words, the first
occurrence of each key, bucket bounds, and the merges and membership
tests of sorted candidates against sorted buckets and runs (galloping
where a run's bucket is sparse). The loops of visited.py's visited set."""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

jit = njit(cache=True, nogil=True)
inlined = njit(cache=True, nogil=True, inline="always")

BUCKET_BITS = 8  # a shard's keys are 256 sorted arrays in memory, and 256 slices of each run
BUCKETS = 1 << BUCKET_BITS


# ---- sorting ------------------------------------------------------------------------


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


@inlined
def _less_row(row, a, j):
    for w in range(a.shape[1]):
        if row[w] != a[j, w]:
            return row[w] < a[j, w]
    return False


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


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Positions (ascending) of the first occurrence of each distinct key."""
    if not len(keys):
        return np.empty(0, np.int64)
    order, ordered = sort_keys(keys)
    return np.sort(_firsts(ordered, order))


@jit
def _bucket_bounds(ordered):
    """Where each bucket's keys start among sorted keys (BUCKETS + 1 offsets)."""
    bounds = np.zeros((1 << BUCKET_BITS) + 1, np.int64)
    for i in range(len(ordered)):
        bounds[(ordered[i, 0] >> uint64(64 - BUCKET_BITS)) + uint64(1)] += 1
    for b in range(1 << BUCKET_BITS):
        bounds[b + 1] += bounds[b]
    return bounds


# ---- membership and merging ---------------------------------------------------------


@jit
def _merge_bucket(visited, ordered, order, lo, hi, winner, found):
    """Sorted candidates ordered[lo:hi] (equal keys in candidate order;
    order[i] is each one's position) against one sorted bucket: mark the
    first occurrence of each key neither visited nor `found` (in a run) in
    `winner`, and return the bucket with the new keys merged in."""
    new = 0
    j = 0
    i = lo
    while i < hi:
        while j < len(visited) and _less(visited, j, ordered, i):
            j += 1
        if not found[order[i]] and not (j < len(visited) and _equal(visited, j, ordered, i)):
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
def _merge_two(a, b):
    """Two sorted arrays of distinct keys (no key in both) as one."""
    out = np.empty((len(a) + len(b), a.shape[1]), np.uint64)
    i = j = 0
    for k in range(len(out)):
        if j == len(b) or i < len(a) and _less(a, i, b, j):
            out[k] = a[i]
            i += 1
        else:
            out[k] = b[j]
            j += 1
    return out


@jit
def _member(visited, ordered, order, lo, hi, found):
    """Mark in `found` the candidates of ordered[lo:hi] already in a bucket."""
    j = 0
    for i in range(lo, hi):
        while j < len(visited) and _less(visited, j, ordered, i):
            j += 1
        if j < len(visited) and _equal(visited, j, ordered, i):
            found[order[i]] = True


SPARSE = 32  # a run's bucket this many times its candidates: look each up where its value says


@jit
def _member_run(run, run_bounds, ordered, order, bounds, found):
    """Mark in `found` the candidates (sorted, with their positions and
    bucket bounds) that are in a run (sorted, with its bucket bounds), so
    that a level costs O(c log(r/c)), not O(r): in a bucket with few
    candidates, each is looked for where its value puts it (keys are mixed
    or hashed, so uniform within a bucket), then by galloping from there;
    in a dense one, by galloping from the last candidate's place."""
    span = float(uint64(1) << uint64(64 - BUCKET_BITS))
    for b in range(len(bounds) - 1):
        start, end = run_bounds[b], run_bounds[b + 1]
        sparse = end - start > SPARSE * (bounds[b + 1] - bounds[b])
        base = uint64(b) << uint64(64 - BUCKET_BITS)
        j = start
        for i in range(bounds[b], bounds[b + 1]):
            if sparse:
                j = min(end - 1, start + int(float(ordered[i, 0] - base) / span * (end - start)))
                if not _less(run, j, ordered, i):  # run[j] >= key: gallop back past it
                    step = 1
                    while j - step >= start and not _less(run, j - step, ordered, i):
                        j -= step
                        step *= 2
                    j = max(start, j - step + 1)  # run[j - 1] < key (or j is the start)
            j = _first_not_less(run, j, end, ordered, i)
            if j < end and _equal(run, j, ordered, i):
                found[order[i]] = True


@jit
def _first_not_less(run, j, end, ordered, i):
    """The first place p >= j with run[p] >= ordered[i] (end if none),
    galloping from j (run[j - 1] < ordered[i], or j is a bucket's start)."""
    if j >= end or not _less(run, j, ordered, i):
        return j
    step = 1
    while j + step < end and _less(run, j + step, ordered, i):
        j += step
        step *= 2
    a, z = j + 1, min(j + step, end)  # run[j] < key <= run[z] (or z == end)
    while a < z:
        mid = (a + z) >> 1
        if _less(run, mid, ordered, i):
            a = mid + 1
        else:
            z = mid
    return a
