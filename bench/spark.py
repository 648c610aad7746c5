"""Benchmark: one configuration on the local fast engine and on Spark with
1, 2, 4 and 8 partitions, one fresh process a run.

Prints, a run a line: distinct states, wall time (the check's own, Spark's
start-up included), distinct states/s, and peak resident memory by role,
sampled from /proc every 0.2 s: the driver's Python process, the driver's
JVM (in local mode it hosts the executor too), a standalone executor's
JVM, and the Python workers Spark forks (summed); the 1-minute load
average when the run ended; for Spark, the task seconds by phase (settle,
expand, write: summed over tasks), the seconds the driver waited for
jobs, and the memory settings in effect.
With --standalone the Spark runs also go to a real standalone master and
worker on loopback, where the driver's JVM and the executor's are apart:
the driver's memory stays flat however many states are visited; with
--executors K, as K executors of one core each (a run per K given), which
is what a per-executor rate is measured from. Each Spark line also says
the bytes its files carried (candidates, runs, frontiers): a state's share
of what a cluster's shared storage would move.

    python bench/spark.py                                  # the default config (1.69M states), local[2]
    python bench/spark.py --set max_records=1 --partitions 2 --standalone
    python bench/spark.py --master local[1] --partitions 1 --skip-fast
    python bench/spark.py --skip-fast --skip-local --partitions 2 --standalone --executors 1 --executors 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
ROLES = {  # what a process's command line says it is
    "driver JVM": "org.apache.spark.deploy.SparkSubmit",
    "executor JVM": "CoarseGrainedExecutorBackend",
    "py workers": "pyspark.daemon",
}


class PeakMemory(threading.Thread):
    """Peak RSS (MB) by role: the check process is `driver py` (the fast
    engine's threads included), Spark's JVMs and Python workers are told
    apart by their command lines."""

    def __init__(self, root_pid: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.done = root_pid, dict.fromkeys(["driver py", *ROLES], 0.0), False

    def run(self) -> None:
        while not self.done:
            now = dict.fromkeys(self.peak, 0.0)
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20
                except (OSError, IndexError, ValueError):
                    continue
                role = (
                    "driver py"
                    if int(pid) == self.root
                    else next((r for r, mark in ROLES.items() if mark in cmd), None)
                )
                if role:
                    now[role] += rss
            self.peak = {r: max(self.peak[r], now[r]) for r in self.peak}
            time.sleep(0.2)


def run_check(argv: list[str]) -> dict:
    """`modelcheck check --json -q ARGV` in a fresh process, with peak memory by role."""
    p = subprocess.Popen(
        [sys.executable, "-c", "from cli import main; main()", "check", "--json", "-q", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    sampler = PeakMemory(p.pid)
    sampler.start()
    out, err = p.communicate()
    sampler.done = True
    sampler.join()
    if not out:
        raise RuntimeError(err)
    return {**json.loads(out), "peak_mb": sampler.peak}


def line(label: str, r: dict) -> str:
    mem = "  ".join(f"{role} {mb:,.0f}" for role, mb in r["peak_mb"].items() if mb)
    phases = r.get("spark_time_s")
    written = r.get("spark_written_bytes") or 0
    spark = (
        f"   task s {phases['tasks']}, jobs {phases['jobs']} s, "
        f"written {written / 1e9:.2f} GB ({written / r['distinct_states']:.0f} B a state), {r['spark_memory']}"
        if phases
        else ""
    )
    return (
        f"{label:<28} {r['distinct_states']:>10,} {r['elapsed_s']:>8.1f} "
        f"{r['distinct_states'] / r['elapsed_s']:>9,.0f}   {mem}   load {os.getloadavg()[0]:.1f}{spark}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the config (default: the default)")
    ap.add_argument("--arg", action="append", default=[], help="one more argument of every check (--arg=--symmetry)")
    ap.add_argument("--master", default="local[2]", help="Spark master of the local runs (local[2])")
    ap.add_argument("--partitions", type=int, action="append", help="partition counts (1, 2, 4, 8)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="fast engine threads (all cores)")
    ap.add_argument("--skip-fast", action="store_true", help="no fast-engine run")
    ap.add_argument("--skip-local", action="store_true", help="no Spark run on the local master")
    ap.add_argument("--standalone", action="store_true", help="also run on a standalone master + worker on loopback")
    ap.add_argument(
        "--executors",
        type=int,
        action="append",
        help="standalone: executors of one core each, a run per count (default: one executor of 2 cores)",
    )
    ns = ap.parse_args()
    # without --set: the embedded default (one configuration, 2 records), not the default check's four
    sets = [x for s in (ns.set or ["max_records=2"]) for x in ("--set", s)] + ns.arg
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"config: {' '.join(ns.set) or 'default'}"
    )
    print(f"{'run':<28} {'distinct':>10} {'wall s':>8} {'states/s':>9}   peak RSS MB by role")
    results = {}
    if not ns.skip_fast:
        results["fast"] = run_check(["--engine", "fast", "--workers", str(ns.workers), *sets])
        print(line(f"fast x{ns.workers}", results["fast"]), flush=True)
    for parts in [] if ns.skip_local else ns.partitions or [1, 2, 4, 8]:
        r = run_check(["--engine", "spark", "--master", ns.master, "--partitions", str(parts), *sets])
        results[f"spark {parts}"] = r
        print(line(f"spark {ns.master} P={parts}", r), flush=True)
    if ns.standalone:
        sys.path.insert(0, str(ROOT / "tests"))
        from spark_cluster import standalone_cluster  # the tests' harness: a master and a worker on loopback

        with tempfile.TemporaryDirectory() as tmp, standalone_cluster(Path(tmp), memory="6g") as url:
            for executors in ns.executors or [0]:
                one_core = ["--spark-conf", "spark.executor.cores=1", "--spark-conf", f"spark.cores.max={executors}"]
                for parts in ns.partitions or [max(2, executors)]:
                    r = run_check(
                        ["--engine", "spark", "--master", url, "--partitions", str(parts), *sets]
                        + (one_core if executors else [])
                    )
                    label = f"{executors} executor{'s' * (executors > 1)}" if executors else "1 executor, 2 cores"
                    results[f"standalone {label} P={parts}"] = r
                    print(line(f"standalone {label} P={parts}", r), flush=True)
    counts = {(r["verdict"], r["distinct_states"]) for r in results.values()}
    if len(counts) > 1:
        raise SystemExit(f"engines disagree: {sorted(counts)}")
    if "fast" in results and len(results) > 1:
        best = min(r["elapsed_s"] for k, r in results.items() if k != "fast")
        print(f"best Spark wall time / fast x{ns.workers}: {best / results['fast']['elapsed_s']:.2f}x")


if __name__ == "__main__":
    main()
