"""The fast engine: breadth-first search over packed states with the
compiled kernel, on W threads, reporting exactly what the reference engine
(bfs.py) reports.

A level is a frontier of packed rows in the order the reference engine
meets those states. Each thread expands a contiguous slice of it (the
kernel runs without the GIL), so the threads' successors, one slice after
the other, are the reference engine's candidates in its own order. Each
key belongs to one shard (high bits of the key, below the bucket's: TLC's
MultiFPSet); a shard's thread inserts its candidates, in that order, into
its visited set, so the first occurrence of a new state wins as in the
reference engine. The winners, in candidate order, are the next frontier;
invariants are checked on them in slices, and the first violation in that
order is the one the reference engine meets first, with the same distinct
and generated counts and coverage at that point.

Nothing a level holds is a Python object a state: a row of words, a key
(8 or 16 bytes), and a parent link of 6 bytes (the parent's row in the
previous level, the successor's index under it). A counterexample is
rebuilt from the links by replaying successor indices through the
interpreted spec, checked to arrive at the very state the kernel packed,
and re-validated by replay (trace.validate).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
import numpy as np

from ..result import CheckResult
from ..spec import Spec
from ..trace import replay_path
from . import batch
from .batch import LINK_DTYPE, Candidates, Visited, run_info
from .progress import Progress, progress_counts
from .kernel import Kernel


def check(spec: Spec, kernel: Kernel, *, workers: int = 1, progress: Progress | None = None) -> CheckResult:
    """Explore every reachable state of `spec` with its compiled `kernel` on
    `workers` threads; stop at the first violation."""
    with ThreadPoolExecutor(workers) as pool:
        return Search(spec, kernel, workers, pool, progress).run()


class Search:
    def __init__(self, spec: Spec, kernel: Kernel, workers: int, pool: ThreadPoolExecutor,
                 progress: Progress | None):
        self.spec, self.kernel, self.workers, self.pool = spec, kernel, workers, pool
        self.progress = progress
        self.started = time.perf_counter()
        self.shards = [Visited(kernel.key_words) for _ in range(workers)]
        self.links: list[np.ndarray] = []       # links[d]: (parent, index) of each state of level d
        self.coverage = np.zeros(kernel.action_count, dtype=np.int64)
        self.reached = np.zeros(kernel.goal_count, dtype=np.uint8)       # goals some step reached
        self.distinct = self.generated = 0
        self.frontier_peak = 0
        self.expanded = 0                        # rows of the current level expanded so far
        self.stop = threading.Event()

    # ---- the search ---------------------------------------------------------------
    def run(self) -> CheckResult:
        inits = self.spec.init_states()
        rows = np.array([self.kernel.pack(s) for s in inits], dtype=np.uint64).reshape(len(inits), self.kernel.words)
        level = Candidates(rows, self.kernel.keys(rows), np.arange(len(inits), dtype=np.int64),
                           np.zeros(len(inits), np.uint16), np.zeros(len(inits), np.uint8))
        depth = 0
        while True:
            frontier, bad = self.settle(level, depth)
            if bad is not None:
                return self.violated(level, depth, inits, *bad)
            if not len(frontier):
                break
            depth += 1
            self.report(depth, len(frontier))
            level = self.expand(frontier, depth)
        return self.result("holds", None, depth, [])

    def expand(self, frontier: np.ndarray, depth: int) -> Candidates:
        """The successors of a frontier, in the reference engine's order."""
        self.frontier_peak = max(self.frontier_peak, frontier.nbytes)
        self.expanded = 0
        cuts = np.linspace(0, len(frontier), self.workers + 1).astype(int).tolist()
        reached = [self.reached.copy() for _ in range(self.workers)]

        def part(t: int) -> Candidates:
            return batch.expand(self.kernel, frontier, cuts[t], cuts[t + 1], self.stop.is_set, self._done,
                                reached=reached[t])

        parts = self.wait([self.pool.submit(part, t) for t in range(self.workers)], depth, len(frontier))
        for r in reached:
            self.reached |= r
        return Candidates.concat(parts, self.kernel.words, self.kernel.key_words)

    def _done(self, rows: int) -> None:
        self.expanded += rows

    def settle(self, level: Candidates, depth: int) -> tuple[np.ndarray, tuple[int, int, int] | None]:
        """Insert a level's candidates into the visited shards; the new states'
        rows (the next frontier), their links kept, and the first violation
        among them (candidate position, new states before it, invariant), if any."""
        if self.workers == 1:
            winners = np.flatnonzero(self.shards[0].insert_new(level.keys))
        else:
            owner = batch.shard_of(level.keys, self.workers)

            def shard(s: int) -> np.ndarray:
                mine = np.flatnonzero(owner == s)
                return mine[self.shards[s].insert_new(level.keys[mine])]

            winners = np.sort(np.concatenate(self.wait([self.pool.submit(shard, s) for s in range(self.workers)])))
        rows = level.words[winners]
        first = self.first_violation(rows)
        if first is not None:
            return rows, (int(winners[first[0]]), first[0], first[1])
        links = np.empty(len(winners), dtype=LINK_DTYPE)
        links["parent"], links["index"] = level.parents[winners], level.index[winners]
        self.links.append(links)
        self.distinct += len(winners)
        self.generated += len(level)
        if depth:
            self.coverage += np.bincount(level.action, minlength=len(self.coverage))
        return rows, None

    def first_violation(self, rows: np.ndarray) -> tuple[int, int] | None:
        """(row, place in checked_invariants()) of the first violating row."""
        cuts = np.linspace(0, len(rows), self.workers + 1).astype(int).tolist()
        found = self.wait([self.pool.submit(self.kernel.check, rows, cuts[t], cuts[t + 1])
                           for t in range(self.workers)])
        return next(((row, which) for row, which in found if row >= 0), None)

    def wait(self, futures: list, depth: int = 0, queue: int = 0) -> list:
        """The futures' results in order, reporting progress while they run;
        Ctrl-C stops the threads at their next chunk."""
        try:
            while wait(futures, timeout=1.0).not_done:
                if queue:
                    self.report(depth, queue - self.expanded)
        except KeyboardInterrupt:
            self.stop.set()
            wait(futures)
            raise
        return [f.result() for f in futures]

    def report(self, depth: int, queue: int) -> None:
        if self.progress:
            self.progress(progress_counts(self.distinct, self.generated, depth, queue, self.started))

    # ---- results ------------------------------------------------------------------
    def violated(self, level: Candidates, depth: int, inits: list, position: int, new_before: int,
                 which: int) -> CheckResult:
        """The reference engine stops at the violating state (candidate
        `position`, the level's new state number `new_before`): it had
        generated the candidates up to it, and met the new states before it."""
        invariant = self.spec.checked_invariants()[which]
        self.distinct += new_before + 1
        self.generated += position + 1
        if depth:
            self.coverage += np.bincount(level.action[:position + 1], minlength=len(self.coverage))
        init, path = self.path(depth, int(level.parents[position]), int(level.index[position]))
        trace = replay_path(self.spec, self.kernel, inits[init], path, level.words[position], invariant)
        return self.result("violated", invariant, depth + 1, trace)

    def path(self, depth: int, parent: int, index: int) -> tuple[int, list[int]]:
        """A state's initial state and successor indices, from its parent
        link (at level `depth`) and the links of the levels before."""
        indices = []
        if depth:
            indices.append(index)
            for d in range(depth - 1, 0, -1):
                link = self.links[d][parent]
                indices.append(int(link["index"]))
                parent = int(link["parent"])
            parent = int(self.links[0][parent]["parent"])
        return parent, indices[::-1]

    def result(self, verdict: str, invariant: str | None, depth: int, trace: list) -> CheckResult:
        memory = {"visited_bytes": sum(s.nbytes for s in self.shards),
                  "links_bytes": sum(x.nbytes for x in self.links), "frontier_bytes_peak": self.frontier_peak}
        goals = {} if trace else dict(zip(self.spec.goals, self.reached.astype(bool).tolist()))
        return CheckResult(verdict, invariant, self.distinct, self.generated, depth, time.perf_counter() - self.started,
                           dict(zip(self.spec.coverage_labels, self.coverage.tolist())), trace, goals, memory,
                           run_info(self.kernel, self.distinct, self.generated))
