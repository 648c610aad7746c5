"""The Spark engine: the fast engine's level-synchronous BFS with each
level's frontier and the visited set partitioned over Spark executors, for
state spaces one machine cannot hold. The driver keeps per-level counts and
one RDD handle a level, never a state or a fingerprint set.

Every record is `(shard, (tag, payload))`, shard = `shard_of(fingerprint,
P)` (TLC's MultiFPSet split), and every RDD that holds shards is
partitioned by the same function object (`_owner`), so Spark knows they are
co-partitioned: the union of the visited set and a level's candidates puts
partition i of each side in one task without a shuffle of the visited set.
A level is one job:

    merged[d]  = partition i holds  V: the visited fingerprints of shard i
                                    (one sorted uint64 array),
                                    F: the states new at level d (a Batch),
                                    L: their parent fingerprints,
                                    S: the level's counts and first violation
    expand     = merged[d].mapPartitions: successors of F, pruned of V where
                 they stay in shard i, deduplicated, one Batch a destination
    merged[d+1] = (V of merged[d]) ∪ expand.partitionBy(P, _owner)
                  .mapPartitions(settle, preservesPartitioning=True)

merged[d+1] is local-checkpointed (kept on the executors, its lineage cut),
so level 40 plans as fast as level 2; with spark.checkpoint.dir set, every
4th level is written there instead and the others keep their lineage, so
a lost executor's blocks can be recomputed. L of each level is copied into
its own small persisted RDD for traces, and merged[d] is dropped once
merged[d+1] is computed.

The reference engine's order is reproduced without ranking states on the
driver: each state carries its path key, the successor indices along its
path (big-endian uint16s, so byte order is the reference's order of
discovery), and a shard keeps the occurrence with the smallest key. The
first violation is then the one with the smallest key over all shards, as
in the reference, and counts, coverage and traces equal the reference's.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Iterator

import numpy as np

from ..fingerprint import fingerprint, fingerprints, shard_of
from ..result import CheckResult
from ..spec import Spec
from ..store import SortedFingerprints
from ..trace import rebuild, validate
from .bfs import Progress
from .fast import CHUNK, NO_PARENT, Batch, Chain, _name, _next, join
from .spark_session import spark_context

KEY_BYTES = 2           # a successor index (or an initial state's position) in a path key
RELIABLE_EVERY = 4      # levels between writes to spark.checkpoint.dir, when one is set


# States travel as the fast engine's encoded Batch: fingerprints, path keys
# (numpy 'S' strings, all of one length in a level), parent fingerprints,
# and lossless encodings in one blob.
NO_STATES = Batch(np.empty(0, np.uint64), np.empty(0, f"S{KEY_BYTES}"), np.empty(0, np.uint64), None, b"",
                  np.empty(0, np.int64))


def _owner(shard: int) -> int:
    """The partition function of every shard-keyed RDD: a record's key is
    already its shard. One function object, so Spark sees co-partitioning."""
    return shard


def _child_keys(parent_keys: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Path keys of successors: the parent's key, then the successor's index."""
    width = parent_keys.dtype.itemsize
    out = np.empty((len(rows), width + KEY_BYTES), dtype=np.uint8)
    out[:, :width] = parent_keys.view(np.uint8).reshape(-1, width)[rows]
    out[:, width] = index >> 8
    out[:, width + 1] = index & 0xFF
    return out.view(f"S{width + KEY_BYTES}").ravel()


def _first_per_fp(fps: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Indices of the occurrence with the smallest key of each fingerprint."""
    order = np.lexsort((keys, fps))
    f = fps[order]
    return order[np.concatenate(([True], f[1:] != f[:-1]))] if len(f) else order


def _parts(index: int, items: Iterator) -> dict[str, list]:
    """Partition `index`'s payloads by tag; every record must be of shard `index`."""
    found: dict[str, list] = {}
    for shard, (tag, payload) in items:
        if shard != index:
            raise RuntimeError(f"shard {shard}'s record reached partition {index}: the RDDs are not co-partitioned")
        found.setdefault(tag, []).append(payload)
    return found


# ---- what the executors run --------------------------------------------------------

def _expand(spec_bc: Any, shards: int, index: int, items: Iterator) -> Iterator:
    """Successors of shard `index`'s frontier, one Batch a destination shard,
    and the level's per-action transition counts (to this shard's settle)."""
    spec = spec_bc.value
    parts = _parts(index, items)
    visited = SortedFingerprints.of(parts["V"][0])
    frontier = parts["F"][0]
    action_no = {a: i for i, a in enumerate(spec.actions)}
    canonical, successors = spec.canonical, spec.successors
    encode = None if spec.canonical_is_encoding() else spec.encode
    acts: list[np.ndarray] = []
    outgoing: list[list[Batch]] = [[] for _ in range(shards)]
    encodings = frontier.encodings()
    for lo in range(0, len(encodings), CHUNK):
        succ, per_parent = [], []
        for data in encodings[lo:lo + CHUNK]:
            out = successors(spec.decode(data))
            succ += out
            per_parent.append(len(out))
        n = len(succ)
        counts = np.array(per_parent, dtype=np.int64)
        acts.append(np.fromiter(map(action_no.__getitem__, map(_name, succ)), dtype=np.int64, count=n))
        states = list(map(_next, succ))
        canons = list(map(canonical, states))
        fps = fingerprints(canons)
        rows = np.repeat(np.arange(lo, lo + len(counts)), counts)
        position = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        if n and position.max() >= 1 << (8 * KEY_BYTES):
            raise OverflowError(f"a state has more than {1 << 8 * KEY_BYTES} successors")
        keys = _child_keys(frontier.keys, rows, position)
        homes = shard_of(fps, shards)
        for home in range(shards):
            sel = np.flatnonzero(homes == home)
            if home == index:
                sel = sel[~visited.contains(fps[sel])]
            sel = sel[_first_per_fp(fps[sel], keys[sel])]
            if len(sel):
                picked = [canons[i] for i in sel.tolist()] if encode is None else \
                    [encode(states[i]) for i in sel.tolist()]
                outgoing[home].append(Batch.encoded(fps[sel], keys[sel], frontier.fps[rows[sel]], picked))
    for home, batches in enumerate(outgoing):
        if batches:
            batch = join(batches)
            yield home, ("C", batch.take(_first_per_fp(batch.fps, batch.keys)) if len(batches) > 1 else batch)
    all_acts = np.concatenate(acts) if acts else np.empty(0, dtype=np.int64)
    yield index, ("N", np.bincount(all_acts, minlength=len(action_no)).astype(np.int64))


def _settle(spec_bc: Any, index: int, items: Iterator) -> Iterator:
    """Shard `index` at the end of a level: its candidates deduplicated
    (smallest key wins) and pruned of visited states, invariants checked on
    the new ones in key order (up to the first violation), the visited set
    grown."""
    spec = spec_bc.value
    found = _parts(index, items)
    visited = SortedFingerprints.of(found["V"][0])
    batch = join(found.get("C", [])) or NO_STATES
    sel = _first_per_fp(batch.fps, batch.keys)
    sel = sel[~visited.contains(batch.fps[sel])]
    new = batch.take(sel[np.argsort(batch.keys[sel], kind="stable")])
    violation = None
    first_violation, decode = spec.first_violation, spec.decode
    for j, data in enumerate(new.encodings()):
        bad = first_violation(decode(data))
        if bad:
            violation = (new.keys[j:j + 1].view(np.uint8).tobytes(), bad, int(new.fps[j]), int(new.parents[j]))
            break
    coverage = sum(found.get("N", []), np.zeros(len(spec.actions), dtype=np.int64))
    visited.add(new.fps)
    order = np.argsort(new.fps)
    yield index, ("V", visited.fps)
    yield index, ("F", new)
    yield index, ("L", (new.fps[order], new.parents[order]))
    yield index, ("S", (len(new.fps), coverage, violation))


def _only(tag: str, items: Iterator) -> Iterator:
    return (item for item in items if item[1][0] == tag)


def _payloads(tag: str, items: Iterator) -> Iterator:
    return (item[1][1] for item in items if item[1][0] == tag)


def _count_before(key: bytes, items: Iterator) -> Iterator[int]:
    """How many of a shard's new states come before `key` in the reference's order."""
    for batch in _payloads("F", items):
        yield int((batch.keys < np.array(key, dtype=batch.keys.dtype)).sum())


def _transitions_before(spec_bc: Any, parent_key: bytes, k: int, items: Iterator) -> Iterator[np.ndarray]:
    """Per-action transitions the reference had generated when it reached
    successor k of the state keyed `parent_key`: those of every parent before
    it, and that parent's first k+1 (if it is in this shard)."""
    spec = spec_bc.value
    action_no = {a: i for i, a in enumerate(spec.actions)}
    counts = np.zeros(len(action_no), dtype=np.int64)
    for batch in _payloads("F", items):
        for key, data in zip(batch.keys.tolist(), batch.encodings()):
            key = key.ljust(len(parent_key), b"\0")
            if key <= parent_key:
                succ = spec.successors(spec.decode(data))
                for name, _args, _state in succ[:k + 1] if key == parent_key else succ:
                    counts[action_no[name]] += 1
    yield counts


def _parent_in(fp: int, items: Iterator) -> Iterator[int]:
    for fps, parents in _payloads("L", items):
        pos = int(np.searchsorted(fps, np.uint64(fp)))     # a Python int would be compared as a float by numpy 1
        if pos < len(fps) and int(fps[pos]) == fp:
            yield int(parents[pos])


# ---- the driver ------------------------------------------------------------------

def check(spec: Spec, *, master: str | None = None, partitions: int | None = None,
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
        result = _explore(sc, spec, shards, started, progress)
        result.run_info = {"master": sc.master, "partitions": shards}
        return result


def _explore(sc: Any, spec: Spec, shards: int, started: float, progress: Progress | None) -> CheckResult:
    from pyspark import StorageLevel

    spec_bc = sc.broadcast(spec)
    # With a checkpoint directory (reliable storage), a level is written there
    # every few levels and the levels between keep their lineage, so blocks
    # of a lost executor are recomputed. Without one, each level is
    # local-checkpointed: lineage cut at no cost, but a lost executor's
    # blocks are gone, and the check fails.
    reliable = sc.getCheckpointDir() is not None
    actions = list(spec.actions)
    coverage = np.zeros(len(actions), dtype=np.int64)
    inits = spec.init_states()
    if len(inits) > 1 << (8 * KEY_BYTES):
        raise OverflowError(f"more than {1 << 8 * KEY_BYTES} initial states")
    generated, distinct, depth = len(inits), 0, 0
    fps = np.array([fingerprint(spec.canonical(s)) for s in inits], dtype=np.uint64)
    keys = np.arange(len(inits), dtype=">u2").view(f"S{KEY_BYTES}")
    homes = shard_of(fps, shards)
    seeds = [(h, ("V", np.empty(0, dtype=np.uint64))) for h in range(shards)]
    for h in range(shards):
        sel = np.flatnonzero(homes == h)
        batch = Batch.encoded(fps[sel], keys[sel], np.full(len(sel), NO_PARENT, dtype=np.uint64),
                              [spec.encode(inits[i]) for i in sel.tolist()])
        seeds.append((h, ("C", batch)))
    visited = sc.parallelize(seeds, shards).partitionBy(shards, _owner)
    candidates = visited.filter(lambda r: r[1][0] == "C")
    visited = visited.filter(lambda r: r[1][0] == "V")
    previous = merged = None
    links: list[Any] = []           # level -> RDD of that level's (fps, parent fps), by shard
    try:
        while True:
            merged = visited.union(candidates).mapPartitionsWithIndex(
                partial(_settle, spec_bc), preservesPartitioning=True)
            merged.persist(StorageLevel.MEMORY_AND_DISK)
            if not reliable:
                merged.localCheckpoint()
            elif depth % RELIABLE_EVERY == RELIABLE_EVERY - 1:
                merged.checkpoint()
            stats = merged.mapPartitions(partial(_payloads, "S")).collect()
            violations = [v for _n, _c, v in stats if v is not None]
            if violations:
                key, invariant, fp, parent = min(violations)
                distinct += merged.mapPartitions(partial(_count_before, key)).sum() + 1
                if depth == 0:
                    generated = int.from_bytes(key, "big") + 1
                else:
                    parent_key, k = key[:-KEY_BYTES], int.from_bytes(key[-KEY_BYTES:], "big")
                    counts = previous.mapPartitions(partial(_transitions_before, spec_bc, parent_key, k)).reduce(np.add)
                    generated += int(counts.sum())
                    coverage += counts
                trace = _trace(spec, links, shards, fp, parent, invariant)
                return CheckResult("violated", invariant, distinct, generated, depth + 1,
                                   time.perf_counter() - started, dict(zip(actions, coverage.tolist())), trace)
            if depth:
                counts = sum(c for _n, c, _v in stats)
                generated += int(counts.sum())
                coverage += counts
            new = sum(n for n, _c, _v in stats)
            if previous is not None:
                previous.unpersist()
            if not new:
                break
            distinct += new
            depth += 1
            level_links = merged.mapPartitions(partial(_only, "L"), preservesPartitioning=True)
            level_links.persist(StorageLevel.MEMORY_AND_DISK)
            if not reliable:
                level_links.localCheckpoint()
            level_links.count()
            links.append(level_links)
            if progress:
                elapsed = time.perf_counter() - started
                progress({"distinct": distinct, "generated": generated, "depth": depth, "queue": new,
                          "elapsed_s": elapsed, "states_per_s": distinct / elapsed if elapsed > 0 else 0.0})
            visited = merged.mapPartitions(partial(_only, "V"), preservesPartitioning=True)
            candidates = merged.mapPartitionsWithIndex(partial(_expand, spec_bc, shards)).partitionBy(shards, _owner)
            previous = merged
        return CheckResult("holds", None, distinct, generated, depth, time.perf_counter() - started,
                           dict(zip(actions, coverage.tolist())), [])
    finally:
        for rdd in [*links, previous, merged]:
            if rdd is not None:
                rdd.unpersist()
        spec_bc.unpersist()


def _trace(spec: Spec, links: list[Any], shards: int, fp: int, parent: int, invariant: str) -> list:
    """The violating state's shortest trace: parent fingerprints looked up
    level by level, each in the one partition that owns it, then rebuilt and
    re-validated by replay."""
    chain = {fp: None if parent == NO_PARENT else parent}
    step = fp
    for level in reversed(links):
        up = chain[step]
        if up is None:
            break
        shard = int(shard_of(up, shards))
        found = level.context.runJob(level, partial(_parent_in, up), [shard])
        if len(found) != 1:
            raise RuntimeError(f"state {up:#x} has {len(found)} parent links in shard {shard}")
        chain[up] = None if found[0] == NO_PARENT else found[0]
        step = up
    steps = rebuild(spec, Chain(chain), fp)
    validate(spec, steps, invariant)
    return steps
