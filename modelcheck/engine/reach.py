"""The first states a breadth-first check of a config reaches, each with
its depth: what the explorer calls "seen by the checker".

It visits states in the reference engine's order (the compiled kernel's
successors are in that order too), but does not stop at a violation, and
stops after `budget` distinct states, so that a large config is indexed as
far as a check would have got by then. `depth(state)` is the length of a
shortest path to the state (0 for an initial state), or None when the
state is not among those first states: then, if the index is complete, the
state is unreachable; if not, the check had not met it yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..fingerprint import fingerprint
from ..spec import Spec
from .storage import batch
from .storage.visited import Visited

COMPILED_BUDGET = 1_000_000  # states indexed by default: a few seconds compiled,
INTERPRETED_BUDGET = 50_000  # and about as long interpreted


def index(spec: Spec, budget: int | None, note: Callable[[str], None] = lambda text: None) -> Reach:
    """The index of `spec`, on its compiled kernel where there is one
    (compiled now if need be), else interpreted; `budget` None: the
    default of either."""
    from .kernel import KernelUnavailable, kernel_for

    try:
        kernel = kernel_for(spec, note)
    except KernelUnavailable as e:
        note(f"no compiled kernel ({e}): the index is built interpreted")
        kernel = None
    if budget is None:
        budget = COMPILED_BUDGET if kernel is not None else INTERPRETED_BUDGET
    return Reach(spec, kernel, budget)


class Reach:
    def __init__(self, spec: Spec, kernel: Any | None, budget: int):
        self.spec, self.kernel, self.budget = spec, kernel, budget
        self.states = 0
        self.complete = False
        started = time.perf_counter()
        if kernel is not None:
            self.levels: list[Visited] = []
            self._compiled()
        else:
            self.depths: dict[int, int] = {}  # fingerprint -> depth
            self.last = 0
            self._interpreted()
        self.elapsed_s = time.perf_counter() - started

    @property
    def deepest(self) -> int:
        """The depth of the last level indexed (whole or in part)."""
        return len(self.levels) - 1 if self.kernel is not None else self.last

    def depth(self, state: Any) -> int | None:
        if self.kernel is None:
            return self.depths.get(fingerprint(self.spec.canonical(state)))
        key = self.kernel.keys(self.kernel.pack(state)[None, :])
        return next((d for d, level in enumerate(self.levels) if level.contains(key)[0]), None)

    def _compiled(self) -> None:
        k = self.kernel
        assert k is not None
        rows = np.array([k.pack(s) for s in self.spec.init_states()], np.uint64).reshape(-1, k.words)
        seen = Visited(k.key_words)
        keys = k.keys(rows)
        while len(rows):
            new = np.flatnonzero(seen.insert_new(keys))[: self.budget - self.states]
            if not len(new):
                break
            level = Visited(k.key_words)
            level.insert_new(keys[new])
            self.levels.append(level)
            self.states += len(new)
            if self.states >= self.budget:
                return
            successors = batch.expand(k, rows[new], 0, len(new))
            rows, keys = successors.words, successors.keys
        self.complete = True

    def _interpreted(self) -> None:
        spec = self.spec
        frontier: list = []
        depth = 0
        for state in spec.init_states():
            if not self._new(state, 0, frontier):
                return
        while frontier:
            depth += 1
            level: list = []
            for state in frontier:
                for _name, _args, nxt in spec.successors(state):
                    if not self._new(nxt, depth, level):
                        return
            frontier = level
        self.complete = True

    def _new(self, state: Any, depth: int, level: list) -> bool:
        """Index `state` at `depth` if it is new; False once the budget is spent."""
        fp = fingerprint(self.spec.canonical(state))
        if fp not in self.depths:
            if self.states >= self.budget:
                return False
            self.depths[fp] = self.last = depth
            self.states += 1
            level.append(state)
        return True
