"""Shrinking a counterexample, as Hypothesis shrinks a failing example.

A random walk's counterexample is long and full of steps that have
nothing to do with the violation. The shrinker treats it as a list of
steps (action and arguments) and tries smaller lists: a block of steps
dropped (halves first, then smaller blocks down to single steps), two
neighbouring steps swapped, a step's arguments replaced by those of
another instance of its action enabled there (a crash that keeps nothing
of the log instead of two entries, which may make a step before it
needless). A candidate is replayed through the spec from
the walk's initial state: a step whose action instance is not enabled
where it now falls is skipped, and the replay stops at the first state
that breaks any checked invariant. It is kept when that state breaks the
same invariant and the steps actually taken are smaller than the best so
far: fewer, or as many and earlier in a fixed order (actions in the
spec's order, then arguments), so the search always ends. Passes repeat
until none improves or the replay budget is spent; the result is a
counterexample whose every step is enabled and whose only violating
state is its last (the caller re-validates it with trace.validate).
"""

from __future__ import annotations

import json
from typing import Any, cast

from ...result import Step
from ...spec import Spec

Move = tuple[str, dict[str, Any]]


def shrink(spec: Spec, walk: list[Step], invariant: str, budget: int = 20_000) -> tuple[list[Step], int]:
    """A short counterexample to `invariant` from the counterexample
    `walk`, and the number of replays it took (at most `budget`)."""
    return Shrinker(spec, walk[0].state, invariant, budget).run(Shrinker.moves(walk))


class Shrinker:
    def __init__(self, spec: Spec, init: Any, invariant: str, budget: int):
        self.spec, self.init, self.invariant, self.budget = spec, init, invariant, budget
        self.order = {name: i for i, name in enumerate(spec.actions)}
        self.tried = 0

    def key(self, moves: list[Move]) -> tuple:
        return len(moves), [(self.order[a], json.dumps(args, sort_keys=True)) for a, args in moves]

    def replay(self, moves: list[Move]) -> list[Step] | None:
        """The steps `moves` take (those not enabled skipped) up to the
        first violating state, if it violates the invariant; else None."""
        self.tried += 1
        state = self.init
        steps = [Step(None, {}, state)]
        bad = self.spec.violated(state)
        for action, args in moves:
            if bad:
                break
            state = next((t for a, t in self.spec.instances(action, state) if a == args), None)
            if state is None:
                state = steps[-1].state
                continue
            steps.append(Step(action, args, state))
            bad = self.spec.violated(state)
        return steps if self.invariant in bad else None

    def run(self, moves: list[Move]) -> tuple[list[Step], int]:
        best = self.replay(moves)
        if best is None:
            raise ValueError("the walk given to shrink is not a counterexample")
        best_key = self.key(self.moves(best))

        def attempt(candidate: list[Move]) -> bool:
            nonlocal best, best_key
            if self.tried >= self.budget:
                return False
            steps = self.replay(candidate)
            if steps is None:
                return False
            k = self.key(self.moves(steps))
            if k < best_key:
                best, best_key = steps, k
                return True
            return False

        improved = True
        while improved and self.tried < self.budget:
            improved = False
            size = max(1, len(best) // 2)
            while size >= 1:
                i = 0
                while i < len(best) - 1:
                    current = self.moves(best)
                    if attempt(current[:i] + current[i + size :]):
                        improved = True
                    else:
                        i += max(1, size // 2)
                size //= 2
            i = 0
            while i < len(best) - 2:
                current = self.moves(best)
                if attempt(current[:i] + [current[i + 1], current[i]] + current[i + 2 :]):
                    improved = True
                i += 1
            i = 0
            while i < len(best) - 1:
                current, (action, args) = self.moves(best), self.moves(best)[i]
                for other, _t in self.spec.instances(action, best[i].state):
                    if other != args and attempt(current[:i] + [(action, other)] + current[i + 1 :]):
                        improved = True
                        break
                i += 1
        return best, self.tried

    @staticmethod
    def moves(steps: list[Step]) -> list[Move]:
        return [(cast(str, s.action), s.args) for s in steps[1:]]  # only the initial step has none
