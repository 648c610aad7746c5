"""Shortest paths in a behaviour graph (breadth-first, through allowed
states), the pieces a lasso is made of."""

from __future__ import annotations

import numpy as np

from ...trace import TraceError
from .graph import Graph
from .jit import jit


@jit
def _bfs(offsets, target, allowed, sources, goal):
    """A shortest path through `allowed` states from a source to a goal
    state: its transitions, last first (empty if a source is a goal or
    none is reached; `reached` says which)."""
    n = len(allowed)
    pred = np.full(n, -2, np.int64)  # -1: a source
    queue = np.empty(n, np.int64)
    tail = 0
    for s in range(n):
        if sources[s] and allowed[s]:
            pred[s] = -1
            queue[tail] = s
            tail += 1
    head = 0
    end = -1
    while head < tail and end < 0:
        s = queue[head]
        head += 1
        if goal[s]:
            end = s
            break
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if allowed[t] and pred[t] == -2:
                pred[t] = e
                queue[tail] = t
                tail += 1
    path = np.empty(n, np.int64)
    k = 0
    s = end
    while s >= 0 and pred[s] >= 0:
        path[k] = pred[s]
        k += 1
        lo, hi = 0, len(offsets) - 1  # the source of transition pred[s]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if offsets[mid] <= pred[s]:
                lo = mid
            else:
                hi = mid
        s = lo
    return path[:k], end


@jit
def _tree(offsets, target, allowed, sources):
    """Breadth-first from every source through `allowed` states: each
    state's transition from its predecessor (-1 a source, -2 unreached)
    and its place in the visiting order (-1 unreached)."""
    n = len(allowed)
    pred = np.full(n, -2, np.int64)
    order = np.full(n, -1, np.int64)
    queue = np.empty(n, np.int64)
    tail = 0
    for s in range(n):
        if sources[s] and allowed[s]:
            pred[s] = -1
            order[s] = tail
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if allowed[t] and pred[t] == -2:
                pred[t] = e
                order[t] = tail
                queue[tail] = t
                tail += 1
    return pred, order


class Tree:
    """Shortest paths from a set of sources to every state at once (one
    breadth-first search, where shortest() is one for each goal)."""

    def __init__(self, graph: Graph, allowed: np.ndarray, sources: np.ndarray):
        self.graph = graph
        self.pred, self.order = _tree(graph.offsets, graph.target, allowed, sources)

    def path(self, end: int) -> list[int]:
        """The transitions from the nearest source to `end` (reached)."""
        if self.pred[end] == -2:
            raise TraceError("no path to the fair cycle the search found")
        path, s = [], end
        while self.pred[s] >= 0:
            path.append(int(self.pred[s]))
            s = source_of(self.graph, path[-1])
        return path[::-1]


def shortest(graph: Graph, allowed: np.ndarray, sources: np.ndarray, goal: np.ndarray) -> tuple[list[int], int]:
    """A shortest path (its transitions) through `allowed` states from a
    source to a goal state, and the goal state it reaches."""
    path, end = _bfs(graph.offsets, graph.target, allowed, sources, goal)
    if end < 0:
        raise TraceError("no path to the fair cycle the search found")
    return path[::-1].tolist(), int(end)


def only(graph: Graph, state: int) -> np.ndarray:
    mask = np.zeros(graph.size, np.bool_)
    mask[state] = True
    return mask


def source_of(graph: Graph, edge: int) -> int:
    return int(np.searchsorted(graph.offsets, edge, side="right") - 1)


def within(graph: Graph, members: np.ndarray, src: int, dst: int) -> list[int]:
    return [] if src == dst else shortest(graph, members, only(graph, src), only(graph, dst))[0]
