"""The Spark engine: the fast engine's level-synchronous search, with the
frontier and the visited set split in shards over Spark executors, for
state spaces one machine cannot hold. Executors expand with the compiled
kernel (broadcast as its source and tables, loaded from each machine's
cache) and use the shared batch layer and visited set.

A shard's state lives in files, never in Spark's blocks, so it is never
pickled, shuffled or cached by the JVM: under one run directory (in the
temp dir of a local or loopback master; on a cluster of several hosts, a
directory every executor sees, spark.modelcheck.stateDir)

    v/I.D[.mK]   shard I's visited set: sorted runs (visited.Run), one
                 written a level, merged in size tiers (an LSM tree)
    c/D/J.I      candidates for shard I that shard J's expansion made,
                 to be settled at level D: rows, keys and paths (.npy)
    f/D.I        shard I's states new at level D: rows and paths

A level is one Spark job of one stage and no shuffle, task I:

    settle   c/D/*.I in path order into I's visited set (the first
             occurrence of a key wins); check the new states' invariants
    expand   the new states' successors, pruned of I's visited set where
             they stay in I, first occurrences only, one file a
             destination shard: c/D+1/I.*

Its records are small handles (a shard's run files) and its result the
level's counts, so the driver sends and receives a few hundred bytes a
shard a level. Tasks read only what the previous level wrote and write
files under new names (whole, then renamed), so a task that fails (a
lost executor) is rerun with the same result; the driver deletes a
level's inputs once the level is done.

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

import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, nullcontext
from functools import partial
from typing import Any, cast

import numpy as np

from ..durable import replacing
from ..lifetime import Stopped
from ..result import CheckResult, symmetry_info
from ..spec import Spec
from .control import Control
from .kernel import Kernel
from .progress import Progress, progress_counts
from .spark_session import (
    DRIVER_STATES,
    MEMORY_KEYS,
    STATE_DIR,
    EngineUnavailable,
    loopback,
    scratch_dir,
    spark_context,
)
from .storage.batch import expand as expand_rows
from .storage.batch import run_info
from .storage.visited import BUCKETS, Run, Visited, _merge_two, first_occurrences, shard_of

KEY_BYTES = 2  # a successor index (or an initial state's position) in a path
PHASES = ("settle", "expand", "write")  # a task's seconds, summed over a level's tasks


def _child_paths(paths: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Paths of successors: the parent's path, then the successor's index."""
    width = paths.dtype.itemsize
    out = np.empty((len(rows), width + KEY_BYTES), dtype=np.uint8)
    out[:, :width] = paths.view(np.uint8).reshape(-1, width)[rows]
    out[:, width] = index >> 8
    out[:, width + 1] = index & 0xFF
    return out.view(f"S{width + KEY_BYTES}").ravel()


def _save(path: str, *arrays: np.ndarray) -> int:
    """Arrays into one file, whole under `path` or not at all; its bytes."""
    with replacing(path, sync=False) as f:  # scratch: a task and its retry (or speculative copy) write apart
        for a in arrays:
            np.save(f, a, allow_pickle=False)
        return f.tell()


def _mkdir(path: str) -> None:
    """A directory in the run's (not makedirs: a run directory removed
    because the check ended must not be made again by a late task)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass


def _load(path: str, n: int) -> list[np.ndarray]:
    with open(path, "rb") as f:
        return [np.load(f, allow_pickle=False) for _ in range(n)]


# ---- what the executors run --------------------------------------------------------


class Shard:
    """Shard `index`'s files under the run directory `root`."""

    def __init__(self, root: str, index: int):
        self.root, self.index = root, index

    def candidates(self, depth: int) -> list[str]:
        where = f"{self.root}/c/{depth}"
        return sorted(f"{where}/{name}" for name in os.listdir(where) if name.endswith(f".{self.index}"))

    def frontier(self, depth: int) -> str:
        return f"{self.root}/f/{depth}.{self.index}"

    def out(self, depth: int, home: int) -> str:
        return f"{self.root}/c/{depth}/{self.index}.{home}"

    def run(self, depth: int, merged: int = 0) -> str:
        return f"{self.root}/v/{self.index}.{depth}" + (f".m{merged}" if merged else "")


def _keep(visited: Visited, shard: Shard, depth: int) -> list[str]:
    """Write the keys `visited` holds in memory (the level's new ones) as
    a run, merge the newest runs while they are of like size, and return
    the run files that now hold the shard's visited set."""
    held = visited.runs
    if visited.memory_keys:
        held.append(Run.write(visited.buckets, visited.key_words, visited.memory_keys, shard.run(depth), durable=False))
        visited.buckets = [np.empty((0, visited.key_words), np.uint64) for _ in range(BUCKETS)]
    merged = 0
    while len(held) > 1 and 2 * len(held[-1]) >= len(held[-2]):
        older, newer = held[-2], held[-1]
        merged += 1
        held[-2:] = [
            Run.write(
                (_merge_two(older.bucket(b), newer.bucket(b)) for b in range(BUCKETS)),
                older.keys.shape[1],
                len(older) + len(newer),
                shard.run(depth, merged),
                durable=False,
            )
        ]
    return [cast(str, r.path) for r in held]  # every run here was written to a file


def _step(kernel_bc: Any, root: str, shards: int, depth: int, symmetric: bool, item: tuple) -> tuple:
    """Level `depth` of shard `index`: settle its candidates, then expand
    its new states into the next level's candidates. Returns (index, its
    run files, new states, the states their classes hold (symmetry), the
    first violation (path, invariant, row) or None, the expansion's
    per-action transitions and goals reached, bytes written, seconds by
    phase)."""
    index, runs = item
    kernel = kernel_bc.value
    shard = Shard(root, index)
    t0 = time.perf_counter()
    batches = [_load(f, 3) for f in shard.candidates(depth)]
    rows = np.concatenate([b[0] for b in batches]) if batches else np.empty((0, kernel.words), np.uint64)
    keys = np.concatenate([b[1] for b in batches]) if batches else np.empty((0, kernel.key_words), np.uint64)
    paths = np.concatenate([b[2] for b in batches]) if batches else np.empty(0, f"S{KEY_BYTES}")
    del batches
    visited = Visited.from_runs(kernel.key_words, runs)
    order = np.argsort(paths, kind="stable")
    new = order[visited.insert_new(keys[order])]
    rows, paths = rows[new], paths[new]
    del keys, order, new
    violation = None
    row, which = kernel.check(rows, 0, len(rows))
    if row >= 0:
        violation = (paths[row : row + 1].view(np.uint8).tobytes(), which, rows[row])
    represented = kernel.class_sizes(rows, 0, len(rows)) if symmetric else 0
    t1 = time.perf_counter()
    written = _save(shard.frontier(depth), rows, paths)
    runs = _keep(visited, shard, depth)
    t2 = time.perf_counter()
    reached = np.zeros(kernel.goal_count, np.uint8)
    counts = np.zeros(kernel.action_count, np.int64)
    writing = 0.0
    if violation is None and len(rows):
        cand = expand_rows(kernel, rows, 0, len(rows), reached=reached)
        counts = np.bincount(cand.action, minlength=kernel.action_count).astype(np.int64)
        homes = shard_of(cand.keys, shards)
        _mkdir(f"{root}/c/{depth + 1}")
        for home in range(shards):
            sel = np.flatnonzero(homes == home)
            # candidates stay in path order; those of this shard already visited are dropped here
            sel = sel[visited.fresh(cand.keys[sel]) if home == index else first_occurrences(cand.keys[sel])]
            if len(sel):
                child = _child_paths(paths, cand.parents[sel], cand.index[sel])
                w0 = time.perf_counter()
                written += _save(shard.out(depth + 1, home), cand.words[sel], cand.keys[sel], child)
                writing += time.perf_counter() - w0
    t3 = time.perf_counter()
    seconds = np.array([t1 - t0, t3 - t2 - writing, t2 - t1 + writing])
    return index, runs, len(rows), represented, violation, counts, reached, written, seconds


def _before(kernel_bc: Any, root: str, depth: int, path: bytes, symmetric: bool, index: int) -> tuple[int, int]:
    """How many of shard `index`'s new states at `depth` come before `path`
    in the reference engine's order, and the states their classes hold."""
    kernel = kernel_bc.value
    rows, paths = _load(Shard(root, index).frontier(depth), 2)
    before = rows[paths < np.array(path, dtype=paths.dtype)]
    return len(before), kernel.class_sizes(before, 0, len(before)) if symmetric else 0


def _transitions_before(kernel_bc: Any, root: str, depth: int, parent_path: bytes, k: int, index: int) -> np.ndarray:
    """Per-action transitions the reference engine had generated when it
    reached successor k of the state at `parent_path` (of level `depth`):
    those of every parent before it, and that parent's first k+1 (if it is
    in this shard)."""
    kernel = kernel_bc.value
    rows, paths = _load(Shard(root, index).frontier(depth), 2)
    before = paths <= np.array(parent_path, dtype=paths.dtype)
    cand = expand_rows(kernel, rows[before], 0, int(before.sum()))
    parent = np.flatnonzero(paths[before] == np.array(parent_path, dtype=paths.dtype))
    keep = np.ones(len(cand), dtype=bool)
    if len(parent):
        keep &= (cand.parents != parent[0]) | (cand.index <= k)
    return np.bincount(cand.action[keep], minlength=kernel.action_count).astype(np.int64)


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
        shards = partitions or _parallelism(master, settings) or context.result().defaultParallelism
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


def _parallelism(master: str | None, settings: dict[str, str]) -> int | None:
    """Spark's default parallelism where it is known before Spark starts."""
    if "spark.default.parallelism" in settings:
        return int(settings["spark.default.parallelism"])
    cores = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master or "")
    if not cores:
        return None
    if cores.group(1) == "*":
        return os.cpu_count() or 1
    return int(cores.group(1) or 1)


class _cancel_on_stop:
    """A thread that cancels Spark's jobs once a stop is asked (a signal
    only sets the request: the driver's thread waits in Py4J)."""

    def __init__(self, sc: Any, control: Control):
        self.sc, self.control, self.done = sc, control, threading.Event()

    def _watch(self) -> None:
        while not self.done.wait(0.1):
            if self.control.stop.asked:
                self.sc.cancelAllJobs()
                return

    def __enter__(self) -> None:
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


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
            self.watch = _cancel_on_stop(self.sc, self.control)
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
        if len(inits) > 1 << (8 * KEY_BYTES):
            raise OverflowError(f"more than {1 << 8 * KEY_BYTES} initial states")
        self.inits = inits
        self.generated = len(inits)
        rows = np.array([self.kernel.pack(s) for s in inits], dtype=np.uint64).reshape(len(inits), self.kernel.words)
        keys = self.kernel.keys(rows)
        paths = np.arange(len(inits), dtype=">u2").view(f"S{KEY_BYTES}")
        homes = shard_of(keys, self.shards)
        for d in ("v", "f", "c/0"):
            os.makedirs(f"{self.root}/{d}", exist_ok=True)
        for h in range(self.shards):
            sel = np.flatnonzero(homes == h)
            if len(sel):
                _save(f"{self.root}/c/0/init.{h}", rows[sel], keys[sel], paths[sel])
        return [(h, []) for h in range(self.shards)]

    def run(self) -> CheckResult:
        root = self.root
        items = self.seed()
        self.size = len(self.inits)
        pending = None  # the previous level's expansion: its transitions and goals reached
        while True:
            if self.control.stop.asked:
                raise self.stopped()
            out = sorted(
                self.tasks(_step, (root, self.shards, self.depth, self.symmetric), items, self.size), key=lambda r: r[0]
            )
            self.local_levels += self.here
            self.seconds += sum(r[8] for r in out)
            self.written += sum(r[7] for r in out)
            violations = [r[4] for r in out if r[4] is not None]
            if violations:
                return self.violated(min(violations, key=lambda v: v[0]))
            if pending is not None:
                counts, reached = pending
                self.generated += int(counts.sum())
                self.coverage += counts
                self.reached |= reached
            pending = (sum(r[5] for r in out), np.bitwise_or.reduce([r[6] for r in out]))
            self._forget(self.depth, [r[1] for r in out], items)
            items = [(r[0], r[1]) for r in out]
            new = self.size = sum(r[2] for r in out)
            if not new:
                break
            self.distinct += new
            self.represented += sum(r[3] for r in out)
            self.depth += 1
            if self.progress:
                self.progress(progress_counts(self.distinct, self.generated, self.depth, new, self.started))
        return self.result(
            "holds", None, self.depth, [], goals=dict(zip(self.spec.goals, self.reached.astype(bool).tolist()))
        )

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
        """The result at the first violation (smallest path) of level
        self.depth: the counts the reference engine has when it meets it."""
        from ..trace import replay_path  # the driver's only: executors need not import the trace's fingerprints

        path, which, row = first
        shards = list(range(self.shards))
        before = self.tasks(_before, (self.root, self.depth, path, self.symmetric), shards, self.size)
        self.distinct += sum(n for n, _c in before) + 1
        self.represented += sum(c for _n, c in before) + (
            self.kernel.class_sizes(row.reshape(1, -1), 0, 1) if self.symmetric else 0
        )
        if self.depth == 0:
            self.generated = int.from_bytes(path, "big") + 1
        else:
            parent_path, k = path[:-KEY_BYTES], int.from_bytes(path[-KEY_BYTES:], "big")
            counts = sum(
                self.tasks(_transitions_before, (self.root, self.depth - 1, parent_path, k), shards, self.size)
            )
            self.generated += int(counts.sum())
            self.coverage += counts
        invariant = self.spec.checked_invariants()[which]
        indices = [int.from_bytes(path[i : i + KEY_BYTES], "big") for i in range(0, len(path), KEY_BYTES)]
        trace = replay_path(self.spec, self.kernel, self.inits[indices[0]], indices[1:], row, invariant)
        return self.result("violated", invariant, self.depth + 1, trace)

    def result(
        self, verdict: str, invariant: str | None, depth: int, trace: list, goals: dict | None = None
    ) -> CheckResult:
        info = run_info(self.kernel, self.distinct, self.generated)
        if self.symmetric:
            info["symmetry"] = symmetry_info(self.distinct, self.represented)
        info["spark_time_s"] = {
            "tasks": dict(zip(PHASES, np.round(self.seconds, 2).tolist())),
            "jobs": round(self.jobs, 2),
        }
        info["spark_written_bytes"] = self.written
        info["spark_driver_levels"] = self.local_levels
        return CheckResult(
            verdict,
            invariant,
            self.distinct,
            self.generated,
            depth,
            time.perf_counter() - self.started,
            dict(zip(self.spec.coverage_labels, self.coverage.tolist())),
            trace,
            goals or {},
            run_info=info,
        )
