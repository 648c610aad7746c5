"""Benchmark: exhaustive checks of the shipped configuration family.

Runs each config in a fresh process (so peak RSS is its own) and prints
distinct states, generated states, wall time, distinct states/s and peak RSS.

    python bench/check.py                 # the default family
    python bench/check.py --set brokers=4 --set min_isr=3
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys

FAMILY = [
    ["--set", "max_records=1", "--set", "max_fences=0"],
    ["--set", "max_records=1"],
    [],                                                  # the embedded default
    ["--set", "variant=legacy"],
]


def run(args: list[str]) -> dict:
    code = ("import json,resource,sys; from cli import main; sys.argv=['modelcheck','check','--json','-q',*"
            + repr(args) + "]\ntry:\n main()\nexcept SystemExit: pass\n"
            "print(json.dumps({'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024}), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    out = json.loads(p.stdout)
    out.update(json.loads(p.stderr.strip().splitlines()[-1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ns = ap.parse_args()
    family = [sum((["--set", s] for s in ns.set), [])] if ns.set else FAMILY
    print(f"# {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, 1 worker")
    print(f"{'config':48} {'verdict':24} {'distinct':>10} {'generated':>10} {'time s':>8} {'states/s':>9} "
          f"{'RSS MB':>7}")
    for args in family:
        r = run(args)
        verdict = r["verdict"] + (f": {r['invariant']}" if r["invariant"] else "")
        rate = r["distinct_states"] / r["elapsed_s"] if r["elapsed_s"] else 0
        print(f"{' '.join(a for a in args if a != '--set') or 'default':48} {verdict:24} "
              f"{r['distinct_states']:>10,} {r['generated_states']:>10,} {r['elapsed_s']:>8.1f} {rate:>9,.0f} "
              f"{r['rss_mb']:>7.0f}")


if __name__ == "__main__":
    main()
