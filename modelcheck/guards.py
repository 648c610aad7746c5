"""Which guard refused an action: the action run once more under a tracer.

An action is a function that returns None when a guard fails, and says
nothing about which. To tell a user *why* a step was refused (validate's
deviations), the action is re-run on that state with `sys.settrace`
watching the spec's own source: the first function there that returns
None names the guard, by file, line and source text. Only for
explanations: tracing is slow, and never reaches a verdict.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any


@dataclass(frozen=True)
class Guard:
    """Where an action was refused: the line that returned None, and the function it is in."""

    file: str
    line: int
    function: str
    source: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.function}): {self.source}"


def refusal(spec: Any, name: str, state: Any, values: tuple[int, ...]) -> Guard | None:
    """The guard that refuses action `name` with argument values `values`
    in `state`, or None if it is enabled."""
    fn = spec.actions[name]
    home = os.path.dirname(os.path.dirname(sys.modules[type(spec).__module__].__file__ or ""))
    found: list[Guard] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return" and arg is None and not found:
            code = frame.f_code
            text = condition(code.co_filename, frame.f_lineno)
            found.append(Guard(os.path.relpath(code.co_filename, home), frame.f_lineno, code.co_name, text))
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(home) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        result = fn(spec, state, *values)
    finally:
        sys.settrace(previous)
    if result is not None:
        return None
    return found[0] if found else None


def condition(file: str, line: int) -> str:
    """The source of a refusing line; a bare `return None` with the `if`
    above it (up to a few lines of a wrapped condition)."""
    text = linecache.getline(file, line).strip()
    if text not in ("return None", "return"):
        return text
    for back in range(1, 5):
        above = linecache.getline(file, line - back).strip()
        if above.startswith(("if ", "elif ")):
            wrapped = " ".join(linecache.getline(file, n).strip() for n in range(line - back, line))
            return f"{wrapped} {text}"
    return text
