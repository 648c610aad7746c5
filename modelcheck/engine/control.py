"""What a caller asks of a search besides its spec: stop when signalled,
checkpoint now and then (and resume from one), and stay within a memory
limit. Engines poll it at their safe points; without one a search runs
to its verdict as before."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError
from ..lifetime import Stopped, StopRequest
from ..memory import anon_rss, show_size
from ..spec import Spec
from .checkpoint import Checkpoints


@dataclass
class Control:
    stop: StopRequest = field(default_factory=StopRequest)
    checkpoints: Checkpoints | None = None  # where checkpoints go (and, with resume, where the run continues from)
    resume: bool = False
    max_memory: int | None = None  # bytes of anonymous memory the process may hold
    spill_dir: str | None = None  # where levels spill under memory pressure (default: the temp dir)

    def over_memory(self) -> bool:
        return self.max_memory is not None and anon_rss() > self.max_memory

    def out_of_memory(self, what: str, **counts: Any) -> Stopped:
        where = (
            f"; resume from the checkpoint with a larger --max-memory: modelcheck check --resume {self.checkpoints.dir}"
            if self.checkpoints
            else "; give --checkpoint DIR to be able to resume"
        )
        assert self.max_memory is not None, "no memory limit to be out of"
        return Stopped(
            f"memory limit {show_size(self.max_memory)} (--max-memory) reached at "
            f"{counts.get('distinct', 0):,} distinct states: {what}{where}",
            None,
            **counts,
        )


def identity(spec: Spec, engine: str, source: str) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the engine, the spec and
    its code (`source`: what the engine runs of it), the config, symmetry."""
    cls = type(spec)
    return {
        "engine": engine,
        "spec": f"{cls.__module__}.{cls.__qualname__}",
        "config": getattr(spec, "config", None),
        "symmetry": spec.symmetric,
        "source": hashlib.sha256(source.encode()).hexdigest(),
    }


def spec_source(spec: Spec) -> str:
    """The text of every loaded module of the spec's package (what the
    reference engine interprets), in a fixed order."""
    import inspect

    top = type(spec).__module__.split(".")[0]
    texts = []
    for name in sorted(n for n in sys.modules if n == top or n.startswith(top + ".")):
        try:
            texts.append(inspect.getsource(sys.modules[name]))
        except (OSError, TypeError):
            pass
    return "\n".join(texts)


def check_identity(saved: dict[str, Any], now: dict[str, Any], where: str) -> None:
    for key in now:
        if saved.get(key) != now[key]:
            what = {"source": "the spec's code has changed since"}.get(
                key, f"{key} was {saved.get(key)!r}, now {now[key]!r}"
            )
            raise ConfigError(f"--resume {where}: the checkpoint is of another run ({what})")
