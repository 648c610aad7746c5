"""A long run's lifetime: the signals that stop it at a safe point, and
children that never outlive it.

SIGINT (Ctrl-C) and SIGTERM ask a search to stop at its next safe point,
where what it has settled is intact and can be checkpointed; the engine
then raises `Stopped` with what it had done, and the CLI prints that and
exits 128 + the signal's number, as a shell reports a process killed by
it. A second signal ends the process at once. A signal that arrives
before anything polls for it (a kernel compiling) stops at once too.

Children (a kernel compiling beside a check, matrix and gate cells) ask
Linux to kill them when their parent ends (PR_SET_PDEATHSIG) and leave
Ctrl-C to the parent, so however a coordinator ends, SIGKILL included,
nothing it started keeps running.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1


@dataclass
class Stopped(BaseException):
    """A search stopped before a verdict: by a signal (`signum`) or at the
    memory limit (`signum` None, `why` says which limit). The counts are
    what it had settled; `checkpoint` is where it can be resumed from.
    A BaseException, as KeyboardInterrupt is, so that no `except Exception`
    on its way up (socketserver's request handling, an optional import)
    takes a stop for an error and carries on."""

    why: str
    signum: int | None = None
    distinct: int = 0
    generated: int = 0
    depth: int = 0  # BFS levels with every state settled
    elapsed_s: float = 0.0
    checkpoint: str | None = None

    def __str__(self) -> str:
        return self.why


class StopRequest:
    """The first stop signal a run received, for engines to poll; while
    nobody polls (`polled` false), a signal raises Stopped at once."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.polled = False

    @property
    def asked(self) -> bool:
        return self.signum is not None

    @contextmanager
    def polling(self) -> Iterator[None]:
        """A stretch of code that polls this request at its safe points."""
        was, self.polled = self.polled, True
        try:
            yield
        finally:
            self.polled = was

    def stopped(self, **counts: Any) -> Stopped:
        assert self.signum is not None, "no signal to stop by"
        name = signal.Signals(self.signum).name
        return Stopped(f"stopped by {name}", self.signum, **counts)


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """Within the block, SIGINT and SIGTERM set the returned request (a
    second one exits at once, with 128 + its number). A SIGINT the process
    inherited as ignored (a background job of a shell) stays ignored."""
    request = StopRequest()

    def handler(signum: int, _frame: object) -> None:
        if request.signum is not None:
            os._exit(128 + signum)
        request.signum = signum
        if not request.polled:
            raise request.stopped()

    previous = {}
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield request
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def exit_code(stop: Stopped) -> int:
    """128 + the signal, as a shell reports it; the memory limit is 2 (the
    run cannot be completed here as configured)."""
    return 128 + stop.signum if stop.signum else 2


def die_with_parent(parent: int) -> None:
    """In a child process: be killed when `parent` ends, and leave Ctrl-C
    (which a terminal sends to the whole process group) to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it ended before prctl took effect
        os._exit(1)


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """Processes that die with this one and leave Ctrl-C to it."""
    return ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent, initargs=(os.getpid(),))


def end_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: work still running is killed, not waited for, and
    work not started is dropped."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
