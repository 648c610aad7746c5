"""Benchmark helper: a command's wall time and peak anonymous resident
memory (RssAnon, what --max-memory bounds), sampled from /proc every 0.2 s
over the process and its children. ru_maxrss (bench/memory.py) counts
file-backed pages too, so it overstates a run that reads files through the
page cache (spilled levels, a behaviour graph on disk).

    python bench/anon_peak.py -- modelcheck check --set brokers=5 --set max_records=1 \\
        --set 'properties=["LeaderlessGetsLeader","HwmAdvancesAtMinIsr"]' --max-memory 1800M --json
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def anon_kib(pid: int) -> int:
    """RssAnon of `pid` and its children, in KiB (0 once gone)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("RssAnon:")), 0)
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def main() -> None:
    command = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    start = time.perf_counter()
    child = subprocess.Popen(command)
    peak = 0
    while child.poll() is None:
        peak = max(peak, anon_kib(child.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    print(f"exit {child.returncode}, wall {wall:.1f} s, peak RssAnon {peak / 2**20:.2f} GiB", file=sys.stderr)


if __name__ == "__main__":
    main()
