"""Shortest paths in a behaviour graph (breadth-first, through allowed
states), the pieces a lasso is made of."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...path import Step
from ...spec import Spec
from ...trace import TraceError
from .graph import Graph
from .jit import jit


@jit
def _search(offsets, target, allowed, sources, goal, pred, order, queue):
    """Breadth-first from every source through `allowed` states, until a
    goal state leaves the queue: each state's transition from its
    predecessor in `pred` (-1 a source; left -2 unreached), its place in
    the visiting order in `order` (left -1 unreached); the goal state met
    (-1 none)."""
    tail = 0
    for s in range(len(allowed)):
        if sources[s] and allowed[s]:
            pred[s] = -1
            order[s] = tail
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        if goal[s]:
            return s
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if allowed[t] and pred[t] == -2:
                pred[t] = e
                order[t] = tail
                queue[tail] = t
                tail += 1
    return -1


class Tree:
    """Shortest paths from a set of sources through `allowed` states: to
    every state (one breadth-first search for all), or, given `goal`, to
    the nearest goal state (`end`; the search stops there)."""

    def __init__(self, graph: Graph, allowed: np.ndarray, sources: np.ndarray, goal: np.ndarray | None = None):
        a, n = graph.arena, graph.size
        self.graph = graph
        self.pred, self.order = a.full(n, -2, np.int64), a.full(n, -1, np.int64)
        none = np.zeros(n, np.bool_) if goal is None else goal
        queue = a.empty(n, np.int64)
        self.end = int(_search(graph.offsets, graph.target, allowed, sources, none, self.pred, self.order, queue))

    def path(self, end: int) -> list[int]:
        """The transitions from the nearest source to `end` (reached)."""
        if self.pred[end] == -2:
            raise TraceError("no path to the fair cycle the search found")
        path, s = [], end
        while self.pred[s] >= 0:
            path.append(int(self.pred[s]))
            s = source_of(self.graph, path[-1])
        return path[::-1]


def reached(graph: Graph, allowed: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """The states reachable from `sources` through `allowed` states."""
    return Tree(graph, allowed, sources).pred != -2


def shortest(graph: Graph, allowed: np.ndarray, sources: np.ndarray, goal: np.ndarray) -> tuple[list[int], int]:
    """A shortest path (its transitions) through `allowed` states from a
    source to a goal state, and the goal state it reaches."""
    tree = Tree(graph, allowed, sources, goal)
    if tree.end < 0:
        raise TraceError("no path to the fair cycle the search found")
    return tree.path(tree.end), int(tree.end)


def only(graph: Graph, state: int) -> np.ndarray:
    mask = np.zeros(graph.size, np.bool_)
    mask[state] = True
    return mask


def source_of(graph: Graph, edge: int) -> int:
    return int(np.searchsorted(graph.offsets, edge, side="right") - 1)


def within(graph: Graph, members: np.ndarray, src: int, dst: int) -> list[int]:
    return [] if src == dst else shortest(graph, members, only(graph, src), only(graph, dst))[0]


def replayed(spec: Spec, graph: Graph, state: Any, edges: list[int], reaches: Callable[[Any, int], bool]) -> list[Step]:
    """Transitions `edges` from `state` as steps, replayed through the
    interpreted spec, each held to reach (`reaches(state, target)`) the
    state the search numbered."""
    out = []
    for e in edges:
        name, values = spec.instance(int(graph.instance[e]))
        state = spec.actions[name](spec, state, *values)
        if state is None or not reaches(state, int(graph.target[e])):
            raise TraceError(f"a step of the lasso ({name}) does not reach the state the search found")
        out.append(Step(name, spec.arguments(name, values), state))
    return out
