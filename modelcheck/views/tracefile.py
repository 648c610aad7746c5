"""Trace files (formats/tracefile.py) read back into spec states.

A file holds described (JSON) states for people and the path the spec
took; views explain a violation with the spec's own states, so `replay`
walks the path (or, in a file without one, re-runs each step and keeps
the state whose description matches). A file that does not replay is
refused: a view never shows a trace the spec cannot produce.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import ConfigError
from ..engine.refinement.refine import RefinementResult, explained
from ..formats.tracefile import TraceFile, read
from ..path import PathError, walk
from ..refinement import Image, mapping_for
from ..result import Step, checked_invariant
from ..spec import Spec
from ..trace import TraceError, apply_step, check_step, validate, validate_lasso


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
