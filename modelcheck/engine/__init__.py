"""Exploration engines. All return the same CheckResult and agree exactly:
`bfs` is the reference (one process, a dict of parent fingerprints);
`parallel` shards states by fingerprint over worker processes with compact
numpy visited sets, and reproduces the reference's counts and traces."""

from __future__ import annotations

from ..result import CheckResult
from ..spec import Spec
from .bfs import Progress

ENGINES = ("parallel", "bfs")


def run(spec: Spec, *, engine: str = "parallel", workers: int = 1, progress: Progress | None = None) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to parallel)."""
    if engine == "bfs":
        from .bfs import check
        return check(spec, progress=progress)
    from .parallel import check as parallel_check
    return parallel_check(spec, workers=workers, progress=progress)
