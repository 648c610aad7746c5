"""The fast search's state, which every part of it shares: where it
stands (Cursor, which saves and restores itself), what a segment took
(Taken), and the structures, counts and threads of a search
(SearchState), with the wait on the threads that reports progress."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...spec import Spec
from ..control import Control
from ..kernel import Kernel
from ..liveness import Recorder
from ..options import CheckOptions
from ..progress import Progress, progress_counts
from ..storage.batch import LINK_DTYPE
from ..storage.checkpoint import Arrays, Checkpoints
from ..storage.visited import Visited


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

    def saved(self, words: int) -> tuple[dict[str, int], dict[str, Any]]:
        """What a checkpoint holds of it, once resolved (its next rows all
        new): its place, and its frontier and next level as arrays."""
        place = {"depth": self.depth, "done": self.done, "first": self.first}
        empty_rows, empty_links = np.empty((0, words), np.uint64), np.empty(0, LINK_DTYPE)
        arrays = {
            "frontier": self.frontier,
            "next_rows": [empty_rows, *self.next_rows],
            "next_links": [empty_links, *self.next_links],
        }
        return place, arrays

    @staticmethod
    def restored(place: dict[str, Any], arrays: Arrays) -> Cursor:
        return Cursor(
            place["depth"],
            arrays["frontier"],
            place["done"],
            place["first"],
            [arrays["next_rows"]],
            [arrays["next_links"]],
            resolved=1,
        )


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


class SearchState:
    """What every part of the search reads and counts."""

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
        self.segments = 0
        self.last_candidates = 0  # successors the last segment had
        self.per_row = 4.0  # successors a frontier row, the most a segment had
        self.halt = threading.Event()  # Ctrl-C where no signal handler turns it into a request
        # temporal properties: the behaviour graph, recorded as the search goes
        self.recorder = (
            Recorder(kernel.key_words, self.local.max_memory, self.local.spill_dir)
            if spec.checked_properties()
            else None
        )

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
