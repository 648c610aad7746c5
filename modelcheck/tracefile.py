"""Trace files: `check --trace-out` JSON or ITF, read back into spec states.

A file holds described (JSON) states, but views explain a violation with the
spec's own states, so `replay` re-runs each step through the spec and keeps
the state whose description matches. A file that does not replay is refused:
a view never shows a trace the spec cannot produce.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import ConfigError
from .itf import from_itf, is_itf
from .result import Step
from .spec import Spec
from .trace import TraceError, apply_step, validate

NOT_A_TRACE = "not a trace (expected the JSON of check --trace-out or an ITF trace written by trace export)"


@dataclass
class TraceFile:
    config: dict[str, Any]
    invariant: str | None
    steps: list[dict[str, Any]]     # {"action", "args", "state"}, the first being Init

    def to_json(self) -> dict[str, Any]:
        """The document `check --trace-out` writes."""
        return {"config": self.config, "invariant": self.invariant, "trace": self.steps}


def read(path: str) -> TraceFile:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ConfigError(f"{path}: {NOT_A_TRACE}: not JSON") from None
    if is_itf(data):
        config, invariant, steps = from_itf(data)
        if config is None:
            raise ConfigError(f"{path}: an ITF trace without modelcheck's #meta.config cannot be replayed")
    elif isinstance(data, dict) and {"config", "invariant", "trace"} <= set(data):
        config, invariant, steps = data["config"], data["invariant"], data["trace"]
    else:
        raise ConfigError(f"{path}: {NOT_A_TRACE}")
    well_formed = (isinstance(config, dict) and (invariant is None or isinstance(invariant, str))
                   and isinstance(steps, list) and steps
                   and all(isinstance(s, dict) and isinstance(s.get("args"), dict)
                           and isinstance(s.get("state"), dict) and "action" in s for s in steps))
    if not well_formed:
        raise ConfigError(f"{path}: {NOT_A_TRACE}")
    return TraceFile(config, invariant, steps)


def replay(spec: Spec, tf: TraceFile, where: str) -> list[Step]:
    """The trace as spec states; ConfigError naming the first step that the
    spec cannot take, or if the last state does not violate the invariant."""
    first = tf.steps[0]
    state = next((s for s in spec.init_states() if spec.describe(s) == first["state"]), None)
    if first["action"] is not None or state is None:
        raise ConfigError(f"{where}: step 0 is not an initial state of the trace's config")
    steps = [Step(None, {}, state)]
    for i, s in enumerate(tf.steps[1:], 1):
        if s["action"] not in spec.actions:
            raise ConfigError(f"{where}: step {i}: no action {s['action']!r} in the spec")
        state = next((t for a, t in apply_step(spec, state, s["action"], s["args"])
                      if a == s["args"] and spec.describe(t) == s["state"]), None)
        if state is None:
            raise ConfigError(f"{where}: step {i} ({s['action']}) does not follow from step {i - 1} "
                              f"under the trace's config")
        steps.append(Step(s["action"], s["args"], state))
    if tf.invariant is not None:
        if tf.invariant not in spec.invariants:
            raise ConfigError(f"{where}: {tf.invariant!r} is not an invariant of the spec")
        try:
            validate(spec, steps, tf.invariant)
        except TraceError as e:
            raise ConfigError(f"{where}: not a counterexample to {tf.invariant}: {e}") from None
    return steps
