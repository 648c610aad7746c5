"""The fast engine: breadth-first search over packed states with the
compiled kernel, on W threads, reporting exactly what the reference engine
(bfs.py) reports.

A level is a frontier of packed rows in the order the reference engine
meets those states, expanded in segments of consecutive rows (one segment
a level unless memory is short). Each thread expands a contiguous slice of
a segment (the kernel runs without the GIL), so the threads' successors,
one slice after the other, are the reference engine's candidates in its
own order. Each key belongs to one shard (high bits of the key, below the
bucket's: TLC's MultiFPSet); a shard's thread inserts its candidates, in
that order, into its visited set, so the first occurrence of a new state
wins as in the reference engine, whatever the segments. The winners, in
candidate order, are the next frontier; invariants are checked on them in
slices, and the first violation in that order is the one the reference
engine meets first, with the same distinct and generated counts and
coverage at that point.

Nothing a level holds is a Python object a state: a row of words, a key
(8 or 16 bytes), and a parent link of 6 bytes (the parent's row in the
previous level, the successor's index under it). A counterexample is
rebuilt from the links by replaying successor indices through the
interpreted spec, checked to arrive at the very state the kernel packed,
and re-validated by replay (trace.validate).

Between segments the search is at a safe point: what it has settled is
intact. There it writes a checkpoint when one is due, stops when a
signal asked it to, and sizes the next segment to the memory left; when
that is short it first moves the frontier and the parent links to disk
(spill.py), then the visited set's keys (sorted runs, visited.py), and
stops with a checkpoint only when a segment of the smallest size no
longer fits beside what cannot move.

Once a level no longer fits in one segment, the visited set's keys move
to disk and duplicates are detected late, a level at a time (Stern and
Dill's and Korf's delayed duplicate detection): a segment's winners are
the first occurrence of each of its keys, the next level's rows
*provisionally*; `resolve` sorts the level's keys once (a range of buckets
at a time) and merges them against the sorted runs in one sequential
pass, keeps the first occurrence of each key no run holds, writes those
keys as a new run, and takes back the other rows (a state met earlier in
the level, or in an earlier level: it passed every invariant then, so a
provisional row never hides a violation). Before, a segment merged its
keys into the whole set in memory: a copy of the set a segment. A search
resolves at the end of each level, before a checkpoint or a stop, and at a
violation (whose counts are then exact), so everything it reports is what
the per-segment test would have given.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..lifetime import Stopped
from ..memory import anon_rss, release_freed
from ..result import CheckResult, symmetry_info
from ..spec import Spec
from ..trace import replay_path
from .control import Control, check_identity, out_of_memory, over_memory
from .kernel import Kernel
from .liveness import Recorder, check_properties
from .options import CheckOptions
from .progress import Progress, progress_counts
from .storage import batch
from .storage.batch import LINK_DTYPE, Abandoned, Candidates, Parts, run_info
from .storage.checkpoint import Checkpoints
from .storage.spill import blank_on_disk, on_disk, to_disk
from .storage.visited import BUCKET_BITS, Visited, first_occurrences, reshard, shard_of

MIN_SEGMENT = 1 << 12  # frontier rows: a level is not split finer
MANY_SEGMENTS = 4  # more segments than this for the rest of a level: move the visited set to disk
MERGE_SHARE = 16  # once on disk, keys in memory beyond this many segments' candidates move there too
MIN_BUDGET = 16 << 20  # bytes a shard's sort of a level's keys may take, however little memory is left
VISITED_SHARE = 0.25  # of the memory limit, what the visited set's keys may keep in memory when it is short
PEAK_PER_CANDIDATE = 3.0  # a candidate's bytes at a segment's peak, in its own sizes (buffer growth, joins, sorts)


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


@dataclass
class Cursor:
    """Where a search stands: `depth` levels complete, expanding `frontier`
    (the states of the last of them), whose first `done` rows are expanded
    and their new states settled into `next_rows` and `next_links`."""

    depth: int
    frontier: np.ndarray
    done: int = 0
    first: int = 0  # the number of the frontier's first state (in the order states were found)
    next_rows: list[np.ndarray] = field(default_factory=list)
    next_links: list[np.ndarray] = field(default_factory=list)
    resolved: int = 0  # next_rows[:resolved] are new; the rest are until a run holds their key
    next_keys: list[np.ndarray] = field(default_factory=list)  # the keys of next_rows[resolved:]


@dataclass
class Taken:
    """A segment's new states: their rows, links and keys (None unless
    provisional), the states their classes hold (0 if not counted yet),
    and the (row, invariant) of the first that violates one, if any."""

    rows: np.ndarray
    links: np.ndarray
    keys: np.ndarray | None
    sizes: int
    violation: tuple[int, int] | None


class Search:
    def __init__(
        self,
        spec: Spec,
        kernel: Kernel,
        options: CheckOptions,
        checkpoints: Checkpoints | None,
        pool: ThreadPoolExecutor,
        progress: Progress | None,
        control: Control,
    ):
        self.spec, self.kernel, self.options, self.checkpoints, self.pool = spec, kernel, options, checkpoints, pool
        self.local = options.local
        workers = self.workers = options.local.workers
        self.progress, self.control = progress, control
        self.started = time.perf_counter()
        self.shards = [Visited(kernel.key_words) for _ in range(workers)]
        self.links: list[np.ndarray] = []  # links[d]: (parent, index) of each state of level d
        self.coverage = np.zeros(kernel.action_count, dtype=np.int64)
        self.reached = np.zeros(kernel.goal_count, dtype=np.uint8)  # goals some step reached
        self.distinct = self.generated = 0
        self.represented = 0  # with symmetry: the states the classes visited hold
        self.frontier_peak = 0
        self.expanded = 0  # rows of the current segment expanded so far
        self.halt = threading.Event()  # Ctrl-C where no signal handler turns it into a request
        self.over = False  # the memory limit was passed during an expansion
        self.spilled = False  # frontiers and links live on disk from now on
        self.segments = 0
        self.visited_flushes = 0  # times the visited set's keys in memory moved to disk
        self.last_candidates = 0  # successors the last segment had
        self.deferred = False  # keys are on disk: duplicates there are detected late
        self.per_row = 4.0  # successors a frontier row, the most a segment had
        self.candidate_bytes = 8 * (kernel.words + kernel.key_words) + 8 + 2 + 1 + 2
        # temporal properties: the behaviour graph, recorded as the search goes
        self.recorder = Recorder(kernel.key_words, self.local.max_memory) if spec.checked_properties() else None

    # ---- the search ---------------------------------------------------------------
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
        hi = self.segment_end(cur)
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

    def resolve(self, cur: Cursor) -> None:
        """Delayed duplicate detection: keep, of the next level's
        provisional rows, the first occurrence of each state no run holds
        (each shard sorts its keys of them once and merges them against its
        runs, in ranges of buckets that fit the memory left), the new keys
        becoming a run; take back the others."""
        if cur.resolved == len(cur.next_rows):
            return
        keep = np.zeros(sum(len(k) for k in cur.next_keys), dtype=np.bool_)
        limit = self.local.max_memory
        budget = None if limit is None else max(MIN_BUDGET, limit - anon_rss()) // self.workers
        d = self.local.spill_dir
        self.wait(
            [
                self.pool.submit(v.add_level, cur.next_keys, keep, self.workers, s, budget, d)
                for s, v in enumerate(self.shards)
            ]
        )
        r = cur.resolved
        rows, links, sizes = self.assembled(cur.next_rows[r:], cur.next_links[r:], keep, sized=self.spec.symmetric)
        self.distinct -= len(keep) - len(rows)
        self.represented += sizes  # counted here, not by settle: a provisional row may be no new class
        cur.next_rows[r:], cur.next_links[r:] = [rows], [links]
        cur.next_keys.clear()
        cur.resolved = len(cur.next_rows)
        release_freed()

    def wait(self, futures: list, depth: int = 0, queue: int = 0) -> list:
        """The futures' results in order, reporting progress while they run;
        an uncaught Ctrl-C stops the threads at their next chunk."""
        try:
            while wait(futures, timeout=1.0).not_done:
                if queue:
                    self.report(depth, queue - self.expanded)
        except KeyboardInterrupt:
            self.halt.set()
            wait(futures)
            raise
        return [f.result() for f in futures]

    def report(self, depth: int, queue: int) -> None:
        if self.progress:
            self.progress(progress_counts(self.distinct, self.generated, depth, queue, self.started))

    # ---- safe points: checkpoints, signals, memory ---------------------------------
    def safe_point(self, cur: Cursor) -> None:
        """Between segments: checkpoint when one is due, stop when asked."""
        stop, checkpoints = self.control.stop, self.checkpoints
        if stop.asked:
            if checkpoints and self.progress:  # on a large level this takes a while: say why it has not ended
                self.progress({"note": "stopping: writing a checkpoint (a second signal exits at once, without it)"})
            self.resolve(cur)
            if checkpoints:
                self.checkpoint(cur)
            raise stop.stopped(**self.counts(cur))
        if checkpoints and checkpoints.due():
            self.resolve(cur)
            self.checkpoint(cur)

    def segment_end(self, cur: Cursor) -> int:
        """Where the next segment ends: as far as the memory left allows,
        after moving what can wait to disk if that is too little."""
        rest = len(cur.frontier) - cur.done
        if self.local.max_memory is None:
            return len(cur.frontier)
        per_row = self.per_row * 1.25 * self.candidate_bytes * PEAK_PER_CANDIDATE
        room = self.local.max_memory - anon_rss()
        if room < per_row * rest and not self.spilled:
            self.spill(cur)
            room = self.local.max_memory - anon_rss()
        # a level split into segments is settled once, at its end, against keys on disk (a test-and-set
        # a segment would merge its keys into the whole set in memory: a copy of the set a segment)
        split = room < per_row * rest and self.recorder is None and not self.deferred
        in_memory = sum(s.memory_bytes for s in self.shards)
        short = room < per_row * rest / MANY_SEGMENTS and (
            in_memory > self.local.max_memory * VISITED_SHARE or room < per_row * min(rest, MIN_SEGMENT)
        )
        # a segment merges its new keys into the keys in memory, so once the set is on disk
        # those stay a few segments' worth: merging costs then what the segment does
        costly = (
            any(s.runs for s in self.shards)
            and sum(s.memory_keys for s in self.shards) > MERGE_SHARE * self.last_candidates
        )
        if short or costly or split:
            self.flush_visited(cur)
            room = self.local.max_memory - anon_rss()
        if room < per_row * min(rest, MIN_SEGMENT):
            release_freed()  # freed blocks still resident (a fragmented heap) are room, not use
            room = self.local.max_memory - anon_rss()
        if room < per_row * min(rest, MIN_SEGMENT):
            raise self.memory_stop(cur, "a segment of the frontier no longer fits beside what must stay in memory")
        return cur.done + min(rest, max(MIN_SEGMENT, int(room // per_row)))

    def flush_visited(self, cur: Cursor) -> None:
        """Move each shard's keys in memory to a sorted run on disk (merging
        runs of like size, so they stay few), and give the memory back;
        from then on duplicates in the runs are detected late."""
        self.resolve(cur)
        d = self.local.spill_dir

        def move(s: int) -> None:
            self.shards[s].flush(directory=d)
            self.shards[s].merge_runs(directory=d)

        self.wait([self.pool.submit(move, s) for s in range(self.workers)])
        self.visited_flushes += 1
        self.deferred = self.recorder is None  # the behaviour graph needs each segment's exact winners
        release_freed()

    def spill(self, cur: Cursor) -> None:
        """From now on frontiers and parent links live on disk."""
        d = self.local.spill_dir
        self.links = [to_disk(x, d) for x in self.links]
        if self.recorder is not None:
            self.recorder.moved(lambda a: to_disk(a, d))
        cur.frontier = to_disk(cur.frontier, d)
        cur.next_rows = [to_disk(x, d) for x in cur.next_rows]
        cur.next_links = [to_disk(x, d) for x in cur.next_links]
        cur.next_keys = [to_disk(x, d) for x in cur.next_keys]
        self.spilled = True

    def kept(self, a: np.ndarray) -> np.ndarray:
        return to_disk(a, self.local.spill_dir) if self.spilled else a

    def assembled(
        self, rows: list[np.ndarray], links: list[np.ndarray], keep: np.ndarray | None = None, sized: bool = False
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Parts of a level's rows and links as one array each, of the rows
        `keep` marks (over all parts; None: all), on disk where frontiers
        are, and the states their classes hold (if `sized`). Each part is
        copied, and its classes sized, by a worker: one pass, in parallel,
        where filtering the parts and then joining them on the main thread
        read and wrote a wide level twice with the workers idle."""
        starts = np.cumsum([0] + [len(p) for p in rows]).tolist()
        masks = [None if keep is None else keep[a:b] for a, b in zip(starts, starts[1:])]
        if len(rows) == 1 and keep is None and (on_disk(rows[0]) or not self.spilled):
            return rows[0], links[0], 0
        counts = [len(p) if m is None else int(np.count_nonzero(m)) for p, m in zip(rows, masks)]
        at = np.cumsum([0] + counts).tolist()
        disk = self.spilled or any(on_disk(p) for p in rows)
        out_rows = self.blank((at[-1], self.kernel.words), np.dtype(np.uint64), disk)
        out_links = self.blank((at[-1],), LINK_DTYPE, disk)

        def copy(i: int) -> int:
            into_rows, into_links = out_rows[at[i] : at[i + 1]], out_links[at[i] : at[i + 1]]
            mask = masks[i]
            if mask is None:
                into_rows[:], into_links[:] = rows[i], links[i]
            else:
                np.compress(mask, rows[i], axis=0, out=into_rows)
                np.compress(mask, links[i], axis=0, out=into_links)
            return self.kernel.class_sizes(into_rows, 0, len(into_rows)) if sized else 0

        return out_rows, out_links, sum(self.wait([self.pool.submit(copy, i) for i in range(len(rows))]))

    def blank(self, shape: tuple[int, ...], dtype: np.dtype, disk: bool) -> np.ndarray:
        return blank_on_disk(shape, dtype, self.local.spill_dir) if disk else np.empty(shape, dtype)

    def memory_stop(self, cur: Cursor, what: str) -> Stopped:
        self.resolve(cur)
        if self.checkpoints:
            self.checkpoint(cur)
        return out_of_memory(self.local.max_memory, self.checkpoints, what, **self.counts(cur))

    def counts(self, cur: Cursor) -> dict:
        return {
            "distinct": self.distinct,
            "generated": self.generated,
            "depth": cur.depth,
            "elapsed_s": time.perf_counter() - self.started,
            "checkpoint": str(self.checkpoints.dir) if self.checkpoints else None,
        }

    @cached_property
    def identity(self) -> dict:
        k = self.kernel
        return self.options.identity(
            self.spec, "fast", k.source["spec"] + k.source["glue"] + f"\nkeys {k.key_words} {k.fingerprint_bits}"
        )

    def checkpoint(self, cur: Cursor) -> None:
        buckets, sizes = [], []
        for b in range(1 << BUCKET_BITS):
            for s in self.shards:
                parts = s.bucket_parts(b)
                buckets += parts
                sizes.append(sum(len(p) for p in parts))
        state = {
            "identity": self.identity,
            "depth": cur.depth,
            "done": cur.done,
            "first": cur.first,
            "levels": len(self.links),
            "distinct": self.distinct,
            "generated": self.generated,
            "represented": self.represented,
            "coverage": self.coverage.tolist(),
            "reached": self.reached.tolist(),
            "elapsed_s": time.perf_counter() - self.started,
            "workers": self.workers,
            "bucket_sizes": sizes,
            "per_row": self.per_row,
            "fingerprint_bits": self.kernel.fingerprint_bits,
        }
        empty_rows, empty_links = np.empty((0, self.kernel.words), np.uint64), np.empty(0, LINK_DTYPE)
        fixed = {f"links-{d}": x for d, x in enumerate(self.links)}
        if self.recorder is not None:  # its arrays never change once made: each is written once
            recorded = self.recorder.arrays()
            state["recorded"] = {name: len(p) for name, p in recorded.items()}
            fixed.update({f"graph-{name}-{i}": x for name, p in recorded.items() for i, x in enumerate(p)})
        assert self.checkpoints is not None, "saved only where checkpoints are written"
        self.checkpoints.save(
            state,
            {
                "visited": buckets or [np.empty((0, self.kernel.key_words), np.uint64)],
                "frontier": cur.frontier,
                "next_rows": [empty_rows, *cur.next_rows],
                "next_links": [empty_links, *cur.next_links],
            },
            fixed=fixed,
        )

    def restore(self) -> Cursor:
        checkpoints = self.checkpoints
        assert checkpoints is not None, "restored only from a checkpoint"
        state, arrays = checkpoints.load()
        check_identity(state["identity"], self.identity, str(checkpoints.dir))
        keys, sizes, old = arrays["visited"], state["bucket_sizes"], state["workers"]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        # a visited set that would take much of the memory limit is resumed on disk, as it was left
        big = self.local.max_memory is not None and keys.nbytes > self.local.max_memory * VISITED_SHARE
        self.shards = reshard(
            [keys[starts[b * old] : starts[(b + 1) * old]] for b in range(1 << BUCKET_BITS)],
            self.workers,
            self.local.spill_dir,
            on_disk=big,
        )
        self.deferred = big and self.recorder is None
        self.links = [arrays[f"links-{d}"] for d in range(state["levels"])]
        if self.recorder is not None:
            self.recorder.load(
                {name: [arrays[f"graph-{name}-{i}"] for i in range(n)] for name, n in state["recorded"].items()}
            )
        self.distinct, self.generated, self.represented = state["distinct"], state["generated"], state["represented"]
        self.coverage = np.array(state["coverage"], dtype=np.int64)
        self.reached = np.array(state["reached"], dtype=np.uint8)
        self.per_row = state["per_row"]
        self.started = time.perf_counter() - state["elapsed_s"]
        return Cursor(
            state["depth"],
            arrays["frontier"],
            state["done"],
            state["first"],
            [arrays["next_rows"]],
            [arrays["next_links"]],
            resolved=1,
        )

    # ---- results ------------------------------------------------------------------
    def properties(self) -> CheckResult:
        """Every invariant holds: now the temporal properties, on the graph recorded."""
        kernel = self.kernel
        keys = kernel.keys(
            np.array([kernel.pack(s) for s in self.inits], dtype=np.uint64).reshape(len(self.inits), kernel.words)
        )
        distinct_inits = [self.inits[i] for i in first_occurrences(keys).tolist()]
        assert self.recorder is not None, "properties are checked on the graph recorded"
        found, counts = check_properties(
            self.spec, self.recorder, distinct_inits, lambda state: kernel.keys(kernel.pack(state).reshape(1, -1))[0]
        )
        if found is None:
            result = self.result("holds", None, self.depth, [])
        else:
            result = self.result("violated", found[0], self.depth, found[1])
            result.loop = found[2]
        result.triggers = counts
        return result

    def violated(self, segment: Parts, cur: Cursor, position: int, new_before: int, which: int) -> CheckResult:
        """The reference engine stops at the violating state (candidate
        `position` of this segment, its new state number `new_before`): it
        had generated the candidates up to it, and met the new states before it."""
        level = segment.whole
        invariant = self.spec.checked_invariants()[which]
        self.distinct += new_before + 1
        self.generated += position + 1
        if cur.depth:
            self.coverage += np.bincount(level.action[: position + 1], minlength=len(self.coverage))
        init, path = self.path(cur.depth, int(level.parents[position]), int(level.index[position]))
        trace = replay_path(self.spec, self.kernel, self.inits[init], path, level.words[position], invariant)
        return self.result("violated", invariant, cur.depth + 1, trace)

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
        info = run_info(self.kernel, self.distinct, self.generated)
        if self.spec.symmetric:
            info["symmetry"] = symmetry_info(self.distinct, self.represented)
        if self.local.max_memory is not None:
            info.update(
                memory_limit=self.local.max_memory,
                spilled=self.spilled,
                segments=self.segments,
                visited_flushes=self.visited_flushes,
            )
        return CheckResult(
            verdict,
            invariant,
            self.distinct,
            self.generated,
            depth,
            time.perf_counter() - self.started,
            dict(zip(self.spec.coverage_labels, self.coverage.tolist())),
            trace,
            goals,
            memory,
            info,
        )
