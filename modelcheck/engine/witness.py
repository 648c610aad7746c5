"""The witness of a validated log (observed.py): one behaviour back
through the search's chain of records, replayed through the spec and
held to the log's records step by step, and its action counts (the
coverage of a consistent log)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeAlias

from ..result import Step
from ..spec import Spec
from ..trace import TraceError, apply_step

# `obs` is an observed.Observed and `search` an observed.Search: named, not
# imported, since observed.py imports this module
Observed: TypeAlias = Any
Search: TypeAlias = Any

Move = tuple[str, tuple[tuple[str, Any], ...]]  # an action and its arguments, hashable
Path = tuple[Move, ...]


def witness_moves(
    search: Search, first: int, prefixes: dict[int, Path], chain: list[tuple[int, tuple[tuple[int, Path], ...]]]
) -> tuple[list[Move], int]:
    """The moves of one behaviour through the chain, back from the first
    state of the last layer, and how many of them lead to the log's first state."""
    j, pieces = 0, []
    for _, links in reversed(chain):
        j, path = links[j]
        pieces.append(path)
    start = prefixes[search.layers[first][j]]
    pieces.append(start)
    return [move for path in reversed(pieces) for move in path], len(start)


def replay(
    obs: Observed, moves: list[Move], prefix: int, search: Search, chain: list[tuple[int, Any]]
) -> tuple[Spec, list[Step]]:
    """The witness through the spec, unnormalised (bounds wide enough, from
    `spec_for`): every move must be enabled; the steps after the first
    `prefix` (which reach the log's first state) must show the log's
    records, in order, each where the search matched it; and the state it
    ends in must be, normalised, one the search kept for the last record.
    A failure is the engine's, never a verdict."""
    spec = obs.spec_for(moves)
    state = spec.init_states()[0]
    steps = [Step(None, {}, state)]
    shown: list[Hashable] = []
    for number, (name, args) in enumerate(moves, 1):
        found = apply_step(spec, state, name, dict(args))
        if len(found) != 1:
            raise TraceError(f"validate: the witness's step {number} ({name} {dict(args)}) does not replay")
        if number > prefix:  # what the log shows of it, read as the search reads it: from the normal form
            normal = obs.normal(state)
            from_normal = apply_step(obs.spec, normal, name, dict(args))
            if len(from_normal) != 1:
                raise TraceError(f"validate: the witness's step {number} ({name}) does not replay from the normal form")
            seen = obs.observation(normal, from_normal[0][1])
            if seen is not None:
                if len(shown) >= len(chain) or seen != obs.expected[len(shown)].key:
                    raise TraceError(
                        f"validate: the witness's step {number} ({name}) shows no record the log has there"
                    )
                shown.append(seen)
        found_args, state = found[0]
        steps.append(Step(name, found_args, state))
    if len(shown) != len(chain):
        raise TraceError(f"validate: the witness shows {len(shown)} of the log's {len(chain)} records")
    if chain and search.number(obs.normal(state)) not in search.layers[chain[-1][0]]:
        raise TraceError("validate: the witness does not end in a state the search kept")
    return spec, steps


def coverage(moves: list[Move]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, _ in moves:
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))
