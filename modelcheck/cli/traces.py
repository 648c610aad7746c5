"""Counterexamples and states: the trace viewer and exports, the state
graph, the explorer."""

from __future__ import annotations

from typing import Any

import click

from ..runs.graph import graph_command
from ..runs.trace import export_command, html_command, show_command
from .app import main, protocol
from .flags import set_option

# ---- trace viewer, exports and the state graph ------------------------------------
# The runs (modelcheck/runs/trace.py, graph.py) and the rendering (modelcheck/views/)
# take a Spec and never import specs/; here each file's config picks the spec.


@main.group()
def trace() -> None:
    """View and convert a counterexample: the JSON of `check --trace-out`,
    or an ITF trace written by `trace export`."""


@trace.command("show")
@click.argument("path", metavar="TRACE")
@click.option("--step", "step_no", metavar="K", help="Show step K's state in full.")
@click.option("--diff", is_flag=True, help="Show only what each step changed.")
def trace_show(path: str, step_no: str | None, diff: bool) -> int:
    """One row a step: leader/epoch, ISR, ELR, LastKnownELR, HWM and each
    broker's lane (role, faults, log coloured by epoch); changed cells
    marked `*`; the violated invariant explained at the end."""
    return show_command(protocol().load, path, step_no, diff)


@trace.command("html")
@click.argument("path", metavar="TRACE")
@click.option("-o", "--out", required=True, metavar="FILE.html", help="The page to write.")
def trace_html(path: str, out: str) -> int:
    """One self-contained HTML page (no network): brokers as lanes, steps as
    rows; a slider, arrow keys or clicks step through, showing each step's
    changes and state."""
    return html_command(protocol().load, path, out)


@trace.command("export")
@click.argument("path", metavar="TRACE")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["itf", "json"]),
    default="itf",
    show_default=True,
    help="itf: the Informal Trace Format of Apalache and Quint; json: check's --trace-out form.",
)
@click.option("-o", "--out", default="-", metavar="FILE", help="Where to write (default: stdout).")
def trace_export(path: str, fmt: str, out: str) -> int:
    """Convert a trace (JSON or ITF) to ITF or JSON; reading the result back
    gives the same steps."""
    return export_command(protocol().load, path, fmt, out)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option()
@click.option("-o", "--out", required=True, metavar="FILE.graphml|FILE.dot", help="The format follows the suffix.")
@click.option(
    "--max-states",
    default=20000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Refuse configs with more reachable states.",
)
def graph(**options: Any) -> int:
    """Write the reachable state graph of a small config (networkx): nodes
    are states with their variables, edges actions with their arguments;
    when an invariant fails, check's shortest counterexample is marked."""
    return graph_command(protocol().load, **options)


@main.command()
@click.argument("config", required=False, metavar="[CONFIG.toml]")
@set_option()
@click.option(
    "--trace",
    "trace_path",
    metavar="TRACE",
    help="Start on a saved trace (check --trace-out, or ITF), "
    "in its config: forward walks it, and any step can branch off it.",
)
@click.option(
    "--step", "step_no", type=click.IntRange(min=0), metavar="K", help="With --trace: open at step K (default 0)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to serve on (another than loopback serves the network).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to serve on (0: any free port).",
)
@click.option(
    "--seen-states",
    type=click.IntRange(min=0),
    metavar="N",
    help="Index the first N states a breadth-first check visits, to mark which successors the "
    "checker has seen and at what depth (default 1,000,000 compiled, 50,000 interpreted; 0: none).",
)
def explore(**options: Any) -> int:
    """Explore a configuration's states in the browser, from the initial
    state or from any step of a saved trace: every enabled action with its
    arguments, the diff of the state it leads to, the invariants that state
    breaks and whether the checker has seen it; the path walked is the URL,
    and exports as a scenario (modelcheck replay) or a trace file
    (modelcheck trace show/html/export).

    \b
    modelcheck explore --set variant=legacy        then open the URL it prints
    modelcheck explore --trace t.json --step 5     branch off a counterexample

    Serves until Ctrl-C (exit 130) or SIGTERM (143); bad input exits 2.
    """
    from modelcheck.runs.explore import explore_command

    return explore_command(protocol().load, **options)
