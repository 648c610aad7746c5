"""The Spark engine's driver: Spark started while the kernel loads, a job
a level (the first, small levels on the driver's own threads), the
counts, the verdict and the counterexample (its path replayed)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, nullcontext
from functools import partial
from typing import Any

import numpy as np

from ...lifetime import Stopped
from ...result import CheckResult
from ...spec import Spec
from ..control import Control
from ..kernel import Kernel
from ..progress import Progress, progress_counts
from ..storage.batch import compiled_result
from ..storage.visited import shard_of
from .environment import DRIVER_STATES, MEMORY_KEYS, STATE_DIR, EngineUnavailable, loopback, parallelism
from .session import cancel_on_stop, scratch_dir, spark_context
from .tasks import (
    INDEX_BITS,
    PHASES,
    Shard,
    _before,
    _expand,
    _rank,
    _save,
    _settle,
    _transitions_before,
    carried,
    link_at,
    plans,
    splitters_of,
)

# ---- the driver ------------------------------------------------------------------


def check(
    spec: Spec,
    load_kernel: Callable[[], Kernel],
    *,
    master: str | None = None,
    partitions: int | None = None,
    settings: dict[str, str] | None = None,
    progress: Progress | None = None,
    control: Control | None = None,
) -> CheckResult:
    """Explore every reachable state of `spec` on Spark: `master` as
    spark-submit's --master (default local[*], or spark-submit's own when
    run under it), `partitions` shards (default: Spark's parallelism),
    `settings` Spark configuration (spark.executor.memory, ...). Spark
    starts in a thread while the kernel loads (`load_kernel`) and the
    driver runs the first, small levels itself. A stop request
    (`control`) cancels the running job and raises Stopped."""
    started = time.perf_counter()
    control = control or Control()
    settings = settings or {}
    shared = settings.get(STATE_DIR)
    note = progress and (lambda text: progress({"note": text}))

    def need_shared(where: str) -> None:
        if shared is None and not loopback(where):
            raise EngineUnavailable(
                f"a Spark check keeps its shards' state in files every executor must see: "
                f"on master {where}, give a directory on storage they share with --spark-conf {STATE_DIR}=DIR"
            )

    if master:
        need_shared(master)  # before Spark starts: said at once
    with ExitStack() as spark, ThreadPoolExecutor(2) as pool, scratch_dir() as scratch, control.stop.polling():
        kernel = pool.submit(load_kernel)
        context = pool.submit(
            spark.enter_context,
            spark_context(
                master, type(spec).__module__.split(".")[0], settings, scratch=scratch, note=note, stop=control.stop
            ),
        )
        if not master:
            need_shared(context.result().master)  # spark-submit's
        shards = partitions or parallelism(master, settings) or context.result().defaultParallelism
        with scratch_dir(shared) if shared else nullcontext(scratch) as root:
            search = Search(
                context,
                spec,
                kernel.result(),
                shards,
                root,
                started,
                progress,
                control,
                int(settings.get(DRIVER_STATES, Search.LOCAL_BEFORE_SPARK)),
            )
            try:
                result = search.run()
            finally:
                search.close()
        sc = context.result()
        result.run_info.update(
            {
                "master": sc.master,
                "partitions": shards,
                "spark_memory": {k: sc.getConf().get(k) for k in MEMORY_KEYS if sc.getConf().get(k)},
            }
        )
        return result


class _Held:
    """The kernel where a broadcast would be, for levels the driver runs."""

    def __init__(self, value: Kernel):
        self.value = value


def _warm(kernel_bc: Any, _index: int) -> int:
    """Load the kernel in a Python worker (imports, machine code) before its first level."""
    return kernel_bc.value.words


class Search:
    """The driver's side: a job a level, the counts, the verdict. While
    Spark starts and its Python workers load the kernel, or while levels
    are small, the driver runs a level's tasks itself, on threads, on the
    same files."""

    LOCAL_STATES = 10_000  # a level this small costs less here than a job's round trip
    LOCAL_BEFORE_SPARK = 1_000_000  # a level the driver runs while Spark is not ready (its memory: ~0.5 GB)
    RANK_INTERVAL = 4_000_000  # links a rank task merges (32 MB), where a level has more than one interval
    # (both are `driver_states` at most: 0 sends every level to the executors)

    def __init__(
        self,
        context: Future,
        spec: Spec,
        kernel: Kernel,
        shards: int,
        root: str,
        started: float,
        progress: Progress | None,
        control: Control,
        driver_states: int = LOCAL_BEFORE_SPARK,
    ):
        self.context, self.spec, self.kernel, self.shards, self.root = context, spec, kernel, shards, root
        self.small, self.before_spark = min(self.LOCAL_STATES, driver_states), driver_states
        self.started, self.progress, self.control = started, progress, control
        self.sc: Any = None  # the SparkContext, once Spark has started
        self.kernel_bc: Any = None  # the kernel, broadcast to executors
        self.warm: threading.Thread | None = None
        self.watch: Any = None  # cancels the running job when a stop is asked
        self.symmetric = bool(spec.symmetric)
        self.coverage = np.zeros(len(spec.coverage_labels), dtype=np.int64)
        self.reached = np.zeros(kernel.goal_count, np.uint8)
        self.distinct = self.represented = self.depth = 0
        self.generated = 0
        self.seconds = np.zeros(len(PHASES))
        self.written = 0
        self.jobs = 0.0  # seconds the driver waited for jobs (tasks, scheduling, round trips)
        self.local_levels, self.here = 0, False  # levels the driver ran; whether it ran the last tasks

    def spark(self, wait: bool) -> bool:
        """Whether Spark is up and its workers warm (waiting for it if `wait`)."""
        if self.sc is None and (wait or self.context.done()):
            try:
                self.sc = self.context.result()
            except Stopped:  # while Spark started: what the driver did meanwhile
                raise self.stopped() from None
            self.watch = cancel_on_stop(self.sc, self.control)
            self.watch.__enter__()
            self.kernel_bc = self.sc.broadcast(self.kernel)
            self.warm = threading.Thread(target=self._warm_up, daemon=True)
            self.warm.start()
        if self.warm is not None and (wait or not self.warm.is_alive()):
            self.warm.join()
            return True
        return False

    def _warm_up(self) -> None:
        """A job that loads the kernel in the Python workers; its failure
        (a stop, a worker that cannot start) is the next level's to report."""
        try:
            self.sc.parallelize(range(self.shards), self.shards).map(partial(_warm, self.kernel_bc)).collect()
        except Exception:
            pass

    def close(self) -> None:
        if self.watch is not None:
            self.watch.__exit__()
        if self.kernel_bc is not None:
            self.kernel_bc.unpersist()

    def tasks(self, fn: Callable, args: tuple, items: list, size: int) -> list:
        """fn(kernel, *args, item) for each item (a shard's), for a level of
        `size` states: on Spark, or here if it is small or Spark is not ready."""
        self.here = size <= self.small or (size <= self.before_spark and not self.spark(wait=False))
        if self.here:
            with ThreadPoolExecutor(min(len(items), os.cpu_count() or 1)) as threads:  # the kernel releases the GIL
                return list(threads.map(partial(fn, _Held(self.kernel), *args), items))
        self.spark(wait=True)
        return self.job(partial(fn, self.kernel_bc, *args), items)

    def job(self, fn: Any, items: list) -> list:
        """One Spark job: `fn` on each item, item i in partition i."""
        t = time.perf_counter()
        try:
            return self.sc.parallelize(items, len(items)).map(fn).collect()
        except Exception:
            if self.control.stop.asked:
                raise self.stopped() from None
            raise
        finally:
            self.jobs += time.perf_counter() - t

    def stopped(self) -> Stopped:
        return self.control.stop.stopped(
            distinct=self.distinct,
            generated=self.generated,
            depth=self.depth,
            elapsed_s=time.perf_counter() - self.started,
        )

    def seed(self) -> list:
        """The initial states as level 0's candidates; (index, run files) a shard."""
        inits = self.spec.init_states()
        if len(inits) > 1 << INDEX_BITS:
            raise OverflowError(f"more than {1 << INDEX_BITS} initial states")
        self.inits = inits
        self.generated = len(inits)
        rows = np.array([self.kernel.pack(s) for s in inits], dtype=np.uint64).reshape(len(inits), self.kernel.words)
        keys = self.kernel.keys(rows)
        links = np.arange(len(inits), dtype=np.uint64)  # under one root of rank 0
        homes = shard_of(keys, self.shards)
        for d in ("v", "f", "l", "r", "c/0"):
            os.makedirs(f"{self.root}/{d}", exist_ok=True)
        for h in range(self.shards):
            sel = np.flatnonzero(homes == h)
            if len(sel):
                _save(f"{self.root}/c/0/init.{h}", *carried(rows[sel], links[sel], keys[sel], self.symmetric))
        return [(h, []) for h in range(self.shards)]

    def run(self) -> CheckResult:
        items = self.seed()
        self.size = len(self.inits)
        self.intervals: list[tuple[np.ndarray, np.ndarray]] = []  # a level's splitters and first ranks
        pending = None  # the previous level's expansion: its transitions and goals reached
        while True:
            if self.control.stop.asked:
                raise self.stopped()
            out = self.level(_settle, (self.depth, self.symmetric), items)
            self.written += sum(r[6] for r in out)
            violations = [r[4] for r in out if r[4] is not None]
            if violations:
                return self.violated(min(violations, key=lambda v: v[0]))
            if pending is not None:
                counts, reached = pending
                self.generated += int(counts.sum())
                self.coverage += counts
                self.reached |= reached
            self._forget(self.depth, [r[1] for r in out], items)
            items = [(r[0], r[1]) for r in out]
            new = self.size = sum(r[2] for r in out)
            if not new:
                break
            self.distinct += new
            self.represented += sum(r[3] for r in out)
            plans = self.ranks(np.sort(np.concatenate([r[5] for r in out])))
            expanded = self.level(
                _expand, (self.shards, self.depth, self.symmetric), [(i, runs, plans[i]) for i, runs in items]
            )
            self.written += sum(r[3] for r in expanded)
            pending = (sum(r[1] for r in expanded), np.bitwise_or.reduce([r[2] for r in expanded]))
            shutil.rmtree(f"{self.root}/r/{self.depth}", ignore_errors=True)
            self.depth += 1
            if self.progress:
                self.progress(progress_counts(self.distinct, self.generated, self.depth, new, self.started))
        return self.result(
            "holds", None, self.depth, [], goals=dict(zip(self.spec.goals, self.reached.astype(bool).tolist()))
        )

    def level(self, fn: Callable, args: tuple, items: list) -> list:
        """fn on each shard's item, for this level (a job, or the driver's
        threads), the results in shard order, their seconds counted."""
        out = sorted(self.tasks(fn, (self.root, *args), items, self.size), key=lambda r: r[0])
        self.local_levels += self.here and fn is _settle
        self.seconds += sum(r[-1] for r in out)
        return out

    def ranks(self, sample: np.ndarray) -> list[list[tuple]]:
        """Count the ranks of this level's states (one interval of links a
        task, bounded by splitters from the shards' samples) and return
        each shard's plan for reading its states' ranks back. A level
        gets as many intervals as it needs, at most one a shard: each
        task opens every shard's links and each shard every interval's
        places, so intervals cost file opens, not only parallelism."""
        intervals = min(self.shards, -(-self.size // self.RANK_INTERVAL))
        splitters = splitters_of(sample, intervals)
        os.makedirs(f"{self.root}/r/{self.depth}", exist_ok=True)
        counted = self.level(_rank, (self.shards, self.depth, splitters), list(range(intervals)))
        self.written += sum(r[2] for r in counted)
        bases, each = plans(np.array([r[1] for r in counted]))
        self.intervals.append((splitters, bases))
        return each

    def _forget(self, depth: int, runs: list[list[str]], before: list) -> None:
        """Delete what level `depth` consumed: its candidates, the frontier
        two levels back (a violation at depth+1 needs depth's and depth-1's),
        run files merged away."""
        shutil.rmtree(f"{self.root}/c/{depth}", ignore_errors=True)
        if depth >= 2:
            for i in range(self.shards):
                os.unlink(Shard(self.root, i).frontier(depth - 2))
        kept = {p for r in runs for p in r}
        for _i, old in before:
            for p in old:
                if p not in kept:
                    os.unlink(p)

    def violated(self, first: tuple) -> CheckResult:
        """The result at the first violation (smallest link) of level
        self.depth: the counts the reference engine has when it meets it."""
        from ...path import Path
        from ...trace import replay_path  # the driver's only: executors need not import the trace's fingerprints

        link, which, row = first
        shards = list(range(self.shards))
        before = self.tasks(_before, (self.root, self.depth, link, self.symmetric), shards, self.size)
        self.distinct += sum(n for n, _c in before) + 1
        self.represented += sum(c for _n, c in before) + (
            self.kernel.class_sizes(row.reshape(1, -1), 0, 1) if self.symmetric else 0
        )
        links = self.path_links(link)
        indices = [int(a) & ((1 << INDEX_BITS) - 1) for a in links]  # an initial state's link is its position
        if self.depth == 0:
            self.generated = indices[0] + 1
        else:
            counts = sum(
                self.tasks(_transitions_before, (self.root, self.depth - 1, links[-2], indices[-1]), shards, self.size)
            )
            self.generated += int(counts.sum())
            self.coverage += counts
        invariant = self.spec.to_check()[which]
        found = Path(indices[0], tuple(indices[1:]))
        result = self.result(
            "violated", invariant, self.depth + 1, replay_path(self.spec, self.kernel, found, row, invariant)
        )
        result.path = found
        return result

    def path_links(self, link: int) -> list[int]:
        """The links along the path from an initial state to the state of
        this level with `link` (each link's rank finds its parent's in the
        level before): the successor indices of the reference engine's
        counterexample."""
        links = [link]
        for depth in range(self.depth - 1, -1, -1):
            links.append(link_at(self.root, self.shards, depth, *self.intervals[depth], links[-1] >> INDEX_BITS))
        return links[::-1]

    def result(
        self, verdict: str, invariant: str | None, depth: int, trace: list, goals: dict | None = None
    ) -> CheckResult:
        return compiled_result(
            self,
            verdict,
            invariant,
            depth,
            trace,
            goals or {},
            spark_time_s={"tasks": dict(zip(PHASES, np.round(self.seconds, 2).tolist())), "jobs": round(self.jobs, 2)},
            spark_written_bytes=self.written,
            spark_driver_levels=self.local_levels,
        )
