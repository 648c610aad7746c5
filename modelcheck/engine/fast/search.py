"""The fast search's level pipeline: a level's frontier expanded in
segments on the workers, each segment's candidates settled into the
visited shards in the reference engine's order, the new states checked,
and the result built (a counterexample replayed through the spec). The
package docstring says how; memory.py and saved.py hold the rest."""

from __future__ import annotations

import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ...lifetime import Stopped
from ...path import Path
from ...result import CheckResult
from ...spec import Spec
from ...trace import replay_path
from ..control import Control, over_memory
from ..kernel import Kernel
from ..liveness import check_properties
from ..options import CheckOptions
from ..progress import Progress
from ..storage import batch
from ..storage.batch import LINK_DTYPE, Abandoned, Candidates, Parts, compiled_result
from ..storage.checkpoint import Checkpoints
from ..storage.sorted_keys import first_occurrences
from ..storage.visited import shard_of
from .memory import MIN_SEGMENT, NoRoom
from .saved import Saved
from .state import Cursor, Taken


def check(
    spec: Spec,
    kernel: Kernel,
    options: CheckOptions | None = None,
    *,
    checkpoints: Checkpoints | None = None,
    progress: Progress | None = None,
    control: Control | None = None,
) -> CheckResult:
    """Explore every reachable state of `spec` with its compiled `kernel` on
    `options.local.workers` threads; stop at the first violation (or as
    `control` asks), within the memory limit, checkpointing into
    `checkpoints` (resuming from them with `options.local.resume`)."""
    options = options or CheckOptions()
    with ThreadPoolExecutor(options.local.workers) as pool:
        return Search(spec, kernel, options, checkpoints, pool, progress, control or Control()).run()


def warm(spec: Spec, kernel: Kernel) -> None:
    """Run the compiled search of `spec` for about a second (or to its end,
    if sooner), so that numba caches the engine's own compiled helpers (the
    visited set's) beside the kernel: a first run's compile child does, and
    the next run is compiled from its first state instead of compiling them
    (about 6 s on 2 cores)."""
    control = Control()

    def soon(counts: dict) -> None:  # the first report comes a second in
        control.stop.signum = signal.SIGTERM

    try:
        check(spec, kernel, progress=soon, control=control)
    except (Stopped, Exception):  # as asked; or what the check will meet and report itself (a field out of range)
        pass


class Search(Saved):
    """The level pipeline: expand a segment, settle it, check it; the result."""

    def run(self) -> CheckResult:
        self.inits = self.spec.init_states()
        with self.control.stop.polling():
            found = self.search()
            if found is not None:
                return found
            assert self.recorder is not None, "a search that ends without a result had properties to check"
            return self.properties()

    def search(self) -> CheckResult | None:
        """The breadth-first search: a violation, or the holds result when
        no property is to be checked (None: check them)."""
        cur = self.restore() if self.local.resume else self.initial()
        if isinstance(cur, CheckResult):
            return cur
        while len(cur.frontier):
            self.frontier_peak = max(self.frontier_peak, cur.frontier.nbytes)
            self.report(cur.depth, len(cur.frontier) - cur.done)
            while cur.done < len(cur.frontier):
                found = self.segment(cur)
                if found is not None:
                    return found
            cur = self.next_level(cur)
        self.depth = cur.depth
        return None if self.recorder is not None else self.result("holds", None, cur.depth, [])

    def initial(self) -> Cursor | CheckResult:
        rows = np.array([self.kernel.pack(s) for s in self.inits], dtype=np.uint64).reshape(
            len(self.inits), self.kernel.words
        )
        first = Candidates(
            rows,
            self.kernel.keys(rows),
            np.arange(len(rows), dtype=np.int64),
            np.zeros(len(rows), np.uint16),
            np.zeros(len(rows), np.uint8),
            np.zeros(len(rows), np.uint16),
        )
        level = Parts([first], np.zeros(len(self.coverage), np.int64))
        cur = Cursor(0, rows[:0])
        bad = self.settle(level, cur)
        return self.violated(level, cur, *bad) if bad else self.next_level(cur)

    def next_level(self, cur: Cursor) -> Cursor:
        self.resolve(cur)
        rows, links, _ = self.assembled(cur.next_rows, cur.next_links)
        self.links.append(links)
        return Cursor(cur.depth + (1 if len(rows) else 0), rows, first=self.distinct - len(rows))

    def segment(self, cur: Cursor) -> CheckResult | None:
        """Expand and settle the next segment of the frontier (at a safe
        point first); the result if it ends the search."""
        self.safe_point(cur)
        try:
            hi = self.segment_end(cur)
        except NoRoom as e:
            raise self.memory_stop(cur, str(e)) from None
        self.over = False
        try:
            level = self.expand(cur.frontier, cur.done, hi, cur.depth)
        except Abandoned:
            if not self.over:
                return None  # a stop request: the next safe point acts on it
            if hi - cur.done <= MIN_SEGMENT and self.spilled:
                if not any(s.memory_keys for s in self.shards):
                    raise self.memory_stop(cur, "a segment of the frontier no longer fits") from None
                self.flush_visited(cur)
                return None
            self.per_row *= 2  # it did not fit: smaller segments from now on
            self.spill(cur)
            return None
        self.segments += 1
        self.last_candidates = len(level)
        self.per_row = max(self.per_row, len(level) / max(1, hi - cur.done))
        bad = self.settle(level, cur)
        if bad:
            return self.violated(level, cur, *bad)
        cur.done = hi
        return None

    def expand(self, frontier: np.ndarray, lo: int, hi: int, depth: int) -> Parts:
        """The successors of frontier rows lo..hi-1, in the reference engine's order
        (a part a worker), and how many each action made."""
        self.expanded = 0
        cuts = np.linspace(lo, hi, self.workers + 1).astype(int).tolist()
        reached = [self.reached.copy() for _ in range(self.workers)]
        hint = self.per_row * 1.25

        def part(t: int) -> tuple[Candidates, np.ndarray]:
            made = batch.expand(
                self.kernel, frontier, cuts[t], cuts[t + 1], self.abandon, self._done, reached=reached[t], per_row=hint
            )
            return made, np.bincount(made.action, minlength=len(self.coverage))

        parts = self.wait([self.pool.submit(part, t) for t in range(self.workers)], depth, len(frontier) - lo)
        for r in reached:
            self.reached |= r
        return Parts([made for made, _ in parts], sum(counts for _, counts in parts))

    def abandon(self) -> bool:
        return self.control.stop.asked or self.over or self.halt.is_set()

    def _done(self, rows: int) -> None:
        self.expanded += rows
        if over_memory(self.local.max_memory):
            self.over = True

    def settle(self, level: Parts, cur: Cursor) -> tuple[int, int, int] | None:
        """Insert a segment's candidates into the visited shards and add the
        new states to the cursor's next level, their links kept; or the
        first violation among them (candidate position, new states before
        it, invariant), if any."""
        if self.workers == 1:
            winners = self.winners(level.whole.keys, 0)
        else:
            owners = self.wait([self.pool.submit(shard_of, p.keys, self.workers) for p in level.parts])
            starts = level.starts.tolist()

            def shard(s: int) -> np.ndarray:
                mine = [np.flatnonzero(owner == s) for owner in owners]
                keys = np.concatenate([p.keys[m] for p, m in zip(level.parts, mine)])
                places = np.concatenate([m + start for m, start in zip(mine, starts)])
                return places[self.winners(keys, s)]

            winners = np.sort(np.concatenate(self.wait([self.pool.submit(shard, s) for s in range(self.workers)])))
        taken = self.take(level, winners)
        first, rows = taken.violation, taken.rows
        if first is not None:
            new = np.arange(first[0] + 1)  # the new states up to the violating one
            if self.deferred:  # a provisional winner a run holds is not new
                self.resolve(cur)
                new = np.append(np.flatnonzero(~self.in_runs(level.gather("keys", winners[: first[0]]))), first[0])
            if self.spec.symmetric:
                self.represented += self.class_sizes(rows[new])
            return int(winners[first[0]]), len(new) - 1, first[1]
        self.represented += taken.sizes
        cur.next_rows.append(rows)
        cur.next_links.append(taken.links)
        if taken.keys is not None:
            cur.next_keys.append(taken.keys)
        if not self.deferred:
            cur.resolved = len(cur.next_rows)
        if self.recorder is not None:
            whole = level.whole
            if cur.depth:
                self.recorder.add_transitions(
                    self.kept(whole.parents + cur.first), self.kept(whole.keys), self.kept(whole.instance)
                )
            self.recorder.add_states(self.kept(whole.keys[winners]), self.kept(self.kernel.labels(rows)))
        self.distinct += len(winners)
        self.generated += len(level)
        if cur.depth:
            self.coverage += level.action_counts
        return None

    def take(self, level: Parts, winners: np.ndarray) -> Taken:
        """A segment's new states (`winners`: places among its candidates,
        ascending): their rows, parent links and keys, each one array (on
        disk once frontiers are), each worker filling the slice of its own
        part's new states, checking their invariants and counting the
        states their classes hold (unless the level is still provisional).
        Done on the main thread, these gathers and writes kept it busy 8% of
        a large search's wall time (RF=5, two records), the workers idle."""
        cuts = np.searchsorted(winners, level.starts).tolist()
        starts = level.starts.tolist()
        sized = self.spec.symmetric and not self.deferred
        n, disk = len(winners), self.spilled
        rows = self.blank((n, self.kernel.words), np.dtype(np.uint64), disk)
        links = self.blank((n,), LINK_DTYPE, disk)
        keys = self.blank((n, self.kernel.key_words), np.dtype(np.uint64), disk) if self.deferred else None

        def part(t: int) -> tuple[tuple[int, int], int]:
            made, lo, hi = level.parts[t], cuts[t], cuts[t + 1]
            at = winners[lo:hi] - starts[t]
            np.take(made.words, at, axis=0, out=rows[lo:hi])
            links["parent"][lo:hi], links["index"][lo:hi] = made.parents[at], made.index[at]
            if keys is not None:
                np.take(made.keys, at, axis=0, out=keys[lo:hi])
            row, which = self.kernel.check(rows, lo, hi)
            sizes = self.kernel.class_sizes(rows, lo, hi) if sized and row < 0 else 0
            return (row, which), sizes

        done = self.wait([self.pool.submit(part, t) for t in range(len(level.parts))])
        violation = next((found for found, _ in done if found[0] >= 0), None)
        return Taken(rows, links, keys, sum(sizes for _, sizes in done), violation)

    def class_sizes(self, rows: np.ndarray) -> int:
        """The states the classes `rows` hold, summed (symmetry), on every worker."""
        return sum(self.on_workers(self.kernel.class_sizes, rows))

    def on_workers(self, kernel_call: Callable[[np.ndarray, int, int], Any], rows: np.ndarray) -> list:
        """`kernel_call(rows, lo, hi)` on each worker's share of `rows`, the results in order."""
        cuts = np.linspace(0, len(rows), self.workers + 1).astype(int).tolist()
        return self.wait([self.pool.submit(kernel_call, rows, cuts[t], cuts[t + 1]) for t in range(self.workers)])

    def winners(self, keys: np.ndarray, shard: int) -> np.ndarray:
        """Places (ascending) of the new states among a shard's candidates:
        the first occurrence of each key not visited; once keys are on
        disk, of each key not met before in the segment (provisionally:
        `resolve` settles them against the level and the runs)."""
        if self.deferred:
            return first_occurrences(keys)
        return np.flatnonzero(self.shards[shard].insert_new(keys))

    def in_runs(self, keys: np.ndarray) -> np.ndarray:
        """Which of `keys` a run holds (the shards' runs, not their memory)."""
        owner = shard_of(keys, self.workers)
        found = np.zeros(len(keys), dtype=np.bool_)
        for s, visited in enumerate(self.shards):
            mine = np.flatnonzero(owner == s)
            found[mine] = visited.in_runs(keys[mine])
        return found

    # ---- results ------------------------------------------------------------------
    def properties(self) -> CheckResult:
        """Every invariant holds: now the temporal properties, on the graph recorded."""
        kernel = self.kernel
        keys = kernel.keys(
            np.array([kernel.pack(s) for s in self.inits], dtype=np.uint64).reshape(len(self.inits), kernel.words)
        )
        distinct_inits = [self.inits[i] for i in first_occurrences(keys).tolist()]
        assert self.recorder is not None, "properties are checked on the graph recorded"
        info: dict = {}
        found, counts = check_properties(
            self.spec,
            self.recorder,
            distinct_inits,
            lambda state: kernel.keys(kernel.pack(state).reshape(1, -1))[0],
            info,
        )
        if found is None:
            result = self.result("holds", None, self.depth, [])
        else:
            result = self.result("violated", found[0], self.depth, found[1])
            result.loop = found[2]
        result.run_info.update(info)
        result.triggers = counts
        return result

    def violated(self, segment: Parts, cur: Cursor, position: int, new_before: int, which: int) -> CheckResult:
        """The reference engine stops at the violating state (candidate
        `position` of this segment, its new state number `new_before`): it
        had generated the candidates up to it, and met the new states before it."""
        level = segment.whole
        invariant = self.spec.to_check()[which]
        self.distinct += new_before + 1
        self.generated += position + 1
        if cur.depth:
            self.coverage += np.bincount(level.action[: position + 1], minlength=len(self.coverage))
        init, indices = self.path(cur.depth, int(level.parents[position]), int(level.index[position]))
        path = Path(init, tuple(indices))
        result = self.result(
            "violated",
            invariant,
            cur.depth + 1,
            replay_path(self.spec, self.kernel, path, level.words[position], invariant),
        )
        result.path = path
        return result

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
        memory = {
            "visited_bytes": sum(s.nbytes for s in self.shards),
            "visited_disk_bytes": sum(s.disk_bytes for s in self.shards),
            "links_bytes": sum(x.nbytes for x in self.links),
            "frontier_bytes_peak": self.frontier_peak,
        }
        goals = {} if trace else dict(zip(self.spec.goals, self.reached.astype(bool).tolist()))
        spilling = {}
        if self.local.max_memory is not None:
            spilling = dict(
                memory_limit=self.local.max_memory,
                spilled=self.spilled,
                segments=self.segments,
                visited_flushes=self.visited_flushes,
            )
        return compiled_result(self, verdict, invariant, depth, trace, goals, memory=memory, **spilling)
