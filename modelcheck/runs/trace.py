"""`modelcheck trace show|html|export`: a trace file (check --trace-out's
JSON, or ITF) read back through the spec of its config, then shown in
the terminal, rendered as an HTML page or converted."""

from __future__ import annotations

import json
import re
from typing import Any

import click
from rich.text import Text

from ..config import ConfigError
from ..formats.itf import to_itf
from ..formats.tracefile import TraceFile
from ..output import check_file
from ..views.html import render as render_html
from ..views.html import render_refinement
from ..views.refinement import failure_line, print_failure
from ..views.terminal import diff_table, stdout_console, step_table, trace_table
from ..views.tracefile import open_trace as read_and_replay
from ..views.tracefile import refinement_failure
from .exits import fail, write_output
from .inputs import Loader


def open_trace(load: Loader, path: str) -> tuple[Any, TraceFile, list[Any]]:
    """A trace file (JSON or ITF), the spec `load` makes of its config, and
    its steps replayed into spec states; bad input exits 2."""
    try:
        return read_and_replay(path, load)
    except ConfigError as e:
        fail(str(e))


def open_refinement(load: Loader, path: str, spec: Any, tf: TraceFile, steps: list[Any]) -> tuple[Any, Any, Any]:
    """A refinement failure's abstract spec, the variants' names and its
    account, recomputed from the replayed steps; bad input exits 2."""
    try:
        abstract, result = refinement_failure(spec, tf, steps, load, path)
    except ConfigError as e:
        fail(str(e))
    assert tf.refines is not None
    return abstract, (spec.config["variant"], tf.refines["abstract"]), result


def show_command(load: Loader, path: str, step_no: str | None, diff: bool) -> int:
    """One row a step (or step `step_no` in full, or the changes only), and the violation explained."""
    spec, tf, steps = open_trace(load, path)
    if step_no is not None and not (re.fullmatch("[0-9]{1,9}", step_no) and int(step_no) < len(steps)):
        fail(f"--step {step_no!r}: expected a step number from 0 to {len(steps) - 1}")
    out = stdout_console()
    if tf.refines is not None:
        abstract, names, result = open_refinement(load, path, spec, tf, steps)
        if step_no is None and not diff:
            print_failure(spec, abstract, names, result)
            return 0
    if step_no is not None:
        out.print(step_table(spec, steps, int(step_no)))
    else:
        out.print(diff_table(spec, steps, tf.loop) if diff else trace_table(spec, steps, loop=tf.loop))
    if tf.refines is not None:
        out.print(Text(failure_line(names[1], result), style="bold red"))
    if tf.invariant and (step_no is None or int(step_no) == len(steps) - 1):
        out.print(Text.assemble((tf.invariant, "bold red"), ": ", spec.explain(tf.invariant, steps[-1].state)))
    return 0


def html_command(load: Loader, path: str, out: str) -> int:
    """The trace as one self-contained HTML page written to `out`."""
    spec, tf, steps = open_trace(load, path)
    try:
        check_file(out, "-o")
    except ConfigError as e:
        fail(str(e))
    if tf.refines is not None:
        abstract, names, result = open_refinement(load, path, spec, tf, steps)
        write_output(out, "-o", render_refinement(spec, abstract, names, result, tf.config))
    else:
        write_output(out, "-o", render_html(spec, steps, tf.config, tf.invariant, tf.loop))
    click.echo(f"wrote {out} ({len(steps)} steps)")
    return 0


def export_command(load: Loader, path: str, fmt: str, out: str) -> int:
    """The trace converted to ITF or JSON, written to `out` (- for stdout)."""
    spec, tf, _steps = open_trace(load, path)
    try:
        check_file(out, "-o", stdout=True)
    except ConfigError as e:
        fail(str(e))
    walk = None if tf.path is None else tf.path.to_json()
    doc = (
        to_itf(tf.config, tf.invariant, tf.steps, spec.itf_types, tf.loop, tf.refines, walk)
        if fmt == "itf"
        else tf.to_json()
    )
    write_output(out, "-o", json.dumps(doc, indent=1) + "\n")
    return 0
