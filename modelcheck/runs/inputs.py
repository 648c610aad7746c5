"""The command-line inputs several commands share: a config file with
--set overrides, the Spark-only options and a cell's memory limit."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..config import ConfigError, parse_override, read_file
from ..engine.spark.environment import check_own_settings
from ..memory import default_limit, parse_size

Loader = Callable[[dict[str, Any]], Any]  # config -> spec (raises ConfigError): the CLI's protocol
# master URLs spark-submit accepts (local[N] needs N >= 1; local[N,F] retries failed tasks)
SPARK_MASTER = re.compile(r"local(\[([1-9]\d*|\*)(,[1-9]\d*)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


def load_check_config(path: str | None, overrides: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    """File keys, then --set overrides; returns (given keys, expected verdict)."""
    given: dict[str, Any] = {}
    expected = None
    if path is not None:
        given = read_file(path)
        exp = given.pop("expected", None)
        if exp is not None:
            if not isinstance(exp, dict) or set(exp) != {"verdict"}:
                raise ConfigError(f'{path}: [expected] must hold only verdict = "holds" or "violated: NAME"')
            expected = exp["verdict"]  # checked against the spec's invariants once it is loaded
    for item in overrides:
        key, value = parse_override(item)
        given[key] = value
    return given, expected


def check_spark_options(engine: str, master: str | None, partitions: int | None, spark_conf: tuple[str, ...]) -> None:
    """The Spark-only options: given only with --engine spark, and well formed."""
    spark_only = [
        name for name, given in (("master", master), ("partitions", partitions), ("spark-conf", spark_conf)) if given
    ]
    if engine != "spark" and spark_only:
        raise ConfigError(f"--{spark_only[0]} applies to --engine spark only")
    if master and not SPARK_MASTER.fullmatch(master):
        raise ConfigError(
            f"--master {master!r}: expected local, local[N], local[*], spark://HOST:PORT, "
            "yarn or k8s://https://HOST:PORT"
        )
    bad = [kv for kv in spark_conf if "=" not in kv or not kv.split("=", 1)[0].strip()]
    if bad:
        raise ConfigError(f"--spark-conf {bad[0]!r}: expected KEY=VALUE, e.g. spark.executor.memory=8g")
    check_own_settings(dict(kv.split("=", 1) for kv in spark_conf))


def cell_memory(text: str | None, jobs: int) -> int:
    """A matrix cell's or gate entry's --max-memory: as given, else its share of 80% of RAM."""
    return parse_size(text) if text else default_limit(share_among=jobs)
