"""A check's first compile, as the user sees it: started beside the
interpreted engine, told on the progress line with an estimate, finished
after the verdicts when that pays, and summed up in one line saying where
the kernel now is (so the newcomer knows the next run is fast)."""

from __future__ import annotations

import os

import click

from .. import engine as engines
from ..engine.control import Control
from ..engine.kernel import CompileJob, cache_dir, compile_job
from ..engine.options import CheckOptions
from ..lifetime import stop_on_signals
from ..result import CheckResult
from ..spec import Spec
from ..views.progress import Progress


def first_compile(spec: Spec, options: CheckOptions) -> CompileJob | None:
    """The compile of `spec`'s kernel, started now in a child, when a fast
    check would race it (the kernel is not in the cache, and the check
    neither waits for it, as one that checkpoints does, nor runs
    interpreted only)."""
    waits = options.local.checkpoint_dir or os.environ.get("MODELCHECK_KERNEL") == "compiled"
    if options.engine != "fast" or waits:
        return None
    return compile_job(spec)


def after_compile(job: CompileJob | None, results: list[CheckResult], quiet: bool) -> None:
    """After the verdicts are printed: when the checks ran interpreted for
    long enough (engine.KEEP_COMPILING_AFTER_S) that a compiled next run pays,
    wait for the compile (Ctrl-C skips it; the verdicts stand); then one
    line on stderr of where the kernel is. The child is ended either way."""
    if job is None:
        return
    try:
        interpreted = sum(r.elapsed_s for r in results if r.run_info.get("kernel", "").startswith("interpreted"))
        waited = job.running() and job.failed is None and interpreted >= engines.KEEP_COMPILING_AFTER_S
        if waited:
            with stop_on_signals() as stop, Progress(enabled=not quiet) as progress:
                engines.finish_compile(job, Control(stop), progress)
        if quiet:
            return
        if job.ready():
            click.echo(
                f"the kernel of {job.spec_name} for {job.n} processes is compiled and cached in {cache_dir()}: "
                "the next run loads it in a second or two instead of compiling",
                err=True,
            )
        elif waited and job.failed is None:
            click.echo("the kernel's compile was stopped: the next run starts it again", err=True)
    finally:
        job.end()


def warn_if_interpreted(results: list[CheckResult]) -> None:
    """One warning line where a check ran interpreted because no kernel
    could be had (not "interpreted (done before the kernel compiled)")."""
    why = [r.run_info["kernel"] for r in results if r.run_info.get("kernel", "").startswith("interpreted: ")]
    if why:
        click.echo(f"warning: no compiled kernel ({why[0].split(': ', 1)[1]}); ran the interpreted engine", err=True)
