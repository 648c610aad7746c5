"""Stopping a search in-process, as a signal would, and resuming it from
its checkpoint (tests/test_checkpoint.py, tests/test_engines.py)."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from modelcheck.engine import run
from modelcheck.engine.control import Control
from modelcheck.engine.options import CheckOptions
from modelcheck.engine.storage.checkpoint import Checkpoints
from modelcheck.lifetime import Stopped, StopRequest
from specs.kafka_elr import load


def stop_after(reports: int) -> tuple[StopRequest, Callable[[dict], None]]:
    """A stop request that a signal would set, set at the given progress report."""
    request, seen = StopRequest(), [0]

    def progress(_counts: dict) -> None:
        seen[0] += 1
        if seen[0] == reports:
            request.signum = signal.SIGINT

    return request, progress


def interrupted(spec, engine: str, directory, reports: int, workers: int = 2) -> Stopped:
    checkpoints = Checkpoints(directory, every_s=0)
    checkpoints.prepare(resuming=False)
    request, progress = stop_after(reports)
    with pytest.raises(Stopped) as stop:
        run(
            spec,
            CheckOptions.of(engine=engine, workers=workers),
            progress=progress,
            control=Control(stop=request),
            checkpoints=checkpoints,
        )
    return stop.value


def resume(config: dict, engine: str, directory, workers: int = 1, symmetry: bool = False):
    checkpoints = Checkpoints(directory, every_s=0)
    checkpoints.prepare(resuming=True)
    return run(
        load({k: v for k, v in config.items() if v is not None}),
        CheckOptions.of(engine=engine, workers=workers, resume=True, symmetry=symmetry),
        checkpoints=checkpoints,
    )


def stopped_and_resumed(spec, engine: str, directory, reports: int):
    """The result of a search stopped at its progress report `reports` and
    resumed on another number of workers (or run through, if it ends first)."""
    checkpoints = Checkpoints(directory, every_s=0)
    checkpoints.prepare(resuming=False)
    request, progress = stop_after(reports)
    try:
        return run(
            spec,
            CheckOptions.of(engine=engine, workers=2),
            progress=progress,
            control=Control(stop=request),
            checkpoints=checkpoints,
        )
    except Stopped:
        return resume(spec.config, engine, directory, workers=1, symmetry=spec.symmetric)
