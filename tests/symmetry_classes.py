"""Brute force for the symmetry tests: every reachable state, and the class
of a state under renaming the brokers (what --symmetry must identify)."""

from __future__ import annotations

from itertools import permutations

from specs.kafka_elr.types import permute


def reachable(spec, renamed: bool = False) -> dict[bytes, object]:
    """Every reachable state of `spec` by its encoding (a plain search that
    shares nothing with the engines but the spec's successors); with
    `renamed`, from every renaming of the initial states too."""
    starts = list(spec.init_states())
    if renamed:
        starts = [permute(s, p) for s in starts for p in permutations(range(spec.n))]
    seen = {spec.encode(s): s for s in starts}
    todo = list(seen.values())
    while todo:
        for _name, _args, nxt in spec.successors(todo.pop()):
            key = spec.encode(nxt)
            if key not in seen:
                seen[key] = nxt
                todo.append(nxt)
    return seen


def class_of(spec, state) -> bytes:
    """The smallest encoding over all N! renamings of the brokers."""
    return min(spec.encode(permute(state, p)) for p in permutations(range(spec.n)))
