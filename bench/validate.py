"""Benchmark: `modelcheck validate` on long metadata logs of one
partition, written by the oracle of Kafka 4.0.0's controller
(tests/metalogs.py): rolling restarts of every replica (controlled
shutdown, stop, restart, unfence, back into the ISR), repeated. The time
must grow with the log, not with the state space: the states met, and the
widest sets of them, must be the same at every length, or the benchmark
fails.

    python bench/validate.py                      # 10,000 to 1,000,000 records
    python bench/validate.py --records 100000
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

from metalogs import repeated_log, rolling_restarts  # noqa: E402

from specs.kafka_elr import load  # noqa: E402

BIG = 10**6
RECORDS_A_CYCLE = 18  # three brokers' rolling restart


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, action="append", help="log lengths (default 10k, 100k, 1M)")
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


if __name__ == "__main__":
    main()
