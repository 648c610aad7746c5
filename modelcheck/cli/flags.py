"""Options several commands share, and their types: each built once,
here, from what it sets (check's search options build a CheckOptions)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import click

from ..config import ConfigError
from ..engine.options import Flag, flags_of
from ..memory import parse_size


class Size(click.ParamType):
    """A --max-memory, refused as it is parsed by modelcheck.memory's rule
    ('' included, which a command would take for "not given")."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            parse_size(value)
        except ConfigError as e:
            raise click.UsageError(str(e), ctx) from None
        return value


class Seconds(click.FloatRange):
    """A duration: a FloatRange that also refuses nan and inf."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


CELL_MEMORY_HELP = (
    "Bound each cell's memory (e.g. 4G; see check --max-memory). Default: 80% of RAM shared "
    "among the cells running at once (--jobs, or fewer cells). A cell stopped at it reports so, matching no pin."
)


def jobs_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--jobs/-j: how many of `what` (e.g. "Cells checked") run at once, a process each."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=os.cpu_count() or 1,
        show_default="all cores",
        help=f"{what} at a time, each in its own process.",
    )


def summary_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--summary: a markdown report appended to a file (a CI job's summary page)."""
    return click.option(
        "--summary",
        metavar="FILE.md",
        help=f"Append {what} as markdown to FILE.md, each finding with the command that shows its trace "
        '(in GitHub Actions: --summary "$GITHUB_STEP_SUMMARY").',
    )


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def set_option(help: str = "Override a config key. Repeatable.") -> Decorator:
    """--set KEY=VALUE, every command that loads a config."""
    return click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help=help)


def json_option(help: str = "Print one JSON object on stdout instead of tables.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def quiet_option() -> Decorator:
    return click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")


def trace_out_option(help: str) -> Decorator:
    return click.option("--trace-out", metavar="FILE", help=help)


def spark_options(master: str, partitions: str, conf: str) -> Decorator:
    """--master, --partitions and --spark-conf (SparkOptions), with each command's help."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        command = click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE", help=conf)(command)
        command = click.option("--partitions", type=click.IntRange(min=1), metavar="P", help=partitions)(command)
        return click.option("--master", metavar="URL", help=master)(command)

    return add


def _click_kind(f: Flag) -> dict[str, Any]:
    """What a Flag's kind is to click."""
    kinds: dict[str, dict[str, Any]] = {
        "text": {},
        "count": {"type": click.IntRange(min=1)},
        "switch": {"is_flag": True},
        "choice": {"type": click.Choice(f.choices)},
        "seconds": {"type": Seconds(min=0)},
        "size": {"type": Size()},
        "pairs": {"multiple": True},
    }
    return kinds[f.kind]


def check_options() -> Decorator:
    """check's flags for its CheckOptions, built from the options' own
    declarations (engine/options.py: each field's `flag`), in their order."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        for f in reversed(flags_of()):
            names = [f.name, *([f.short] if f.short else []), f.dest or ""]
            how = {"default": f.default} if f.default is not None else {}
            command = click.option(
                *names, help=f.help, metavar=f.metavar, show_default=f.show_default, **how, **_click_kind(f)
            )(command)
        return command

    return add
