"""Scenarios as data: a step as a scenario names it, what replaying it
reported, and a scenario written as TOML. Below both the replay run that
reads scenarios and the explorer that writes them, so neither imports the
other."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ScenarioStep:
    action: str
    args: dict[str, Any]
    expect: dict[str, Any]
    violates: list[str]
    # False: the scenario asserts that no instance is enabled here (a request
    # the protocol refuses); the state is kept and the replay goes on
    enabled: bool = True


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
        return (
            self.enabled == self.step.enabled
            and self.error is None
            and not self.mismatches
            and sorted(self.violated) == sorted(self.step.violates)
        )


def to_toml(config: dict[str, Any], steps: list[ScenarioStep], description: str = "") -> str:
    """A scenario file that replay's `parse_steps` and `replay` read back as these
    steps (TOML has no null: config keys left at null are left out, and so
    must expected values be)."""
    lines = [f"description = {toml_value(description)}", ""] if description else []
    lines.append("[config]")
    lines += [f"{key} = {toml_value(v)}" for key, v in config.items() if v is not None]
    for step in steps:
        lines += ["", "[[steps]]", f"action = {toml_value(step.action)}"]
        lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in step.args.items()]
        if step.expect:
            lines.append(f"expect = {toml_value(step.expect)}")
        if step.violates:
            lines.append(f"violates = {toml_value(step.violates)}")
    return "\n".join(lines) + "\n"


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """A JSON value as TOML (JSON's string escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise ValueError(f"{value!r} has no TOML form")
