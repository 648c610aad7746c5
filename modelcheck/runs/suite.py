"""`modelcheck check` without a config: the spec's default suite, the few
configurations that together exercise every action and goal (no one
config small enough for a first run does), checked one after another in
one process; a verdict line each, then which of them fired each action
and reached each goal. One compile of the kernel serves them all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..config import ConfigError
from ..engine.control import Control
from ..engine.kernel import CompileJob
from ..engine.kernel.compiled import kernel_key
from ..engine.options import CheckOptions
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..result import CheckResult
from ..suite import Member, SuiteCoverage
from ..trace import described
from ..views.progress import Progress
from ..views.report import check_json, print_result, print_stop
from ..views.suite import print_suite_coverage, suite_heading, suite_line
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .first_compile import after_compile, first_compile, warn_if_interpreted

CheckOne = Callable[[Any, Progress, Control, CompileJob | None], CheckResult]


def check_suite(
    path: Path,
    members: list[Member],
    specs: list[Any],
    check_one: CheckOne,
    options: CheckOptions,
    as_json: bool,
    quiet: bool,
    trace_out: str | None,
) -> int:
    """Check each member (`check_one`: the engine as `options` say), a
    verdict line as each ends; then the coverage, each counterexample, the
    first one's trace file (--trace-out); its exit status: 1 if any is
    violated. A first run compiles the members' kernel once, beside their
    checks."""
    job = first_compile(specs[0], options)
    shared = kernel_key(specs[0])
    results: list[CheckResult] = []
    try:
        with stop_on_signals() as stop:
            for member, spec in zip(members, specs):
                try:
                    with Progress(enabled=not quiet and not as_json) as progress:
                        results.append(
                            check_one(spec, progress, Control(stop), job if kernel_key(spec) == shared else None)
                        )
                except Stopped as e:
                    print_stop(e, as_json)
                    return exit_code(e)
                except ConfigError as e:  # the engine cannot start here (e.g. no Java for Spark)
                    fail(str(e))
                if not as_json:  # the heading with the first verdict: an engine that cannot start says only that
                    if len(results) == 1:
                        click.echo(suite_heading(path, members))
                    click.echo(suite_line(member, spec, results[-1]))
        runs = list(zip(members, results))
        warn_if_interpreted(results)
        coverage = SuiteCoverage.of(runs)
        outputs = Outputs()
        violated = [(m, s, r) for (m, r), s in zip(runs, specs) if not r.holds]
        if trace_out and violated:
            _, spec, result = violated[0]
            text = TraceFile.of(spec, result.trace, result.invariant, result.loop).text()
            trace_out = trace_out if outputs.write(trace_out, "--trace-out", text) else None
        elif trace_out:
            outputs.clear_trace(trace_out, "--trace-out")
        if as_json:
            checks = [
                {
                    "name": m.name,
                    "about": m.about,
                    **check_json(s, r, described(s, r.trace), None, verdict_of(r), options),
                }
                for (m, r), s in zip(runs, specs)
            ]
            summary = {"suite": str(path), "verdict": "violated" if violated else "holds", "checks": checks}
            click.echo(json.dumps({**summary, "coverage": coverage.to_json()}))
        else:
            print_suite_coverage(coverage, [m.name for m in members])
            for number, (member, spec, result) in enumerate(violated):
                click.echo(f"\n{member.name}: {member.about}")
                print_result(spec, result, None, verdict_of(result), trace_out if number == 0 else None)
        after_compile(job, results, quiet or as_json)
        return outputs.status(EXIT_VIOLATED if violated else EXIT_HOLDS)
    finally:
        if job is not None:
            job.end()


def verdict_of(result: CheckResult) -> str:
    return result.verdict if result.holds else f"violated: {result.invariant}"
