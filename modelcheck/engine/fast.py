"""The fast engine: breadth-first exploration on W worker processes, with
compact arrays where the reference keeps Python objects, and the reference's
results to the state (bfs.py).

Each state has a home worker, `shard_of(fingerprint, W)` (TLC's MultiFPSet
partitioning). A worker keeps the visited fingerprints of its shard in one
sorted uint64 array (8 bytes a state), the parent fingerprints of the states
it owns in one sorted array pair per level (16 bytes a state, never a
state), and the frontier states it owns. Levels are synchronous: every
worker expands its frontier, sends each successor to its home as encoded
bytes, and each home deduplicates the level in bulk (numpy) and checks
invariants on its new states.

The hot loop is batched: successors of a chunk of the frontier are encoded,
fingerprinted, routed and pruned against the visited shard with C-level
maps and array operations, so the Python work per successor is the spec's
own. States hold no reference cycles, so the cyclic garbage collector,
which would rescan the growing frontier over and over, is off while a check
runs.

Exact agreement with the one-process reference, not just the same states:
the reference meets a level's states in a definite order (its frontier's
order, then successor order). Every state carries its rank in that order; a
successor's key is (parent rank, successor index), a home keeps the
occurrence with the smallest key, and the coordinator turns the next
level's keys into ranks. So a violation is the one the reference would meet
first, and distinct/generated counts, coverage and the trace at a violation
are the reference's. States shipped to another process are encoded
losslessly (Spec.encode, not canonical()), so every worker explores the
very states the reference does, with or without symmetry reduction.

With W = 1 nothing is forked; with W > 1 workers are forked (the spec is
inherited, never pickled) and take commands from the coordinator over
pipes. Candidates bound for another worker do not pass through the
coordinator: the sender writes each home's batch to a file in shared memory
(/dev/shm) and the home reads it, so both workers move their data at once
instead of queueing behind one relaying process.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from ..fingerprint import fingerprint, fingerprints, shard_of
from ..result import CheckResult
from ..spec import Spec
from ..store import LevelLinks, SortedFingerprints
from ..trace import rebuild, validate
from .bfs import Progress

KEY_SPAN = 1 << 16      # successors of one state are numbered below this
CHUNK = 4096            # frontier states expanded between two prunings against the visited shard
NO_PARENT = 0xFFFF_FFFF_FFFF_FFFF     # an initial state's parent in the uint64 arrays
_name, _next = itemgetter(0), itemgetter(2)


@dataclass
class Batch:
    """Candidate states bound for one home: parallel arrays, and the states
    themselves (objects when they stay in this process, else encodings
    concatenated in `blob`, the i-th ending at `ends[i]`). The Spark engine
    ships the same batches, with path keys (bytes) as keys."""
    fps: np.ndarray         # uint64
    keys: np.ndarray        # int64, (parent rank) * KEY_SPAN + successor index
    parents: np.ndarray     # uint64 parent fingerprints
    states: list | None = None
    blob: bytes = b""
    ends: np.ndarray | None = None

    def state(self, spec: Spec, i: int) -> Any:
        if self.states is not None:
            return self.states[i]
        return spec.decode(self.blob[self.ends[i - 1] if i else 0:self.ends[i]])

    def encodings(self) -> list[bytes]:
        """Each state's encoding (of an encoded batch)."""
        ends = self.ends.tolist()
        return [self.blob[s:e] for s, e in zip([0] + ends[:-1], ends)]

    def take(self, sel: np.ndarray) -> "Batch":
        """The encoded batch of the states at positions `sel`, in that order."""
        encodings = self.encodings()
        return Batch.encoded(self.fps[sel], self.keys[sel], self.parents[sel], [encodings[i] for i in sel.tolist()])

    def write(self, path: str) -> None:
        """Save an encoded batch: a header of two lengths, the four arrays, the blob."""
        with open(path, "wb") as f:
            f.write(np.array([len(self.fps), len(self.blob)], dtype=np.int64).tobytes())
            for a in (self.fps, self.keys, self.parents, self.ends):
                f.write(a.tobytes())
            f.write(self.blob)

    @staticmethod
    def read(path: str) -> "Batch":
        """The batch `write` saved (the file is removed)."""
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
        n, size = np.frombuffer(data, dtype=np.int64, count=2).tolist()
        arrays = [np.frombuffer(data, dtype=d, count=n, offset=16 + 8 * n * i)
                  for i, d in enumerate((np.uint64, np.int64, np.uint64, np.int64))]
        return Batch(*arrays[:3], None, data[16 + 32 * n:16 + 32 * n + size], arrays[3])

    @staticmethod
    def encoded(fps: np.ndarray, keys: np.ndarray, parents: np.ndarray, encodings: list[bytes]) -> "Batch":
        ends = np.cumsum(np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings)))
        return Batch(fps, keys, parents, None, b"".join(encodings), ends)


class Worker:
    """One shard: its visited set, its parent links, its frontier."""

    def __init__(self, spec: Spec, index: int, workers: int):
        self.spec, self.index, self.workers = spec, index, workers
        self.action_no = {a: i for i, a in enumerate(spec.actions)}
        self.visited = SortedFingerprints()
        self.links = LevelLinks()
        self.frontier: list[Any] = []                            # states, by rank, until expanded
        self.frontier_fps = np.empty(0, dtype=np.uint64)
        self.frontier_ranks = np.empty(0, dtype=np.int64)
        self.inbox: list[Batch] = []
        self.new: tuple[np.ndarray, np.ndarray, np.ndarray, list] | None = None
        # the last expansion, for coverage: each successor's action, and where each parent's begin
        self.acts = np.empty(0, dtype=np.uint16)
        self.starts = np.zeros(1, dtype=np.int64)

    # ---- one level ----------------------------------------------------------------
    def expand(self) -> list[Batch | None]:
        """Expand the frontier. Candidates for this shard go to its own inbox
        (pruned of visited states); the others are returned, one batch per
        home (None for this one), each fingerprint once per chunk."""
        spec, me, workers = self.spec, self.index, self.workers
        successors, canonical = spec.successors, spec.canonical
        encode = None if spec.canonical_is_encoding() else spec.encode
        outgoing: list[list[Batch]] = [[] for _ in range(workers)]
        acts, counts = [], []
        frontier, self.frontier = self.frontier, []     # expanded states are let go chunk by chunk
        for lo in range(0, len(frontier), CHUNK):
            chunk = frontier[lo:lo + CHUNK]
            frontier[lo:lo + CHUNK] = [None] * len(chunk)
            succ: list = []
            per_parent = []
            for state in chunk:
                out = successors(state)
                succ += out
                per_parent.append(len(out))
            n = len(succ)
            n_parents = np.array(per_parent, dtype=np.int64)
            counts.append(n_parents)
            acts.append(np.fromiter(map(self.action_no.__getitem__, map(_name, succ)), dtype=np.uint16, count=n))
            states = list(map(_next, succ))
            canons = list(map(canonical, states))
            fps = fingerprints(canons)
            rows = np.repeat(np.arange(lo, lo + len(chunk)), n_parents)
            index = np.arange(n) - np.repeat(np.cumsum(n_parents) - n_parents, n_parents)
            if n and index.max() >= KEY_SPAN:
                raise OverflowError(f"a state has more than {KEY_SPAN} successors")
            keys = self.frontier_ranks[rows] * KEY_SPAN + index
            parents = self.frontier_fps[rows]
            first = np.zeros(n, dtype=bool)
            first[np.unique(fps, return_index=True)[1]] = True      # the first occurrence has the smallest key
            homes = shard_of(fps, workers) if workers > 1 else np.zeros(n, dtype=np.uint64)
            for home in range(workers):
                sel = np.flatnonzero(first & (homes == home))
                if home == me:
                    sel = sel[~self.visited.contains(fps[sel])]
                    self.inbox.append(Batch(fps[sel], keys[sel], parents[sel], [states[i] for i in sel.tolist()]))
                elif len(sel):
                    picked = [canons[i] for i in sel.tolist()] if encode is None else \
                        [encode(states[i]) for i in sel.tolist()]
                    outgoing[home].append(Batch.encoded(fps[sel], keys[sel], parents[sel], picked))
        self.acts = np.concatenate(acts) if acts else np.empty(0, dtype=np.uint16)
        per = np.concatenate(counts) if counts else np.empty(0, dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(per)))
        return [None if h == me else join(b) for h, b in enumerate(outgoing)]

    def receive(self, batch: Batch | None) -> None:
        if batch is not None:
            self.inbox.append(batch)

    def settle(self) -> tuple[np.ndarray, tuple[int, str, int, int] | None]:
        """Deduplicate this level's candidates against the shard and among
        themselves (the smallest key wins), check invariants on the new
        states in key order. Returns the new states' keys and the first
        violation (key, invariant, fp, parent fp), if any."""
        batches, self.inbox = self.inbox, []
        fps = _cat([b.fps for b in batches], np.uint64)
        keys = _cat([b.keys for b in batches], np.int64)
        parents = _cat([b.parents for b in batches], np.uint64)
        where = _cat([np.full(len(b.fps), i, dtype=np.int64) for i, b in enumerate(batches)], np.int64)
        offset = _cat([np.arange(len(b.fps), dtype=np.int64) for b in batches], np.int64)
        order = np.lexsort((keys, fps))
        f = fps[order]
        sel = order[np.concatenate(([True], f[1:] != f[:-1])) if len(f) else np.zeros(0, dtype=bool)]
        sel = sel[~self.visited.contains(fps[sel])]
        sel = sel[np.argsort(keys[sel])]
        states = [batches[b].state(self.spec, i) for b, i in zip(where[sel].tolist(), offset[sel].tolist())]
        self.new = (fps[sel], keys[sel], parents[sel], states)
        first_violation = self.spec.first_violation
        for j, state in enumerate(states):
            bad = first_violation(state)
            if bad:
                return keys[sel], (int(keys[sel][j]), bad, int(fps[sel][j]), int(parents[sel][j]))
        return keys[sel], None

    def advance(self, ranks: np.ndarray) -> None:
        """Commit the new states: into the visited shard, the parent links and
        (with their ranks for the next level) the frontier."""
        fps, _keys, parents, states = self.new
        self.links.add_level(fps, parents)
        self.visited.add(fps)
        self.frontier, self.frontier_fps, self.frontier_ranks = states, fps, ranks
        self.new = None

    def level_counts(self) -> np.ndarray:
        """Per-action transitions of the last expansion."""
        return np.bincount(self.acts, minlength=len(self.action_no)).astype(np.int64)

    # ---- what the coordinator asks after a violation -----------------------------------
    def counts_before(self, rank: int, k: int) -> np.ndarray:
        """Per-action transitions the reference had generated when it produced
        successor `k` of the state ranked `rank`: all of the lower-ranked
        parents' plus that parent's first k+1 (if this worker owns it)."""
        row = int(np.searchsorted(self.frontier_ranks, rank))
        end = int(self.starts[row])
        if row < len(self.frontier_ranks) and self.frontier_ranks[row] == rank:
            end += k + 1
        return np.bincount(self.acts[:end], minlength=len(self.action_no)).astype(np.int64)

    def parent_of(self, fp: int) -> int | None:
        """The parent fingerprint of a state of this shard (None: not ours)."""
        return self.links.parent(fp)

    def memory(self) -> dict[str, int]:
        """Bytes held by the visited shard and by the parent links."""
        return {"visited_bytes": self.visited.nbytes, "links_bytes": self.links.nbytes}


def _cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def join(batches: list[Batch]) -> Batch | None:
    """One batch of encoded candidates from several."""
    if not batches:
        return None
    lengths = [len(b.blob) for b in batches]
    shift = np.repeat(np.cumsum([0] + lengths[:-1]), [len(b.fps) for b in batches])
    return Batch(_cat([b.fps for b in batches], np.uint64), _cat([b.keys for b in batches], np.int64),
                 _cat([b.parents for b in batches], np.uint64), None, b"".join(b.blob for b in batches),
                 _cat([b.ends for b in batches], np.int64) + shift)


class Chain:
    """The store interface trace.rebuild needs, over one parent chain."""

    def __init__(self, links: dict[int, int | None]):
        self.links = links

    def parent(self, fp: int) -> int | None:
        return self.links[fp]


def check(spec: Spec, *, workers: int = 1, progress: Progress | None = None) -> CheckResult:
    """Explore every reachable state of `spec` on `workers` processes."""
    started = time.perf_counter()
    collecting = gc.isenabled()
    gc.disable()        # forked workers inherit this
    pool = Local(spec) if workers == 1 else Forked(spec, workers)
    try:
        return _explore(spec, pool, workers, started, progress)
    finally:
        pool.close()
        if collecting:
            gc.enable()


def _explore(spec: Spec, pool: "Local | Forked", workers: int, started: float,
             progress: Progress | None) -> CheckResult:
    actions = list(spec.actions)
    coverage = np.zeros(len(actions), dtype=np.int64)
    generated = distinct = 0
    depth = 0
    # level 1: the initial states, keyed by their position as the reference inserts them
    inits = spec.init_states()
    generated = len(inits)
    fps = np.array([fingerprint(spec.canonical(s)) for s in inits], dtype=np.uint64)
    homes = shard_of(fps, workers) if workers > 1 else np.zeros(len(fps), dtype=np.uint64)
    keys = np.arange(len(inits), dtype=np.int64)
    pool.seed([Batch.encoded(fps[homes == h], keys[homes == h], np.full(int((homes == h).sum()), NO_PARENT, dtype=np.uint64),
                             [spec.encode(inits[i]) for i in np.flatnonzero(homes == h).tolist()])
               for h in range(workers)])
    while True:
        keys_of, violations = pool.settle()
        found = [v for v in violations if v is not None]
        if found:
            key, invariant, fp, parent = min(found)
            distinct += int((np.concatenate(keys_of) < key).sum()) + 1
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
                               time.perf_counter() - started, dict(zip(actions, coverage.tolist())), trace,
                               pool.memory())
        if depth:
            counts = pool.level_counts()
            generated += int(counts.sum())
            coverage += counts
        new = sum(len(k) for k in keys_of)
        if not new:
            break
        distinct += new
        depth += 1
        # the next level's ranks: the reference meets its states in key order
        all_keys = np.concatenate(keys_of)
        ranks = np.empty(len(all_keys), dtype=np.int64)
        ranks[np.argsort(all_keys)] = np.arange(len(all_keys))
        pool.advance(np.split(ranks, np.cumsum([len(k) for k in keys_of])[:-1]))
        if progress:
            elapsed = time.perf_counter() - started
            progress({"distinct": distinct, "generated": generated, "depth": depth, "queue": new,
                      "elapsed_s": elapsed, "states_per_s": distinct / elapsed if elapsed > 0 else 0.0})
        pool.expand()
    return CheckResult("holds", None, distinct, generated, depth, time.perf_counter() - started,
                       dict(zip(actions, coverage.tolist())), [], pool.memory())


class Local:
    """One worker in this process."""

    def __init__(self, spec: Spec):
        self.w = Worker(spec, 0, 1)

    def seed(self, batches: list[Batch]) -> None:
        self.w.receive(batches[0])

    def expand(self) -> None:
        self.w.expand()

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

    def memory(self) -> dict[str, int]:
        return self.w.memory()

    def close(self) -> None:
        pass


def _serve(spec: Spec, index: int, workers: int, conn, exchange: str) -> None:
    """A forked worker: run the coordinator's commands until told to stop."""
    w = Worker(spec, index, workers)
    replies = {"settle": w.settle, "level_counts": w.level_counts, "memory": w.memory}
    while True:
        cmd, arg = conn.recv()
        if cmd == "stop":
            return
        if cmd in replies:
            conn.send(replies[cmd]())
        elif cmd == "expand":       # each other home's batch goes to a file it reads
            paths = []
            for home, batch in enumerate(w.expand()):
                path = None
                if batch is not None:
                    path = os.path.join(exchange, f"{index}-{home}")
                    batch.write(path)
                paths.append(path)
            conn.send(paths)
        elif cmd == "receive":
            w.receive(arg)
        elif cmd == "read":
            for path in arg:
                w.receive(Batch.read(path))
            conn.send(None)
        elif cmd == "advance":
            w.advance(arg)
        elif cmd == "counts_before":
            conn.send(w.counts_before(*arg))
        elif cmd == "parent_of":
            conn.send(w.parent_of(arg))


class Forked:
    """W forked workers; the coordinator routes each batch to its home."""

    def __init__(self, spec: Spec, workers: int):
        ctx = mp.get_context("fork")
        self.conns, self.procs = [], []
        self.exchange = tempfile.mkdtemp(prefix="modelcheck-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        for i in range(workers):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(spec, i, workers, there, self.exchange), daemon=True)
            p.start()
            there.close()
            self.conns.append(here)
            self.procs.append(p)

    def _all(self, cmd: str, arg: Any = None) -> list:
        for c in self.conns:
            c.send((cmd, arg))
        return [c.recv() for c in self.conns]

    def seed(self, batches: list[Batch]) -> None:
        for conn, batch in zip(self.conns, batches):
            conn.send(("receive", batch))

    def expand(self) -> None:
        outgoing = self._all("expand")          # [sender][home] -> file of the batch, or None
        for home, conn in enumerate(self.conns):
            conn.send(("read", [sender[home] for sender in outgoing if sender[home] is not None]))
        for conn in self.conns:
            conn.recv()

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

    def memory(self) -> dict[str, int]:
        shards = self._all("memory")
        return {k: sum(m[k] for m in shards) for k in shards[0]}

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
        shutil.rmtree(self.exchange, ignore_errors=True)
