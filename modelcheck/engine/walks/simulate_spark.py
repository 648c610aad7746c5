"""Random walks on Spark executors: the chunks of walk.py as Spark
tasks, a round of them a job, folded on the driver in walk order exactly
as the local runs fold them, so the same seed gives the same result.
Executors walk on the compiled kernel (broadcast with the spec, loaded
from each machine's cache, compiled once a machine)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from ...lifetime import StopRequest
from ...spec import Spec
from ..spark.session import spark_context
from .plan import Plan
from .walk import Chunk, Fold, KernelSteps, chunks, walk_chunk

CHUNKS_A_TASK = 8  # chunks a task runs in a round (a job): fewer jobs, a little work past a violation


def _walks(shipped: Any, p: Plan, items: Iterator[tuple[int, int]]) -> Iterator[Chunk]:
    spec, kernel = shipped.value
    steps = KernelSteps(kernel, spec)
    for a, b in items:
        yield walk_chunk(steps, p, a, b)


def run_chunks(
    spec: Spec,
    kernel: Any,
    p: Plan,
    fold: Fold,
    master: str | None,
    partitions: int | None,
    settings: dict[str, str] | None,
    stop: StopRequest,
    report: Callable[[], None],
) -> None:
    """Fold `p`'s chunks, run on Spark a round at a time, until a violation
    (every chunk before it folded), the last walk, or a stop request."""
    with spark_context(master, type(spec).__module__.split(".")[0], settings, stop=stop) as sc:
        shipped = sc.broadcast((spec, kernel))
        tasks = partitions or sc.defaultParallelism
        todo = chunks(p)
        while not fold.done and not stop.asked:
            batch = list(islice(todo, tasks * CHUNKS_A_TASK))
            rdd = sc.parallelize(batch, min(len(batch), tasks))
            for chunk in rdd.mapPartitions(lambda items: _walks(shipped, p, items)).collect():
                fold.add(chunk)
            report()
        shipped.unpersist()
