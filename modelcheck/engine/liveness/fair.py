"""Fair cycles in a behaviour graph: for one property, a lasso whose
cycle is fair under the property's fairness and violates it (see the
package docstring for the rules), or none."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import ConfigError
from ...declare import ALWAYS_EVENTUALLY, LEADS_TO
from ...spec import Spec
from .graph import Graph
from .jit import jit
from .paths import only, reached, shortest, source_of, within
from .scc import components, enabled_groups, summaries

MAX_GROUPS = 64  # fairness constraints of one property: bits of a word


# ---- fair cycles ---------------------------------------------------------------------


@dataclass
class Fair:
    """A property's fairness as bits: groups of action instances (one a
    constraint), which are weak and which strong."""

    group_of: np.ndarray  # uint64 [instances]: the groups each instance is in
    weak: int
    strong: int
    names: list[str]  # one a group, for messages
    family: list[int]  # one a group: the index of the spec's constraint it comes from


def fairness(spec: Spec, name: str) -> Fair:
    every = [spec.instance(i) for i in range(spec.instance_count)]
    groups: list[tuple[bool, str, list[int]]] = []
    family: list[int] = []
    for k, f in enumerate(spec.fairness[name]):
        mine = [i for i, (action, _values) in enumerate(every) if action == f.action]
        if f.each is None:
            groups.append((f.strong, str(f), mine))
            family.append(k)
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
            family.append(k)
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
    return Fair(group_of, weak, strong, [label for _s, label, _m in groups], family)


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


def regions(graph: Graph, spec: Spec, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a violation of `name` begins (triggers), the states its cycle
    and the path to it keep to (allowed), and those its cycle must visit
    (marked)."""
    p, q = _values(graph, spec, name)
    form = spec.property_form[name]
    everything = np.ones(graph.size, np.bool_)
    if form == LEADS_TO:
        triggers = p & ~q
        return triggers, reached(graph, ~q, triggers), everything
    if form == ALWAYS_EVENTUALLY:
        return ~p, ~p, everything
    return everything, everything, ~p


def violation(graph: Graph, spec: Spec, name: str, fair: Fair) -> Lasso | None:
    """A lasso violating property `name` under its fairness, or None."""
    triggers, allowed, marked = regions(graph, spec, name)
    enabled = enabled_groups(graph, fair.group_of)
    fair_comp = fair_components(graph, allowed, enabled, fair, marked)
    if not (fair_comp >= 0).any():
        return None
    first, path, start = entry(graph, spec.property_form[name], triggers, allowed, fair_comp >= 0, marked)
    return Lasso(first, path, cycle(graph, fair_comp == fair_comp[start], start, enabled, fair, marked))


def entry(
    graph: Graph, form: str, triggers: np.ndarray, allowed: np.ndarray, goal: np.ndarray, marked: np.ndarray
) -> tuple[int, list[int], int]:
    """The shortest way into a `goal` state (of a fair component): from an
    initial state to the trigger nearest to one, then on through states
    where Q does not hold (a leads-to); else from an initial state to the
    nearest marked one. (initial state, transitions, the goal state)."""
    initial = np.zeros(graph.size, np.bool_)
    initial[: graph.initial] = True
    everything = np.ones(graph.size, np.bool_)
    if form == LEADS_TO:
        mid, start = shortest(graph, allowed, triggers, goal)
        prefix, _trigger = shortest(graph, everything, initial, only(graph, source_of(graph, mid[0]) if mid else start))
    else:
        mid = []
        prefix, start = shortest(graph, everything, initial, goal & marked)
    path = prefix + mid  # a trigger may be initial: then the path starts with mid
    return (source_of(graph, path[0]) if path else start), path, start


def fair_components(
    graph: Graph, allowed: np.ndarray, enabled: np.ndarray, fair: Fair, marked: np.ndarray, loops: bool = False
) -> np.ndarray:
    """Each state's fair component (numbered across refinements), -1 for
    states in none (`loops`: see scc.summaries)."""
    out = graph.arena.full(graph.size, -1, np.int64)
    current = graph.arena.empty(graph.size, np.bool_)
    current[:] = allowed
    found, going = 0, bool(current.any())
    weak, strong = np.uint64(fair.weak), np.uint64(fair.strong)
    while going:
        comp, count = components(graph, current)
        some, every, taken, has_mark = summaries(graph, fair.group_of, enabled, comp, count, marked, loops)
        going = _judge(comp, enabled, some, every, taken, has_mark, weak, strong, out, found, current)
        found += count
    return out


@jit
def _judge(comp, enabled, some, every, taken, has_mark, weak, strong, out, found, allowed):
    """Number each state of a fair component in `out` (from `found`); keep
    in `allowed` the states of components only a strong constraint spoils
    where none of those is enabled (Emerson-Lei's refinement), and say
    whether any is kept. A weak constraint spoils a component where it is
    enabled throughout and never taken; a strong one where it is enabled
    somewhere and never taken."""
    kept = False
    for s in range(len(comp)):
        c = comp[s]
        keep = False
        if c >= 0:
            bad_weak = weak & ~taken[c] & every[c]
            bad_strong = strong & ~taken[c] & some[c]
            if bad_weak == 0 and bad_strong == 0 and has_mark[c]:
                out[s] = c + found
            elif bad_weak == 0 and bad_strong != 0 and (enabled[s] & bad_strong) == 0:
                keep = True
        allowed[s] = keep
        kept = kept or keep
    return kept


def cycle(
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
        to = source_of(graph, at) if kind == "edge" else at
        walk += within(graph, members, here, to)
        here = to
        if kind == "edge":
            walk.append(at)
            here = int(graph.target[at])
    if here != start:
        walk += within(graph, members, here, start)
    return walk
