"""The trace file: what `check --trace-out` writes (JSON; or ITF, formats/itf.py),
and its shapes checked as it is read. What the steps mean is checked when
they are replayed into spec states (views/tracefile.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, Malformed, parse_text, read_text, shown
from ..path import Path, path_of
from ..result import Step
from ..spec import Spec
from ..trace import described
from .itf import ItfError, from_itf, is_itf

NOT_A_TRACE = "not a trace (expected the JSON of check --trace-out or an ITF trace written by trace export)"


@dataclass
class TraceFile:
    config: dict[str, Any]
    invariant: str | None
    steps: list[dict[str, Any]]  # {"action", "args", "state"}, the first being Init
    loop: int | None = None  # a temporal property's lasso: the step the last one returns to
    refines: dict[str, str] | None = None  # a refinement failure's {"abstract": variant, "mapping": name}
    path: Path | None = None  # the steps as the spec takes them (the states are for people; this is replayed)

    @classmethod
    def of(
        cls,
        spec: Spec,
        trace: list[Step],
        invariant: str | None,
        loop: int | None = None,
        refines: dict[str, str] | None = None,
    ) -> TraceFile:
        """The file of a trace the spec produced: its states described, and its path."""
        return cls(spec.config, invariant, described(spec, trace), loop, refines, path_of(spec, trace))

    def to_json(self) -> dict[str, Any]:
        """The document `check --trace-out` (or `refines --trace-out`) writes."""
        doc: dict[str, Any] = {"config": self.config, "invariant": self.invariant, "trace": self.steps}
        if self.loop is not None:
            doc["loop"] = self.loop
        if self.refines is not None:
            doc["refines"] = self.refines
        if self.path is not None:
            doc["path"] = self.path.to_json()
        return doc

    def text(self) -> str:
        """The file's text: to_json indented, one line a key."""
        return json.dumps(self.to_json(), indent=1) + "\n"


def read(path_name: str) -> TraceFile:
    """A trace file's config, invariant and steps, their shapes checked
    (what they mean is checked by `replay`)."""
    try:
        data = parse_text(read_text(path_name), path_name, "json")
    except Malformed:
        raise ConfigError(f"{path_name}: {NOT_A_TRACE}: not JSON") from None
    refines = None
    path = None
    if is_itf(data):
        try:
            config, invariant, steps, loop = from_itf(data)
            refines = (data.get("#meta") or {}).get("refines")  # from_itf has checked #meta is an object or absent
            path = (data.get("#meta") or {}).get("path")
        except ItfError as e:
            raise ConfigError(f"{path_name}: malformed ITF: {e}") from None
        if config is None:
            raise ConfigError(f"{path_name}: an ITF trace without modelcheck's #meta.config cannot be replayed")
    elif isinstance(data, dict) and {"config", "invariant", "trace"} <= set(data):
        config, invariant, steps, loop = data["config"], data["invariant"], data["trace"], data.get("loop")
        refines = data.get("refines")
        path = data.get("path")
    else:
        raise ConfigError(f"{path_name}: {NOT_A_TRACE}")
    path = None if path is None else Path.from_json(path, path_name)
    if refines is not None and not (
        isinstance(refines, dict)
        and set(refines) == {"abstract", "mapping"}
        and all(isinstance(v, str) for v in refines.values())
        and invariant is None
    ):
        raise ConfigError(
            f'{path_name}: refines is {shown(refines)}; allowed: {{"abstract": VARIANT, "mapping": NAME}} '
            "in a refinement failure (whose invariant is null), as refines --trace-out writes it"
        )
    well_formed = (
        isinstance(config, dict)
        and (invariant is None or isinstance(invariant, str))
        and isinstance(steps, list)
        and steps
        and all(
            isinstance(s, dict)
            and isinstance(s.get("args"), dict)
            and isinstance(s.get("state"), dict)
            and "action" in s
            for s in steps
        )
    )
    if not well_formed:
        raise ConfigError(f"{path_name}: {NOT_A_TRACE}")
    if loop is not None and not (type(loop) is int and 0 <= loop < len(steps) and invariant is not None):
        raise ConfigError(
            f"{path_name}: loop is {shown(loop)}; allowed: the number of a step (0..{len(steps) - 1}) "
            "that the last step returns to, in a temporal property's counterexample"
        )
    return TraceFile(config, invariant, steps, loop, refines, path)
