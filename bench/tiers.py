"""The test tiers' wall time: the fast tier (-m "not slow") with the
kernels it uses already compiled (the edit loop), and from an empty kernel
cache (a fresh clone, or the first run after a spec edit, which changes
every kernel); with --whole, the whole suite from an empty cache (CI).

    python bench/tiers.py [--whole]
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


def pytest(args: list[str], cache: str | None) -> tuple[float, str]:
    """(wall s, pytest's summary line) of one run."""
    env = {**os.environ, **({"MODELCHECK_CACHE": cache} if cache else {})}
    started = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    lines = p.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    return wall, "\n".join([lines[-1] if lines else f"exit {p.returncode}", *failed])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--whole", action="store_true", help="also the whole suite from an empty kernel cache")
    ns = ap.parse_args()
    print(
        f"# {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}, "
        f"load average at start {os.getloadavg()[0]:.1f}"
    )
    runs = [
        ("fast tier, kernels compiled", ["-m", "not slow"], False),
        ("fast tier, empty kernel cache", ["-m", "not slow"], True),
    ]
    if ns.whole:
        runs.append(("whole suite, empty kernel cache", [], True))
    for name, args, cold in runs:
        with tempfile.TemporaryDirectory(prefix="modelcheck-bench-cache-") as empty:
            if not cold:
                pytest(args, None)  # compile what it uses, once
            wall, summary = pytest(args, empty if cold else None)
        print(f"{name:34} {wall:7.1f} s   {summary}")


if __name__ == "__main__":
    main()
