"""Exploration engines, and the one place that picks one. All return the
same CheckResult and agree exactly: `bfs` is the reference (the
interpreted spec, one process, a dict of parent fingerprints); `fast` runs
the spec compiled (kernel.py) over packed states on threads; `spark` runs
the same compiled search with the frontier and visited set spread over
Spark executors (pyspark is imported only when it is asked for). Where the
kernel cannot be had, `fast` runs the reference engine instead and says
why in the result's run_info["kernel"]; `spark` refuses (a cluster check
must not quietly become a one-thread one)."""

from __future__ import annotations

from ..result import CheckResult
from ..spec import Spec
from .progress import Progress

ENGINES = ("fast", "bfs", "spark")


def run(spec: Spec, *, engine: str = "fast", workers: int = 1, progress: Progress | None = None,
        master: str | None = None, partitions: int | None = None,
        spark_settings: dict[str, str] | None = None) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to fast;
    `master`, `partitions` and `spark_settings` to spark)."""
    from .bfs import check as reference
    if engine == "bfs":
        return reference(spec, progress=progress)
    from .kernel import KernelUnavailable, kernel_for
    note = (lambda text: progress({"note": text})) if progress else (lambda text: None)
    if engine == "spark":
        from .spark_session import EngineUnavailable, require_spark
        require_spark()
    try:
        kernel = kernel_for(spec, note)
    except KernelUnavailable as e:
        if engine == "spark":
            raise EngineUnavailable(f"--engine spark runs the compiled kernel, and there is none here: {e}") from None
        result = reference(spec, progress=progress)
        result.run_info["kernel"] = f"interpreted: {e}"
        return result
    if engine == "spark":
        from .spark import check as spark_check
        return spark_check(spec, kernel, master=master, partitions=partitions, settings=spark_settings,
                           progress=progress)
    from .fast import check as fast_check
    return fast_check(spec, kernel, workers=workers, progress=progress)
