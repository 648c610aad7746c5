"""Benchmark: the compiled engines' visited set (engine/storage/batch.py) at
scale, without a spec: N random keys arrive in BFS-like levels (each level
also re-offers as many already-visited keys, as successors do), inserted
a level at a time with `insert_new`; prints the set's own bytes a state,
the time a candidate, and the process's peak RSS.

    python bench/visited.py                         # 10 million states, 8-byte fingerprints
    python bench/visited.py --key-words 2           # exact 128-bit keys
    python bench/visited.py --states 30000000
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from modelcheck.engine.storage.visited import Visited


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=10_000_000)
    ap.add_argument("--levels", type=int, default=26)
    ap.add_argument("--key-words", type=int, choices=(1, 2), default=1)
    ns = ap.parse_args()
    rng = np.random.default_rng(0)
    visited = Visited(ns.key_words)
    visited.insert_new(np.zeros((1, ns.key_words), np.uint64))  # compile (or load) before timing
    visited = Visited(ns.key_words)
    # level sizes grow then shrink, as in the Kafka configs' BFS
    shape = np.sin(np.linspace(0.1, np.pi - 0.1, ns.levels))
    sizes = np.maximum(1, (shape / shape.sum() * ns.states).astype(np.int64))
    sizes[-1] += ns.states - sizes.sum()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seen = np.empty((0, ns.key_words), np.uint64)
    offered = 0
    started = time.perf_counter()
    for size in sizes.tolist():
        fresh = rng.integers(0, 2**64 - 1, size=(size, ns.key_words), dtype=np.uint64, endpoint=True)
        old = seen[rng.integers(0, len(seen), size=min(size, len(seen)))] if len(seen) else fresh[:0]
        level = np.concatenate((fresh, old))[rng.permutation(len(fresh) + len(old))]
        visited.insert_new(level)
        offered += len(level)
        seen = fresh if len(seen) > 4 * size else np.concatenate((seen, fresh))
    elapsed = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = len(visited)
    print(
        f"states {n:,} in {ns.levels} levels ({offered:,} candidates), {elapsed:.1f} s, "
        f"{elapsed / offered * 1e9:.0f} ns a candidate"
    )
    print(
        f"visited set {visited.nbytes / n:.2f} bytes/state ({visited.nbytes / 2**20:.0f} MiB, "
        f"{8 * ns.key_words}-byte keys)"
    )
    print(
        f"peak RSS {rss / 1024:.0f} MiB (before: {base_rss / 1024:.0f} MiB); "
        f"{(rss - base_rss) * 1024 / n:.1f} bytes/state over that, the bench's own arrays and transient merges included"
    )


if __name__ == "__main__":
    main()
