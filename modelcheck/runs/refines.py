"""`modelcheck refines IMPL ABSTRACT`: does every behaviour of one variant,
read through a refinement mapping, belong to another (stutters allowed)?"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import click

from ..config import ConfigError
from ..engine.control import Control
from ..engine.refinement.refine import RefinementResult
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..output import check_file
from ..refinement import Image, Refinement, mapping_for
from ..spec import Spec
from ..views.progress import Progress
from ..views.refinement import print_refinement, refinement_json
from ..views.report import print_stop
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .inputs import load_check_config

# (variant, config keys, where the variants are named) -> its spec; raises ConfigError
LoadAs = Callable[[str, dict[str, Any], str], Spec]


def mapping_json(mapping: Refinement) -> dict[str, Any]:
    return {"name": mapping.name, "meaning": mapping.meaning, "variables": mapping.describe()}


def images(
    loaders: tuple[LoadAs, LoadAs],
    impl: str,
    abstract: str,
    given: dict[str, Any],
    mapping: str | None,
    where: str,
) -> Image:
    """The two specs of `given` (each by its loader) and the mapping between
    them; ConfigError (naming the side) for a variant or config either refuses."""
    sides = []
    for role, name, load_as in (("IMPL", impl, loaders[0]), ("ABSTRACT", abstract, loaders[1])):
        try:
            sides.append(load_as(name, given, where))
        except ConfigError as e:
            raise ConfigError(f"{role} {name}: {e}") from None
    return Image(sides[0], sides[1], mapping_for(sides[0], abstract, mapping))


def refines_command(
    load_as: LoadAs,
    impl: str,
    abstract: str,
    config: str | None,
    overrides: tuple[str, ...],
    mapping: str | None,
    as_json: bool,
    quiet: bool,
    engine: str,
    trace_out: str | None = None,
) -> int:
    """Check that `impl` refines `abstract` on the config; exit 0 holds, 1
    violated, 2 bad input, 4 the trace file could not be written."""
    try:
        given, expected = load_check_config(config, overrides)
        if expected is not None:
            raise ConfigError(f"{config}: [expected] is a check's verdict; refines takes none")
        image = images((load_as, load_as), impl, abstract, given, mapping, "on the command line (IMPL ABSTRACT)")
        if trace_out:
            check_file(trace_out, "--trace-out")
    except ConfigError as e:
        fail(str(e))
    from ..engine.refinement.refine_fast import (
        run,  # here, not at import: it loads numba, which `--help` should not wait for
    )

    with stop_on_signals() as request:
        try:
            with Progress(enabled=not quiet and not as_json) as progress:
                note = (lambda text: progress({"note": text})) if not quiet and not as_json else (lambda text: None)
                result: RefinementResult = run(image, engine, progress, Control(stop=request), note)
        except Stopped as e:
            print_stop(e, as_json)
            return exit_code(e)
    names = (impl, abstract)
    outputs = Outputs()
    if trace_out and not result.holds:
        refines = {"abstract": abstract, "mapping": image.mapping.name}
        doc = TraceFile.of(image.impl, result.trace, None, refines=refines).to_json()
        trace_out = trace_out if outputs.write(trace_out, "--trace-out", json.dumps(doc, indent=1) + "\n") else None
    elif trace_out:
        outputs.clear_trace(trace_out, "--trace-out")
    if as_json:
        click.echo(json.dumps(refinement_json(image.impl, image.abstract, names, result, mapping_json(image.mapping))))
    else:
        print_refinement(image.impl, image.abstract, names, result, mapping_json(image.mapping))
        if trace_out and not result.holds:
            view = f"modelcheck trace html {shlex.quote(trace_out)} -o PAGE.html"
            click.echo(f"trace written to {trace_out}; view it with: {view}")
    return outputs.status(EXIT_HOLDS if result.holds else EXIT_VIOLATED)
