"""Exploration engines, and the one place that picks one. All return the
same CheckResult and agree exactly: `bfs` is the reference (one process, a
dict of parent fingerprints); `fast` batches the hot loop, keeps visited
fingerprints in sorted uint64 arrays, shards states over worker processes,
and reproduces the reference's counts and traces."""

from __future__ import annotations

from ..result import CheckResult
from ..spec import Spec
from .bfs import Progress

ENGINES = ("fast", "bfs")


def run(spec: Spec, *, engine: str = "fast", workers: int = 1, progress: Progress | None = None) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to fast)."""
    if engine == "bfs":
        from .bfs import check
        return check(spec, progress=progress)
    from .fast import check as fast_check
    return fast_check(spec, workers=workers, progress=progress)
