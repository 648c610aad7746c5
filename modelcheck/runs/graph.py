"""`modelcheck graph`: the reachable state graph of a small config written
as GraphML or DOT, check's shortest counterexample marked on it."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import ConfigError
from ..engine import run as run_engine
from ..engine.options import CheckOptions
from ..output import check_file
from ..views.graph import GraphTooLarge, dot, graphml, mark_path, state_graph
from .exits import fail, write_output
from .inputs import Loader, load_check_config


def graph_command(load: Loader, config: str | None, overrides: tuple[str, ...], out: str, max_states: int) -> int:
    """Write the graph of the config to `out`, in the format its suffix names."""
    writers = {".graphml": graphml, ".dot": dot}
    writer = writers.get(Path(out).suffix.lower())
    if writer is None:
        fail(f"-o {out}: the name must end in .graphml or .dot")
    try:
        spec = load(load_check_config(config, overrides)[0])
        check_file(out, "-o")
        g = state_graph(spec, max_states)
    except (ConfigError, GraphTooLarge) as e:
        fail(str(e))
    # the graph is small (--max-states): the reference engine finds the same
    # counterexample without compiling the kernel
    result = run_engine(spec, CheckOptions(engine="bfs")) if any(bad for _n, bad in g.nodes(data="violated")) else None
    if result:
        mark_path(g, spec, result.trace)
    write_output(out, "-o", writer(g))
    click.echo(
        f"wrote {out}: {g.number_of_nodes():,} states, {g.number_of_edges():,} transitions"
        + (f"; counterexample to {result.invariant} marked ({len(result.trace) - 1} steps)" if result else "")
    )
    return 0
