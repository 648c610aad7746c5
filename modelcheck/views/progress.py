"""The live progress line a check or a simulation shows on stderr while
it runs (the engine's Progress: it hears counts and notes)."""

from __future__ import annotations

import time
from typing import Self

from rich.live import Live
from rich.text import Text

from .terminal import stderr_console


class Progress:
    """Live progress on stderr: a rich line on a terminal, a plain line every
    10 s otherwise (so CI logs show long runs are alive)."""

    def __init__(self, enabled: bool):
        self.console = stderr_console()
        self.enabled = enabled
        self.live = Live(console=self.console, transient=True) if enabled and self.console.is_terminal else None
        self.last = time.monotonic()

    def __enter__(self) -> Self:
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.live.stop()

    def __call__(self, st: dict) -> None:
        if "note" in st:
            line = st["note"]
        elif "status" in st:  # a wait's state, shown as counts are
            line = st["status"]
        else:
            line = (
                f"depth {st['depth']}  distinct {st['distinct']:,}  generated {st['generated']:,}  "
                f"queue {st['queue']:,}  {st['states_per_s']:,.0f} states/s  {st['elapsed_s']:.0f} s"
            ) + (f"  | {st['compiling']}" if "compiling" in st else "")
        if self.live:
            self.live.update(Text(line))
        elif self.enabled and ("note" in st or time.monotonic() - self.last >= 10):
            self.console.print(line, soft_wrap=True)  # a log line: one line, however long
            self.last = time.monotonic()
