"""`gate --against REF`: each entry's variant compared with the same variant
at git revision REF of specs/; the first new behaviour, or none."""

from __future__ import annotations

import json

import click
from rich.text import Text

from ..config import ConfigError
from ..engine.control import Control
from ..engine.refinement.refine import RefinementResult
from ..engine.refinement.refine import check as refine
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..refinement import Image
from ..views.refinement import failure_line, print_refinement, refinement_json
from ..views.summary import against_markdown
from ..views.terminal import stderr_console, stdout_console
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .gate_entries import Entry, refinement_of, variant_and_rest
from .matrix import Loader
from .refines import LoadAs, mapping_json


def against_command(
    load: Loader,
    load_as: LoadAs,
    load_old: LoadAs,
    ref: str,
    entries: list[Entry],
    as_json: bool,
    gate_file: str = "",
    summary: str | None = None,
) -> int:
    """`modelcheck gate --against REF`: each entry's variant against the same
    variant at revision REF (identity mapping): the first new behaviour, a
    shortest trace whose last step the old spec does not allow, or none.
    Exit 0 when no entry has one, 1 when one has."""
    pairs = []
    for entry in entries:
        try:
            variant, _rest = variant_and_rest(load, entry.cell.config)
            pairs.append((entry, variant, refinement_of((load_as, load_old), load, entry, abstract=variant)))
        except ConfigError as e:
            fail(f"entry {entry.cell.name!r}: {e}")
    console = stderr_console()
    reports: list[tuple[Entry, tuple[str, str], Image, RefinementResult]] = []
    with stop_on_signals() as request:
        for entry, variant, image in pairs:
            try:
                result = refine(image, control=Control(stop=request))
            except Stopped as e:
                console.print(f"{e.why}: {len(reports)} of {len(entries)} entries compared", markup=False)
                return exit_code(e)
            names = (variant, f"{variant} at {ref}")
            reports.append((entry, names, image, result))
            console.print(
                f"{'no new behaviour' if result.holds else 'NEW BEHAVIOUR'}: {entry.cell.name}: "
                + (
                    f"{names[0]} refines {names[1]} ({result.states:,} states, {result.transitions:,} transitions)"
                    if result.holds
                    else failure_line(names[1], result)
                ),
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    if as_json:
        click.echo(
            json.dumps(
                [
                    {"name": x.cell.name, **refinement_json(i.impl, i.abstract, n, r, mapping_json(i.mapping))}
                    for x, n, i, r in reports
                ]
            )
        )
    else:
        for x, n, i, r in reports:
            if not r.holds:
                stdout_console().print(Text.assemble("\n", (x.cell.name, "bold"), ": the first new behaviour"))
                print_refinement(i.impl, i.abstract, n, r, mapping_json(i.mapping))
        new = sum(not r.holds for *_x, r in reports)
        stdout_console().print(f"{len(reports) - new} entries without new behaviour, {new} with")
    outputs = Outputs()
    if summary:
        lines = [(x.cell.name, r.holds, "" if r.holds else failure_line(n[1], r)) for x, n, _i, r in reports]
        outputs.append(summary, "--summary", against_markdown(gate_file, ref, lines))
    return outputs.status(EXIT_VIOLATED if any(not r.holds for *_x, r in reports) else EXIT_HOLDS)
