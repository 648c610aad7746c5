"""A suite: the few configurations a spec's default check runs together
(`modelcheck check` without a config), read from its TOML file, and which
of them exercised each action and goal."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import ConfigError
from .result import CheckResult


@dataclass(frozen=True)
class Member:
    """One configuration of a suite: its name, what it exercises, its keys."""

    name: str
    about: str
    config: dict[str, Any]


def read_suite(path: Path) -> list[Member]:
    """The suite's [[check]] tables (name, about, config), each named once."""
    try:
        tables = tomllib.loads(path.read_text()).get("check")
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from None
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{path}: no [[check]] tables")
    members = []
    for i, t in enumerate(tables):
        if set(t) != {"name", "about", "config"} or not isinstance(t["config"], dict):
            raise ConfigError(f"{path}: [[check]] {i + 1} must hold name, about and a [check.config] table")
        members.append(Member(str(t["name"]), str(t["about"]), dict(t["config"])))
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: two [[check]] tables are named {next(n for n in names if names.count(n) > 1)!r}")
    return members


@dataclass
class SuiteCoverage:
    """Which members fired each action (transitions) and reached each goal."""

    actions: dict[str, dict[str, int]]
    goals: dict[str, list[str]]

    @classmethod
    def of(cls, runs: list[tuple[Member, CheckResult]]) -> SuiteCoverage:
        actions: dict[str, dict[str, int]] = {}
        goals: dict[str, list[str]] = {}
        for member, result in runs:
            for label, count in result.coverage.items():
                actions.setdefault(label, {})[member.name] = count
            for goal, reached in result.goals.items():
                goals.setdefault(goal, [])
                if reached:
                    goals[goal].append(member.name)
        return cls(dict(sorted(actions.items())), dict(sorted(goals.items())))

    def never_fired(self) -> list[str]:
        return [a for a, counts in self.actions.items() if not any(counts.values())]

    def never_reached(self) -> list[str]:
        return [g for g, by in self.goals.items() if not by]

    def to_json(self) -> dict[str, Any]:
        return {
            "actions": self.actions,
            "goals": self.goals,
            "never_fired": self.never_fired(),
            "never_reached": self.never_reached(),
        }
