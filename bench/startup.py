"""Benchmark: what a new user waits for. A fresh virtualenv gets this
checkout installed (`pip install .`, timed), then a small check runs as a
whole process four ways: the first run (an empty kernel cache: numba
compiles the variant), the second (machine code loaded from the cache), a
third with another config of the same variant (nothing to compile: a
config is run-time tables), and interpreted (MODELCHECK_KERNEL=interpreted).

    python bench/startup.py                          # --set max_records=1 --set max_fences=0
    python bench/startup.py --set variant=legacy
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["max_records=1", "max_fences=0"]


def wall(argv: list[str], env: dict) -> tuple[float, str]:
    started = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    elapsed = time.perf_counter() - started
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    return elapsed, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the config (default: small)")
    ns = ap.parse_args()
    sets = ns.set or SMALL
    print(f"# {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}; "
          f"config: {' '.join(sets)}")
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True, cwd=tmp)
        print(f"{'install (venv + pip install .)':40} {time.perf_counter() - started:7.1f} s")
        check = [str(venv / "bin" / "modelcheck"), "check", "-q", *(x for s in sets for x in ("--set", s))]
        env = {"MODELCHECK_CACHE": str(Path(tmp) / "cache")}
        other = [*check, "--set", "max_isr_shrinks=0"]
        for label, argv, extra in [("first run (kernel compiled)", check, {}),
                                   ("second run (kernel loaded from cache)", check, {}),
                                   ("another config, same variant", other, {}),
                                   ("interpreted (MODELCHECK_KERNEL=interpreted)", check,
                                    {"MODELCHECK_KERNEL": "interpreted"})]:
            seconds, out = wall(argv, {**env, **extra})
            states = next((line.split("  ")[0] for line in out.splitlines() if line.startswith("distinct states")), "")
            print(f"{label:40} {seconds:7.1f} s   {states}")


if __name__ == "__main__":
    main()
