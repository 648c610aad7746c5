"""`modelcheck spark-env`: the zip that carries modelcheck, its specs and
cli.py to Spark executors that do not have them installed."""

from __future__ import annotations

import os

import click

from ..config import ConfigError
from ..output import check_file, writing
from .exits import fail


def spark_env_command(out: str) -> int:
    """Write the zip to `out` and say how large it is."""
    from ..engine.spark.environment import package_archive

    try:
        check_file(out, "--out")
        with writing(out, "--out", binary=True) as f:
            package_archive(f, ["modelcheck", "specs"], ("cli",))
    except ConfigError as e:
        fail(str(e))
    size = f" ({os.path.getsize(out):,} bytes)" if os.path.isfile(out) else ""
    click.echo(f"wrote {out}{size}: modelcheck, specs and cli.py for --py-files")
    return 0
