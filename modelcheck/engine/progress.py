"""What engines report while they run (the CLI draws it): a callable
given counts (distinct, generated, depth, queue, elapsed_s, states_per_s)
as a check goes, or {"note": text} for a phase without counts yet (Spark
starting, a kernel compiling)."""

from __future__ import annotations

import time
from collections.abc import Callable

Progress = Callable[[dict], None]


def progress_counts(distinct: int, generated: int, depth: int, queue: int, started: float) -> dict:
    elapsed = time.perf_counter() - started
    return {
        "distinct": distinct,
        "generated": generated,
        "depth": depth,
        "queue": queue,
        "elapsed_s": elapsed,
        "states_per_s": distinct / elapsed if elapsed > 0 else 0.0,
    }
