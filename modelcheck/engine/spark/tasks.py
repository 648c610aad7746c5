"""What the Spark engine's executors run, on files under the run
directory (the package docstring gives their layout): a level's three
tasks for a shard (settle its candidates; rank an interval of the level's
links; expand its new states) and the lookups of a counterexample's last
step."""

from __future__ import annotations

import os
import time
from typing import Any, cast

import numpy as np

from ...durable import replacing
from ..kernel.compiled import MAX_SUCCESSORS
from ..storage.batch import expand as expand_rows
from ..storage.sorted_keys import _merge_two, first_occurrences
from ..storage.visited import BUCKETS, Run, Visited, shard_of

INDEX_BITS = MAX_SUCCESSORS.bit_length() - 1  # a link: the parent's rank in its level, then this
SAMPLE = 64  # links a shard sends the driver a level, for the intervals the ranks are counted in
PHASES = ("settle", "rank", "expand", "write")  # a task's seconds, summed over a level's tasks


def child_links(ranks: np.ndarray, parents: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Links of successors: the parent's rank in its level, then the
    successor's index under it (so links order a level as the reference
    engine discovers it)."""
    return (ranks[parents] << np.uint64(INDEX_BITS)) | index.astype(np.uint64)


def carried(rows: np.ndarray, links: np.ndarray, keys: np.ndarray, symmetric: bool) -> tuple[np.ndarray, ...]:
    """What a candidate file holds: rows, links and, under symmetry, keys
    (a canonical form costs more to compute again than to carry; a plain
    key is computed again from the row, `_settle`)."""
    return (rows, links, keys) if symmetric else (rows, links)


def _save(path: str, *arrays: np.ndarray) -> int:
    """Arrays into one file, whole under `path` or not at all; its bytes."""
    with replacing(path, sync=False) as f:  # scratch: a task and its retry (or speculative copy) write apart
        for a in arrays:
            np.save(f, a, allow_pickle=False)
        return f.tell()


def _mkdir(path: str) -> None:
    """A directory in the run's (not makedirs: a run directory removed
    because the check ended must not be made again by a late task)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass


def _load(path: str, n: int) -> list[np.ndarray]:
    with open(path, "rb") as f:
        return [np.load(f, allow_pickle=False) for _ in range(n)]


class Shard:
    """Shard `index`'s files under the run directory `root`."""

    def __init__(self, root: str, index: int):
        self.root, self.index = root, index

    def candidates(self, depth: int) -> list[str]:
        where = f"{self.root}/c/{depth}"
        return sorted(f"{where}/{name}" for name in os.listdir(where) if name.endswith(f".{self.index}"))

    def frontier(self, depth: int) -> str:
        return f"{self.root}/f/{depth}.{self.index}"

    def links(self, depth: int) -> str:
        return f"{self.root}/l/{depth}.{self.index}"

    def out(self, depth: int, home: int) -> str:
        return f"{self.root}/c/{depth}/{self.index}.{home}"

    def run(self, depth: int, merged: int = 0) -> str:
        return f"{self.root}/v/{self.index}.{depth}" + (f".m{merged}" if merged else "")

    def level(self, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """This shard's new states of level `depth` and their links, in link order."""
        (rows,) = _load(self.frontier(depth), 1)
        return rows, np.load(self.links(depth), mmap_mode="r")


def ranks_file(root: str, depth: int, interval: int) -> str:
    return f"{root}/r/{depth}/{interval}"


def _keep(visited: Visited, shard: Shard, depth: int) -> list[str]:
    """Write the keys `visited` holds in memory (the level's new ones) as
    a run, merge the newest runs while they are of like size, and return
    the run files that now hold the shard's visited set."""
    held = visited.runs
    if visited.memory_keys:
        held.append(Run.write(visited.buckets, visited.key_words, visited.memory_keys, shard.run(depth), durable=False))
        visited.buckets = [np.empty((0, visited.key_words), np.uint64) for _ in range(BUCKETS)]
    merged = 0
    while len(held) > 1 and 2 * len(held[-1]) >= len(held[-2]):
        older, newer = held[-2], held[-1]
        merged += 1
        held[-2:] = [
            Run.write(
                (_merge_two(older.bucket(b), newer.bucket(b)) for b in range(BUCKETS)),
                older.keys.shape[1],
                len(older) + len(newer),
                shard.run(depth, merged),
                durable=False,
            )
        ]
    return [cast(str, r.path) for r in held]  # every run here was written to a file


# ---- a level's three tasks ---------------------------------------------------------


def _settle(kernel_bc: Any, root: str, depth: int, symmetric: bool, item: tuple) -> tuple:
    """Settle shard `index`'s candidates of level `depth` in link order
    into its visited set (the first occurrence of a key wins), check the
    new states' invariants and write them and their links. Returns (index,
    its run files, new states, the states their classes hold (symmetry),
    the first violation (link, invariant, row) or None, a sample of the
    links, bytes written, seconds by phase)."""
    index, runs = item
    kernel = kernel_bc.value
    shard = Shard(root, index)
    t0 = time.perf_counter()
    batches = [_load(f, 3 if symmetric else 2) for f in shard.candidates(depth)]
    rows = np.concatenate([b[0] for b in batches]) if batches else np.empty((0, kernel.words), np.uint64)
    links = np.concatenate([b[1] for b in batches]) if batches else np.empty(0, np.uint64)
    keys = np.concatenate([b[2] for b in batches]) if symmetric and batches else kernel.keys(rows)
    del batches
    visited = Visited.from_runs(kernel.key_words, runs)
    order = np.argsort(links, kind="stable")
    new = order[visited.insert_new(keys[order])]
    rows, links = rows[new], links[new]
    del keys, order, new
    violation = None
    row, which = kernel.check(rows, 0, len(rows))
    if row >= 0:
        violation = (int(links[row]), which, rows[row])
    represented = kernel.class_sizes(rows, 0, len(rows)) if symmetric else 0
    t1 = time.perf_counter()
    written = _save(shard.frontier(depth), rows) + _save(shard.links(depth), links)
    runs = _keep(visited, shard, depth)
    sample = sample_of(links)
    seconds = np.array([t1 - t0, 0.0, 0.0, time.perf_counter() - t1])
    return index, runs, len(rows), represented, violation, sample, written, seconds


def _interval(root: str, shards: int, depth: int, splitters: np.ndarray, interval: int) -> list[np.ndarray]:
    """Each shard's slice of level `depth`'s links in one interval
    (splitters[interval-1] <= link < splitters[interval])."""
    lo = splitters[interval - 1] if interval else None
    hi = splitters[interval] if interval < len(splitters) else None
    slices = []
    for s in range(shards):
        links = np.load(Shard(root, s).links(depth), mmap_mode="r")
        a = int(np.searchsorted(links, lo)) if lo is not None else 0
        b = int(np.searchsorted(links, hi)) if hi is not None else len(links)
        slices.append(np.asarray(links[a:b]))
    return slices


def _rank(_kernel_bc: Any, root: str, shards: int, depth: int, splitters: np.ndarray, interval: int) -> tuple:
    """Count the ranks of level `depth` in one interval of its links:
    merge every shard's slice and write each state's place in the
    interval, shard by shard. Returns (interval, the slice's length in
    each shard, bytes written, seconds by phase)."""
    t0 = time.perf_counter()
    slices = _interval(root, shards, depth, splitters, interval)
    merged = np.concatenate(slices)
    places = np.empty(len(merged), np.uint64)
    places[np.argsort(merged, kind="stable")] = np.arange(len(merged), dtype=np.uint64)
    t1 = time.perf_counter()
    written = _save(ranks_file(root, depth, interval), places)
    seconds = np.array([0.0, t1 - t0, 0.0, time.perf_counter() - t1])
    return interval, [len(s) for s in slices], written, seconds


def read_ranks(root: str, depth: int, plan: list[tuple], n: int) -> np.ndarray:
    """A shard's `n` states' ranks in level `depth`, by its `plan`:
    (interval, the interval's first rank, offset in its file, count) in
    link order."""
    ranks = np.empty(n, np.uint64)
    at = 0
    for interval, base, offset, count in plan:
        places = np.load(ranks_file(root, depth, interval), mmap_mode="r")
        ranks[at : at + count] = places[offset : offset + count] + np.uint64(base)
        at += count
    if at != n:
        raise RuntimeError(f"level {depth}'s ranks cover {at} of a shard's {n} states")
    return ranks


def plans(sizes: np.ndarray) -> tuple[np.ndarray, list[list[tuple]]]:
    """From each interval's slice sizes by shard ([interval, shard], what
    the rank tasks return): each interval's first rank, and each shard's
    plan for `read_ranks`."""
    bases = np.concatenate([[0], np.cumsum(sizes.sum(axis=1))[:-1]]).astype(np.int64)
    offsets = np.cumsum(sizes, axis=1) - sizes  # a shard's place in an interval's file
    shards = sizes.shape[1]
    return bases, [
        [(j, int(bases[j]), int(offsets[j, i]), int(sizes[j, i])) for j in range(len(sizes)) if sizes[j, i]]
        for i in range(shards)
    ]


def sample_of(links: np.ndarray) -> np.ndarray:
    """SAMPLE of a shard's sorted links, evenly spaced, for the driver's splitters."""
    return links[(np.arange(SAMPLE) * len(links)) // SAMPLE] if len(links) else links


def splitters_of(sample: np.ndarray, intervals: int) -> np.ndarray:
    """Bounds of `intervals` intervals of about as many links each, from
    the shards' samples (sorted)."""
    return sample[(np.arange(1, intervals) * len(sample)) // intervals]


def _expand(kernel_bc: Any, root: str, shards: int, depth: int, symmetric: bool, item: tuple) -> tuple:
    """Expand shard `index`'s new states of level `depth` into the next
    level's candidates, pruned of its visited set where they stay in it,
    first occurrences only, one file a destination shard (`carried`).
    `plan` says where its states' ranks are (`read_ranks`). Returns (index, per-action
    transitions, goals reached, bytes written, seconds by phase)."""
    index, runs, plan = item
    kernel = kernel_bc.value
    shard = Shard(root, index)
    t0 = time.perf_counter()
    (rows,) = _load(shard.frontier(depth), 1)
    ranks = read_ranks(root, depth, plan, len(rows))
    visited = Visited.from_runs(kernel.key_words, runs)
    reached = np.zeros(kernel.goal_count, np.uint8)
    cand = expand_rows(kernel, rows, 0, len(rows), reached=reached)
    counts = np.bincount(cand.action, minlength=kernel.action_count).astype(np.int64)
    homes = shard_of(cand.keys, shards)
    _mkdir(f"{root}/c/{depth + 1}")
    written, writing = 0, 0.0
    for home in range(shards):
        sel = np.flatnonzero(homes == home)
        # candidates stay in link order; those of this shard already visited are dropped here
        sel = sel[visited.fresh(cand.keys[sel]) if home == index else first_occurrences(cand.keys[sel])]
        if len(sel):
            links = child_links(ranks, cand.parents[sel], cand.index[sel])
            w0 = time.perf_counter()
            written += _save(shard.out(depth + 1, home), *carried(cand.words[sel], links, cand.keys[sel], symmetric))
            writing += time.perf_counter() - w0
    seconds = np.array([0.0, 0.0, time.perf_counter() - t0 - writing, writing])
    return index, counts, reached, written, seconds


# ---- a counterexample's last step ----------------------------------------------------


def _before(kernel_bc: Any, root: str, depth: int, link: int, symmetric: bool, index: int) -> tuple[int, int]:
    """How many of shard `index`'s new states at `depth` come before the
    one with `link` in the reference engine's order, and the states their
    classes hold."""
    kernel = kernel_bc.value
    rows, links = Shard(root, index).level(depth)
    before = rows[: int(np.searchsorted(links, np.uint64(link)))]
    return len(before), kernel.class_sizes(before, 0, len(before)) if symmetric else 0


def _transitions_before(kernel_bc: Any, root: str, depth: int, parent_link: int, k: int, index: int) -> np.ndarray:
    """Per-action transitions the reference engine had generated when it
    reached successor k of the state with `parent_link` (of level `depth`):
    those of every parent before it, and that parent's first k+1 (if it is
    in this shard)."""
    kernel = kernel_bc.value
    rows, links = Shard(root, index).level(depth)
    upto = int(np.searchsorted(links, np.uint64(parent_link), side="right"))
    cand = expand_rows(kernel, rows, 0, upto)
    keep = np.ones(len(cand), dtype=bool)
    if upto and links[upto - 1] == parent_link:
        keep &= (cand.parents != upto - 1) | (cand.index <= k)
    return np.bincount(cand.action[keep], minlength=kernel.action_count).astype(np.int64)


def link_at(root: str, shards: int, depth: int, splitters: np.ndarray, bases: np.ndarray, rank: int) -> int:
    """The link of the state of rank `rank` in level `depth`, whose ranks
    were counted in the intervals `splitters` bound and `bases` start
    (the walk back of a counterexample: this rank's link holds its
    parent's rank)."""
    interval = int(np.searchsorted(bases, rank, side="right")) - 1
    slices = _interval(root, shards, depth, splitters, interval)
    return int(np.sort(np.concatenate(slices))[rank - int(bases[interval])])
