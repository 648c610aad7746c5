"""The loops over a behaviour graph that fair cycles are found with:
strongly connected components, the fairness groups enabled in each state,
each component's summary. Their arrays come from the graph's arena, so a
graph on disk keeps them on disk too."""

from __future__ import annotations

import numpy as np

from .graph import Graph
from .jit import jit, uint64


def components(graph: Graph, allowed: np.ndarray) -> tuple[np.ndarray, int]:
    """Strongly connected components of the `allowed` states: each allowed
    state's component (-1 elsewhere), and how many there are."""
    a, n = graph.arena, graph.size
    comp = a.full(n, -1, np.int64)
    scratch = (a.full(n, -1, np.int64), a.full(n, 0, np.int64), comp, a.full(n, False, np.bool_))
    count = _components(graph.offsets, graph.target, allowed, *scratch, *(a.empty(n, np.int64) for _ in range(3)))
    return comp, int(count)


def enabled_groups(graph: Graph, group_of: np.ndarray) -> np.ndarray:
    """Each state's fairness groups with an enabled instance that changes
    the state (TLA+'s ENABLED <<A>>_vars: a step to the same state is a
    stutter, and fairness asks nothing of stuttering)."""
    out = graph.arena.full(graph.size, 0, np.uint64)
    _enabled(graph.offsets, graph.target, graph.instance, group_of, out)
    return out


def summaries(
    graph: Graph,
    group_of: np.ndarray,
    enabled: np.ndarray,
    comp: np.ndarray,
    count: int,
    marked: np.ndarray,
    loops: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per component: the groups enabled in some state, in every state,
    taken inside it (by a step to the same state too, if `loops`: in a
    quotient such a step may be to another member of the class), and
    whether it holds a marked state."""
    a = graph.arena
    some, every = a.full(count, 0, np.uint64), a.full(count, ~np.uint64(0), np.uint64)
    taken, has_mark = a.full(count, 0, np.uint64), a.full(count, False, np.bool_)
    _summaries(
        graph.offsets,
        graph.target,
        graph.instance,
        group_of,
        enabled,
        comp,
        marked,
        loops,
        some,
        every,
        taken,
        has_mark,
    )
    return some, every, taken, has_mark


@jit
def _components(offsets, target, allowed, index, low, comp, on_stack, stack, call, edge):
    """Strongly connected components of the `allowed` states (Tarjan's,
    with explicit stacks: `call` the DFS path, `edge` each path state's
    next transition): each allowed state's component in `comp` (-1
    elsewhere), and how many there are."""
    n = len(allowed)
    depth = 0
    top = 0
    counter = 0
    count = 0
    for root in range(n):
        if not allowed[root] or index[root] >= 0:
            continue
        call[0], edge[0] = root, offsets[root]
        index[root] = low[root] = counter
        counter += 1
        stack[top] = root
        top += 1
        on_stack[root] = True
        depth = 1
        while depth:
            s = call[depth - 1]
            e = edge[depth - 1]
            if e < offsets[s + 1]:
                edge[depth - 1] = e + 1
                t = target[e]
                if not allowed[t]:
                    continue
                if index[t] < 0:
                    index[t] = low[t] = counter
                    counter += 1
                    stack[top] = t
                    top += 1
                    on_stack[t] = True
                    call[depth], edge[depth] = t, offsets[t]
                    depth += 1
                elif on_stack[t] and index[t] < low[s]:
                    low[s] = index[t]
                continue
            depth -= 1
            if depth and low[s] < low[call[depth - 1]]:
                low[call[depth - 1]] = low[s]
            if low[s] == index[s]:
                while True:
                    top -= 1
                    t = stack[top]
                    on_stack[t] = False
                    comp[t] = count
                    if t == s:
                        break
                count += 1
    return count


@jit
def _enabled(offsets, target, instance, group_of, out):
    n = len(offsets) - 1
    for s in range(n):
        bits = uint64(0)
        for e in range(offsets[s], offsets[s + 1]):
            if target[e] != s:
                bits |= group_of[instance[e]]
        out[s] = bits


@jit
def _summaries(offsets, target, instance, group_of, enabled, comp, marked, loops, some, every, taken, has_mark):
    for s in range(len(comp)):
        c = comp[s]
        if c < 0:
            continue
        some[c] |= enabled[s]
        every[c] &= enabled[s]
        if marked[s]:
            has_mark[c] = True
        for e in range(offsets[s], offsets[s + 1]):
            if comp[target[e]] == c and (loops or target[e] != s):
                taken[c] |= group_of[instance[e]]
