"""The fast search's memory policy: between segments, how much of the
frontier the next one may expand in the memory left, and what moves to
disk first when that is short (the frontier and parent links, then the
visited set's keys, whose duplicates are then detected late: `resolve`).
A search that cannot go on within the limit raises NoRoom, and stops
with a checkpoint (saved.py)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...memory import anon_rss, release_freed
from ..storage.batch import LINK_DTYPE
from ..storage.spill import blank_on_disk, on_disk, to_disk
from .state import Cursor, SearchState

MIN_SEGMENT = 1 << 12  # frontier rows: a level is not split finer
MANY_SEGMENTS = 4  # more segments than this for the rest of a level: move the visited set to disk
MERGE_SHARE = 16  # once on disk, keys in memory beyond this many segments' candidates move there too
MIN_BUDGET = 16 << 20  # bytes a shard's sort of a level's keys may take, however little memory is left
VISITED_SHARE = 0.25  # of the memory limit, what the visited set's keys may keep in memory when it is short
PEAK_PER_CANDIDATE = 3.0  # a candidate's bytes at a segment's peak, in its own sizes (buffer growth, joins, sorts)


class NoRoom(Exception):
    """Not even a segment of the smallest size fits beside what must stay in memory."""


class MemoryPolicy(SearchState):
    """The search's decisions on memory, and the moves they make."""

    over = False  # the memory limit was passed during an expansion
    spilled = False  # frontiers and links live on disk from now on
    visited_flushes = 0  # times the visited set's keys in memory moved to disk
    deferred = False  # keys are on disk: duplicates there are detected late

    @cached_property
    def candidate_bytes(self) -> int:
        """A candidate's bytes: its row, key, parent, index, action and instance."""
        return 8 * (self.kernel.words + self.kernel.key_words) + 8 + 2 + 1 + 2

    def visited_on_disk(self, nbytes: int) -> bool:
        """Whether a visited set of `nbytes` resumes on disk: one that would take much of the limit."""
        return self.local.max_memory is not None and nbytes > self.local.max_memory * VISITED_SHARE

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
            raise NoRoom("a segment of the frontier no longer fits beside what must stay in memory")
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
