"""Benchmark: what a new user waits for. A fresh virtualenv gets this
checkout installed (`pip install .`, timed), then checks run as whole
processes, each saying which execution answered:

- a small check on an empty kernel cache, as a user runs it: the kernel
  compiles in a child while the interpreted engine checks, and the small
  check is done first (the compile is abandoned);
- the same with MODELCHECK_KERNEL=compiled: waits for numba to compile the
  variant (the one-time cost, filling the cache);
- the small check again (machine code loaded from the cache), another
  config of the same variant (nothing to compile: a config is run-time
  tables), and interpreted (MODELCHECK_KERNEL=interpreted);
- the default config (--set max_records=2: the embedded default, one
  configuration) on an empty cache: interpreted until the kernel is
  compiled, then the compiled search;
- the default check (no config: the suite of specs/kafka_elr/default.toml),
  as the README's first command runs it: on an empty cache (the verdicts
  interpreted while the kernel compiles, then the compile finished), and
  cached; timed to its last verdict line and to its exit.

    python bench/startup.py                          # small: --set max_records=1 --set max_fences=0
    python bench/startup.py --set variant=legacy
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["max_records=1", "max_fences=0"]


def wall(argv: list[str], env: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    elapsed = time.perf_counter() - started
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr}")
    return elapsed, json.loads(p.stdout)


def suite_wall(argv: list[str], env: dict) -> tuple[float, float]:
    """(seconds to the last verdict line, seconds to the exit) of the default
    check, whose lines are read as they come."""
    started = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, **env})
    assert p.stdout is not None
    last = 0.0
    for line in p.stdout:
        if line.startswith(("holds ", "violated: ")):
            last = time.perf_counter() - started
    if p.wait() not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}")
    return last, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the config (default: small)")
    ns = ap.parse_args()
    sets = ns.set or SMALL
    print(
        f"# {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}; "
        f"small config: {' '.join(sets)}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True, cwd=tmp)
        print(f"{'install (venv + pip install .)':52} {time.perf_counter() - started:7.1f} s")
        check = [str(venv / "bin" / "modelcheck"), "check", "--json"]
        small = [*check, *(x for s in sets for x in ("--set", s))]
        cache = Path(tmp) / "cache"
        env = {"MODELCHECK_CACHE": str(cache)}
        default = [str(venv / "bin" / "modelcheck"), "check"]
        for label, empty in [
            ("default check (suite), empty cache", True),
            ("default check (suite), cached", False),
            ("default check (suite), cached again", False),
        ]:
            if empty:
                shutil.rmtree(cache, ignore_errors=True)
            verdicts, seconds = suite_wall(default, env)
            print(f"{label:52} {seconds:7.1f} s   last verdict at {verdicts:.1f} s", flush=True)
        for label, argv, extra, empty in [
            ("small, empty cache (races the compile)", small, {}, True),
            ("small, empty cache, MODELCHECK_KERNEL=compiled", small, {"MODELCHECK_KERNEL": "compiled"}, True),
            ("small, cached", small, {}, False),
            ("another config of the variant, cached", [*small, "--set", "max_isr_shrinks=0"], {}, False),
            ("small, MODELCHECK_KERNEL=interpreted", small, {"MODELCHECK_KERNEL": "interpreted"}, False),
            ("default config, empty cache (races the compile)", [*check, "--set", "max_records=2"], {}, True),
            ("default config, cached", [*check, "--set", "max_records=2"], {}, False),
        ]:
            if empty:
                shutil.rmtree(cache, ignore_errors=True)
            seconds, r = wall(argv, {**env, **extra})
            print(
                f"{label:52} {seconds:7.1f} s   {r['distinct_states']:>10,} states   "
                f"kernel: {r['run_info']['kernel'] if 'run_info' in r else r['kernel']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
