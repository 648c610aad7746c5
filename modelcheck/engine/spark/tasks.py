"""What the Spark engine's executors run: a level's task for a shard
(settle its candidates, expand its new states) and the lookups of a
counterexample's last step, on files under the run directory (the
package docstring gives their layout)."""

from __future__ import annotations

import os
import time
from typing import Any, cast

import numpy as np

from ...durable import replacing
from ..storage.batch import expand as expand_rows
from ..storage.sorted_keys import _merge_two, first_occurrences
from ..storage.visited import BUCKETS, Run, Visited, shard_of

KEY_BYTES = 2  # a successor index (or an initial state's position) in a path
PHASES = ("settle", "expand", "write")  # a task's seconds, summed over a level's tasks


def _child_paths(paths: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Paths of successors: the parent's path, then the successor's index."""
    width = paths.dtype.itemsize
    out = np.empty((len(rows), width + KEY_BYTES), dtype=np.uint8)
    out[:, :width] = paths.view(np.uint8).reshape(-1, width)[rows]
    out[:, width] = index >> 8
    out[:, width + 1] = index & 0xFF
    return out.view(f"S{width + KEY_BYTES}").ravel()


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


# ---- what the executors run --------------------------------------------------------


class Shard:
    """Shard `index`'s files under the run directory `root`."""

    def __init__(self, root: str, index: int):
        self.root, self.index = root, index

    def candidates(self, depth: int) -> list[str]:
        where = f"{self.root}/c/{depth}"
        return sorted(f"{where}/{name}" for name in os.listdir(where) if name.endswith(f".{self.index}"))

    def frontier(self, depth: int) -> str:
        return f"{self.root}/f/{depth}.{self.index}"

    def out(self, depth: int, home: int) -> str:
        return f"{self.root}/c/{depth}/{self.index}.{home}"

    def run(self, depth: int, merged: int = 0) -> str:
        return f"{self.root}/v/{self.index}.{depth}" + (f".m{merged}" if merged else "")


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


def _step(kernel_bc: Any, root: str, shards: int, depth: int, symmetric: bool, item: tuple) -> tuple:
    """Level `depth` of shard `index`: settle its candidates, then expand
    its new states into the next level's candidates. Returns (index, its
    run files, new states, the states their classes hold (symmetry), the
    first violation (path, invariant, row) or None, the expansion's
    per-action transitions and goals reached, bytes written, seconds by
    phase)."""
    index, runs = item
    kernel = kernel_bc.value
    shard = Shard(root, index)
    t0 = time.perf_counter()
    batches = [_load(f, 3) for f in shard.candidates(depth)]
    rows = np.concatenate([b[0] for b in batches]) if batches else np.empty((0, kernel.words), np.uint64)
    keys = np.concatenate([b[1] for b in batches]) if batches else np.empty((0, kernel.key_words), np.uint64)
    paths = np.concatenate([b[2] for b in batches]) if batches else np.empty(0, f"S{KEY_BYTES}")
    del batches
    visited = Visited.from_runs(kernel.key_words, runs)
    order = np.argsort(paths, kind="stable")
    new = order[visited.insert_new(keys[order])]
    rows, paths = rows[new], paths[new]
    del keys, order, new
    violation = None
    row, which = kernel.check(rows, 0, len(rows))
    if row >= 0:
        violation = (paths[row : row + 1].view(np.uint8).tobytes(), which, rows[row])
    represented = kernel.class_sizes(rows, 0, len(rows)) if symmetric else 0
    t1 = time.perf_counter()
    written = _save(shard.frontier(depth), rows, paths)
    runs = _keep(visited, shard, depth)
    t2 = time.perf_counter()
    reached = np.zeros(kernel.goal_count, np.uint8)
    counts = np.zeros(kernel.action_count, np.int64)
    writing = 0.0
    if violation is None and len(rows):
        cand = expand_rows(kernel, rows, 0, len(rows), reached=reached)
        counts = np.bincount(cand.action, minlength=kernel.action_count).astype(np.int64)
        homes = shard_of(cand.keys, shards)
        _mkdir(f"{root}/c/{depth + 1}")
        for home in range(shards):
            sel = np.flatnonzero(homes == home)
            # candidates stay in path order; those of this shard already visited are dropped here
            sel = sel[visited.fresh(cand.keys[sel]) if home == index else first_occurrences(cand.keys[sel])]
            if len(sel):
                child = _child_paths(paths, cand.parents[sel], cand.index[sel])
                w0 = time.perf_counter()
                written += _save(shard.out(depth + 1, home), cand.words[sel], cand.keys[sel], child)
                writing += time.perf_counter() - w0
    t3 = time.perf_counter()
    seconds = np.array([t1 - t0, t3 - t2 - writing, t2 - t1 + writing])
    return index, runs, len(rows), represented, violation, counts, reached, written, seconds


def _before(kernel_bc: Any, root: str, depth: int, path: bytes, symmetric: bool, index: int) -> tuple[int, int]:
    """How many of shard `index`'s new states at `depth` come before `path`
    in the reference engine's order, and the states their classes hold."""
    kernel = kernel_bc.value
    rows, paths = _load(Shard(root, index).frontier(depth), 2)
    before = rows[paths < np.array(path, dtype=paths.dtype)]
    return len(before), kernel.class_sizes(before, 0, len(before)) if symmetric else 0


def _transitions_before(kernel_bc: Any, root: str, depth: int, parent_path: bytes, k: int, index: int) -> np.ndarray:
    """Per-action transitions the reference engine had generated when it
    reached successor k of the state at `parent_path` (of level `depth`):
    those of every parent before it, and that parent's first k+1 (if it is
    in this shard)."""
    kernel = kernel_bc.value
    rows, paths = _load(Shard(root, index).frontier(depth), 2)
    before = paths <= np.array(parent_path, dtype=paths.dtype)
    cand = expand_rows(kernel, rows[before], 0, int(before.sum()))
    parent = np.flatnonzero(paths[before] == np.array(parent_path, dtype=paths.dtype))
    keep = np.ones(len(cand), dtype=bool)
    if len(parent):
        keep &= (cand.parents != parent[0]) | (cand.index <= k)
    return np.bincount(cand.action[keep], minlength=kernel.action_count).astype(np.int64)
