"""The compiled engines' visited set (TLC's FPSet): a shard's keys, sorted,
in memory and in sorted runs on disk, with one test-and-set operation.

A key is one or two uint64 words (a packed state, mixed, or its
fingerprint). In memory a shard keeps its keys in 256 sorted arrays
bucketed by their top bits, grown by merging a sorted level into each
bucket it touches. `insert_new` is the test-and-set: given a level's
candidate keys in the reference engine's order, it adds the new ones and
says which occurrences were new, the first occurrence of a key winning,
exactly as the reference engine's `put` would have.

When memory is short the in-memory keys are written out whole as one
sorted *run* (the buckets one after the other are one sorted array) and
mapped back read-only: file pages the OS may drop and read again, not
anonymous memory. Candidates are then looked up in every run by a
galloping search within their bucket (so a few read few of a run's
pages), or settled a level at a time by `add_level`: delayed duplicate
detection as in Stern and Dill's disk-based Murphi and Korf's disk BFS,
the level's keys sorted once, a range of buckets at a time, merged
against the runs, and the new ones written as a run. Runs never change
once written; `merge_runs` keeps them few by merging the newest two while
they are of like size (an LSM tree's size tiers: a key is rewritten
O(log) times), and `compact` merges them all into one, a bucket at a
time. A run may be nameless (the fast engine's spill: nothing is left
behind however the process ends) or a named file (Spark executors keep a
shard's runs between jobs).
"""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import IO, Any

import numpy as np

from ...durable import replacing
from .sorted_keys import (
    BUCKET_BITS,
    BUCKETS,
    _bucket_bounds,
    _firsts,
    _member,
    _member_run,
    _merge_bucket,
    _merge_two,
    sort_keys,
)

RUN_MAGIC = 0x314E55524B43434D  # "MCCKRUN1", little-endian: the first word of a run file
RUN_HEADER = 4 + BUCKETS + 1  # words before the keys: magic, key words, rows, 0, then the bucket bounds


# ---- runs on disk ---------------------------------------------------------------------


class Run:
    """Sorted keys in a file (mapped read-only), with the bounds of each
    bucket: a header of RUN_HEADER words (magic, key words, rows, 0, the
    BUCKETS + 1 bucket offsets), then the keys. `path` is None for a
    nameless file."""

    def __init__(self, buf: mmap.mmap, path: str | None):
        header = np.frombuffer(buf, np.uint64, RUN_HEADER)
        if int(header[0]) != RUN_MAGIC:
            raise ValueError(f"{path or 'a run'} is not a run of keys")
        width, rows = int(header[1]), int(header[2])
        self.path = path
        self.bounds = header[4:].astype(np.int64)
        self.keys = np.frombuffer(buf, np.uint64, rows * width, RUN_HEADER * 8).reshape(rows, width)

    def __len__(self) -> int:
        return len(self.keys)

    def bucket(self, b: int) -> np.ndarray:
        return self.keys[self.bounds[b] : self.bounds[b + 1]]

    @staticmethod
    def open(path: str) -> Run:
        with open(path, "rb") as f:
            return Run(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), path)

    @staticmethod
    def write(
        buckets: Iterable[np.ndarray],
        key_words: int,
        rows: int | None,
        path: str | None = None,
        directory: str | None = None,
        durable: bool = True,
    ) -> Run:
        """A run of `rows` keys (None: as many as come) given bucket by
        bucket (each sorted, bucket b holding the keys whose top bits are
        b), written to `path` (whole, under a temporary name first; synced
        to disk if `durable`) or to a nameless file in `directory`."""
        header = np.zeros(RUN_HEADER, np.uint64)
        header[0], header[1], header[2] = RUN_MAGIC, key_words, rows or 0
        # two writers of one run (a task and its retry) write apart (durable.replacing)
        opened: AbstractContextManager[IO[Any]] = (
            replacing(path, sync=durable) if path else tempfile.TemporaryFile(dir=directory)
        )
        with opened as f:
            f.write(header.tobytes())
            offset, written = 0, 0
            for b, keys in enumerate(buckets):
                header[4 + b] = offset
                if len(keys):
                    f.write(np.ascontiguousarray(keys, np.uint64).tobytes())
                offset += len(keys)
                written = b + 1
            if written != BUCKETS or offset != (offset if rows is None else rows):
                raise ValueError(f"a run got {written} buckets of {offset} keys, expected {BUCKETS} of {rows}")
            header[2], header[4 + BUCKETS] = offset, offset
            f.seek(0)
            f.write(header.tobytes())
            f.flush()
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # the inode, whatever its name becomes
        return Run(view, path)


# ---- the visited set ------------------------------------------------------------------


class Visited:
    """One shard's visited keys: sorted buckets in memory, and sorted runs
    on disk (empty until `flush`)."""

    def __init__(self, key_words: int, runs: Iterable[Run] = ()):
        self.key_words = key_words
        self.buckets = [np.empty((0, key_words), np.uint64) for _ in range(BUCKETS)]
        self.runs: list[Run] = list(runs)
        self.count = sum(len(r) for r in self.runs)

    @staticmethod
    def from_runs(key_words: int, paths: Iterable[str]) -> Visited:
        """The visited set held by run files (mapped, nothing read yet)."""
        return Visited(key_words, [Run.open(p) for p in paths])

    def insert_new(self, keys: np.ndarray) -> np.ndarray:
        """Add `keys` (a level's candidates, in the reference engine's order)
        and return which rows were new: the first occurrence of a key not
        seen before."""
        winner = np.zeros(len(keys), dtype=np.bool_)
        if not len(keys):
            return winner
        order, ordered = sort_keys(keys)
        bounds = _bucket_bounds(ordered)
        found = self._in_runs(ordered, order, bounds)
        for b in np.flatnonzero(np.diff(bounds)).tolist():
            self.buckets[b] = _merge_bucket(self.buckets[b], ordered, order, bounds[b], bounds[b + 1], winner, found)
        self.count += int(winner.sum())
        return winner

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Which rows of `keys` are in the set (nothing is added)."""
        if not len(keys):
            return np.zeros(0, dtype=np.bool_)
        order, ordered = sort_keys(keys)
        bounds = _bucket_bounds(ordered)
        found = self._in_runs(ordered, order, bounds)
        for b in np.flatnonzero(np.diff(bounds)).tolist():
            _member(self.buckets[b], ordered, order, bounds[b], bounds[b + 1], found)
        return found

    def fresh(self, keys: np.ndarray) -> np.ndarray:
        """Positions (ascending) of the first occurrence of each key not in
        the set (nothing is added): `contains` and `first_occurrences` with
        one sort."""
        if not len(keys):
            return np.empty(0, np.int64)
        order, ordered = sort_keys(keys)
        bounds = _bucket_bounds(ordered)
        found = self._in_runs(ordered, order, bounds)
        for b in np.flatnonzero(np.diff(bounds)).tolist():
            _member(self.buckets[b], ordered, order, bounds[b], bounds[b + 1], found)
        firsts = _firsts(ordered, order)
        return np.sort(firsts[~found[firsts]])

    def in_runs(self, keys: np.ndarray) -> np.ndarray:
        """Which rows of `keys` are in a run (memory is not consulted)."""
        if not len(keys):
            return np.zeros(0, dtype=np.bool_)
        order, ordered = sort_keys(keys)
        return self._in_runs(ordered, order, _bucket_bounds(ordered))

    def add_level(
        self,
        parts: list[np.ndarray],
        keep: np.ndarray,
        shards: int = 1,
        shard: int = 0,
        budget: int | None = None,
        directory: str | None = None,
    ) -> None:
        """Delayed duplicate detection of a level, as one external sort
        (Stern and Dill; Korf): `parts` are a level's provisional keys one
        after the other, in the reference engine's order (every shard's: this
        one takes those `shard_of` gives it). Of each such key that no run
        holds, mark its first occurrence in `keep` (indexed over all parts)
        and add it to a new run. The keys are sorted a range of buckets at a
        time, each range looked up in the runs by one sequential pass, so
        that memory holds `budget` bytes of them (None: all at once), never
        the level; the new keys stream to the run as each range is done."""
        starts = np.cumsum([0] + [len(p) for p in parts])
        if not starts[-1]:
            return
        per_key = 4 * 8 * self.key_words + 32  # the keys, sorted, their order and places
        mine = starts[-1] // shards
        ranges = 1 if budget is None else min(BUCKETS, 1 + mine * per_key // max(1, budget))
        edges = np.linspace(0, BUCKETS, ranges + 1).astype(np.int64).tolist()
        top = np.uint64(64 - BUCKET_BITS)

        def new_keys() -> Iterator[np.ndarray]:
            for lo, hi in zip(edges, edges[1:]):
                places, keys = [], []
                for start, p in zip(starts.tolist(), parts):
                    bucket = p[:, 0] >> top
                    sel = (bucket >= lo) & (bucket < hi)
                    if shards > 1:
                        sel &= shard_of(p, shards) == shard
                    at = np.flatnonzero(sel)
                    places.append(at + start)
                    keys.append(p[at])
                where = np.concatenate(places)
                new = np.empty((0, self.key_words), np.uint64)
                if len(where):
                    level = np.concatenate(keys)
                    del keys
                    order, ordered = sort_keys(level)
                    firsts = _firsts(ordered, order)  # places in `level`, in key order
                    firsts = firsts[~self._in_runs(ordered, order, _bucket_bounds(ordered))[firsts]]
                    keep[where[firsts]] = True
                    new = level[firsts]
                bounds = _bucket_bounds(new)
                for b in range(lo, hi):
                    yield new[bounds[b] : bounds[b + 1]]

        run = Run.write(new_keys(), self.key_words, None, directory=directory)
        if len(run):
            self.runs.append(run)
            self.count += len(run)
            self.merge_runs(directory)

    def _in_runs(self, ordered: np.ndarray, order: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        found = np.zeros(len(ordered), dtype=np.bool_)
        for run in self.runs:
            _member_run(run.keys, run.bounds, ordered, order, bounds, found)
        return found

    def flush(self, path: str | None = None, directory: str | None = None) -> None:
        """Move the keys in memory to a new run: the file `path`, or a
        nameless file in `directory` (default: the temp dir)."""
        rows = self.memory_keys
        if rows:
            self.runs.append(Run.write(self.buckets, self.key_words, rows, path, directory))
            self.buckets = [np.empty((0, self.key_words), np.uint64) for _ in range(BUCKETS)]

    def merge_runs(self, directory: str | None = None) -> None:
        """Merge neighbouring runs, newest pair first, while a run is at
        least half the one before it (into a nameless run in `directory`),
        so that there are O(log) runs of sizes that halve from the oldest,
        whatever flushes without a merge (a checkpoint's) left before."""
        while True:
            at = next(
                (i for i in range(len(self.runs) - 2, -1, -1) if 2 * len(self.runs[i + 1]) >= len(self.runs[i])), None
            )
            if at is None:
                return
            older, newer = self.runs[at], self.runs[at + 1]
            merged = Run.write(
                (_merge_two(older.bucket(b), newer.bucket(b)) for b in range(BUCKETS)),
                self.key_words,
                len(older) + len(newer),
                directory=directory,
            )
            self.runs[at : at + 2] = [merged]

    def compact(self, path: str | None = None, directory: str | None = None) -> None:
        """Merge every run and the keys in memory into one run (a bucket at
        a time: memory holds one bucket of them, not the set)."""
        if len(self.runs) <= 1 and not self.memory_keys:
            return
        merged = Run.write(self.bucket_keys(), self.key_words, self.count, path, directory)
        self.runs = [merged]
        self.buckets = [np.empty((0, self.key_words), np.uint64) for _ in range(BUCKETS)]

    def bucket_parts(self, b: int) -> list[np.ndarray]:
        """Bucket b's keys: in each run, then in memory (each part sorted)."""
        return [r.bucket(b) for r in self.runs if r.bounds[b] < r.bounds[b + 1]] + (
            [self.buckets[b]] if len(self.buckets[b]) else []
        )

    def bucket_keys(self) -> Iterator[np.ndarray]:
        """Each bucket's keys, sorted, bucket by bucket."""
        for b in range(BUCKETS):
            parts = self.bucket_parts(b)
            yield (
                parts[0]
                if len(parts) == 1
                else sort_keys(np.concatenate(parts))[1]
                if parts
                else np.empty((0, self.key_words), np.uint64)
            )

    def __len__(self) -> int:
        return self.count

    @property
    def memory_keys(self) -> int:
        return sum(len(b) for b in self.buckets)

    @property
    def memory_bytes(self) -> int:
        return sum(b.nbytes for b in self.buckets)

    @property
    def disk_bytes(self) -> int:
        return sum(r.keys.nbytes for r in self.runs)

    @property
    def nbytes(self) -> int:
        """The keys' bytes, in memory and on disk."""
        return self.memory_bytes + self.disk_bytes


def reshard(
    buckets: list[np.ndarray], shards: int, directory: str | None = None, on_disk: bool = False
) -> list[Visited]:
    """Visited sets for `shards` shards holding the keys of `buckets`
    (bucket b: the keys whose top bits are b, from any number of shards of
    any count, in any order): a checkpoint resumed on another number of
    workers. With `on_disk`, each shard's keys go to a nameless run in
    `directory`, a bucket at a time, instead of memory."""
    width = buckets[0].shape[1]

    def mine(s: int) -> Iterator[np.ndarray]:
        for keys in buckets:
            keys = keys[shard_of(keys, shards) == s] if shards > 1 else keys
            yield sort_keys(np.ascontiguousarray(keys))[1] if len(keys) else np.empty((0, width), np.uint64)

    out = []
    for s in range(shards):
        if on_disk:
            rows = sum(int((shard_of(k, shards) == s).sum()) if shards > 1 else len(k) for k in buckets)
            out.append(Visited(width, [Run.write(mine(s), width, rows, directory=directory)] if rows else []))
        else:
            visited = Visited(width)
            visited.buckets = list(mine(s))
            visited.count = sum(len(b) for b in visited.buckets)
            out.append(visited)
    return out


def shard_of(keys: np.ndarray, shards: int) -> np.ndarray:
    """Owner shard of each key: its top bits (TLC's MultiFPSet), taken below
    the visited set's own bucket bits so that a shard's buckets stay even."""
    return ((keys[:, 0] << np.uint64(BUCKET_BITS)) >> np.uint64(32)) * np.uint64(shards) >> np.uint64(32)


def saved_shards(shards: list[Visited]) -> tuple[list[np.ndarray], list[int]]:
    """What a checkpoint holds of a visited set: its keys bucket by bucket
    (each bucket shard by shard) and the size of each (bucket, shard)."""
    buckets, sizes = [], []
    for b in range(1 << BUCKET_BITS):
        for s in shards:
            parts = s.bucket_parts(b)
            buckets += parts
            sizes.append(sum(len(p) for p in parts))
    return buckets, sizes


def restored_shards(
    keys: np.ndarray, sizes: list[int], saved_by: int, workers: int, directory: str | None, on_disk: bool
) -> list[Visited]:
    """What saved_shards gave (`saved_by` shards, as one array), back in `workers` shards."""
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return reshard(
        [keys[starts[b * saved_by] : starts[(b + 1) * saved_by]] for b in range(1 << BUCKET_BITS)],
        workers,
        directory,
        on_disk=on_disk,
    )
