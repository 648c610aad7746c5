"""Random walks (simulate) and the zip that ships modelcheck to Spark
executors."""

from __future__ import annotations

from typing import Any

import click

from ..engine.walks.plan import PICKS
from ..runs.spark_env import spark_env_command
from .app import main, protocol
from .flags import json_option, quiet_option, set_option, spark_options, trace_out_option


@main.command("spark-env")
@click.option(
    "--out", "-o", default="modelcheck-spark.zip", show_default=True, metavar="FILE", help="Where to write the zip."
)
def spark_env(out: str) -> int:
    """Build the zip that puts modelcheck, its specs and cli.py on Spark
    executors' sys.path, for a cluster whose executors do not have
    modelcheck installed:

    \b
    modelcheck spark-env -o modelcheck-spark.zip
    spark-submit --master spark://HOST:7077 --py-files modelcheck-spark.zip \\
        "$(python -c 'import cli; print(cli.__file__)')" check --engine spark

    (`modelcheck check --engine spark` with a cluster master ships
    modelcheck and the spec itself, in a zip without cli.py.) Executors also
    need numpy and numba, the compiled kernel's dependencies (the kernel
    itself travels with the check and is compiled once a machine):
    docs/spark.md shows a packed virtualenv that carries them.
    """
    return spark_env_command(out)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option()
@click.option(
    "--walks",
    type=click.IntRange(min=1),
    default=20_000,
    show_default=True,
    help="Random walks to run (at most: a violation ends the search).",
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Steps a walk takes at most, up to 100,000 (it ends sooner at a violation or where nothing is enabled).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="The seed, 0 to 2^64 - 1: the same seed, config and options give the same walks, results and "
    "trace, whatever --workers or --engine.",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="ACTION=W",
    help="Weight of an action's steps (default 1 each; 0 never takes it). Under swarm it multiplies "
    "each walk's own weight for the action. Repeatable.",
)
@click.option(
    "--pick",
    type=click.Choice(PICKS),
    default=PICKS[0],
    show_default=True,
    help="swarm: swarm testing; each walk keeps each action with probability 1/2 (never none) at "
    "a random weight of its own, then takes each step as action does among the enabled actions "
    "it kept (any enabled action where none is); action: each enabled action by its weight, then "
    "one of its instances uniformly (actions with many arguments are not favoured); instance: "
    "each enabled action instance in proportion to its action's weight (uniform by default, "
    "as TLC).",
)
@click.option(
    "--workers",
    "-w",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes running walks (the results do not depend on it); more than the CPUs this process may "
    "use runs as many as those, with a warning.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="local: here, on --workers processes; spark: walks spread over Spark executors "
    "(pip install '.[spark]', Java 17+), the same results.",
)
@spark_options(
    master="Spark master for --engine spark (as check's; default local[*]).",
    partitions="Spark tasks a round of walks is split into (default: Spark's default parallelism).",
    conf="A Spark setting for --engine spark, as spark-submit's --conf. Repeatable.",
)
@json_option()
@trace_out_option("Write the shrunk counterexample (JSON, as check's) to FILE.")
@quiet_option()
@click.option(
    "--max-memory",
    metavar="SIZE",
    help="Bound this process's memory (anonymous resident memory, e.g. 4G, 512M, as check's): the "
    "distinct states seen grow with the walks (8 bytes each), and past it the walks stop with one "
    "line (exit 2) saying what they did. Default: 80% of RAM (or of a cgroup's limit).",
)
def simulate(**options: Any) -> int:
    """Random walks through a configuration too large to check
    exhaustively (TLC's -simulate): each walk takes a random enabled action
    at each step, up to --depth steps, checking the invariants in every
    state it visits. A violation's walk is shrunk to a short
    counterexample (steps dropped and reordered while replay still breaks
    the invariant) and re-validated by replay.

    \b
    modelcheck simulate --set brokers=5 --set min_isr=3 --set max_unclean_shutdowns=3
    modelcheck simulate --set brokers=5 --walks 20000 --depth 60 --seed 7 --workers 2

    Nothing is held in proportion to --walks (10^20 walks start at once);
    what grows is the set of distinct states seen, bounded by --max-memory.

    Exit status: 0 no violation found (the search is not exhaustive: it
    says nothing of the states it did not visit), 1 a violation (the
    shrunk counterexample is printed), 2 bad input or the memory limit, 4 --trace-out could not
    be written (said after the result), 130/143 stopped.
    """
    from modelcheck.runs.simulate import simulate_command

    return simulate_command(protocol().load, **options)
