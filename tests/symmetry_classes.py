"""Brute force for the symmetry tests: every reachable state, and the class
of a state under renaming brokers 1..N-1 (what --symmetry must identify)."""

from __future__ import annotations

from itertools import permutations

from specs.kafka_elr.types import permute


def reachable(spec) -> dict[bytes, object]:
    """Every reachable state of `spec` by its encoding (a plain search that
    shares nothing with the engines but the spec's successors)."""
    seen, todo = {spec.encode(s): s for s in spec.init_states()}, list(spec.init_states())
    while todo:
        for _name, _args, nxt in spec.successors(todo.pop()):
            key = spec.encode(nxt)
            if key not in seen:
                seen[key] = nxt
                todo.append(nxt)
    return seen


def class_of(spec, state) -> bytes:
    """The smallest encoding over all (N-1)! renamings of brokers 1..N-1."""
    return min(spec.encode(permute(state, (0, *p))) for p in permutations(range(1, spec.n)))
