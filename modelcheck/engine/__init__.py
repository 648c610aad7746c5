"""Exploration engines, and the one place that picks one. All return the
same CheckResult and agree exactly: `bfs` is the reference (the
interpreted spec, one process, a dict of parent fingerprints); `fast` runs
the spec compiled (kernel/) over packed states on threads; `spark` runs
the same compiled search with the frontier and visited set spread over
Spark executors (pyspark is imported only when it is asked for).

The first check of a variant must compile its kernel (minutes). Since
the engines agree exactly, `fast` then races: the kernel compiles in a
child process while the reference engine runs here, and whichever is done
first decides (a small check finishes interpreted at once; a large one
starts the compiled search as soon as the kernel is ready). A check the
reference engine needed long for (KEEP_COMPILING_AFTER_S) waits for the
compile to end before it returns, so that its next run is compiled: else
a config that the reference engine finishes just before the compile
would (one under --symmetry, whose representatives are costly
interpreted) ran interpreted every time, its compile abandoned each run.
MODELCHECK_KERNEL=compiled waits for the compile instead;
=interpreted never compiles. Where the kernel cannot be had, `fast` runs
the reference engine and says why in the result's run_info["kernel"];
`spark` refuses (a cluster check must not quietly become a one-thread one).

A `Control` (control.py) carries a stop request, checkpoints and a memory
limit to the local engines. A check that writes checkpoints waits for the
compile instead of racing, so that one engine writes them all; a resumed
check runs the engine that wrote its checkpoint."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

from ..config import ConfigError
from ..result import CheckResult
from ..spec import Spec
from .control import Control
from .progress import Progress

if TYPE_CHECKING:
    from .kernel import CompileJob, Kernel

ENGINES = ("fast", "bfs", "spark")
P = ParamSpec("P")
KEEP_COMPILING_AFTER_S = 10.0  # a check this long interpreted costs more than a compile (about 30 s) spares


def _releasing(check: Callable[P, CheckResult]) -> Callable[P, CheckResult]:
    """`check`, which unlocks its checkpoint directory when it ends, however
    it ends (a result, a stop, an error): another run may write there then."""

    @functools.wraps(check)
    def run(*args: P.args, **kwargs: P.kwargs) -> CheckResult:
        try:
            return check(*args, **kwargs)
        finally:
            control = kwargs.get("control")
            if isinstance(control, Control) and control.checkpoints:
                control.checkpoints.release()

    return run


@_releasing
def run(
    spec: Spec,
    *,
    engine: str = "fast",
    workers: int = 1,
    progress: Progress | None = None,
    master: str | None = None,
    partitions: int | None = None,
    spark_settings: dict[str, str] | None = None,
    fingerprint_bits: int = 64,
    control: Control | None = None,
    compiling: CompileJob | None = None,
) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to fast;
    `master`, `partitions` and `spark_settings` to spark; `fingerprint_bits`
    to both, where a packed state is too large to store whole; `control`:
    its stop request to all, checkpoints and the memory limit to fast and bfs;
    `compiling`: to fast, the compile of this spec's kernel the caller
    started (kernel.compile_job), which a race watches instead of starting
    its own, and which the caller ends or waits for)."""
    from .bfs import check as reference

    control = control or Control()
    refuse_unsupported(spec, engine)
    if engine == "bfs":
        return reference(spec, progress=progress, control=control)
    from .kernel import KernelUnavailable, kernel_for

    note = (lambda text: progress({"note": text})) if progress else (lambda text: None)
    if engine == "spark":
        from .spark import check as spark_check
        from .spark_session import EngineUnavailable, require_spark

        require_spark()

        def load_kernel():
            try:
                return kernel_for(spec, note, compile=True, fingerprint_bits=fingerprint_bits)
            except KernelUnavailable as e:
                raise EngineUnavailable(
                    f"--engine spark runs the compiled kernel, and there is none here: {e}"
                ) from None

        return spark_check(
            spec,
            load_kernel,
            master=master,
            partitions=partitions,
            settings=spark_settings,
            progress=progress,
            control=control,
        )
    wait = os.environ.get("MODELCHECK_KERNEL") == "compiled" or bool(control.checkpoints)
    try:
        kernel = kernel_for(spec, note, compile=wait, fingerprint_bits=fingerprint_bits)
    except KernelUnavailable as e:
        if control.resume:
            raise ConfigError(
                f"the checkpoint was written by the compiled engine, and there is no compiled kernel here: {e}"
            ) from None
        result = reference(spec, progress=progress, control=control)
        result.run_info["kernel"] = f"interpreted: {e}"
        return result
    if kernel is None:
        raced, kernel = _race(spec, progress, note, fingerprint_bits, control, compiling)
        if raced is not None:
            return raced
        assert kernel is not None, "the compiled search starts with the kernel the race loaded"
    from .fast import check as fast_check

    return fast_check(spec, kernel, workers=workers, progress=progress, control=control)


def refuse_unsupported(spec: Spec, engine: str, symmetry: str = "--symmetry") -> None:
    """ConfigError for what `engine` cannot check of `spec` as configured;
    matrix and gate ask it of every entry before any runs (`symmetry`: how
    the caller names its symmetry option)."""
    if spec.checked_properties():
        if spec.symmetric:
            raise ConfigError(
                f"{symmetry} with temporal properties: fair cycles are searched in the states "
                f"themselves (a cycle of a class need not be one of its members); leave out {symmetry}"
            )
        if engine == "spark":
            raise ConfigError(
                "--engine spark does not check temporal properties (their behaviour graph is "
                "searched on one machine): use --engine fast"
            )


class _KernelReady(Exception):
    pass


def _race(
    spec: Spec,
    progress: Progress | None,
    note,
    fingerprint_bits: int,
    control: Control,
    job: CompileJob | None,
) -> tuple[CheckResult | None, Kernel | None]:
    """The reference engine here while the kernel compiles in a child (the
    caller's `job`, else one of its own): (the reference engine's result,
    None) if it finishes first, else (None, the kernel, loaded from the
    cache the child filled)."""
    from .bfs import check as reference
    from .kernel import compile_job, kernel_for

    own = job is None
    if own:
        job = compile_job(spec)
        if job is None:  # compiled meanwhile (another process), or none to be had
            return None, kernel_for(spec, note, fingerprint_bits=fingerprint_bits)
    assert job is not None
    if not job.announced:
        note(
            f"compiling the kernel of {job.spec_name} for {job.n} processes ({job.estimate}; "
            f"once: later runs load it); the interpreted engine checks meanwhile"
        )
        job.announced = True

    def watch(counts: dict) -> None:
        if job.ready():
            raise _KernelReady
        if progress:
            progress({**counts, "compiling": job.status()} if job.running() else counts)

    try:
        result = reference(spec, progress=watch, control=control)
        if own and result.elapsed_s >= KEEP_COMPILING_AFTER_S:
            finish_compile(job, control, progress)
    except _KernelReady:
        note("the kernel is compiled: the compiled search starts")
        return None, kernel_for(spec, fingerprint_bits=fingerprint_bits)
    finally:
        if own:
            job.end()
    result.run_info["kernel"] = (
        f"interpreted: {job.failed}" if job.failed else "interpreted (done before the kernel compiled)"
    )
    return result, None


def finish_compile(job: CompileJob, control: Control, progress: Progress | None) -> bool:
    """Wait for a compile the checks no longer need, so that the next run
    of this variant loads the kernel (`progress` hears how far it is); a
    stop signal ends the wait (the compile is then abandoned), never an
    answer. Whether the kernel is now in the cache."""
    if job.running() and progress:
        progress({"note": "the checks are done; finishing the kernel's compile, so that later runs load it"})
    with control.stop.polling():
        while job.running() and not control.stop.asked:
            if progress:
                progress({"status": f"{job.status()} (Ctrl-C skips it; the verdicts stand)"})
            time.sleep(0.5)
    return job.ready()
