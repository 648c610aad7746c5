"""The CI commands: the verdict matrix, the gate and its mutation score."""

from __future__ import annotations

from typing import Any

import click

from .app import bad_input, main, protocol
from .flags import CELL_MEMORY_HELP, Size, jobs_option, json_option, summary_option


@main.command()
@click.argument("matrix_file", required=False, metavar="[MATRIX.toml]")
@json_option("Print one JSON object a cell, as a list, on stdout.")
@click.option("--out", metavar="FILE.md", help="Write the verdicts as markdown (e.g. docs/verdicts.md).")
@jobs_option("Cells checked")
@click.option("--only", multiple=True, metavar="NAME", help="Run only the named cell(s). Repeatable.")
@click.option("--max-memory", type=Size(), metavar="SIZE", help=CELL_MEMORY_HELP)
def matrix(**options: Any) -> int:
    """Check a list of (variant, config) cells and tabulate the verdicts:
    violated invariant, shortest trace length, distinct states, depth, time.

    Without MATRIX.toml the shipped specs/matrix.toml runs: every variant at
    N=3/min_isr=2 with one and two unclean shutdowns, and N=4/min_isr=3.
    A cell may pin `expect = "holds"` or `"violated: NAME"`, and set
    `symmetry = true` (check's --symmetry). `exercises = [ACTION, ...]` and
    `goals = [GOAL, ...]` name what its claim needs to have happened: a cell
    that holds while one of those actions never fired, or a goal was never
    reached, is marked VACUOUS (the "never fired" column lists the rest).

    Exit status: 0 every cell is as pinned, 1 one differs, 2 bad input, 4
    --out could not be written (said after the table);
    Ctrl-C or SIGTERM stops every cell at once (130, 143: the cells done
    are shown, --out is not written).
    """
    from modelcheck.runs.matrix import matrix_command

    return matrix_command(protocol().load, default=str(protocol().default_matrix), **options)


# ---- CI gate --------------------------------------------------------------------------


@main.command()
@click.argument("gate_file", metavar="GATE.toml")
@click.option("--junit", metavar="FILE.xml", help="Write JUnit XML: a testcase an entry, traces in failures.")
@json_option("Print the outcomes as one JSON list on stdout.")
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Write each failing entry's counterexample there as JSON (view with `modelcheck trace show`).",
)
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Rewrite the pinned `states` counts in GATE.toml to what this run found, and show the changes.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing entry; the rest are reported skipped.")
@jobs_option("Entries checked")
@click.option("--max-memory", type=Size(), metavar="SIZE", help=CELL_MEMORY_HELP)
@click.option(
    "--strict-budgets",
    is_flag=True,
    help="Fail an entry that runs over its budget_s (default: a warning, since a busy machine "
    "stretches wall-clock time and must not fail a right verdict).",
)
@click.option(
    "--against",
    metavar="REF",
    help="Compare each entry's variant with the same variant at git revision REF of specs/ "
    "instead of checking the pins: the first new behaviour, or none.",
)
@click.option(
    "--repo",
    metavar="DIR",
    help="The git repository --against reads REF from (default: the checkout specs/ is imported from).",
)
@summary_option("the outcome (counts, and each entry that failed or warned)")
def gate(junit: str | None, update_baseline: bool, repo: str | None, **options: Any) -> int:
    """Fail a protocol change that breaks an invariant or changes what the
    protocol can reach.

    Each [[entry]] of GATE.toml has a name, a config table, `expect =
    "holds"` or `"violated: INVARIANT"`, and optionally `states = N` (the
    pinned distinct-state count), `budget_s = S` (a time budget in seconds:
    over it is a warning, a failure with --strict-budgets), and what
    a holds must have exercised: `exercises = [ACTION, ...]` (actions that
    fired) and `goals = [GOAL, ...]` (reachability goals reached):

    \b
    [[entry]]
    name = "kip966, one record"
    config = { variant = "kip966", max_records = 1 }
    expect = "holds"
    states = 108175
    exercises = ["UncleanShutdown", "StartBroker"]
    goals = ["ElrMemberElected", "UncleanShutdownDetected"]
    budget_s = 60
    refines = "hwm-ignores-min-isr"

    `refines = "VARIANT"` also checks that the entry's variant refines
    VARIANT on its config (`modelcheck refines`, the mapping its variant
    declares): an entry fails with the first step VARIANT does not allow.

    `--against REF` checks no pins: it compares each entry's variant with
    the same variant at git revision REF of specs/ (extracted with `git
    archive` into a temporary directory, the working tree untouched), and
    reports each entry's first new behaviour: the shortest trace whose last
    step the spec at REF does not allow (exit 1), or none (exit 0).

    \b
    modelcheck gate specs/gate.toml --against main    what does this branch allow that main did not?

    Exit status: 0 every entry passes, 1 one fails (verdict, count, a
    vacuous holds, refines, or a budget with --strict-budgets), 2 bad gate file or an output that cannot be
    written (checked before the run; --update-baseline included), 4 an
    output whose write failed after the run (said after the table); Ctrl-C or
    SIGTERM stops every entry at once (130, 143), and --junit and
    --trace-dir still report what ran (the rest as skipped).
    """
    from modelcheck.runs.gate import gate_command

    if repo is not None and options["against"] is None:
        bad_input("--repo applies to --against only")
    return gate_command(
        protocol().load,
        junit_file=junit,
        update=update_baseline,
        load_as=protocol().load_as,
        load_at=lambda ref: specs_at(repo or str(protocol().specs_dir.resolve().parent), ref),
        **options,
    )


@main.command()
@click.argument("gate_file", metavar="GATE.toml")
@click.option("--mutant", "only", multiple=True, metavar="NAME", help="Hunt only this mutant (repeatable).")
@click.option(
    "--point",
    "points",
    multiple=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Hunt only this generated mutant, by its number (repeatable; see --list-points).",
)
@click.option("--list-points", is_flag=True, help="Print the generated mutants (one a line) and exit.")
@json_option("Print the score and each mutant's fate as JSON on stdout.")
@jobs_option("Mutants hunted")
@summary_option("the mutation score and each mutant's fate")
def mutate(
    gate_file: str,
    only: tuple[str, ...],
    points: tuple[int, ...],
    list_points: bool,
    as_json: bool,
    jobs: int,
    summary: str | None,
) -> int:
    """How strong the gate is: each of the protocol's mutants (a variant
    that redefines one rule; specs/kafka_elr/bugs.py puts real Kafka bugs
    back) takes its base variant's place in every GATE.toml entry that pins
    "holds" for the base, in order, until one breaks. KILLED names the
    entry, the invariant, the steps and the check that shows the trace;
    a moved count alone is no kill. A survivor is EQUIVALENT on the gate's
    configs (every count as pinned) or SURVIVED (other states, nothing
    broken: a missing invariant or configuration).

    Generated mutants are every small slip of a variant's own rules (drop a
    conjunct or a `not`, flip a comparison or its strictness, swap | and &,
    drop a set removal or an increment, keep a field an update sets, skip
    a rebinding), numbered as --list-points prints them, all in one
    compiled kernel: `--set mutation=N` checks one. One that no hunted
    entry can run (its actions never fire there) is UNREACHED. A generated
    mutant's search stops at 3 GiB (a slip can unbound a bounded space) and
    counts as reaching other states. Survivors are listed by rule.

    \b
    modelcheck mutate specs/gate.toml
    modelcheck mutate specs/gate.toml --mutant leader-own-min-isr
    modelcheck mutate specs/gate.toml --point 12 --point 40
    modelcheck mutate specs/gate.toml --list-points

    The gate file may list the survivors it knows of, the variants whose
    rules are mutated, the entries they are hunted on (default: every entry
    that pins holds for the variant, the cheapest first) and the least
    score (killed / not shown equivalent) of the generated mutants:

    \b
    [mutation]
    survivors = ["elr-kept-on-downgrade"]
    generate = ["kip966"]
    hunt_on = ["kip966", "kip966, 2 brokers"]
    min_score = 0.8

    Exit status: 0 every named mutant is killed but the listed survivors,
    which survive, and the generated score is at least min_score; 1
    otherwise (a new survivor: the gate got weaker; a listed one killed:
    take it off the list; a lower score; a hunt stopped at the memory
    limit, or a mutant whose base no entry pins holds for); 2 bad input;
    Ctrl-C or SIGTERM stop it (130, 143).
    """
    from modelcheck.runs.mutate import mutate_command

    return mutate_command(
        protocol().load,
        protocol().mutants,
        gate_file,
        only,
        jobs,
        as_json,
        summary,
        schemata=protocol().schemata,
        points=points,
        list_points=list_points,
    )


def specs_at(repo: str, ref: str) -> Any:
    """The protocol's load_as with the loader of its package at revision `ref` of `repo`."""
    import functools
    import importlib

    from modelcheck.runs.revision import package_at

    top, _, rest = protocol().package.partition(".")
    old = importlib.import_module(package_at(repo, ref, top).__name__ + "." + rest)
    return functools.partial(protocol().load_as, load=old.load)
