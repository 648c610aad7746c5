"""`modelcheck spark-env`: the zip that carries modelcheck, its specs and
cli.py to Spark executors that do not have them installed."""

from __future__ import annotations

import io
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
        # made in memory, then written: zipfile seeks and tells, which a
        # device (--out /dev/null) answers with the buffer's fill, so an
        # archive of some sizes came out with a negative directory offset
        archive = io.BytesIO()
        package_archive(archive, ["modelcheck", "specs"], ("cli",))
        with writing(out, "--out", binary=True) as f:
            f.write(archive.getvalue())
    except ConfigError as e:
        fail(str(e))
    size = f" ({os.path.getsize(out):,} bytes)" if os.path.isfile(out) else ""
    click.echo(f"wrote {out}{size}: modelcheck, specs and cli.py for --py-files")
    return 0
