"""Benchmark: the fast engine's visited set and parent links at scale,
without a spec: N random fingerprints arrive in BFS-like levels (each level
also re-queries as many already-visited ones, as successors do), and the
structures' own bytes a state and the process's peak RSS are printed.

    python bench/visited.py                 # 10 million states
    python bench/visited.py --states 30000000
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from modelcheck.store import LevelLinks, SortedFingerprints


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=int, default=10_000_000)
    ap.add_argument("--levels", type=int, default=26)
    ns = ap.parse_args()
    rng = np.random.default_rng(0)
    visited, links = SortedFingerprints(), LevelLinks()
    # level sizes grow then shrink, as in the Kafka configs' BFS
    shape = np.sin(np.linspace(0.1, np.pi - 0.1, ns.levels))
    sizes = np.maximum(1, (shape / shape.sum() * ns.states).astype(np.int64))
    sizes[-1] += ns.states - sizes.sum()
    started = time.perf_counter()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    prev = np.empty(0, dtype=np.uint64)
    for size in sizes.tolist():
        fresh = rng.integers(0, 2**64 - 1, size=size, dtype=np.uint64, endpoint=True)
        old = rng.choice(visited.fps, size=min(size, len(visited))) if len(visited) else fresh[:0]
        batch = np.concatenate((fresh, old))
        new = batch[~visited.contains(batch)]
        parents = rng.choice(prev, size=len(new)) if len(prev) else np.zeros(len(new), dtype=np.uint64)
        links.add_level(new, parents)
        visited.add(new)
        prev = new
    elapsed = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = len(visited)
    print(f"states {n:,} in {ns.levels} levels, {elapsed:.1f} s")
    print(f"visited set  {visited.nbytes / n:.2f} bytes/state ({visited.nbytes / 2**20:.0f} MiB)")
    print(f"parent links {links.nbytes / n:.2f} bytes/state ({links.nbytes / 2**20:.0f} MiB)")
    print(f"peak RSS {rss / 1024:.0f} MiB (the interpreter and numpy: {base_rss / 1024:.0f} MiB); "
          f"{(rss - base_rss) * 1024 / n:.1f} bytes/state over that, transient merges included")


if __name__ == "__main__":
    main()
