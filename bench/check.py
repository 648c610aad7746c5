"""Benchmark: the engines side by side on the configs issue #13 names, one
fresh process a run, in one sitting: the reference engine (bfs, the
interpreted spec), the fast engine (the compiled kernel) on 1 and 2
threads, and TLC on 2 workers on the TLA+ mirror (specs/tla/KIP966.tla).

A reference or TLC run that cannot finish within --limit seconds (on the
N=4 config: hours) is stopped there and reports the distinct
states it had reached and its rate so far, from its own progress output
(marked "stopped"). Rates are distinct states per second of the run's
own clock; wall is the whole process (start-up, kernel loading); peak RSS
is the process's (TLC: the JVM's). The kernel is compiled before the
timed runs (its first-run cost is bench/startup.py's).

    python bench/check.py                      # default and N=4, every engine
    python bench/check.py --only default
    python bench/check.py --only n4 --limit 300   # the fast runs always finish
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INF = float("inf")
TLA = ROOT / "specs" / "tla"
CONFIGS = {
    "default": (["max_records=2"], {}),  # the embedded default, one configuration (not the default check's four)
    "n4": (["brokers=4", "min_isr=3", "max_unclean_shutdowns=2"], {"N": 4, "MinIsr": 3, "MaxUncleanShutdowns": 2}),
}
# a progress update (wrapped where stderr is not a terminal)
PROGRESS = re.compile(
    r"depth (\d+)\s+distinct ([\d,]+)\s+generated ([\d,]+)\s+queue [\d,]+\s+[\d,]+ states/s\s+(\d+) s"
)
TLC_PROGRESS = re.compile(r"Progress\((\d+)\).*?: ([\d,]+) states generated.*?, ([\d,]+) distinct states found")


def timed(argv: list[str], limit: float, cwd: Path = ROOT) -> tuple[int, str, str, float, float, bool]:
    """Run argv; (exit status, stdout, stderr, wall s, its peak RSS MB, stopped by the limit). The
    process is reaped here (wait4), so the RSS is its own, not the largest of all runs so far."""
    started = time.perf_counter()
    p = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True
    )
    output: dict[str, str] = {}
    readers = [
        threading.Thread(target=lambda k, f: output.__setitem__(k, f.read()), args=(k, f))
        for k, f in (("out", p.stdout), ("err", p.stderr))
    ]
    for r in readers:
        r.start()
    stopped = False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - started > limit and not stopped:
            os.killpg(p.pid, signal.SIGTERM)
            stopped = True
        time.sleep(0.05)
    for r in readers:
        r.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return (p.returncode, output["out"], output["err"], time.perf_counter() - started, usage.ru_maxrss / 1024, stopped)


def modelcheck(sets: list[str], engine: str, workers: int, symmetry: bool, limit: float) -> dict:
    argv = [
        sys.executable,
        "-c",
        "from cli import main; main()",
        "check",
        "--engine",
        engine,
        "--workers",
        str(workers),
        *(["--symmetry"] if symmetry else []),
        *(x for s in sets for x in ("--set", s)),
    ]
    code, out, err, wall, rss, stopped = timed(argv + ["--json", "-q"] if engine != "bfs" else argv, limit)
    if engine != "bfs" and not stopped:
        r = json.loads(out)
        return {
            "distinct": r["distinct_states"],
            "generated": r["generated_states"],
            "seconds": r["elapsed_s"],
            "wall": wall,
            "rss": rss,
            "stopped": False,
            "verdict": r["verdict"],
            "keys": r.get("state_keys"),
            "memory": r["memory"],
            "bits": r.get("state_bits"),
        }
    if not stopped:
        return {
            "distinct": int(_field(r"distinct states: ([\d,]+)", out).replace(",", "")),
            "generated": int(_field(r"generated: ([\d,]+)", out).replace(",", "")),
            "seconds": float(_field(r"time: ([\d.]+) s", out)),
            "wall": wall,
            "rss": rss,
            "stopped": False,
            "verdict": "holds" if "holds:" in out else "violated",
            "keys": None,
        }
    last = list(PROGRESS.finditer(err))
    if not last:
        raise RuntimeError(f"no progress from {' '.join(argv)}: {err[-500:]}")
    depth, distinct, generated, seconds = last[-1].groups()
    return {
        "distinct": int(distinct.replace(",", "")),
        "generated": int(generated.replace(",", "")),
        "seconds": float(seconds),
        "wall": wall,
        "rss": rss,
        "stopped": True,
        "verdict": f"depth {depth}",
        "keys": None,
    }


def _field(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"{pattern!r} not in the output: {text[-500:]}")
    return found.group(1)


def tlc(constants: dict, limit: float) -> dict:
    """TLC x2 on the mirror, the default config's .cfg with `constants` changed."""
    from modelcheck.tlc import find_jar, find_java, tlc_command

    text = (TLA / "kip966_default.cfg").read_text()
    for name, value in constants.items():
        text = re.sub(rf"^(\s+{name} = ).*$", rf"\g<1>{value}", text, flags=re.M)
    with tempfile.TemporaryDirectory() as tmp:
        for f in TLA.glob("*.tla"):
            (Path(tmp) / f.name).write_text(f.read_text())
        (Path(tmp) / "bench.cfg").write_text(text)
        # TLC 2.15 finds the config only by a name relative to where it runs
        java, jar = find_java(), find_jar()
        if java is None or jar is None:
            raise RuntimeError("TLC needs Java and tla2tools.jar (pip install '.[tla]')")
        argv = tlc_command(java, jar, "KIP966.tla", "bench.cfg", 2, "meta")
        started = time.perf_counter()
        code, out, err, wall, rss, stopped = timed(argv, limit, cwd=Path(tmp))
    if not stopped:
        found = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", out)
        if not found:
            raise RuntimeError(f"TLC did not finish: {out[-800:]}")
        verdict = "holds" if "No error has been found" in out else "violated"
        return {
            "distinct": int(found.group(2).replace(",", "")),
            "generated": int(found.group(1).replace(",", "")),
            "seconds": wall,
            "wall": wall,
            "rss": rss,
            "stopped": False,
            "verdict": verdict,
            "keys": None,
        }
    last = [m for m in map(TLC_PROGRESS.search, out.splitlines()) if m]
    depth, generated, distinct = last[-1].groups() if last else ("?", "0", "0")
    return {
        "distinct": int(distinct.replace(",", "")),
        "generated": int(generated.replace(",", "")),
        "seconds": time.perf_counter() - started,
        "wall": wall,
        "rss": rss,
        "stopped": True,
        "verdict": f"depth {depth}",
        "keys": None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(CONFIGS), action="append", help="one of the configs (repeatable)")
    ap.add_argument("--limit", type=float, default=600, help="seconds before a reference or TLC run is stopped (600)")
    ap.add_argument("--skip-tlc", action="store_true")
    ns = ap.parse_args()
    print(
        f"# {os.cpu_count()} cores ({platform.machine()}), {platform.python_implementation()} "
        f"{platform.python_version()}; load {os.getloadavg()[0]:.2f} at start"
    )
    print(
        f"{'config':8} {'engine':18} {'verdict':14} {'distinct':>12} {'s':>7} {'wall s':>7} {'distinct/s':>11} "
        f"{'RSS MB':>7}  vs reference"
    )
    for name in ns.only or list(CONFIGS):
        sets, constants = CONFIGS[name]
        symmetry = name == "n4"  # our N=4 runs reduce by symmetry (TLC's does not: its rate is per state)
        modelcheck(sets + ["max_records=0"], "fast", 2, symmetry, ns.limit)  # the kernel compiled (or loaded)
        tag = " sym" if symmetry else ""
        runs = [
            ("bfs x1" + tag, partial(modelcheck, sets, "bfs", 1, symmetry, ns.limit)),
            ("fast x1" + tag, partial(modelcheck, sets, "fast", 1, symmetry, INF)),
            ("fast x2" + tag, partial(modelcheck, sets, "fast", 2, symmetry, INF)),
        ]
        if not ns.skip_tlc:
            runs.append(("TLC x2", partial(tlc, constants, ns.limit)))
        rates = {}
        for label, go in runs:
            r = go()
            rate = r["distinct"] / r["seconds"] if r["seconds"] else 0.0
            rates[label] = rate
            ref = rates.get("bfs x1" + (" sym" if symmetry else ""))

            def vs(base: float | None, rate: float = rate, label: str = label) -> str:
                return f"{rate / base:8.1f}x" if base and label.startswith("fast") else " " * 9

            print(
                f"{name:8} {label:18} {r['verdict'] + (' (stopped)' if r['stopped'] else ''):14} "
                f"{r['distinct']:>12,} {r['seconds']:>7.1f} {r['wall']:>7.1f} {rate:>11,.0f} {r['rss']:>7,.0f}  "
                f"{vs(ref)}",
                flush=True,
            )
            if r.get("memory"):
                m, n = r["memory"], r["distinct"]
                print(
                    f"{'':8} {'':18} {r['bits']}-bit states, {r['keys']} keys; visited set "
                    f"{m['visited_bytes'] / n:.2f} B/state, links {m['links_bytes'] / n:.2f} B/state, "
                    f"widest frontier {m['frontier_bytes_peak'] / 2**20:,.0f} MiB",
                    flush=True,
                )
        if "TLC x2" in rates:
            for label, rate in rates.items():
                if label.startswith("fast"):
                    print(f"{name:8} {label:18} / TLC x2 = {rate / rates['TLC x2']:.1f}x distinct states/s")


if __name__ == "__main__":
    main()
