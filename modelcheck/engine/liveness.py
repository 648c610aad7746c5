"""Temporal properties: the behaviour graph, fair cycles, lassos.

An engine that checks temporal properties keeps, as it explores, every
state's key and property labels (states are numbered in the order they
are found, the initial ones first) and every transition as (source number,
target key, action instance). Once the search is complete and every
invariant holds, the targets are numbered (one sort of the keys) and each
property is looked for a fair behaviour that violates it, as TLC's
liveness checker does:

    P ~> Q    from a state where P holds and Q does not, a fair cycle
              reached through states where Q does not hold, and in them;
    []<>P     a fair cycle through states where P does not hold;
    <>[]P     a fair cycle through some state where P does not hold.

A cycle is fair in a strongly connected component of those states when
every weakly fair action is taken in it or disabled somewhere in it, and
every strongly fair one is taken in it or disabled throughout it; a
strongly fair action enabled in the component but never taken removes the
states where it is enabled, and what is left is searched again
(Emerson-Lei). TLA+ lets a behaviour stutter in a state for ever, which is
fair where no fair action is enabled: every state is a cycle of its own.

A violation is a lasso: a shortest path from an initial state, then the
cycle, going through one transition of each fair action taken in the
component and one state where each weakly fair action not taken is
disabled. The engine replays it through the interpreted spec, checks it
reaches the states found, and trace.validate_lasso checks that it violates
the property under the fairness before it is shown.

Cost: while the search runs, 14 bytes a transition (22 with 128-bit keys)
and 16 a state, spilled to disk with the frontier under --max-memory; the
numbered graph, 6 bytes a transition and about 40 a state; each property,
time linear in states and transitions, once more for each refinement a
strong fairness constraint forces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import ConfigError
from ..lifetime import Stopped
from ..memory import anon_rss, show_size
from ..result import Step
from ..spec import ALWAYS_EVENTUALLY, LEADS_TO, Spec
from ..trace import TraceError, validate_lasso

jit: Callable[[Callable], Callable]
try:
    from numba import njit, uint64

    jit = njit(cache=True, nogil=True)
except ImportError:  # without numba the same loops run as Python: slowly, with the same answers
    uint64 = np.uint64  # type: ignore[assignment]

    def jit(fn: Callable) -> Callable:
        return fn


MAX_GROUPS = 64  # fairness constraints of one property: bits of a word


# ---- what an engine keeps while it explores ------------------------------------------


class Recorder:
    """The states and transitions an engine found, in the order it found
    them, for the properties it was asked to check. `keep` decides where
    each array lives (memory, or a file under memory pressure)."""

    def __init__(self, key_words: int, max_memory: int | None = None):
        self.key_words = key_words
        self.max_memory = max_memory
        self.keys: list[np.ndarray] = []  # uint64 [m, K], state numbers in order
        self.labels: list[np.ndarray] = []  # uint64 [m]
        self.sources: list[np.ndarray] = []  # uint32 [e]
        self.targets: list[np.ndarray] = []  # uint64 [e, K]
        self.instances: list[np.ndarray] = []  # uint16 [e]
        self.states = 0
        self.transitions = 0

    def add_states(self, keys: np.ndarray, labels: np.ndarray) -> None:
        self.keys.append(keys)
        self.labels.append(labels)
        self.states += len(keys)

    def add_transitions(self, sources: np.ndarray, targets: np.ndarray, instances: np.ndarray) -> None:
        if self.states > np.iinfo(np.uint32).max:
            raise ConfigError(f"temporal properties number states in 32 bits; this check has {self.states:,}")
        self.sources.append(sources.astype(np.uint32))
        self.targets.append(targets)
        self.instances.append(instances)
        self.transitions += len(sources)
        if self.over_limit():
            raise self.too_big()

    def arrays(self) -> dict[str, list[np.ndarray]]:
        return {
            "keys": self.keys,
            "labels": self.labels,
            "sources": self.sources,
            "targets": self.targets,
            "instances": self.instances,
        }

    def load(self, arrays: dict[str, list[np.ndarray]]) -> None:
        """What arrays() gave, back (a checkpoint resumed)."""
        for name, parts in arrays.items():
            setattr(self, name, [p for p in parts if len(p)])
        self.states = sum(len(k) for k in self.keys)
        self.transitions = sum(len(s) for s in self.sources)

    def moved(self, keep: Callable[[np.ndarray], np.ndarray]) -> None:
        """Every array passed through `keep` (to disk, under memory pressure)."""
        for name, parts in self.arrays().items():
            setattr(self, name, [keep(p) for p in parts])

    def bytes_needed(self) -> int:
        """Memory the numbered graph and the search of it take at their
        peak: a transition's key, number, source and instance while the
        targets are numbered; two copies of the state keys for the sort;
        labels, offsets and the searches' per-state arrays."""
        return self.transitions * (8 * self.key_words + 14) + self.states * (16 * self.key_words + 72)

    def over_limit(self) -> bool:
        """Whether searching the graph recorded so far would pass
        --max-memory, on top of what the process holds now (its recorded
        arrays included: the search copies them)."""
        return self.max_memory is not None and anon_rss() + self.bytes_needed() > self.max_memory

    def too_big(self) -> Stopped:
        """A stop at the memory limit, as the engines' own (its counts are
        the graph's: the states recorded, and a transition a state generated)."""
        return Stopped(
            f"temporal properties: the behaviour graph of {self.states:,} states and {self.transitions:,} "
            f"transitions so far needs about {show_size(self.bytes_needed())} to search for fair cycles, more "
            f"than is left of --max-memory {show_size(self.max_memory or 0)}: stopped before exploring further "
            "(check the properties on smaller bounds, or raise --max-memory)",
            distinct=self.states,
            generated=self.transitions,
        )

    def graph(self, initial: int) -> Graph:
        """The numbered behaviour graph (one sort of the state keys)."""
        if self.over_limit():
            raise self.too_big()
        keys = np.concatenate(self.keys) if self.keys else np.empty((0, self.key_words), np.uint64)
        order = np.lexsort(keys.T[::-1]) if len(keys) else np.empty(0, np.int64)
        targets = np.concatenate(self.targets) if self.targets else np.empty((0, self.key_words), np.uint64)
        numbers = _number(np.ascontiguousarray(keys[order]), order, targets)
        if len(numbers) and numbers.min() < 0:
            raise TraceError("a transition leads to a state the search never numbered")
        sources = np.concatenate(self.sources) if self.sources else np.empty(0, np.uint32)
        offsets = np.zeros(self.states + 1, np.int64)
        np.cumsum(np.bincount(sources, minlength=self.states), out=offsets[1:])
        return Graph(
            initial,
            np.concatenate(self.labels) if self.labels else np.empty(0, np.uint64),
            offsets,
            numbers,
            np.concatenate(self.instances) if self.instances else np.empty(0, np.uint16),
            keys,
        )


@jit
def _less(a, i, b, j):
    for w in range(a.shape[1]):
        if a[i, w] != b[j, w]:
            return a[i, w] < b[j, w]
    return False


@jit
def _number(sorted_keys, order, targets):
    """Each target key's state number (-1 where there is none)."""
    out = np.empty(len(targets), np.int64)
    for e in range(len(targets)):
        lo, hi = 0, len(sorted_keys)
        while lo < hi:
            mid = (lo + hi) // 2
            if _less(sorted_keys, mid, targets, e):
                lo = mid + 1
            else:
                hi = mid
        out[e] = order[lo] if lo < len(sorted_keys) and not _less(targets, e, sorted_keys, lo) else -1
    return out


@dataclass
class Graph:
    """The behaviour graph: states 0..n-1 (0..initial-1 the initial ones),
    each one's labels and key; transitions grouped by source (those of s
    are offsets[s]..offsets[s+1]), each with its target and instance."""

    initial: int
    labels: np.ndarray  # uint64 [n]
    offsets: np.ndarray  # int64 [n + 1]
    target: np.ndarray  # int64 [e]
    instance: np.ndarray  # uint16 [e]
    keys: np.ndarray  # uint64 [n, K]

    @property
    def size(self) -> int:
        return len(self.labels)


# ---- fair cycles ---------------------------------------------------------------------


@jit
def _reach(offsets, target, allowed, sources):
    """States reachable from `sources` through `allowed` states."""
    n = len(allowed)
    seen = np.zeros(n, np.bool_)
    queue = np.empty(n, np.int64)
    tail = 0
    for s in range(n):
        if sources[s] and allowed[s]:
            seen[s] = True
            queue[tail] = s
            tail += 1
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        for e in range(offsets[s], offsets[s + 1]):
            t = target[e]
            if allowed[t] and not seen[t]:
                seen[t] = True
                queue[tail] = t
                tail += 1
    return seen


@jit
def _components(offsets, target, allowed):
    """Strongly connected components of the `allowed` states (Tarjan's,
    with explicit stacks): each allowed state's component, -1 elsewhere,
    and how many there are."""
    n = len(allowed)
    index = np.full(n, -1, np.int64)
    low = np.zeros(n, np.int64)
    comp = np.full(n, -1, np.int64)
    on_stack = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    call = np.empty(n, np.int64)  # the DFS path
    edge = np.empty(n, np.int64)  # each path state's next transition
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
    return comp, count


@jit
def _enabled(offsets, target, instance, group_of):
    """Each state's fairness groups with an enabled instance that changes
    the state (TLA+'s ENABLED <<A>>_vars: a step to the same state is a
    stutter, and fairness asks nothing of stuttering)."""
    n = len(offsets) - 1
    out = np.zeros(n, np.uint64)
    for s in range(n):
        bits = uint64(0)
        for e in range(offsets[s], offsets[s + 1]):
            if target[e] != s:
                bits |= group_of[instance[e]]
        out[s] = bits
    return out


@jit
def _summaries(offsets, target, instance, group_of, enabled, comp, count, marked):
    """Per component: the groups enabled in some state, in every state,
    taken inside it, and whether it holds a marked state."""
    some = np.zeros(count, np.uint64)
    every = np.full(count, ~uint64(0), np.uint64)
    taken = np.zeros(count, np.uint64)
    has_mark = np.zeros(count, np.bool_)
    for s in range(len(comp)):
        c = comp[s]
        if c < 0:
            continue
        some[c] |= enabled[s]
        every[c] &= enabled[s]
        if marked[s]:
            has_mark[c] = True
        for e in range(offsets[s], offsets[s + 1]):
            if comp[target[e]] == c and target[e] != s:
                taken[c] |= group_of[instance[e]]
    return some, every, taken, has_mark


@dataclass
class Fair:
    """A property's fairness as bits: groups of action instances (one a
    constraint), which are weak and which strong."""

    group_of: np.ndarray  # uint64 [instances]: the groups each instance is in
    weak: int
    strong: int
    names: list[str]  # one a group, for messages


def fairness(spec: Spec, name: str) -> Fair:
    every = [spec.instance(i) for i in range(spec.instance_count)]
    groups: list[tuple[bool, str, list[int]]] = []
    for f in spec.fairness[name]:
        mine = [i for i, (action, _values) in enumerate(every) if action == f.action]
        if f.each is None:
            groups.append((f.strong, str(f), mine))
            continue
        at = list(spec.params[f.action]).index(f.each)
        p = spec.params[f.action][f.each]
        for v in p.domain(spec):
            shown = v if p.show is None else p.show(v)
            groups.append(
                (
                    f.strong,
                    f"{'SF' if f.strong else 'WF'}({f.action}, {f.each}={shown})",
                    [i for i in mine if every[i][1][at] == v],
                )
            )
    if len(groups) > MAX_GROUPS:
        raise ConfigError(
            f"property {name!r} has {len(groups)} fairness constraints in this config, more than "
            f"the {MAX_GROUPS} one search can weigh"
        )
    group_of = np.zeros(max(1, spec.instance_count), np.uint64)
    weak = strong = 0
    for g, (is_strong, _label, members) in enumerate(groups):
        group_of[members] |= np.uint64(1 << g)
        if is_strong:
            strong |= 1 << g
        else:
            weak |= 1 << g
    return Fair(group_of, weak, strong, [label for _s, label, _m in groups])


@dataclass
class Lasso:
    """A violation: transitions (edge numbers) from an initial state to the
    cycle, and the cycle's transitions (none: stuttering at its start)."""

    initial: int
    prefix: list[int]
    cycle: list[int]


def _values(graph: Graph, spec: Spec, name: str) -> tuple[np.ndarray, np.ndarray]:
    """P and Q of property `name` in each state (Q unused but for leads-to)."""
    number = list(type(spec).properties).index(name)
    p = (graph.labels >> np.uint64(2 * number)) & np.uint64(1) == 1
    q = (graph.labels >> np.uint64(2 * number + 1)) & np.uint64(1) == 1
    return p, q


def triggers(graph: Graph, spec: Spec, name: str) -> int:
    """The reachable states where a violation of `name` could begin: P and
    not Q for P ~> Q, not P for []<>P and <>[]P. None means the property
    held vacuously: the check exercised nothing of it."""
    p, q = _values(graph, spec, name)
    return int(np.count_nonzero(p & ~q if spec.property_form[name] == LEADS_TO else ~p))


def violation(graph: Graph, spec: Spec, name: str, fair: Fair) -> Lasso | None:
    """A lasso violating property `name` under its fairness, or None."""
    p, q = _values(graph, spec, name)
    form = spec.property_form[name]
    everything = np.ones(graph.size, np.bool_)
    if form == LEADS_TO:
        triggers = p & ~q
        allowed = _reach(graph.offsets, graph.target, ~q, triggers)
        marked = everything
    elif form == ALWAYS_EVENTUALLY:
        triggers, allowed, marked = ~p, ~p, everything
    else:
        triggers, allowed, marked = everything, everything, ~p
    enabled = _enabled(graph.offsets, graph.target, graph.instance, fair.group_of)
    fair_comp = _fair_components(graph, allowed, enabled, fair, marked)
    in_fair = fair_comp >= 0
    if not in_fair.any():
        return None
    initial = np.zeros(graph.size, np.bool_)
    initial[: graph.initial] = True
    everything = np.ones(graph.size, np.bool_)
    if form == LEADS_TO:  # the fair component nearest to a trigger, through states where Q does not hold
        mid, start = _shortest(graph, allowed, triggers, in_fair)
        prefix, _trigger = _shortest(
            graph, everything, initial, _only(graph, _source_of(graph, mid[0]) if mid else start)
        )
    else:  # the nearest state of a fair component that is marked (not P, for <>[]P)
        mid = []
        prefix, start = _shortest(graph, everything, initial, in_fair & marked)
    first = _source_of(graph, prefix[0]) if prefix else start
    cycle = _cycle(graph, fair_comp == fair_comp[start], start, enabled, fair, marked)
    return Lasso(first, prefix + mid, cycle)


def _fair_components(
    graph: Graph, allowed: np.ndarray, enabled: np.ndarray, fair: Fair, marked: np.ndarray
) -> np.ndarray:
    """Each state's fair component (numbered across refinements), -1 for
    states in none."""
    out = np.full(graph.size, -1, np.int64)
    found = 0
    weak, strong = np.uint64(fair.weak), np.uint64(fair.strong)
    while allowed.any():
        comp, count = _components(graph.offsets, graph.target, allowed)
        some, every, taken, has_mark = _summaries(
            graph.offsets, graph.target, graph.instance, fair.group_of, enabled, comp, count, marked
        )
        bad_weak = weak & ~taken & every
        bad_strong = strong & ~taken & some
        good = (bad_weak == 0) & (bad_strong == 0) & has_mark
        hit = (comp >= 0) & good[np.maximum(comp, 0)]
        out[hit] = comp[hit] + found
        found += count
        refine = (bad_weak == 0) & (bad_strong != 0)
        inside = (comp >= 0) & refine[np.maximum(comp, 0)]
        allowed = inside & ((enabled & bad_strong[np.maximum(comp, 0)]) == 0)
    return out


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


def _shortest(graph: Graph, allowed: np.ndarray, sources: np.ndarray, goal: np.ndarray) -> tuple[list[int], int]:
    """A shortest path (its transitions) through `allowed` states from a
    source to a goal state, and the goal state it reaches."""
    path, end = _bfs(graph.offsets, graph.target, allowed, sources, goal)
    if end < 0:
        raise TraceError("no path to the fair cycle the search found")
    return path[::-1].tolist(), int(end)


def _only(graph: Graph, state: int) -> np.ndarray:
    mask = np.zeros(graph.size, np.bool_)
    mask[state] = True
    return mask


def _source_of(graph: Graph, edge: int) -> int:
    return int(np.searchsorted(graph.offsets, edge, side="right") - 1)


def _cycle(
    graph: Graph, members: np.ndarray, start: int, enabled: np.ndarray, fair: Fair, marked: np.ndarray
) -> list[int]:
    """A fair cycle from `start` through its component (`members`): one
    transition of each group taken in it, a state where each weak group not
    taken is disabled, a marked state; none at all if stuttering at
    `start` is fair."""
    states = np.flatnonzero(members)
    edges = [
        e
        for s in states.tolist()
        for e in range(graph.offsets[s], graph.offsets[s + 1])
        if members[graph.target[e]] and graph.target[e] != s
    ]
    taken = 0
    for e in edges:
        taken |= int(fair.group_of[graph.instance[e]])
    waypoints: list[tuple[str, int]] = []
    for g in range(len(fair.names)):
        bit = 1 << g
        if taken & bit:
            waypoints.append(("edge", next(e for e in edges if int(fair.group_of[graph.instance[e]]) & bit)))
        elif fair.weak & bit:
            waypoints.append(
                (
                    "state",
                    start
                    if not int(enabled[start]) & bit
                    else int(next(s for s in states if not int(enabled[s]) & bit)),
                )
            )
    if not marked[start]:
        waypoints.append(("state", int(next(s for s in states if marked[s]))))
    if all(kind == "state" and at == start for kind, at in waypoints):
        return []  # stuttering at `start` is fair
    walk, here = [], start
    for kind, at in waypoints + [("state", start)]:
        to = _source_of(graph, at) if kind == "edge" else at
        walk += _within(graph, members, here, to)
        here = to
        if kind == "edge":
            walk.append(at)
            here = int(graph.target[at])
    if here != start:
        walk += _within(graph, members, here, start)
    return walk


def _within(graph: Graph, members: np.ndarray, src: int, dst: int) -> list[int]:
    return [] if src == dst else _shortest(graph, members, _only(graph, src), _only(graph, dst))[0]


# ---- a lasso as a trace ----------------------------------------------------------------


def lasso_steps(
    spec: Spec, graph: Graph, lasso: Lasso, initial_state: Any, key_of: Callable[[Any], np.ndarray]
) -> tuple[list[Step], int]:
    """The lasso replayed through the interpreted spec, each step checked
    to reach the state the search numbered: (steps, the loop's start)."""
    steps = [Step(None, {}, initial_state)]
    state = initial_state
    if not np.array_equal(key_of(state), graph.keys[lasso.initial]):
        raise TraceError("the lasso's initial state is not the one the search found")
    for e in lasso.prefix + lasso.cycle:
        name, values = spec.instance(int(graph.instance[e]))
        state = spec.actions[name](spec, state, *values)
        if state is None or not np.array_equal(key_of(state), graph.keys[graph.target[e]]):
            raise TraceError(f"step {len(steps)} of the lasso ({name}) does not reach the state the search found")
        steps.append(Step(name, spec.arguments(name, values), state))
    return steps, len(lasso.prefix)


def check_properties(
    spec: Spec, recorder: Recorder, initial_states: list, key_of: Callable[[Any], np.ndarray]
) -> tuple[tuple[str, list[Step], int] | None, dict[str, int]]:
    """The first checked property a fair behaviour violates, with its lasso
    re-validated by replay: (name, steps, loop start), None if all hold;
    and each checked property's `triggers` count."""
    graph = recorder.graph(len(initial_states))
    counts = {name: triggers(graph, spec, name) for name in spec.checked_properties()}
    for name in spec.checked_properties():
        lasso = violation(graph, spec, name, fairness(spec, name))
        if lasso is None:
            continue
        steps, loop = lasso_steps(spec, graph, lasso, initial_states[lasso.initial], key_of)
        validate_lasso(spec, steps, loop, name)
        return (name, steps, loop), counts
    return None, counts
