"""Benchmark: what a memory limit and checkpoints cost. One config is
checked as a whole process several ways, each compared with the
unbounded run (the counts must be equal), with its wall time, its CPU
time (user + sys) and the process's peak resident memory (getrusage of
the child):

- no limit (the default, 80% of RAM: nothing spills);
- each --max-memory given: the fast engine splits levels into segments
  and moves frontiers and parent links to disk, and the visited set's
  keys (sorted runs, each split level settled at its end) once a level
  no longer fits in one segment (the output says whether it spilled, into how many segments, how often
  the visited set moved to disk and how much of it is there at the end);
- --checkpoint with --checkpoint-every 0 (a checkpoint at every level)
  and with the default interval, and the checkpoint's size on disk;
- a run stopped by SIGINT half-way and resumed (wall time of both).

    python bench/memory.py                                   # max_records=3: 18.8M states
    python bench/memory.py --limit 1G --limit 400M --set max_isr_shrinks=2
    python bench/memory.py --set max_records=3 --set max_fences=2 --fingerprint-bits 128 --limit 600M \
        --no-checkpoints                                    # a visited set 4x the limit
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIELDS = ("verdict", "distinct_states", "generated_states", "depth", "coverage")


def run(args: list[str], stop_after: float | None = None) -> tuple[float, float, int, Any, int]:
    """(wall s, CPU s (user + sys), peak RSS bytes, JSON, exit status) of one check as a process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(
            ["modelcheck", "check", "--json", "-q", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=err
        )
        if stop_after is not None:
            time.sleep(stop_after)
            p.send_signal(signal.SIGINT)
        assert p.stdout is not None
        out = p.stdout.read()
        _pid, status, usage = os.wait4(p.pid, 0)  # this child's own peak, not the largest child's
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        if p.returncode not in (0, 1, 130):
            raise RuntimeError(f"modelcheck check {' '.join(args)}: exit {p.returncode}\n{err.read().decode()}")
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, cpu, usage.ru_maxrss * 1024, json.loads(out) if out else None, p.returncode


def size_of(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir())


def checkpoint_runs(config: list[str], elapsed: float) -> list[tuple]:
    """A checkpoint at every level and at the default interval, then a run
    stopped half-way by SIGINT and resumed."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for every in ("0", "180"):
            ck = Path(tmp) / f"ck{every}"
            wall, cpu, peak, got, _ = run([*config, "--checkpoint", str(ck), "--checkpoint-every", every])
            rows.append((f"--checkpoint-every {every}", wall, cpu, peak, got, f"on disk {size_of(ck) / 2**20:.0f} MiB"))
        ck = Path(tmp) / "stopped"
        first, first_cpu, _, _, code = run(
            [*config, "--checkpoint", str(ck), "--checkpoint-every", "0"], stop_after=elapsed / 2 + 2
        )
        assert code == 130, code
        wall, cpu, peak, got, _ = run(["--resume", str(ck)])
        rows.append(
            (
                "SIGINT half-way, then --resume",
                first + wall,
                first_cpu + cpu,
                peak,
                got,
                f"stopped after {first:.1f} s, resumed in {wall:.1f} s",
            )
        )
        shutil.rmtree(ck)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="the config (default: max_records=3)"
    )
    ap.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="SIZE",
        help="--max-memory values to try (default: 1G, 600M, 400M)",
    )
    ap.add_argument("--fingerprint-bits", choices=("64", "128"), default="64")
    ap.add_argument("--no-checkpoints", action="store_true", help="only the limits, no checkpoint runs")
    ns = ap.parse_args()
    config = [x for s in (ns.set or ["max_records=3"]) for x in ("--set", s)] + [
        "--fingerprint-bits",
        ns.fingerprint_bits,
    ]
    print(
        f"# {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}; "
        f"config: {' '.join(config)}"
    )
    rows = []
    wall, cpu, peak, base, _ = run(config)
    rows.append(
        ("no limit (default)", wall, cpu, peak, base, f"visited set {base['memory']['visited_bytes'] / 2**20:,.0f} MiB")
    )
    for limit in ns.limit or ["1G", "600M", "400M"]:
        wall, cpu, peak, got, _ = run([*config, "--max-memory", limit])
        rows.append(
            (
                f"--max-memory {limit}",
                wall,
                cpu,
                peak,
                got,
                f"spilled={got['spilled']} segments={got['segments']} visited moved to disk "
                f"{got['visited_flushes']}x, {got['memory']['visited_disk_bytes'] / 2**20:,.0f} MiB there",
            )
        )
    if not ns.no_checkpoints:
        rows += checkpoint_runs(config, base["elapsed_s"])
    print(f"{'run':34} {'wall s':>8} {'CPU s':>8} {'peak RSS':>10}  {'same counts':11}  notes")
    for name, wall, cpu, peak, got, notes in rows:
        same = all(got[f] == base[f] for f in FIELDS)
        rss = f"{peak / 2**20:,.0f} MiB"
        print(f"{name:34} {wall:8.1f} {cpu:8.1f} {rss:>10}  {str(same):11}  {notes}")
        assert same, name


if __name__ == "__main__":
    main()
