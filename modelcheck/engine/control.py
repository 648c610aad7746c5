"""What a caller may do to a search while it runs: ask it to stop. The
options it runs under are a CheckOptions (options.py); this is only the
stop request engines poll at their safe points, and the memory rule they
apply there."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError
from ..lifetime import Stopped, StopRequest
from ..memory import anon_rss, show_size
from ..spec import Spec
from .storage.checkpoint import Checkpoints


@dataclass
class Control:
    stop: StopRequest = field(default_factory=StopRequest)


def over_memory(limit: int | None) -> bool:
    return limit is not None and anon_rss() > limit


def out_of_memory(limit: int | None, checkpoints: Checkpoints | None, what: str, **counts: Any) -> Stopped:
    """The stop at the memory limit, saying how to go on."""
    where = (
        f"; resume from the checkpoint with a larger --max-memory: modelcheck check --resume {checkpoints.dir}"
        if checkpoints
        else "; give --checkpoint DIR to be able to resume"
    )
    assert limit is not None, "no memory limit to be out of"
    return Stopped(
        f"memory limit {show_size(limit)} (--max-memory) reached at "
        f"{counts.get('distinct', 0):,} distinct states: {what}{where}",
        None,
        **counts,
    )


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
