"""CompileJob: a kernel compiling in a child process (compile_elsewhere,
whose program is __main__.py) while the interpreted engine checks, and
compile_ahead, which starts the compiles a run of many checks will need
side by side."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ...spec import Spec
from .cache import cache_dir
from .compiled import Kernel, kernel_for, kernel_key
from .errors import KernelError, KernelUnavailable


class CompileJob:
    """A kernel compiling in a child (compile_elsewhere) while this process
    goes on: whether it is done, and what to tell a user meanwhile."""

    def __init__(self, spec: Spec, kernel: Kernel):
        self.kernel = kernel
        self.spec_name, self.n = type(spec).__name__, spec.n
        self.child = compile_elsewhere(spec)
        self.started = time.monotonic()
        self.failed: str | None = None
        self.announced = False  # whether a check has told the user of it
        self.estimate = kernel.estimate()  # once: it reads the cache's timings

    def ready(self) -> bool:
        """Whether the kernel is in the cache (the child exited 0); a failed
        compile is noted in `failed`."""
        if self.failed is None and self.child.poll() is not None:
            if self.child.returncode == 0:
                return True
            assert self.child.stderr is not None
            self.failed = self.child.stderr.read().decode(errors="replace").strip() or f"exit {self.child.returncode}"
        return False

    def running(self) -> bool:
        return self.child.poll() is None

    def status(self) -> str:
        """The progress line's part: how far the compile is."""
        elapsed = time.monotonic() - self.started
        return f"compiling the kernel: {elapsed:.0f} s of {self.estimate}"

    def end(self) -> None:
        end_compile(self.child)


def compile_job(spec: Spec) -> CompileJob | None:
    """A CompileJob for `spec`'s kernel if it is not in the cache and can
    be had (numba importable, MODELCHECK_KERNEL not interpreted), else None."""
    if os.environ.get("MODELCHECK_KERNEL") == "interpreted":
        return None
    try:
        from numba.core.errors import NumbaError
    except Exception:  # no numba: the check says so itself
        return None
    try:
        kernel = Kernel(spec, cache_dir())
    except (KernelError, NumbaError, OSError):  # the check will say why
        return None
    return None if kernel.compiled() else CompileJob(spec, kernel)


# compile_elsewhere's child: this process's sys.path before anything is
# imported (-P: not the working directory first, as -m would put it, where
# a checkout of other code would be imported instead of this one's), then
# this package run as a program (__main__.py)
CHILD = "import json, runpy, sys; sys.path[:] = json.loads(sys.argv[2]); runpy.run_module(PACKAGE, run_name='__main__')"


def compile_elsewhere(spec: Spec) -> subprocess.Popen:
    """Compile `spec`'s kernel into the cache in a child process (CHILD,
    given this process's pid and sys.path, and the pickled spec on stdin;
    it dies with this process), running the very modules this process
    runs; it exits 0 when the kernel is in the cache, else 3 with the
    reason on stderr."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-c",
            CHILD.replace("PACKAGE", repr(__package__)),
            str(os.getpid()),
            json.dumps(sys.path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    child.stdin.write(pickle.dumps(spec))
    child.stdin.close()
    return child


def compile_ahead(specs: Iterable[Spec]) -> list[CompileJob]:
    """Start compiling, each in a child (CompileJob), the kernels of `specs`
    the cache lacks, one a kernel: a run of many checks then compiles them
    side by side from its start, not one after another as its checks meet
    them. None where there is no kernel to be had."""
    seen: set[tuple] = set()
    jobs = []
    for spec in specs:
        key = kernel_key(spec)
        if key not in seen:
            seen.add(key)
            job = compile_job(spec)
            if job is not None:
                jobs.append(job)
    return jobs


@contextmanager
def compiling_ahead(specs: Iterable[Spec]) -> Iterator[int]:
    """compile_ahead for the checks of the block (it gets how many compiles
    started), which then wait for their kernel (MODELCHECK_KERNEL=compiled)
    instead of racing it interpreted: the cores go to the compiles, not to
    searches the kernel does in a fraction of the time. A compile still
    running when the block ends is stopped."""
    jobs = compile_ahead(specs)
    before = os.environ.get("MODELCHECK_KERNEL")
    if jobs:
        os.environ["MODELCHECK_KERNEL"] = "compiled"
    try:
        yield len(jobs)
    finally:
        if jobs:
            if before is None:
                del os.environ["MODELCHECK_KERNEL"]
            else:
                os.environ["MODELCHECK_KERNEL"] = before
        for job in jobs:
            job.end()


def end_compile(child: subprocess.Popen) -> None:
    """Stop a compile_elsewhere child if it still runs, and reap it."""
    if child.poll() is None:
        child.kill()
    child.wait()
    if child.stderr:
        child.stderr.close()


def compile_here() -> tuple[Spec, Kernel]:
    """compile_elsewhere's child: the spec on stdin compiled into the cache
    (exit 3, saying why, where it cannot be); the spec and its kernel."""
    from ...lifetime import die_with_parent

    die_with_parent(int(sys.argv[1]))  # a compile nobody waits for any more is not left running
    spec = pickle.load(sys.stdin.buffer)
    try:
        kernel = kernel_for(spec)
    except KernelUnavailable as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    assert kernel is not None, "kernel_for compiles when it is not cached"
    return spec, kernel
