"""Scenarios: a config and a list of steps, replayed through a spec (and
written, by the explorer, with scenario.py's `to_toml`).

A step names an action, some of its arguments (an argument may be left out
when only one enabled instance matches), and optionally `expect` (state
variables after the step) and `violates` (the invariants it is expected to
break; by default none), or `enabled = false` (no instance may be enabled
there: the protocol refuses the request, and the state is kept). Replay
stops at the first step that is not enabled (or is, against `enabled = false`).
A file may carry a `[conformance]` table saying what it reproduces (the
Kafka test, its broker mapping, its status); replay checks only that it is
a table, and tests/test_conformance.py reads it.
"""

from __future__ import annotations

import json
from typing import Any

import click

from ..config import ConfigError, read_file, shown
from ..formats.itf import Type, conforms
from ..formats.scenario import ScenarioStep, StepReport
from ..result import checked_invariant
from ..spec import Spec
from ..trace import apply_step, check_step
from ..views.report import print_replay, replay_json
from .exits import EXIT_HOLDS, EXIT_VIOLATED, fail
from .inputs import Loader

STEP_KEYS = ("action", "expect", "violates", "enabled")
TOP_KEYS = ("config", "steps", "description", "conformance")


def split_scenario(data: dict[str, Any], where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The `[config]` table and the `[[steps]]` array of a scenario file.
    `[config]` is required (empty: the defaults), so a scenario never
    replays a config it does not name."""
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key {unknown[0]!r} (allowed: {', '.join(TOP_KEYS)})")
    if "config" not in data:
        raise ConfigError(f"{where}: needs a [config] table (empty: the default config)")
    config, steps = data["config"], data.get("steps")
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: 'config' must be a table")
    if not isinstance(data.get("description", ""), str):
        raise ConfigError(f"{where}: 'description' must be a string")
    if not isinstance(data.get("conformance", {}), dict):
        raise ConfigError(f"{where}: 'conformance' must be a table")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise ConfigError(f"{where}: 'steps' must be a non-empty array of tables ([[steps]])")
    return config, steps


def parse_steps(spec: Spec, raw: list[dict[str, Any]], where: str) -> list[ScenarioStep]:
    """Check every step against the spec before anything runs: a step that
    no state of this config could take or meet is bad input, not a failed
    step."""
    initial = spec.describe(spec.init_states()[0])
    steps = []
    for i, r in enumerate(raw, 1):
        at = f"{where}: step {i}"
        if "action" not in r:
            raise ConfigError(f'{at}: needs action = "NAME"')
        name = r["action"]
        args = {k: v for k, v in r.items() if k not in STEP_KEYS}
        check_step(spec, name, args, at)
        expect = r.get("expect", {})
        if not isinstance(expect, dict):
            raise ConfigError(f"{at}: 'expect' must be a table of state variables")
        for var, value in expect.items():
            if var not in initial:
                raise ConfigError(f"{at}: {var!r} is not a state variable (allowed: {', '.join(sorted(initial))})")
            wanted = mismatch(spec, var, value, initial[var])
            if wanted:
                raise ConfigError(f"{at}: expect {var} = {shown(value)} is not a value of {var} ({wanted})")
        violates = r.get("violates", [])
        if not isinstance(violates, list):
            raise ConfigError(f"{at}: 'violates' must be a list of invariants")
        enabled = r.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{at}: 'enabled' must be true or false")
        if not enabled and (expect or violates):
            raise ConfigError(f"{at}: a step with enabled = false has no state to expect or violate")
        for k, invariant in enumerate(violates):
            checked_invariant(spec, invariant, f"{at}: violates", properties=False)
            if invariant in violates[:k]:
                raise ConfigError(f"{at}: violates: {invariant!r} is listed twice")
        steps.append(ScenarioStep(name, args, expect, violates, enabled))
    return steps


def mismatch(spec: Spec, var: str, value: Any, initial: Any) -> str | None:
    """What an expected `value` of variable `var` should be if it cannot be
    one: the variable's ITF type, or without one the JSON kind of its
    initial value (null, an optional value, matches any)."""
    declared = spec.itf_types.get(var)
    if declared is not None:
        return misshapen(value, declared, initial) if conforms(value, declared) else str(declared)
    return None if None in (value, initial) or kind(value) == kind(initial) else kind(initial)


def misshapen(value: Any, t: Type, initial: Any) -> str | None:
    """Why a `value` of type `t` is still none a state is described as
    (None: it may be one), `initial` being the initial state's: a set is a
    sorted list of distinct members, and a function of the brokers has a
    value for each of them. Compared as written, [2, 1] would never equal
    the state's [1, 2]: a mismatch that no step could have met."""
    if value is None or initial is None:
        return None
    if t.kind == "Option":
        return misshapen(value, t.args[0], initial)
    if t.kind == "Set" and any(a >= b for a, b in zip(value, value[1:])):
        return f"{t}: a set is written as a sorted list of distinct members"
    if t.kind == "Fun":
        if len(value) != len(initial):
            return f"{t}: a value for each of the {len(initial)} brokers"
        return next(filter(None, (misshapen(v, t.args[0], i) for v, i in zip(value, initial))), None)
    return None


def kind(value: Any) -> str:
    for t, name in (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a number"),
        (str, "a string"),
        (list, "an array"),
        (dict, "a table"),
    ):
        if isinstance(value, t):
            return name
    return "null"


def replay(spec: Spec, steps: list[ScenarioStep]) -> tuple[dict[str, Any], list[StepReport]]:
    """Run the steps from the (single) initial state; returns the initial
    state's variables and one report per step run."""
    inits = spec.init_states()
    if len(inits) != 1:
        raise ConfigError("replay needs a spec with exactly one initial state")
    state = inits[0]
    reports = []
    for i, step in enumerate(steps, 1):
        matches = apply_step(spec, state, step.action, step.args)
        distinct = {spec.canonical(t): (a, t) for a, t in matches}
        if not step.enabled:
            if distinct:
                options = "; ".join(", ".join(f"{k}={v}" for k, v in a.items()) or "-" for a, _ in distinct.values())
                reports.append(StepReport(i, step, enabled=True, error=f"enabled ({options}), expected not"))
                break
            reports.append(StepReport(i, step, enabled=False, state=spec.describe(state)))
            continue
        if not distinct:
            reports.append(StepReport(i, step, enabled=False, error="not enabled"))
            break
        if len(distinct) > 1:
            options = "; ".join(", ".join(f"{k}={v}" for k, v in a.items()) for a, _ in distinct.values())
            reports.append(
                StepReport(i, step, enabled=True, error=f"ambiguous: {len(distinct)} instances match ({options})")
            )
            break
        args, state = next(iter(distinct.values()))
        now = spec.describe(state)
        report = StepReport(
            i,
            ScenarioStep(step.action, args, step.expect, step.violates, step.enabled),
            enabled=True,
            violated=spec.violated(state),
            state=now,
        )
        report.mismatches = [(k, v, now[k]) for k, v in step.expect.items() if now[k] != v]
        reports.append(report)
    return spec.describe(inits[0]), reports


def replay_command(load: Loader, scenario: str, as_json: bool) -> int:
    """`modelcheck replay`: the scenario file's steps replayed through the
    spec `load` makes of its config, reported; exits 0 if it replays as
    written, 1 if not, 2 on bad input."""
    try:
        config, raw_steps = split_scenario(read_file(scenario), scenario)
        spec = load(config)
        steps = parse_steps(spec, raw_steps, scenario)
        initial, reports = replay(spec, steps)
    except ConfigError as e:
        fail(str(e))
    ok = len(reports) == len(steps) and all(r.ok for r in reports)
    if as_json:
        click.echo(json.dumps(replay_json(spec, initial, reports, ok)))
    else:
        print_replay(spec, reports, len(steps), ok)
    return EXIT_HOLDS if ok else EXIT_VIOLATED
