"""Breadth-first exploration on W worker processes that agrees exactly with
the reference engine (bfs.py).

Each state has a home worker, `shard_of(fingerprint, W)` (TLC's MultiFPSet
partitioning). A worker keeps the visited fingerprints of its shard in a
sorted uint64 array (8 bytes a state), the parent fingerprints of the states
it owns in one sorted array pair per level (16 bytes a state), and the
frontier states it owns. Levels are synchronous: every worker expands its
frontier, sends each successor to its home, and each home deduplicates and
checks invariants in one batch.

Exact agreement with the one-process reference, not just the same states:
the reference meets a level's states in a definite order (its frontier's
order, then action order). Every state carries its rank in that order; a
successor's key is (parent rank, successor index), a home keeps the
occurrence with the smallest key, and the coordinator turns the next
level's keys into ranks. So a violation is the one the reference would meet
first, and distinct/generated counts, coverage and the trace at a violation
are the reference's to the state.

With W = 1 nothing is forked; with W > 1 workers are forked (the spec is
inherited, never pickled) and talk to the coordinator over pipes.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import time
from typing import Any

import numpy as np

from ..fingerprint import fingerprint, shard_of
from ..result import CheckResult
from ..spec import Spec
from ..trace import rebuild, validate
from .bfs import Progress

KEY_SPAN = 1 << 16      # successors of one state are numbered below this
PRUNE_EVERY = 50_000    # own-shard candidates between two prunings against the visited shard


class Worker:
    """One shard: its visited set, its frontier, its parent links."""

    def __init__(self, spec: Spec, index: int, workers: int):
        self.spec, self.index, self.workers = spec, index, workers
        self.ship_bytes = spec.canonical_is_invertible     # candidates carry canonical bytes, not states
        self.actions = list(spec.actions)
        self.visited = np.empty(0, dtype=np.uint64)
        self.parents: list[tuple[np.ndarray, np.ndarray]] = []    # per level: (sorted fps, their parents)
        self.frontier: list[tuple[int, int, Any]] = []             # (rank, fp, state), by rank
        self.candidates: list[list[tuple[int, int, int, Any]]] = []
        self.new: list[tuple[int, int, int, Any]] = []             # (key, fp, parent fp, state), by key
        self.per_parent: np.ndarray = np.zeros((0, 0), dtype=np.int64)

    # ---- one level ----------------------------------------------------------------
    def expand(self) -> list[list[tuple[int, int, int, Any]]]:
        """Successors of the frontier, bucketed by home worker; within a bucket
        only the first (smallest-key) occurrence of a fingerprint."""
        spec, workers = self.spec, self.workers
        action_no = {a: i for i, a in enumerate(self.actions)}
        buckets: list[dict[int, tuple[int, int, int, Any]]] = [{} for _ in range(workers)]
        self.prune_at = PRUNE_EVERY
        self.per_parent = np.zeros((len(self.frontier), len(self.actions)), dtype=np.int64)
        for row, (rank, parent_fp, state) in enumerate(self.frontier):
            counts = self.per_parent[row]
            for k, (name, _args, nxt) in enumerate(spec.successors(state)):
                if k >= KEY_SPAN:
                    raise OverflowError(f"a state has more than {KEY_SPAN} successors")
                counts[action_no[name]] += 1
                canon = spec.canonical(nxt)
                fp = fingerprint(canon)
                home = shard_of(fp, workers) if workers > 1 else 0
                bucket = buckets[home]
                if fp not in bucket:        # another process gets bytes when the spec can decode them
                    remote = self.ship_bytes and home != self.index
                    bucket[fp] = (rank * KEY_SPAN + k, fp, parent_fp, canon if remote else nxt)
            own = buckets[self.index]
            if len(own) >= self.prune_at:
                self.prune(own)
                self.prune_at = len(own) + PRUNE_EVERY
        return [list(b.values()) for b in buckets]

    def prune(self, bucket: dict[int, tuple[int, int, int, Any]]) -> None:
        """Drop candidates this shard has already visited, so a level's working
        set holds about its new states rather than all its successors."""
        fps = np.fromiter(bucket.keys(), dtype=np.uint64, count=len(bucket))
        for fp in fps[self.seen(fps)].tolist():
            del bucket[fp]

    def seen(self, fps: np.ndarray) -> np.ndarray:
        """Which of `fps` are in the visited shard."""
        if not len(self.visited):
            return np.zeros(len(fps), dtype=bool)
        pos = np.minimum(np.searchsorted(self.visited, fps), len(self.visited) - 1)
        return self.visited[pos] == fps

    def receive(self, candidates: list[tuple[int, int, int, Any]]) -> None:
        self.candidates.append(candidates)

    def settle(self) -> tuple[np.ndarray, tuple[int, str, int, int] | None]:
        """Deduplicate this level's candidates against the shard and among
        themselves (smallest key wins), check invariants on the new states.
        Returns the new states' keys and the smallest-key violation
        (key, invariant, fp, parent fp), if any."""
        best: dict[int, tuple[int, int, int, Any]] = {}
        for batch in self.candidates:
            for cand in batch:
                old = best.get(cand[1])
                if old is None or cand[0] < old[0]:
                    best[cand[1]] = cand
        self.candidates = []
        seen = self.seen(np.fromiter(best.keys(), dtype=np.uint64, count=len(best)))
        fresh = [c for c, s in zip(best.values(), seen) if not s]
        fresh.sort(key=lambda c: c[0])
        if self.ship_bytes:
            fresh = [(key, fp, parent, self.spec.decode(x) if isinstance(x, bytes) else x)
                     for key, fp, parent, x in fresh]
        self.new = fresh
        violation = None
        for key, fp, parent_fp, state in fresh:
            bad = self.spec.first_violation(state)
            if bad:
                violation = (key, bad, fp, parent_fp)
                break
        return np.fromiter((c[0] for c in fresh), dtype=np.int64, count=len(fresh)), violation

    def advance(self, ranks: np.ndarray) -> None:
        """Commit the new states: into the visited shard, the parent links and
        (with their ranks for the next level) the frontier."""
        new_fps = np.fromiter((c[1] for c in self.new), dtype=np.uint64, count=len(self.new))
        parents = np.fromiter((c[2] for c in self.new), dtype=np.uint64, count=len(self.new))
        order = np.argsort(new_fps)
        self.parents.append((new_fps[order], parents[order]))
        self.visited = np.sort(np.concatenate([self.visited, new_fps]))
        self.frontier = [(int(r), c[1], c[3]) for r, c in zip(ranks, self.new)]
        self.new = []

    def level_counts(self) -> np.ndarray:
        """Per-action transitions of the last expansion."""
        return self.per_parent.sum(axis=0) if len(self.per_parent) else np.zeros(len(self.actions), np.int64)

    # ---- what the coordinator asks after a violation -----------------------------------
    def counts_before(self, rank: int, k: int) -> np.ndarray:
        """Per-action transitions the reference had generated when it produced
        successor `k` of the state ranked `rank`: all of the lower-ranked
        parents' plus that parent's first k+1 (if this worker owns it)."""
        total = np.zeros(len(self.actions), dtype=np.int64)
        action_no = {a: i for i, a in enumerate(self.actions)}
        for row, (r, _fp, state) in enumerate(self.frontier):
            if r < rank:
                total += self.per_parent[row]
            elif r == rank:
                for j, (name, _args, _nxt) in enumerate(self.spec.successors(state)):
                    if j > k:
                        break
                    total[action_no[name]] += 1
        return total

    def parent_of(self, fp: int) -> int | None:
        for fps, parents in self.parents:
            i = int(np.searchsorted(fps, np.uint64(fp)))
            if i < len(fps) and int(fps[i]) == fp:
                return int(parents[i])
        raise KeyError(fp)

    def memory(self) -> int:
        """Bytes held by the visited shard and the parent links."""
        return self.visited.nbytes + sum(a.nbytes + b.nbytes for a, b in self.parents)


NO_PARENT = 0xFFFF_FFFF_FFFF_FFFF     # an initial state's parent in the uint64 arrays


class Chain:
    """The store interface trace.rebuild needs, over one parent chain."""

    def __init__(self, links: dict[int, int | None]):
        self.links = links

    def parent(self, fp: int) -> int | None:
        return self.links[fp]


def check(spec: Spec, *, workers: int = 1, progress: Progress | None = None) -> CheckResult:
    """Explore every reachable state of `spec` on `workers` processes."""
    started = time.perf_counter()
    pool = Local(spec) if workers == 1 else Forked(spec, workers)
    try:
        return _explore(spec, pool, workers, started, progress)
    finally:
        pool.close()


def _explore(spec: Spec, pool: "Local | Forked", workers: int, started: float,
             progress: Progress | None) -> CheckResult:
    actions = list(spec.actions)
    coverage = np.zeros(len(actions), dtype=np.int64)
    generated = distinct = 0
    depth = 0
    # level 1: the initial states, keyed by their position as the reference inserts them
    buckets: list[list[tuple[int, int, int, Any]]] = [[] for _ in range(workers)]
    for k, state in enumerate(spec.init_states()):
        generated += 1
        canon = spec.canonical(state)
        fp = fingerprint(canon)
        payload = canon if spec.canonical_is_invertible else state
        buckets[shard_of(fp, workers) if workers > 1 else 0].append((k, fp, NO_PARENT, payload))
    pool.seed(buckets)
    while True:
        keys, violations = pool.settle()
        found = [v for v in violations if v is not None]
        if found:
            key, invariant, fp, parent = min(found)
            distinct += int((np.concatenate(keys) < key).sum()) + 1
            if depth == 0:          # an initial state: the reference had generated those before it
                generated = key + 1
            else:
                counts = pool.counts_before(*divmod(key, KEY_SPAN))
                generated += int(counts.sum())
                coverage += counts
            links = {fp: None if parent == NO_PARENT else parent}
            step = fp
            while (up := links[step]) is not None:
                grand = pool.parent_of(up)
                links[up] = None if grand == NO_PARENT else grand
                step = up
            trace = rebuild(spec, Chain(links), fp)
            validate(spec, trace, invariant)
            return CheckResult("violated", invariant, distinct, generated, depth + 1,
                               time.perf_counter() - started, dict(zip(actions, coverage.tolist())), trace)
        if depth:
            counts = pool.level_counts()
            generated += int(counts.sum())
            coverage += counts
        new = sum(len(k) for k in keys)
        if not new:
            break
        distinct += new
        depth += 1
        # the next level's ranks: the reference meets its states in key order
        all_keys = np.concatenate(keys)
        ranks = np.empty(len(all_keys), dtype=np.int64)
        ranks[np.argsort(all_keys, kind="stable")] = np.arange(len(all_keys))
        pool.advance(np.split(ranks, np.cumsum([len(k) for k in keys])[:-1]))
        if progress:
            elapsed = time.perf_counter() - started
            progress({"distinct": distinct, "generated": generated, "depth": depth, "queue": new,
                      "elapsed_s": elapsed, "states_per_s": distinct / elapsed if elapsed > 0 else 0.0})
        pool.expand()
    return CheckResult("holds", None, distinct, generated, depth, time.perf_counter() - started,
                       dict(zip(actions, coverage.tolist())), [])


class Local:
    """One worker in this process."""

    def __init__(self, spec: Spec):
        self.w = Worker(spec, 0, 1)

    def seed(self, buckets: list[list]) -> None:
        self.w.receive(buckets[0])

    def expand(self) -> None:
        self.w.receive(self.w.expand()[0])

    def settle(self) -> tuple[list[np.ndarray], list]:
        keys, violation = self.w.settle()
        return [keys], [violation]

    def advance(self, ranks: list[np.ndarray]) -> None:
        self.w.advance(ranks[0])

    def level_counts(self) -> np.ndarray:
        return self.w.level_counts()

    def counts_before(self, rank: int, k: int) -> np.ndarray:
        return self.w.counts_before(rank, k)

    def parent_of(self, fp: int) -> int:
        return self.w.parent_of(fp)

    def close(self) -> None:
        pass


def _serve(spec: Spec, index: int, workers: int, conn) -> None:
    """A forked worker: run the coordinator's commands until told to stop."""
    w = Worker(spec, index, workers)
    replies = {"settle": w.settle, "level_counts": w.level_counts}
    while True:
        cmd, arg = conn.recv()
        if cmd == "stop":
            return
        if cmd in replies:
            conn.send(replies[cmd]())
        elif cmd == "expand":       # pickled per home, so the coordinator forwards bytes untouched
            conn.send([pickle.dumps(b, pickle.HIGHEST_PROTOCOL) for b in w.expand()])
        elif cmd == "receive":
            w.receive(pickle.loads(arg) if isinstance(arg, bytes) else arg)
        elif cmd == "advance":
            w.advance(arg)
        elif cmd == "counts_before":
            conn.send(w.counts_before(*arg))
        elif cmd == "parent_of":
            try:
                conn.send(w.parent_of(arg))
            except KeyError:
                conn.send(None)


class Forked:
    """W forked workers; the coordinator routes each bucket to its home."""

    def __init__(self, spec: Spec, workers: int):
        ctx = mp.get_context("fork")
        self.conns, self.procs = [], []
        for i in range(workers):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(spec, i, workers, there), daemon=True)
            p.start()
            there.close()
            self.conns.append(here)
            self.procs.append(p)

    def _all(self, cmd: str, arg: Any = None) -> list:
        for c in self.conns:
            c.send((cmd, arg))
        return [c.recv() for c in self.conns]

    def seed(self, buckets: list[list]) -> None:
        for conn, bucket in zip(self.conns, buckets):
            conn.send(("receive", bucket))

    def expand(self) -> None:
        outgoing = self._all("expand")          # [sender][home] -> bucket
        for home, conn in enumerate(self.conns):
            for sender in outgoing:
                conn.send(("receive", sender[home]))

    def settle(self) -> tuple[list[np.ndarray], list]:
        replies = self._all("settle")
        return [r[0] for r in replies], [r[1] for r in replies]

    def advance(self, ranks: list[np.ndarray]) -> None:
        for conn, r in zip(self.conns, ranks):
            conn.send(("advance", r))

    def level_counts(self) -> np.ndarray:
        return sum(self._all("level_counts"))

    def counts_before(self, rank: int, k: int) -> np.ndarray:
        return sum(self._all("counts_before", (rank, k)))

    def parent_of(self, fp: int) -> int:
        return next(p for p in self._all("parent_of", fp) if p is not None)

    def close(self) -> None:
        for c in self.conns:
            try:
                c.send(("stop", None))
            except (BrokenPipeError, OSError):
                pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
