"""Benchmark: states per second of random walks (modelcheck simulate) on
the default config (nothing to find there, so every walk runs to its
depth or to a state with nothing enabled): the compiled walks on one
process and on two, Spark local[2], and the interpreted spec for
comparison. Each run's counts must equal the one-process run's (the same
seed gives the same walks wherever they run), or the benchmark fails.

    python bench/simulate.py                        # 20,000 walks of depth 100, best of 3, simulate's default pick
    python bench/simulate.py --walks 5000 --repeat 1 --no-spark
    python bench/simulate.py --set brokers=5 --set min_isr=3 --pick action
"""

from __future__ import annotations

import argparse
import time
import tomllib
from typing import Any

from modelcheck.engine.kernel import kernel_for
from modelcheck.engine.walks.plan import PICKS, plan
from modelcheck.engine.walks.simulate import simulate
from specs.kafka_elr import load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--walks", type=int, default=20_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pick", choices=PICKS, default=PICKS[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the fastest is reported")
    ap.add_argument("--interpreted-walks", type=int, default=500)
    ap.add_argument("--no-spark", action="store_true")
    ns = ap.parse_args()
    config = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (s.split("=", 1) for s in ns.set)}
    spec = load(config)
    kernel = kernel_for(spec)
    p = plan(spec, ns.walks, ns.depth, ns.seed, by=ns.pick)
    runs: list[tuple[str, dict[str, Any]]] = [
        ("compiled, 1 process", dict(kernel=kernel, workers=1)),
        ("compiled, 2 processes", dict(kernel=kernel, workers=2)),
    ]
    if not ns.no_spark:
        runs.append(("compiled, Spark local[2]", dict(kernel=kernel, engine="spark", master="local[2]")))
    print(f"config: {' '.join(f'{k}={v}' for k, v in spec.config.items() if v is not None)}")
    print(f"{ns.walks:,} walks of at most {ns.depth} steps, seed {ns.seed}, --pick {ns.pick}; best of {ns.repeat}")
    reference = None
    for name, options in runs:
        best = float("inf")
        for _ in range(ns.repeat):
            started = time.perf_counter()
            r = simulate(spec, p, **options)
            wall = time.perf_counter() - started
            counts = (r.verdict, r.walks, r.states_visited, r.distinct_seen, r.coverage)
            reference = reference or counts
            assert counts == reference, f"{name}: {counts[:4]} differ from {reference[:4]}"
            best = min(best, wall)
        print(
            f"{name:28} {r.states_visited:>12,} states  {r.distinct_seen:>10,} distinct  {best:7.2f} s  "
            f"{r.states_visited / best:>10,.0f} states/s"
        )
    small = plan(spec, ns.interpreted_walks, ns.depth, ns.seed, by=ns.pick)
    started = time.perf_counter()
    r = simulate(spec, small)
    wall = time.perf_counter() - started
    print(
        f"{'interpreted, 1 process':28} {r.states_visited:>12,} states  {r.distinct_seen:>10,} distinct  "
        f"{wall:7.2f} s  {r.states_visited / wall:>10,.0f} states/s  ({ns.interpreted_walks:,} walks)"
    )


if __name__ == "__main__":
    main()
