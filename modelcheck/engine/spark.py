"""The Spark engine: the fast engine's level-synchronous search, with the
frontier and the visited set partitioned over Spark executors, for state
spaces one machine cannot hold. Executors expand with the compiled kernel
(broadcast as its source and tables, loaded from each machine's cache) and
use the shared batch layer; the driver keeps per-level counts and one RDD
handle a level, never a state or a key set.

Every record is `(shard, (tag, payload))`, shard = `visited.shard_of(key,
P)` (TLC's MultiFPSet split), and every RDD that holds shards is
partitioned by the same function object (`_owner`), so Spark knows they are
co-partitioned: the union of the visited set and a level's candidates puts
partition i of each side in one task without a shuffle of the visited set.
A level is one job:

    merged[d]  = partition i holds  V: shard i's visited set (visited.Visited)
                                    F: its states new at level d (rows, paths)
                                    S: the level's counts and first violation
    expand     = merged[d].mapPartitions: the kernel's successors of F,
                 pruned of V where they stay in shard i, first occurrences
                 only, one batch a destination shard
    merged[d+1] = (V of merged[d]) ∪ expand.partitionBy(P, _owner)
                  .mapPartitions(settle, preservesPartitioning=True)

merged[d+1] is local-checkpointed (kept on the executors, its lineage cut),
so level 40 plans as fast as level 2; with spark.checkpoint.dir set, every
4th level is written there instead and the others keep their lineage, so
a lost executor's blocks can be recomputed. merged[d] is dropped once
merged[d+1] is computed.

The reference engine's order is reproduced without ranking states on the
driver: each state carries its path, the successor indices along its path
from an initial state (big-endian uint16s, so byte order is the reference
engine's order of discovery), and a shard keeps the occurrence with the
smallest path. The first violation is then the one with the smallest path
over all shards, as in the reference engine, and counts and coverage equal
its own. The path is also the counterexample: replayed through the
interpreted spec index by index, it needs no parent links.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Iterator

import numpy as np

from ..result import CheckResult
from ..spec import Spec
from .batch import Candidates, run_info
from .visited import Visited, first_occurrences, shard_of
from .batch import expand as expand_rows
from .kernel import Kernel
from .progress import Progress, progress_counts
from .spark_session import spark_context

KEY_BYTES = 2           # a successor index (or an initial state's position) in a path
RELIABLE_EVERY = 4      # levels between writes to spark.checkpoint.dir, when one is set


def _owner(shard: int) -> int:
    """The partition function of every shard-keyed RDD: a record's key is
    already its shard. One function object, so Spark sees co-partitioning."""
    return shard


def _child_paths(paths: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Paths of successors: the parent's path, then the successor's index."""
    width = paths.dtype.itemsize
    out = np.empty((len(rows), width + KEY_BYTES), dtype=np.uint8)
    out[:, :width] = paths.view(np.uint8).reshape(-1, width)[rows]
    out[:, width] = index >> 8
    out[:, width + 1] = index & 0xFF
    return out.view(f"S{width + KEY_BYTES}").ravel()


def _parts(index: int, items: Iterator) -> dict[str, list]:
    """Partition `index`'s payloads by tag; every record must be of shard `index`."""
    found: dict[str, list] = {}
    for shard, (tag, payload) in items:
        if shard != index:
            raise RuntimeError(f"shard {shard}'s record reached partition {index}: the RDDs are not co-partitioned")
        found.setdefault(tag, []).append(payload)
    return found


# ---- what the executors run --------------------------------------------------------

def _expand(kernel_bc: Any, shards: int, index: int, items: Iterator) -> Iterator:
    """Successors of shard `index`'s frontier, one batch (rows, keys,
    paths) a destination shard, and the per-action transition counts (to
    this shard's settle)."""
    kernel = kernel_bc.value
    parts = _parts(index, items)
    visited: Visited = parts["V"][0]
    rows, paths = parts["F"][0]
    reached = np.zeros(kernel.goal_count, np.uint8)
    cand = expand_rows(kernel, rows, 0, len(rows), reached=reached)
    child = _child_paths(paths, cand.parents, cand.index)
    homes = shard_of(cand.keys, shards)
    for home in range(shards):
        sel = np.flatnonzero(homes == home)
        if home == index:
            sel = sel[~visited.contains(cand.keys[sel])]
        sel = sel[first_occurrences(cand.keys[sel])]        # candidates stay in path order
        if len(sel):
            yield home, ("C", (cand.words[sel], cand.keys[sel], child[sel]))
    yield index, ("N", (np.bincount(cand.action, minlength=kernel.action_count).astype(np.int64), reached))


def _settle(kernel_bc: Any, index: int, items: Iterator) -> Iterator:
    """Shard `index` at the end of a level: its candidates in path order
    inserted into its visited set (the first occurrence of a key wins), the
    new states' invariants checked in that order (up to the first
    violation)."""
    kernel = kernel_bc.value
    found = _parts(index, items)
    visited: Visited = found["V"][0]
    batches = found.get("C", [])
    rows = np.concatenate([b[0] for b in batches]) if batches else np.empty((0, kernel.words), np.uint64)
    keys = np.concatenate([b[1] for b in batches]) if batches else np.empty((0, kernel.key_words), np.uint64)
    paths = np.concatenate([b[2] for b in batches]) if batches else np.empty(0, f"S{KEY_BYTES}")
    order = np.argsort(paths, kind="stable")
    new = order[visited.insert_new(keys[order])]
    rows, paths = rows[new], paths[new]
    violation = None
    row, which = kernel.check(rows, 0, len(rows))
    if row >= 0:
        violation = (paths[row:row + 1].view(np.uint8).tobytes(), which, rows[row])
    coverage = sum((n[0] for n in found.get("N", [])), np.zeros(kernel.action_count, dtype=np.int64))
    reached = np.zeros(kernel.goal_count, np.uint8)
    for _counts, r in found.get("N", []):
        reached |= r
    yield index, ("V", visited)
    yield index, ("F", (rows, paths))
    yield index, ("S", (len(rows), coverage, violation, reached))


def _only(tag: str, items: Iterator) -> Iterator:
    return (item for item in items if item[1][0] == tag)


def _payloads(tag: str, items: Iterator) -> Iterator:
    return (item[1][1] for item in items if item[1][0] == tag)


def _count_before(path: bytes, items: Iterator) -> Iterator[int]:
    """How many of a shard's new states come before `path` in the reference engine's order."""
    for _rows, paths in _payloads("F", items):
        yield int((paths < np.array(path, dtype=paths.dtype)).sum())


def _transitions_before(kernel_bc: Any, parent_path: bytes, k: int, items: Iterator) -> Iterator[np.ndarray]:
    """Per-action transitions the reference engine had generated when it
    reached successor k of the state at `parent_path`: those of every
    parent before it, and that parent's first k+1 (if it is in this shard)."""
    kernel = kernel_bc.value
    counts = np.zeros(kernel.action_count, dtype=np.int64)
    for rows, paths in _payloads("F", items):
        before = paths <= np.array(parent_path, dtype=paths.dtype)
        cand: Candidates = expand_rows(kernel, rows[before], 0, int(before.sum()))
        parent = np.flatnonzero(paths[before] == np.array(parent_path, dtype=paths.dtype))
        keep = np.ones(len(cand), dtype=bool)
        if len(parent):
            keep &= (cand.parents != parent[0]) | (cand.index <= k)
        counts += np.bincount(cand.action[keep], minlength=len(counts))
    yield counts


# ---- the driver ------------------------------------------------------------------

def check(spec: Spec, kernel: Kernel, *, master: str | None = None, partitions: int | None = None,
          settings: dict[str, str] | None = None, progress: Progress | None = None) -> CheckResult:
    """Explore every reachable state of `spec` on Spark: `master` as
    spark-submit's --master (default local[*], or spark-submit's own when
    run under it), `partitions` shards (default: Spark's parallelism),
    `settings` Spark configuration (spark.executor.memory, ...)."""
    started = time.perf_counter()
    if progress:
        progress({"note": f"starting Spark ({master or 'the master spark-submit gives'}) ..."})
    with spark_context(master, type(spec).__module__.split(".")[0], settings) as sc:
        shards = partitions or sc.defaultParallelism
        result = _explore(sc, spec, kernel, shards, started, progress)
        result.run_info.update({"master": sc.master, "partitions": shards})
        return result


def _explore(sc: Any, spec: Spec, kernel: Kernel, shards: int, started: float,
             progress: Progress | None) -> CheckResult:
    from pyspark import StorageLevel

    from ..trace import replay_path     # the driver's only: executors need not import the trace's fingerprints

    kernel_bc = sc.broadcast(kernel)
    # With a checkpoint directory (reliable storage), a level is written there
    # every few levels and the levels between keep their lineage, so blocks
    # of a lost executor are recomputed. Without one, each level is
    # local-checkpointed: lineage cut at no cost, but a lost executor's
    # blocks are gone, and the check fails.
    reliable = sc.getCheckpointDir() is not None
    actions = spec.coverage_labels
    coverage = np.zeros(len(actions), dtype=np.int64)
    reached = np.zeros(kernel.goal_count, np.uint8)          # goals some step reached
    inits = spec.init_states()
    if len(inits) > 1 << (8 * KEY_BYTES):
        raise OverflowError(f"more than {1 << 8 * KEY_BYTES} initial states")
    generated, distinct, depth = len(inits), 0, 0
    rows = np.array([kernel.pack(s) for s in inits], dtype=np.uint64).reshape(len(inits), kernel.words)
    keys = kernel.keys(rows)
    paths = np.arange(len(inits), dtype=">u2").view(f"S{KEY_BYTES}")
    homes = shard_of(keys, shards)
    seeds = [(h, ("V", Visited(kernel.key_words))) for h in range(shards)]
    for h in range(shards):
        sel = np.flatnonzero(homes == h)
        seeds.append((h, ("C", (rows[sel], keys[sel], paths[sel]))))
    visited = sc.parallelize(seeds, shards).partitionBy(shards, _owner)
    candidates = visited.filter(lambda r: r[1][0] == "C")
    visited = visited.filter(lambda r: r[1][0] == "V")
    previous = merged = None
    try:
        while True:
            merged = visited.union(candidates).mapPartitionsWithIndex(
                partial(_settle, kernel_bc), preservesPartitioning=True)
            merged.persist(StorageLevel.MEMORY_AND_DISK)
            if not reliable:
                merged.localCheckpoint()
            elif depth % RELIABLE_EVERY == RELIABLE_EVERY - 1:
                merged.checkpoint()
            stats = merged.mapPartitions(partial(_payloads, "S")).collect()
            violations = [v for _n, _c, v, _r in stats if v is not None]
            if violations:
                path, which, row = min(violations, key=lambda v: v[0])
                distinct += merged.mapPartitions(partial(_count_before, path)).sum() + 1
                if depth == 0:
                    generated = int.from_bytes(path, "big") + 1
                else:
                    parent_path, k = path[:-KEY_BYTES], int.from_bytes(path[-KEY_BYTES:], "big")
                    counts = previous.mapPartitions(partial(_transitions_before, kernel_bc, parent_path, k)).reduce(
                        np.add)
                    generated += int(counts.sum())
                    coverage += counts
                invariant = spec.checked_invariants()[which]
                indices = [int.from_bytes(path[i:i + KEY_BYTES], "big") for i in range(0, len(path), KEY_BYTES)]
                trace = replay_path(spec, kernel, inits[indices[0]], indices[1:], row, invariant)
                return CheckResult("violated", invariant, distinct, generated, depth + 1,
                                   time.perf_counter() - started, dict(zip(actions, coverage.tolist())), trace,
                                   run_info=run_info(kernel, distinct, generated))
            if depth:
                counts = sum(c for _n, c, _v, _r in stats)
                for _n, _c, _v, r in stats:
                    reached |= r
                generated += int(counts.sum())
                coverage += counts
            new = sum(n for n, _c, _v, _r in stats)
            if previous is not None:
                previous.unpersist()
            if not new:
                break
            distinct += new
            depth += 1
            if progress:
                progress(progress_counts(distinct, generated, depth, new, started))
            visited = merged.mapPartitions(partial(_only, "V"), preservesPartitioning=True)
            candidates = merged.mapPartitionsWithIndex(partial(_expand, kernel_bc, shards)).partitionBy(shards, _owner)
            previous = merged
        return CheckResult("holds", None, distinct, generated, depth, time.perf_counter() - started,
                           dict(zip(actions, coverage.tolist())), [], run_info=run_info(kernel, distinct, generated),
                           goals=dict(zip(spec.goals, reached.astype(bool).tolist())))
    finally:
        for rdd in [previous, merged]:
            if rdd is not None:
                rdd.unpersist()
        kernel_bc.unpersist()
