"""Benchmark: where a state's time goes in the fast engine, phase by
phase, on one thread: the kernel's expansion (successors, packing, keys),
the visited set's insert (sort and merge), the invariants, and the rest of
the engine; then the same config's interpreted spec (what the reference
engine spends a state) for comparison.

    python bench/phases.py                          # the default config
    python bench/phases.py --set max_records=1
    python bench/phases.py --symmetry --set brokers=4 --set min_isr=3 --set max_unclean_shutdowns=2 --set max_records=1
"""

from __future__ import annotations

import argparse
import time
import tomllib
from typing import Any

from modelcheck.engine import fast
from modelcheck.engine.kernel import kernel_for
from modelcheck.engine.options import CheckOptions
from modelcheck.engine.storage import visited
from specs.kafka_elr import load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--interpreted-states", type=int, default=100_000, help="states the interpreted spec is timed on")
    ap.add_argument("--symmetry", action="store_true", help="one state a class of renamed brokers (check's --symmetry)")
    ns = ap.parse_args()
    config = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (s.split("=", 1) for s in ns.set)}
    spec = load(config)
    if ns.symmetry:
        spec.enable_symmetry()
    kernel: Any = kernel_for(spec)  # its methods are wrapped in timers below
    spent: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*args, **kw):
            started = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    kernel.module.expand = timed("kernel: expand (successors, pack, keys)", kernel.module.expand)
    kernel.check = timed("kernel: invariants", kernel.check)
    visited.Visited.insert_new = timed("visited set: insert_new (sort, merge)", visited.Visited.insert_new)  # type: ignore[method-assign]
    started = time.perf_counter()
    r = fast.check(spec, kernel, CheckOptions.of(workers=1))
    total = time.perf_counter() - started
    n = r.distinct_states
    print(
        f"{config or 'default'}: {n:,} states, {r.generated_states:,} successors "
        f"({r.generated_states / n:.2f} a state), one thread, {total:.2f} s"
    )
    print(f"{'phase':42} {'s':>6} {'ns a state':>11} {'ns a successor':>15}")
    for name, seconds in spent.items():
        print(f"{name:42} {seconds:6.2f} {seconds / n * 1e9:11.0f} {seconds / r.generated_states * 1e9:15.0f}")
    rest = total - sum(spent.values())
    print(f"{'the engine around them':42} {rest:6.2f} {rest / n * 1e9:11.0f}")
    print(f"{'total':42} {total:6.2f} {total / n * 1e9:11.0f}")
    # the interpreted spec on the first states of the same search
    states = list(spec.init_states())
    seen = set(states)
    for s in states:
        if len(states) >= ns.interpreted_states:
            break
        for _name, _args, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                states.append(t)
    started = time.perf_counter()
    for s in states:
        spec.successors(s)
    succ = time.perf_counter() - started
    started = time.perf_counter()
    for s in states:
        spec.first_violation(s)
    inv = time.perf_counter() - started
    print(
        f"interpreted spec, {len(states):,} states: successors {succ / len(states) * 1e9:,.0f} ns, "
        f"invariants {inv / len(states) * 1e9:,.0f} ns a state"
    )


if __name__ == "__main__":
    main()
