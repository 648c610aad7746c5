"""Random walks (TLC's -simulate, Stateright's simulation checker): for
configurations whose state space cannot be exhausted.

A walk starts at an initial state and, up to `depth` steps, takes one of
the enabled action instances at random, checking the invariants on every
state it visits; it ends at the first violation, or at a state with
nothing enabled. How it picks (Plan.by): "swarm", the default, is swarm
testing (Groce, Zhang, Eide, Chen, Regehr, "Swarm Testing", ISSTA 2012):
each walk first draws its own mix of actions, keeping each with
probability 1/2 (never none) at a random weight, so that one walk crashes
brokers three times in a row while another only produces and fetches,
where a single fixed mix makes every walk alike and the rare
combinations rarer still (docs/performance.md, "Random walks", has the
measurements that chose it); "action", an enabled action, then one of
its instances; "instance", an enabled instance (TLC's uniform choice).

The successors are the spec's own: the compiled kernel's
(`KernelSteps`), whose successors come in the interpreted spec's order,
or the interpreted `spec.successors` (`SpecSteps`), so a walk is the same
list of successor indices either way, and a counterexample is that list
replayed through the interpreted spec and re-validated (trace.validate).

Determinism: walk w draws from its own generator, seeded by (seed, w)
(splitmix64, below): its initial state, a swarm walk's mix, then its
steps, so what a walk does depends on neither the workers nor the engine
nor the order walks run in. Walks run in chunks of CHUNK consecutive
walks; a chunk stops at its first violating walk, and the result folds
chunks in order up to the first chunk with a violation: its counts are
those of walks 0..v, v the first violating walk. Workers (processes, or
Spark tasks) only change where chunks run.

Counts: `states_visited` counts every state a walk stands on (its
initial state included), `distinct_seen` the distinct ones among them
(the visited-set keys of the kernel, or fingerprints interpreted: a
cheap estimate of coverage), coverage the steps taken per coverage label.

Memory: chunks are made as they are taken, so nothing grows with the
number of walks but the distinct keys seen (8 bytes each, in this
process); where this process's anonymous memory and what counting
those keys takes would pass `max_memory`, the run stops, as a check
does, with what it had done.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from ...lifetime import Stopped, StopRequest, end_pool
from ...memory import anon_rss, show_size
from ...result import Step
from ...spec import Spec
from ...trace import validate
from ..progress import Progress
from .plan import Plan
from .walk import Chunk, Fold, KernelSteps, SpecSteps, chunks, walk_chunk

# ---- the search: chunks in order, here, on processes, or on Spark ------------------


@dataclass
class SimResult:
    verdict: str  # "violated" or "nothing found" (never "holds")
    invariant: str | None
    walks: int
    states_visited: int
    distinct_seen: int
    elapsed_s: float
    coverage: dict[str, int]
    seed: int
    depth: int
    trace: list[Step] = field(default_factory=list)  # the shrunk counterexample
    walk_trace: list[Step] = field(default_factory=list)  # the violating walk as it was
    shrink: dict[str, Any] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)


def simulate(
    spec: Spec,
    p: Plan,
    *,
    kernel: Any | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    stop: StopRequest | None = None,
    engine: str = "local",
    master: str | None = None,
    partitions: int | None = None,
    spark_settings: dict[str, str] | None = None,
    shrink_budget: int = 20_000,
    max_memory: int | None = None,
) -> SimResult:
    """Run plan `p`'s walks on `spec` (on `kernel`'s compiled successors
    where given), then shrink and re-validate a violation found; Stopped
    by a stop request, or past `max_memory` bytes of this process."""
    stop = stop or StopRequest()
    started = time.perf_counter()

    def within_memory() -> None:
        """Stop while counting the distinct states seen still fits (the
        count merges their keys, as the run does from time to time)."""
        if max_memory is not None and anon_rss() + fold.merge_bytes > max_memory:
            raise Stopped(
                f"stopped at the memory limit {show_size(max_memory)} (--max-memory; the distinct states seen "
                "grow with the walks)",
                None,
                distinct=fold.distinct(),
                generated=fold.visited,
                elapsed_s=time.perf_counter() - started,
            )

    fold = Fold(p, len(spec.coverage_labels), within_memory)

    def report() -> None:
        if progress:
            elapsed = time.perf_counter() - started
            progress(
                {
                    "note": f"walks {fold.walks:,}/{p.walks:,}  states {fold.visited:,}  "
                    f"distinct >= {len(fold._seen):,}  {fold.visited / elapsed if elapsed else 0:,.0f} "
                    f"states/s  {elapsed:.0f} s"
                }
            )

    with stop.polling():
        if engine == "spark":
            from .simulate_spark import run_chunks

            try:
                run_chunks(spec, kernel, p, fold, master, partitions, spark_settings, stop, report)
            except Stopped as e:  # asked while Spark started: said below with the counts
                if e.signum is None:
                    raise
        elif workers <= 1:
            steps = KernelSteps(kernel, spec) if kernel is not None else SpecSteps(spec)
            last = time.perf_counter()
            for a, b in chunks(p):
                fold.add(walk_chunk(steps, p, a, b, stop=lambda: stop.asked))
                if stop.asked:
                    break
                if time.perf_counter() - last > 2:
                    report()
                    last = time.perf_counter()
                if fold.done:
                    break
        else:
            _on_processes(spec, kernel, p, fold, workers, stop, report)
        if stop.asked:
            raise stop.stopped(
                distinct=fold.distinct(), generated=fold.visited, elapsed_s=time.perf_counter() - started
            )
    elapsed = time.perf_counter() - started
    coverage = dict(zip(spec.coverage_labels, map(int, fold.coverage)))
    info = {
        "kernel": "compiled" if kernel is not None else "interpreted",
        "engine": engine,
        "workers": workers if engine == "local" else 1,
    }
    if fold.violation is None:
        return SimResult(
            "nothing found",
            None,
            fold.walks,
            fold.visited,
            fold.distinct(),
            elapsed,
            coverage,
            p.seed,
            p.depth,
            run_info=info,
        )
    from .shrink import shrink

    w, init, path, invariant = fold.violation
    walk = replay_walk(spec, init, path, invariant)
    shrunk_started = time.perf_counter()
    trace, tried = shrink(spec, walk, invariant, budget=shrink_budget)
    validate(spec, trace, invariant)
    shrink_info = {
        "walk": w,
        "walk_steps": len(walk) - 1,
        "steps": len(trace) - 1,
        "replays": tried,
        "elapsed_s": round(time.perf_counter() - shrunk_started, 3),
    }
    return SimResult(
        "violated",
        invariant,
        fold.walks,
        fold.visited,
        fold.distinct(),
        elapsed,
        coverage,
        p.seed,
        p.depth,
        trace,
        walk,
        shrink_info,
        info,
    )


def replay_walk(spec: Spec, init: int, path: list[int], invariant: str) -> list[Step]:
    """A walk's successor indices replayed through the interpreted spec,
    and re-validated as a counterexample to `invariant`."""
    state = spec.init_states()[init]
    steps = [Step(None, {}, state)]
    for i in path:
        name, args, state = spec.successors(state)[i]
        steps.append(Step(name, args, state))
    validate(spec, steps, invariant)
    return steps


# ---- on processes --------------------------------------------------------------------

_worker: dict[str, Any] = {}


def _setup(spec: Spec, kernel: Any | None, parent: int) -> None:
    from ...lifetime import die_with_parent

    die_with_parent(parent)
    _worker["steps"] = KernelSteps(kernel, spec) if kernel is not None else SpecSteps(spec)


def _run(p: Plan, a: int, b: int) -> Chunk:
    return walk_chunk(_worker["steps"], p, a, b)


def _on_processes(
    spec: Spec, kernel: Any | None, p: Plan, fold: Fold, workers: int, stop: StopRequest, report: Callable[[], None]
) -> None:
    """Chunks on `workers` processes (which die with this one and leave
    Ctrl-C to it), a few in flight each; stopped at once on a stop request,
    and, past a violation, once every chunk before it is in."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, initializer=_setup, initargs=(spec, kernel, os.getpid()))
    todo = iter(chunks(p))
    running: set[Future] = set()
    last = time.perf_counter()
    try:
        while True:
            while len(running) < 2 * workers and fold.violation is None and not stop.asked:
                nxt = next(todo, None)
                if nxt is None:
                    break
                running.add(pool.submit(_run, p, *nxt))
            if not running or stop.asked:
                break
            done, running = wait(running, timeout=0.25, return_when=FIRST_COMPLETED)
            for f in done:
                fold.add(f.result())
            if fold.done:
                break  # past a violation: every chunk before it is folded
            if time.perf_counter() - last > 2:
                report()
                last = time.perf_counter()
    finally:
        end_pool(pool)
