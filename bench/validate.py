"""Benchmark: `modelcheck validate` on long metadata logs of one
partition, written by the oracle of Kafka 4.0.0's controller
(tests/metalogs.py): rolling restarts of every replica (controlled
shutdown, stop, restart, unfence, back into the ISR), repeated. The time
must grow with the log, not with the state space: the states met, and the
widest sets of them, must be the same at every length, or the benchmark
fails.

    python bench/validate.py                      # 10,000 to 1,000,000 records
    python bench/validate.py --records 100000
    python bench/validate.py --cluster 100000     # 9 brokers, 12 partitions: every partition validated
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from metalogs import Placement, cluster_log, repeated_log, rolling_restarts  # noqa: E402

from specs.kafka_elr import load  # noqa: E402

BIG = 10**6
RECORDS_A_CYCLE = 18  # three brokers' rolling restart


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, action="append", help="log lengths (default 10k, 100k, 1M)")
    ap.add_argument("--cluster", type=int, metavar="EVENTS", help="a many-partition log of EVENTS random events")
    ns = ap.parse_args()
    spec = load(
        {
            "variant": "kafka-4",
            "max_records": 0,
            "controlled_shutdown": "staged",
            "max_clean_shutdowns": BIG,
            "max_isr_shrinks": BIG,
        }
    )
    if ns.cluster:
        return many_partitions(ns.cluster)
    seen = None
    for records in ns.records or [10_000, 100_000, 1_000_000]:
        text = repeated_log(spec, rolling_restarts(spec.rf), max(1, records // RECORDS_A_CYCLE))
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        started = time.monotonic()
        out = subprocess.run(
            ["modelcheck", "validate", f.name, "--min-isr", "2", "--json", "-q"], capture_output=True, text=True
        )
        elapsed = time.monotonic() - started
        os.unlink(f.name)
        if out.returncode != 0:
            sys.exit(f"validate exited {out.returncode}: {out.stderr}")
        v = json.loads(out.stdout)
        shape = (v["distinct_states"], v["widest"], v["widest_hidden"])
        if seen is not None and shape != seen:
            sys.exit(f"the states met grew with the log: {seen} then {shape}")
        seen = shape
        n = text.count("| offset:")
        print(
            f"{n:>9,} records {v['logged_steps']:>9,} logged steps  {elapsed:6.1f} s  "
            f"({n / elapsed:,.0f} records/s; {v['distinct_states']:,} states, widest {v['widest']} / "
            f"{v['widest_hidden']} with hidden steps)"
        )


def many_partitions(events: int) -> None:
    """Nine brokers, four topics of three partitions on three of them each
    (tests/test_validate.py's cluster, larger): every partition validated."""
    import random

    rng = random.Random(3)
    brokers = list(range(101, 110))
    placements = [
        Placement(f"topic-{t}", f"{t:02d}-Ua9dA7GkTPqGVsNtb1y", p, tuple(rng.sample(brokers, 3)))
        for t in range(4)
        for p in range(3)
    ]
    spec = load(
        {
            "variant": "kafka-4",
            "max_records": 0,
            "controlled_shutdown": "staged",
            **{k: BIG for k in ("max_fences", "max_unclean_shutdowns", "max_clean_shutdowns", "max_isr_shrinks")},
        }
    )
    started = time.monotonic()
    text = cluster_log(spec, placements, events, 3)
    print(f"rendered {text.count('| offset:'):,} records in {time.monotonic() - started:.1f} s")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    total = 0.0
    for p in placements:
        started = time.monotonic()
        name = f"{p.topic}:{p.number}"
        out = subprocess.run(
            ["modelcheck", "validate", f.name, "--min-isr", "2", "--json", "-q", "--partition", name],
            capture_output=True,
            text=True,
        )
        elapsed = time.monotonic() - started
        total += elapsed
        if out.returncode != 0:
            sys.exit(f"validate {name} exited {out.returncode}: {out.stderr}{out.stdout[:300]}")
        v = json.loads(out.stdout)
        print(
            f"  {name:<10} {v['logged_steps']:>7,} logged steps  {elapsed:5.1f} s  {v['distinct_states']:,} states, "
            f"widest {v['widest']} / {v['widest_hidden']}"
        )
    os.unlink(f.name)
    print(f"every partition: {total:.1f} s")


if __name__ == "__main__":
    main()
