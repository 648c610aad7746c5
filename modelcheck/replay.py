"""Scenarios: a config and a list of steps, replayed through a spec.

A step names an action, some of its arguments (an argument may be left out
when only one enabled instance matches), and optionally `expect` (state
variables after the step) and `violates` (the invariants it is expected to
break; by default none). Replay stops at the first step that is not enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .config import ConfigError
from .spec import Spec
from .trace import apply_step

STEP_KEYS = ("action", "expect", "violates")


@dataclass
class ScenarioStep:
    action: str
    args: dict[str, Any]
    expect: dict[str, Any]
    violates: list[str]


@dataclass
class StepReport:
    index: int
    step: ScenarioStep
    enabled: bool
    error: str | None = None
    mismatches: list[tuple[str, Any, Any]] = field(default_factory=list)
    violated: list[str] = field(default_factory=list)
    state: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return (self.enabled and self.error is None and not self.mismatches
                and sorted(self.violated) == sorted(self.step.violates))


def split_scenario(data: dict[str, Any], where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The `[config]` table and the `[[steps]]` array of a scenario file."""
    unknown = sorted(set(data) - {"config", "steps", "description"})
    if unknown:
        raise ConfigError(f"{where}: unknown top-level key {unknown[0]!r} (allowed: config, steps, description)")
    config, steps = data.get("config", {}), data.get("steps")
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: 'config' must be a table")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise ConfigError(f"{where}: 'steps' must be a non-empty array of tables ([[steps]])")
    return config, steps


def parse_steps(spec: Spec, raw: list[dict[str, Any]], where: str) -> list[ScenarioStep]:
    """Check every step against the spec before anything runs."""
    variables = set(spec.describe(spec.init_states()[0]))
    steps = []
    for i, r in enumerate(raw, 1):
        name = r.get("action")
        if name not in spec.actions:
            raise ConfigError(f"{where}: step {i}: action {name!r} does not exist "
                              f"(allowed: {', '.join(spec.actions)})")
        expect = r.get("expect", {})
        if not isinstance(expect, dict):
            raise ConfigError(f"{where}: step {i}: 'expect' must be a table of state variables")
        bad = sorted(set(expect) - variables)
        if bad:
            raise ConfigError(f"{where}: step {i}: {bad[0]!r} is not a state variable "
                              f"(allowed: {', '.join(sorted(variables))})")
        violates = r.get("violates", [])
        if not isinstance(violates, list) or any(v not in spec.invariants for v in violates):
            raise ConfigError(f"{where}: step {i}: 'violates' must list invariants of the spec "
                              f"(allowed: {', '.join(spec.invariants)})")
        args = {k: v for k, v in r.items() if k not in STEP_KEYS}
        steps.append(ScenarioStep(name, args, expect, violates))
    return steps


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
        if not distinct:
            reports.append(StepReport(i, step, enabled=False, error="not enabled"))
            break
        if len(distinct) > 1:
            options = "; ".join(", ".join(f"{k}={v}" for k, v in a.items()) for a, _ in distinct.values())
            reports.append(StepReport(i, step, enabled=True,
                                      error=f"ambiguous: {len(distinct)} instances match ({options})"))
            break
        args, state = next(iter(distinct.values()))
        now = spec.describe(state)
        report = StepReport(i, ScenarioStep(step.action, args, step.expect, step.violates), enabled=True,
                            violated=spec.violated(state), state=now)
        report.mismatches = [(k, v, now[k]) for k, v in step.expect.items() if now[k] != v]
        reports.append(report)
    return spec.describe(inits[0]), reports
