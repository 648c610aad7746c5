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

A CheckOptions (options.py) says how to search: the engine, symmetry,
the local engines' threads, memory limit and checkpoints, Spark's
cluster; a `Control` (control.py) carries a stop request. A check that
writes checkpoints waits for the compile instead of racing, so that one
engine writes them all; a resumed check runs the engine that wrote its
checkpoint."""

from __future__ import annotations

import copy
import os
import time
from typing import TYPE_CHECKING

from ..config import ConfigError
from ..result import CheckResult
from ..spec import Spec
from .control import Control
from .options import CheckOptions
from .progress import Progress
from .storage.checkpoint import Checkpoints

if TYPE_CHECKING:
    from .kernel import CompileJob, Kernel

KEEP_COMPILING_AFTER_S = 10.0  # a check this long interpreted costs more than a compile (about 30 s) spares


def run(
    spec: Spec,
    options: CheckOptions | None = None,
    *,
    progress: Progress | None = None,
    control: Control | None = None,
    checkpoints: Checkpoints | None = None,
    compiling: CompileJob | None = None,
) -> CheckResult:
    """Check `spec` as `options` say (validated here). `control`: its stop
    request; `checkpoints`: the directory options.local names, already
    prepared by the caller (else prepared here), released when the check
    ends, however it ends; `compiling`: to fast, the compile of this spec's
    kernel the caller started (kernel.compile_job), which a race watches
    instead of starting its own, and which the caller ends or waits for."""
    options = (options or CheckOptions()).validate()
    local = options.local
    if checkpoints is None and local.checkpoint_dir:
        checkpoints = Checkpoints(local.checkpoint_dir, local.checkpoint_every)
        checkpoints.prepare(resuming=local.resume)
    if local.resume and checkpoints is None:
        raise ConfigError("resume: no checkpoint to resume from")
    control = control or Control()
    try:
        result = _run(under(spec, options), options, progress, control, checkpoints, compiling)
        going_on = spec
        while result.violated_invariant and len([result, *result.further]) < options.max_violations:
            found = [r.invariant or "" for r in (result, *result.further)]
            going_on = going_on.going_on_past(found)
            if not going_on.to_check():
                break
            if progress:
                progress({"note": f"{', '.join(found)} violated: the search goes on without (--max-violations)"})
            after = _run(under(going_on, options), options, progress, control, None, None)
            if after.holds:
                result.run_info["others_hold_in"] = after.distinct_states  # the rest hold: a complete search
                break
            result.further.append(after)
            if after.loop is not None:  # a temporal property's lasso: the other invariants held, the search is over
                break
        return result
    finally:
        if checkpoints:
            checkpoints.release()


def under(spec: Spec, options: CheckOptions) -> Spec:
    """`spec` as the engines explore it: with --symmetry, a copy whose
    representative() is its class's (the caller's spec is left as it is)."""
    if not options.symmetry or spec.symmetric:
        return spec
    reduced = copy.copy(spec)
    reduced.enable_symmetry()
    return reduced


def _run(
    spec: Spec,
    options: CheckOptions,
    progress: Progress | None,
    control: Control,
    checkpoints: Checkpoints | None,
    compiling: CompileJob | None,
) -> CheckResult:
    from .bfs import check as reference

    engine, bits = options.engine, options.fingerprint_bits
    refuse_unsupported(spec, options)
    if engine == "bfs":
        return reference(spec, options, checkpoints=checkpoints, progress=progress, control=control)
    from .kernel import KernelUnavailable, kernel_for

    note = (lambda text: progress({"note": text})) if progress else (lambda text: None)
    if engine == "spark":
        from .spark.driver import check as spark_check
        from .spark.environment import EngineUnavailable, require_spark

        require_spark()

        def load_kernel():
            try:
                return kernel_for(spec, note, compile=True, fingerprint_bits=bits)
            except KernelUnavailable as e:
                raise EngineUnavailable(
                    f"--engine spark runs the compiled kernel, and there is none here: {e}"
                ) from None

        return spark_check(
            spec,
            load_kernel,
            master=options.spark.master,
            partitions=options.spark.partitions,
            settings=dict(options.spark.settings),
            progress=progress,
            control=control,
        )
    wait = os.environ.get("MODELCHECK_KERNEL") == "compiled" or bool(checkpoints)
    try:
        kernel = kernel_for(spec, note, compile=wait, fingerprint_bits=bits)
    except KernelUnavailable as e:
        if options.local.resume:
            raise ConfigError(
                f"the checkpoint was written by the compiled engine, and there is no compiled kernel here: {e}"
            ) from None
        result = reference(spec, options, checkpoints=checkpoints, progress=progress, control=control)
        result.run_info["kernel"] = f"interpreted: {e}"
        return result
    if kernel is None:
        raced, kernel = _race(spec, options, progress, note, control, compiling)
        if raced is not None:
            return raced
        assert kernel is not None, "the compiled search starts with the kernel the race loaded"
    from .fast import check as fast_check

    return fast_check(spec, kernel, options, checkpoints=checkpoints, progress=progress, control=control)


def refuse_unsupported(spec: Spec, options: CheckOptions, symmetry: str = "--symmetry") -> None:
    """ConfigError for what the options cannot check of `spec` as
    configured (symmetry the spec's rules forbid, temporal properties where
    they are not searched); matrix and gate ask it of every entry before
    any runs (`symmetry`: how the caller names its symmetry option)."""
    if options.symmetry:
        under(spec, options)  # the spec refuses symmetry its rules forbid (SymmetryError)
    if spec.checked_properties():
        if options.engine == "spark":
            raise ConfigError(
                "--engine spark does not check temporal properties (their behaviour graph is "
                "searched on one machine): use --engine fast"
            )


class _KernelReady(Exception):
    pass


def _race(
    spec: Spec,
    options: CheckOptions,
    progress: Progress | None,
    note,
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
            return None, kernel_for(spec, note, fingerprint_bits=options.fingerprint_bits)
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
        result = reference(spec, options, progress=watch, control=control)
        if own and result.elapsed_s >= KEEP_COMPILING_AFTER_S:
            finish_compile(job, control, progress)
    except _KernelReady:
        note("the kernel is compiled: the compiled search starts")
        return None, kernel_for(spec, fingerprint_bits=options.fingerprint_bits)
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
