"""Exploration engines, and the one place that picks one. All return the
same CheckResult and agree exactly: `bfs` is the reference (one process, a
dict of parent fingerprints); `fast` batches the hot loop, keeps visited
fingerprints in sorted uint64 arrays, shards states over worker processes,
and reproduces the reference's counts and traces; `spark` runs the same
sharded BFS on Spark executors (pyspark is imported only when it is asked for)."""

from __future__ import annotations

from ..result import CheckResult
from ..spec import Spec
from .bfs import Progress

ENGINES = ("fast", "bfs", "spark")


def run(spec: Spec, *, engine: str = "fast", workers: int = 1, progress: Progress | None = None,
        master: str | None = None, partitions: int | None = None,
        spark_settings: dict[str, str] | None = None) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to fast;
    `master`, `partitions` and `spark_settings` to spark)."""
    if engine == "bfs":
        from .bfs import check
        return check(spec, progress=progress)
    if engine == "spark":
        from .spark import check as spark_check
        return spark_check(spec, master=master, partitions=partitions, settings=spark_settings,
                           progress=progress)
    from .fast import check as fast_check
    return fast_check(spec, workers=workers, progress=progress)
