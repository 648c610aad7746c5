"""Benchmark: exhaustive checks of a family of growing configurations on
each engine, one fresh process a run.

Prints, a run a line: distinct states, wall time, distinct states/s, peak
RSS (the largest of the run's process and its workers), the bytes a state
of the fast engine's visited set and of its parent links (the structures'
own arrays, divided by the distinct states), and the 1-minute load average
when the run started (the machine is shared: a load above the cores means
the run did not have them to itself).

    python bench/check.py                       # the family: bfs x1, fast x1, fast xN (N = all cores)
    python bench/check.py --only 3              # the family's 4th config
    python bench/check.py --symmetry            # also fast xN --symmetry
    python bench/check.py --set brokers=4 --set min_isr=3 --set max_unclean_shutdowns=2 --symmetry --skip-bfs
    python bench/check.py --tlc                 # also TLC (2 workers) where specs/tla has the config
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


def run_check(sets: list[str], engine: str, workers: int, symmetry: bool) -> dict:
    """One `modelcheck check --json` in a fresh process, with its peak RSS."""
    argv = ["modelcheck", "check", "--json", "-q", "--engine", engine, "--workers", str(workers),
            *(["--symmetry"] if symmetry else []), *(x for s in sets for x in ("--set", s))]
    code = ("import json,resource,sys\nfrom cli import main\n"
            f"sys.argv={argv!r}\n"
            "try:\n main()\nexcept SystemExit: pass\n"
            "rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "print(json.dumps({'rss_mb': rss / 1024}), file=sys.stderr)")
    load = os.getloadavg()[0]
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    if not p.stdout:
        raise RuntimeError(p.stderr)
    out = json.loads(p.stdout)
    out.update(json.loads(p.stderr.strip().splitlines()[-1]), load=load)
    return out


def run_tlc(cfg: str, workers: int) -> dict:
    from modelcheck.tlc import run_tlc as tlc
    return tlc(ROOT / "specs" / "tla" / "KIP966.tla", ROOT / "specs" / "tla" / f"{cfg}.cfg",
               workers=workers, timeout=3600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="one config instead of the family")
    ap.add_argument("--only", type=int, help="only the family's Nth config (0-based)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="N of the fast xN runs (all cores)")
    ap.add_argument("--symmetry", action="store_true", help="also run fast xN with --symmetry")
    ap.add_argument("--skip-bfs", action="store_true", help="no reference-engine run (large configs)")
    ap.add_argument("--skip-plain", action="store_true", help="only the --symmetry run (configs too large without)")
    ap.add_argument("--tlc", action="store_true", help="also run TLC (2 workers) on the TLA+ mirror")
    ns = ap.parse_args()
    family = [(" ".join(ns.set) or "default", ns.set, None)] if ns.set else FAMILY
    if ns.only is not None:
        family = [family[ns.only]]
    runs = [] if ns.skip_plain else [("bfs", 1, False), ("fast", 1, False), ("fast", ns.workers, False)]
    if ns.skip_bfs:
        runs = [r for r in runs if r[0] != "bfs"]
    if ns.symmetry or ns.skip_plain:
        runs.append(("fast", ns.workers, True))
    print(f"# {os.cpu_count()} cores ({platform.machine()}), {platform.python_implementation()} "
          f"{platform.python_version()}")
    print(f"{'config':44} {'engine':16} {'verdict':22} {'distinct':>11} {'time s':>7} {'states/s':>9} "
          f"{'RSS MB':>7} {'visited B/st':>12} {'links B/st':>10} {'load':>5}")
    for label, sets, cfg in family:
        rates = {}
        for engine, workers, symmetry in runs:
            r = run_check(sets, engine, workers, symmetry)
            name = f"{engine} x{workers}" + (" sym" if symmetry else "")
            verdict = r["verdict"] + (f": {r['invariant']}" if r["invariant"] else "")
            rate = r["distinct_states"] / r["elapsed_s"] if r["elapsed_s"] else 0
            rates[name] = rate
            mem = r["memory"]
            per = {k: f"{v / r['distinct_states']:.1f}" for k, v in mem.items()}
            print(f"{label:44} {name:16} {verdict:22} {r['distinct_states']:>11,} {r['elapsed_s']:>7.1f} "
                  f"{rate:>9,.0f} {r['rss_mb']:>7.0f} {per.get('visited_bytes', '-'):>12} "
                  f"{per.get('links_bytes', '-'):>10} {r['load']:>5.2f}", flush=True)
        if ns.tlc and cfg:
            t = run_tlc(cfg, 2)
            rate = t["distinct"] / t["seconds"]
            ours = rates.get(f"fast x{ns.workers}", 0)
            print(f"{label:44} {'TLC x2':16} {t['verdict']:22} {t['distinct']:>11,} {t['seconds']:>7.1f} "
                  f"{rate:>9,.0f}  fast x{ns.workers} / TLC x2 = {ours / rate:.2f}", flush=True)


if __name__ == "__main__":
    main()
