"""A behaviour as a path: which initial state, then at each step which
successor, both as positions in the spec's own deterministic orders
(`init_states()`, `successors()`). The compiled engines find their
counterexamples as paths, the trace file stores one beside the states it
shows people, and the explorer's URL is one: `walk` is the one function
that turns a path back into states."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, shown
from .spec import Spec

ENCODED = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})*")


@dataclass(frozen=True)
class Step:
    """One step of a trace: the action (None for the initial state), its
    arguments, and the state it led to."""

    action: str | None
    args: dict[str, Any]
    state: Any


class PathError(ValueError):
    """A path the spec cannot walk (an index past what is there)."""


@dataclass(frozen=True)
class Path:
    init: int  # the initial state's position in spec.init_states()
    steps: tuple[int, ...]  # each step's position in spec.successors() of the state before it

    def to_json(self) -> dict[str, Any]:
        return {"init": self.init, "steps": list(self.steps)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Path:
        """The path a trace file holds; ConfigError unless it is one."""
        ok = (
            isinstance(data, dict)
            and set(data) == {"init", "steps"}
            and type(data["init"]) is int
            and data["init"] >= 0
            and isinstance(data["steps"], list)
            and all(type(i) is int and i >= 0 for i in data["steps"])
        )
        if not ok:
            raise ConfigError(
                f"{where}: path is {shown(data)}; allowed: "
                '{"init": N, "steps": [N, ...]} (positions in the spec\'s orders, as check --trace-out writes)'
            )
        return cls(data["init"], tuple(data["steps"]))

    def encode(self) -> str:
        """The path as text for a URL or a command line: init.step.step..."""
        return ".".join(map(str, (self.init, *self.steps)))

    @classmethod
    def decode(cls, text: str) -> Path:
        if not ENCODED.fullmatch(text):
            raise ConfigError(f"path {shown(text)}: expected numbers joined by dots (init.step.step...)")
        init, *steps = map(int, text.split("."))
        return cls(init, tuple(steps))


def walk(spec: Spec, path: Path) -> list[Step]:
    """The states along `path`; PathError at the first position past what
    the spec offers there."""
    inits = spec.init_states()
    if not path.init < len(inits):
        raise PathError(f"step 0: initial state {path.init} of {len(inits)}")
    state = inits[path.init]
    steps = [Step(None, {}, state)]
    for number, i in enumerate(path.steps, 1):
        successors = spec.successors(state)
        if not i < len(successors):
            raise PathError(f"step {number}: successor {i} of the {len(successors)} there are")
        name, args, state = successors[i]
        steps.append(Step(name, args, state))
    return steps


def path_of(spec: Spec, steps: list[Step]) -> Path:
    """The path of a trace the spec produced (each step the first successor
    with its action, arguments and state, the very state: not another of
    its symmetry class); PathError where none is."""
    init = next((i for i, s in enumerate(spec.init_states()) if s == steps[0].state), None)
    if init is None:
        raise PathError("step 0: not an initial state")
    indices = []
    for number, (before, step) in enumerate(zip(steps, steps[1:]), 1):
        found = next(
            (
                i
                for i, (name, args, nxt) in enumerate(spec.successors(before.state))
                if (name, args, nxt) == (step.action, step.args, step.state)
            ),
            None,
        )
        if found is None:
            raise PathError(f"step {number}: {step.action}{step.args} is not a successor of step {number - 1}")
        indices.append(found)
    return Path(init, tuple(indices))
