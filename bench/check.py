"""Benchmark: exhaustive checks of a family of growing configurations on
each engine, and TLC on the TLA+ mirror of the same config.

Each run is a fresh process (peak RSS counts it and its worker processes).
Prints distinct states, wall time, distinct states/s, peak RSS and the
visited set's bytes per state.

    python bench/check.py                       # the default family, bfs and parallel x 1, 2 workers
    python bench/check.py --tlc                 # also TLC (2 workers) where specs/tla has the config
    python bench/check.py --set brokers=4 --set min_isr=3 --set max_unclean_shutdowns=2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILY = [  # (label, --set arguments, TLC .cfg of the same config or None)
    ("max_records=1 max_fences=0", ["max_records=1", "max_fences=0"], "kip966_small"),
    ("brokers=2 min_isr=2", ["brokers=2", "min_isr=2"], "kip966_n2"),
    ("max_records=1", ["max_records=1"], None),
    ("default", [], "kip966_default"),
    ("N=4 min_isr=3 1 record no fences 2 unclean",
     ["brokers=4", "min_isr=3", "max_records=1", "max_fences=0", "max_unclean_shutdowns=2"], None),
]
ENGINES = [("bfs", 1), ("parallel", 1), ("parallel", 2)]
VISITED_BYTES = {"bfs": None, "parallel": 8}     # parallel: one uint64 a state (tests/test_engines.py)


def run_check(sets: list[str], engine: str, workers: int) -> dict:
    code = ("import json,resource,sys\nfrom cli import main\n"
            f"sys.argv=['modelcheck','check','--json','-q','--engine','{engine}','--workers','{workers}',"
            + "".join(f"'--set',{s!r}," for s in sets) + "]\n"
            "try:\n main()\nexcept SystemExit: pass\n"
            "rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "print(json.dumps({'rss_mb': rss / 1024}), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    out = json.loads(p.stdout)
    out.update(json.loads(p.stderr.strip().splitlines()[-1]))
    return out


def run_tlc(cfg: str, workers: int) -> dict:
    from modelcheck.tlc import run_tlc as tlc
    return tlc(ROOT / "specs" / "tla" / "KIP966.tla", ROOT / "specs" / "tla" / f"{cfg}.cfg",
               workers=workers, timeout=3600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="one config instead of the family")
    ap.add_argument("--tlc", action="store_true", help="also run TLC (2 workers) on the TLA+ mirror")
    ap.add_argument("--only", type=int, help="only the family's Nth config (0-based)")
    ns = ap.parse_args()
    family = [(" ".join(ns.set), ns.set, None)] if ns.set else FAMILY
    if ns.only is not None:
        family = [family[ns.only]]
    print(f"# {os.cpu_count()} cores ({platform.machine()}), {platform.python_implementation()} "
          f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}")
    print(f"{'config':44} {'engine':12} {'verdict':22} {'distinct':>10} {'time s':>7} {'states/s':>9} "
          f"{'RSS MB':>7} {'visited B/st':>12}")
    for label, sets, cfg in family:
        rates = {}
        for engine, workers in ENGINES:
            r = run_check(sets, engine, workers)
            verdict = r["verdict"] + (f": {r['invariant']}" if r["invariant"] else "")
            rate = r["distinct_states"] / r["elapsed_s"] if r["elapsed_s"] else 0
            rates[(engine, workers)] = rate
            print(f"{label:44} {engine + ' x' + str(workers):12} {verdict:22} {r['distinct_states']:>10,} "
                  f"{r['elapsed_s']:>7.1f} {rate:>9,.0f} {r['rss_mb']:>7.0f} "
                  f"{VISITED_BYTES[engine] or '':>12}", flush=True)
        if ns.tlc and cfg:
            t = run_tlc(cfg, 2)
            rate = t["distinct"] / t["seconds"]
            print(f"{label:44} {'TLC x2':12} {t['verdict']:22} {t['distinct']:>10,} {t['seconds']:>7.1f} "
                  f"{rate:>9,.0f} {'':>7} {'':>12}  parallel x2 / TLC x2 = "
                  f"{rates[('parallel', 2)] / rate:.2f}", flush=True)


if __name__ == "__main__":
    main()
