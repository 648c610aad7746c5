"""Counterexample traces: rebuilt from parent fingerprints (the reference
engine) or a path (`replay_path`, the compiled engines: modelcheck/path.py),
then re-validated.

A trace is never shown on the word of the fingerprints alone: `validate`
replays it through the spec by action name and arguments and checks that each
step is enabled, that no earlier state violates a checked invariant, and that
the last one violates the reported invariant. A failure there is a bug in the
engine (e.g. a fingerprint collision), and is raised, never reported as a
verdict.
"""

from __future__ import annotations

import json
from typing import Any, cast

from .config import ConfigError, shown
from .declare import Fairness
from .fingerprint import fingerprint
from .path import Path, PathError, walk
from .result import Step
from .spec import Spec
from .store import VisitedStore


class TraceError(RuntimeError):
    """A counterexample failed re-validation: the engine, not the spec, is wrong."""


def rebuild(spec: Spec, store: VisitedStore, fp: int) -> list[Step]:
    """The path from an initial state to the state with fingerprint `fp`."""
    chain = [fp]
    while (up := store.parent(chain[-1])) is not None:
        chain.append(up)
    chain.reverse()
    fp_of = lambda s: fingerprint(spec.canonical(s))  # noqa: E731
    state = next((s for s in spec.init_states() if fp_of(s) == chain[0]), None)
    if state is None:
        raise TraceError("trace does not start at an initial state")
    steps = [Step(None, {}, state)]
    for target in chain[1:]:
        found = next(((n, a, t) for n, a, t in spec.successors(state) if fp_of(t) == target), None)
        if found is None:
            raise TraceError(f"no successor of step {len(steps) - 1} has fingerprint {target:#x}")
        steps.append(Step(*found))
        state = found[2]
    return steps


def described(spec: Spec, steps: list[Step]) -> list[dict[str, Any]]:
    """A trace as JSON: each step's action, arguments and named variables
    (the form `check --json` prints and `--trace-out` writes)."""
    return [{"action": s.action, "args": s.args, "state": spec.describe(s.state)} for s in steps]


def check_step(spec: Spec, action: Any, args: dict[str, Any], where: str) -> None:
    """ConfigError unless `action` is an action of the spec and every
    argument one of its own with a value it takes in this config (of the
    same JSON type: true is not 1), so a misspelt step is bad input, never
    "not enabled"."""
    if not isinstance(action, str) or action not in spec.actions:
        raise ConfigError(f"{where}: action {action!r} does not exist (allowed: {', '.join(spec.actions)})")
    params = spec.params[action]
    for arg, value in args.items():
        if arg not in params:
            raise ConfigError(
                f"{where}: {action} has no argument {arg!r} (its arguments: {', '.join(params) or 'none'})"
            )
        allowed = spec.argument_values(action, arg)
        if not any(same(value, a) for a in allowed):
            listed = ", ".join(json.dumps(a) for a in allowed[:8]) + (", ..." if len(allowed) > 8 else "")
            raise ConfigError(
                f"{where}: {action}: {arg} = {shown(value)} is not a value it takes here "
                f"(allowed: {listed or 'none in this config'})"
            )


def same(a: Any, b: Any) -> bool:
    """Equal JSON values of the same types (1 is neither true nor 1.0)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def apply_step(spec: Spec, state: Any, action: str, args: dict[str, Any]) -> list[tuple[dict, Any]]:
    """Enabled instances of `action` in `state` whose arguments include `args`."""
    return [(a, t) for a, t in spec.instances(action, state) if all(k in a and a[k] == v for k, v in args.items())]


def replay_path(spec: Spec, kernel: Any, path: Path, row: Any, invariant: str) -> list[Step]:
    """A counterexample of a compiled engine from its path, walked through
    the interpreted spec; it must arrive at the state the kernel packed
    (`row`), and is re-validated by replay."""
    try:
        steps = walk(spec, path)
    except PathError as e:
        raise TraceError(f"the compiled engine's path leaves the interpreted spec: {e}") from None
    if kernel.pack(steps[-1].state).tolist() != list(row):
        raise TraceError("the compiled kernel and the interpreted spec disagree on the counterexample's last state")
    validate(spec, steps, invariant)
    return steps


def validate(spec: Spec, steps: list[Step], invariant: str) -> None:
    """Replay `steps` through the spec; raise TraceError unless it is a real
    counterexample to `invariant`."""
    first = steps[0].state
    canon = spec.canonical
    if not any(canon(s) == canon(first) for s in spec.init_states()):
        raise TraceError("replay: the first state is not initial")
    state = first
    for i, step in enumerate(steps):
        if i:
            matches = [
                t
                for a, t in apply_step(spec, state, cast(str, step.action), step.args)
                if a == step.args and canon(t) == canon(step.state)
            ]
            if not matches:
                raise TraceError(f"replay: step {i} {step.action}{step.args} is not enabled")
            state = matches[0]
        bad = spec.violated(state)
        if i < len(steps) - 1 and bad:
            raise TraceError(f"replay: step {i} already violates {bad}")
    if invariant not in spec.violated(state):
        raise TraceError(f"replay: the last state does not violate {invariant}")


def validate_lasso(spec: Spec, steps: list[Step], loop: int, prop: str) -> None:
    """Replay a lasso (`steps`, then back to step `loop` for ever; stuttering
    there when `loop` is the last step) and check, with the interpreted
    spec alone, that it is a fair behaviour violating property `prop`;
    raise TraceError if not."""
    from .declare import ALWAYS_EVENTUALLY, LEADS_TO

    canon = spec.encode  # the states themselves: with symmetry, a cycle of classes is not one of states
    last = len(steps) - 1
    if not 0 <= loop <= last:
        raise TraceError(f"replay: the loop starts at step {loop}, outside the trace")
    if loop < last and canon(steps[loop].state) != canon(steps[last].state):
        raise TraceError(f"replay: the last step does not return to step {loop}")
    for i, step in enumerate(steps[1:], 1):
        if not any(
            a == step.args and canon(t) == canon(step.state)
            for a, t in apply_step(spec, steps[i - 1].state, cast(str, step.action), step.args)
        ):
            raise TraceError(f"replay: step {i} {step.action}{step.args} is not enabled")
    if not any(canon(s) == canon(steps[0].state) for s in spec.init_states()):
        raise TraceError("replay: the first state is not initial")
    values = [spec.properties[prop](spec, s.state) for s in steps]
    p, q = ([v[0] for v in values], [v[1] for v in values]) if spec.property_form[prop] == LEADS_TO else (values, None)
    cycle = range(loop, last) if loop < last else range(last, last + 1)  # the states visited for ever
    if q is not None:
        ok = any(p[i] and not any(q[j] for j in range(min(i, loop), last + 1)) for i in range(last + 1))
    elif spec.property_form[prop] == ALWAYS_EVENTUALLY:
        ok = not any(p[i] for i in cycle)
    else:
        ok = not all(p[i] for i in cycle)
    if not ok:
        raise TraceError(f"replay: the lasso does not violate {prop}")
    # the cycle's steps (a step to the same state is a stutter: TLA+'s <<A>>_vars)
    taken = [s for i, s in enumerate(steps[loop + 1 :], loop + 1) if canon(s.state) != canon(steps[i - 1].state)]
    for f in spec.fairness[prop]:
        param = None if f.each is None else spec.params[f.action][f.each]
        shown = [None] if param is None else [v if param.show is None else param.show(v) for v in param.domain(spec)]
        for value in shown:

            def mine(args: dict, f: Fairness = f, value: object = value) -> bool:
                return f.each is None or args.get(f.each) == value

            if any(s.action == f.action and mine(s.args) for s in taken):
                continue
            enabled = [
                any(mine(a) and canon(t) != canon(steps[i].state) for a, t in spec.instances(f.action, steps[i].state))
                for i in cycle
            ]
            if all(enabled) if not f.strong else any(enabled):
                raise TraceError(f"replay: the cycle is not fair to {f}{'' if value is None else f' ({value})'}")
