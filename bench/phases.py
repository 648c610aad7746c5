"""Benchmark: where a state's time goes, phase by phase, on one core.

Collects the reachable states of a config (breadth-first, up to --states),
then times each phase of the fast engine's per-state work over all of them:
the spec's successors (and each action alone), the checked invariants
(each alone), canonical encoding and fingerprinting of every successor.
What the engine adds on top is the difference to `modelcheck check -w 1`.

    python bench/phases.py                          # max_records=1 (100,617 states)
    python bench/phases.py --set max_records=2 --states 300000
"""

from __future__ import annotations

import argparse
import gc
import time
import tomllib

from modelcheck.fingerprint import fingerprints
from specs.kafka_elr import load


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--states", type=int, default=1_000_000, help="at most this many states")
    ns = ap.parse_args()
    config = {"max_records": 1} | {k: tomllib.loads(f"v = {v}")["v"] for k, v in (s.split("=", 1) for s in ns.set)}
    spec = load(config)
    gc.disable()
    seen, states = set(spec.init_states()), list(spec.init_states())
    for s in states:            # grows while iterated: a breadth-first walk
        if len(states) >= ns.states:
            break
        for _name, _args, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                states.append(t)
    del seen
    n = len(states)
    succ = [t for s in states for _name, _args, t in spec.successors(s)]
    canons = list(map(spec.canonical, succ))
    rows = [("successors", timed(lambda: [spec.successors(s) for s in states]), n),
            ("invariants", timed(lambda: [spec.first_violation(s) for s in states]), n),
            ("canonical", timed(lambda: list(map(spec.canonical, succ))), len(succ)),
            ("fingerprints", timed(lambda: fingerprints(canons)), len(succ))]
    print(f"{config}: {n:,} states, {len(succ):,} successors ({len(succ) / n:.2f} a state)")
    print(f"{'phase':28} {'s':>7} {'us each':>8} {'us a state':>10}")
    for name, seconds, count in rows:
        print(f"{name:28} {seconds:7.2f} {seconds / count * 1e6:8.2f} {seconds / n * 1e6:10.2f}")
    print(f"{'total':28} {sum(r[1] for r in rows):7.2f} {'':8} {sum(r[1] for r in rows) / n * 1e6:10.2f}")
    for name, fn in spec.actions.items():
        print(f"  action    {name:22} {timed(lambda: [list(fn(spec, s)) for s in states]):7.2f}")
    for name in spec.checked_invariants():
        fn = spec.invariants[name]
        print(f"  invariant {name:22} {timed(lambda: [fn(spec, s) for s in states]):7.2f}")


if __name__ == "__main__":
    main()
