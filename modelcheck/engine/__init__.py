"""Exploration engines, and the one place that picks one. All return the
same CheckResult and agree exactly: `bfs` is the reference (the
interpreted spec, one process, a dict of parent fingerprints); `fast` runs
the spec compiled (kernel/) over packed states on threads; `spark` runs
the same compiled search with the frontier and visited set spread over
Spark executors (pyspark is imported only when it is asked for).

The first check of a variant must compile its kernel (about 30 s). Since
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
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

from ..config import ConfigError
from ..result import CheckResult
from ..spec import Spec
from .control import Control
from .progress import Progress

if TYPE_CHECKING:
    from .kernel import Kernel

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
) -> CheckResult:
    """Check `spec` with the named engine (`workers` applies to fast;
    `master`, `partitions` and `spark_settings` to spark; `fingerprint_bits`
    to both, where a packed state is too large to store whole; `control`:
    its stop request to all, checkpoints and the memory limit to fast and bfs)."""
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
        raced, kernel = _race(spec, progress, note, fingerprint_bits, control)
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
    spec: Spec, progress: Progress | None, note, fingerprint_bits: int, control: Control
) -> tuple[CheckResult | None, Kernel | None]:
    """The reference engine here while the kernel compiles in a child: (the
    reference engine's result, None) if it finishes first, else (None, the
    kernel, loaded from the cache the child filled)."""
    from .bfs import check as reference
    from .kernel import compile_elsewhere, end_compile, kernel_for

    note(
        f"compiling the kernel of {type(spec).__name__} for {spec.n} processes (once: later runs load it); "
        f"the interpreted engine runs meanwhile"
    )
    child = compile_elsewhere(spec)
    errors = child.stderr
    assert errors is not None
    failed: list[str] = []

    def watch(counts: dict) -> None:
        if not failed and child.poll() is not None:
            if child.returncode == 0:
                raise _KernelReady
            failed.append(errors.read().decode(errors="replace").strip() or f"exit {child.returncode}")
        if progress:
            progress(counts)

    try:
        result = reference(spec, progress=watch, control=control)
        if result.elapsed_s >= KEEP_COMPILING_AFTER_S and not failed:
            _finish_compile(child, control, note)
    except _KernelReady:
        note("the kernel is compiled: the compiled search starts")
        return None, kernel_for(spec, fingerprint_bits=fingerprint_bits)
    finally:
        end_compile(child)
    result.run_info["kernel"] = (
        f"interpreted: {failed[0]}" if failed else "interpreted (done before the kernel compiled)"
    )
    return result, None


def _finish_compile(child: subprocess.Popen, control: Control, note) -> None:
    """Wait for the compile a finished check no longer needs, so that the
    next run of this variant loads the kernel; a stop signal ends the wait
    (the compile is then abandoned), never the answer."""
    if child.poll() is not None:
        return
    note("the check is done; waiting for the kernel's compile, so that later runs are compiled (Ctrl-C skips it)")
    with control.stop.polling():
        while child.poll() is None and not control.stop.asked:
            time.sleep(0.1)
