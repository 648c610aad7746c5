"""Trace files: `check --trace-out` JSON or ITF, read back into spec states.

A file holds described (JSON) states, but views explain a violation with the
spec's own states, so `replay` re-runs each step through the spec and keeps
the state whose description matches. A file that does not replay is refused:
a view never shows a trace the spec cannot produce.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, Malformed, parse_text, read_text, shown
from ..engine.refine import RefinementResult, explained
from ..path import Path, PathError, path_of, walk
from ..refinement import Image, mapping_for
from ..result import Step, checked_invariant
from ..spec import Spec
from ..trace import TraceError, apply_step, check_step, described, validate, validate_lasso
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


def open_trace(path: str, load: Callable[[dict[str, Any]], Spec]) -> tuple[Spec, TraceFile, list[Step]]:
    """A trace file, the spec of its config (`load`; a null value: the
    key's default) and its steps replayed into spec states."""
    tf = read(path)
    try:
        spec = load({k: v for k, v in tf.config.items() if v is not None})
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return spec, tf, replay(spec, tf, path)


def refinement_failure(
    spec: Spec, tf: TraceFile, steps: list[Step], load: Callable[[dict[str, Any]], Spec], where: str
) -> tuple[Spec, RefinementResult]:
    """A refinement failure's abstract spec (`load` of the trace's config
    with the abstract variant) and its account, recomputed from the
    replayed steps: each step's image and reading, the closest abstract
    steps. ConfigError unless the abstract spec allows every step's image
    but the last's."""
    assert tf.refines is not None
    try:
        abstract = load({**{k: v for k, v in tf.config.items() if v is not None}, "variant": tf.refines["abstract"]})
        image = Image(spec, abstract, mapping_for(spec, tf.refines["abstract"], tf.refines["mapping"]))
    except ConfigError as e:
        raise ConfigError(f"{where}: refines: {e}") from None
    try:
        return abstract, explained(image, steps)
    except TraceError as e:
        raise ConfigError(f"{where}: not a failure of {tf.refines['abstract']} refinement: {e}") from None


def replay(spec: Spec, tf: TraceFile, where: str) -> list[Step]:
    """The trace as spec states; ConfigError naming the first step that the
    spec cannot take, or if the last state does not violate the invariant.
    A file with a path is walked along it (and must show the states it
    leads to); one without (ITF, or written by hand) is searched for each
    step's described state."""
    along = walked(spec, tf)
    steps = along or searched(spec, tf, where)
    if tf.invariant is not None:
        checked_invariant(spec, tf.invariant, f"{where}: invariant")
        temporal = tf.invariant in spec.checked_properties()
        if temporal and tf.loop is None:
            raise ConfigError(f"{where}: {tf.invariant} is a temporal property: its counterexample needs a loop")
        try:
            if tf.loop is not None and temporal:
                validate_lasso(spec, steps, tf.loop, tf.invariant)
            else:
                validate(spec, steps, tf.invariant)
        except TraceError as e:
            raise ConfigError(f"{where}: not a counterexample to {tf.invariant}: {e}") from None
    if tf.path is not None and along is None:
        raise ConfigError(f"{where}: the path does not lead to the steps the trace shows (one of them was edited)")
    return steps


def walked(spec: Spec, tf: TraceFile) -> list[Step] | None:
    """The file's path walked, if it has one that leads to the steps the
    file shows; else None: the shown steps are searched (whose errors name
    the step a hand's edit broke), and a file whose shown steps replay but
    not on its own path is refused after (one of the two was edited)."""
    if tf.path is None:
        return None
    try:
        steps = walk(spec, tf.path)
    except PathError:
        steps = []
    shown = [(s["action"], s["args"], s["state"]) for s in tf.steps]
    return steps if [(s.action, s.args, spec.describe(s.state)) for s in steps] == shown else None


def searched(spec: Spec, tf: TraceFile, where: str) -> list[Step]:
    """Each step's described state found among the successors of the last."""
    first = tf.steps[0]
    state = next((s for s in spec.init_states() if spec.describe(s) == first["state"]), None)
    if first["action"] is not None or state is None:
        raise ConfigError(f"{where}: step 0 is not an initial state of the trace's config")
    steps = [Step(None, {}, state)]
    for i, s in enumerate(tf.steps[1:], 1):
        check_step(spec, s["action"], s["args"], f"{where}: step {i}")
        state = next(
            (
                t
                for a, t in apply_step(spec, state, s["action"], s["args"])
                if a == s["args"] and spec.describe(t) == s["state"]
            ),
            None,
        )
        if state is None:
            raise ConfigError(
                f"{where}: step {i} ({s['action']}) does not follow from step {i - 1} under the trace's config"
            )
        steps.append(Step(s["action"], s["args"], state))
    return steps
