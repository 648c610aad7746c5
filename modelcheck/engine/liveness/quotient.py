"""Fair cycles under symmetry: the graph an engine records with
--symmetry is the quotient (a node a class of states that differ by a
renaming of the brokers), and a cycle of classes need not be a cycle of
states, nor fair where the classes' cycle looks fair. So the quotient only
proposes, and the states decide (docs/model.md "Temporal properties under
symmetry"):

1. On the quotient, a coarse Emerson-Lei search keeps every component a
   fair cycle of states could lie over. A fairness constraint taken "for
   each" value of an argument counts as taken where any of its instances
   is, and as enabled throughout (weak) only where every value's is; a
   step to the same class counts as taken (it may be to another member).
   Each coarsening can only keep more, never drop a fair cycle.
2. For each component kept, nearest first: the path to it is lifted to
   states (each step the same action, to a member of the next class), and
   the states over the component are explored from the path's end. A
   component's states form components that are renamings of one another,
   so one of them, searched exactly (the engine's own Emerson-Lei on
   states), finds a fair cycle if any state over the component has one.

A violation is therefore a lasso of states, replayed and validated as
without symmetry; a "holds" says that no component the coarse search kept
holds a fair cycle of states. Sound when the properties' predicates and
the fairness constraints are unchanged by renaming the brokers: every
state explored in step 2 is held to its class's labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...config import ConfigError
from ...declare import LEADS_TO
from ...path import Step
from ...spec import Spec
from ...trace import TraceError
from .fair import Fair, cycle, fair_components, fairness, regions
from .graph import Graph
from .jit import jit
from .paths import Tree, only, replayed, shortest, source_of
from .scc import enabled_groups


def quotient_violation(
    spec: Spec, graph: Graph, name: str, initial_states: list, key_of: Callable[[Any], np.ndarray], info: dict
) -> tuple[list[Step], int] | None:
    """A lasso of states violating property `name` under its fairness, found
    through the quotient `graph`: (steps, the loop's start), or None. `info`
    counts the components proposed and the states explored over them."""
    exact = fairness(spec, name)
    triggers, allowed, marked = regions(graph, spec, name)
    enabled = enabled_groups(graph, exact.group_of)
    coarse, coarse_enabled = _coarse(spec, name, exact, enabled)
    fair_comp = fair_components(graph, allowed, coarse_enabled, coarse, marked, loops=True)
    proposed = (fair_comp >= 0) & ~_unfair_alone(graph, fair_comp, enabled, exact)
    if not proposed.any():  # the common holds: no tree to build
        return None
    initial = np.zeros(graph.size, np.bool_)
    initial[: graph.initial] = True
    from_initial = Tree(graph, np.ones(graph.size, np.bool_), initial)
    leads_to = spec.property_form[name] == LEADS_TO
    near = Tree(graph, allowed, triggers) if leads_to else from_initial
    ways_in = np.flatnonzero(proposed & (near.order >= 0) & (True if leads_to else marked))
    tried = set()
    for start in ways_in[np.argsort(near.order[ways_in], kind="stable")].tolist():  # nearest first
        if int(fair_comp[start]) in tried:
            continue
        tried.add(int(fair_comp[start]))
        info["proposed"] = info.get("proposed", 0) + 1
        path = near.path(start)
        if leads_to:  # from an initial state to the trigger, then on
            trigger = source_of(graph, path[0]) if path else start
            path = from_initial.path(trigger) + path
        first = source_of(graph, path[0]) if path else start
        prefix = _lift(spec, graph, initial_states[first], first, path, key_of)
        found = _over(spec, graph, name, exact, prefix[-1].state, fair_comp == fair_comp[start], key_of, info)
        if found is not None:
            inner, loop = found
            return prefix + inner + loop, len(prefix) + len(inner) - 1
    return None


def _unfair_alone(graph: Graph, fair_comp: np.ndarray, enabled: np.ndarray, exact: Fair) -> np.ndarray:
    """The classes alone in their component, with no step to their own
    class, where a fair constraint is enabled: each of their states is
    alone too, and stuttering there is unfair (exactly as without symmetry)."""
    out = graph.arena.full(graph.size, False, np.bool_)
    sizes = graph.arena.full(int(fair_comp.max(initial=-1)) + 1, 0, np.int64)
    _alone(graph.offsets, graph.target, fair_comp, enabled, np.uint64(exact.weak | exact.strong), sizes, out)
    return out


@jit
def _alone(offsets, target, fair_comp, enabled, fair_bits, sizes, out):
    for s in range(len(fair_comp)):
        if fair_comp[s] >= 0:
            sizes[fair_comp[s]] += 1
    for s in range(len(fair_comp)):
        c = fair_comp[s]
        if c < 0 or sizes[c] != 1 or (enabled[s] & fair_bits) == 0:
            continue
        looped = False
        for e in range(offsets[s], offsets[s + 1]):
            looped = looped or target[e] == s
        out[s] = not looped


def _coarse(spec: Spec, name: str, exact: Fair, enabled: np.ndarray) -> tuple[Fair, np.ndarray]:
    """One group a constraint of the spec (all values of its `each`
    together), and each class's groups enabled in the coarse sense."""
    group_of = np.zeros_like(exact.group_of)
    coarse_enabled = np.zeros(len(enabled), np.uint64)
    weak = strong = 0
    for k, f in enumerate(spec.fairness[name]):
        bits = sum(1 << g for g, family in enumerate(exact.family) if family == k)
        if not bits:  # no instance in this config: it asks nothing
            continue
        mask, bit = np.uint64(bits), np.uint64(1 << k)
        group_of[(exact.group_of & mask) != 0] |= bit
        every_value = f.each is not None and not f.strong
        coarse_enabled[(enabled & mask) == mask if every_value else (enabled & mask) != 0] |= bit
        if f.strong:
            strong |= 1 << k
        else:
            weak |= 1 << k
    names = [str(f) for f in spec.fairness[name]]
    return Fair(group_of, weak, strong, names, list(range(len(names)))), coarse_enabled


def _lift(
    spec: Spec, graph: Graph, state: Any, first: int, path: list[int], key_of: Callable[[Any], np.ndarray]
) -> list[Step]:
    """The quotient path from class `first` as states from `state`: each
    step the same action, to a member of the next class."""
    if not np.array_equal(key_of(state), graph.keys[first]):
        raise TraceError("the lasso's initial state is not of the class the search found")
    steps = [Step(None, {}, state)]
    for e in path:
        action, _values = spec.instance(int(graph.instance[e]))
        want = graph.keys[graph.target[e]]
        step = next(
            (
                Step(name, args, nxt)
                for name, args, nxt in spec.successors(state)
                if name == action and np.array_equal(key_of(nxt), want)
            ),
            None,
        )
        if step is None:
            raise TraceError(f"step {len(steps)} of the lasso ({action}) reaches no member of the class found")
        steps.append(step)
        state = step.state
    return steps


def _over(
    spec: Spec,
    graph: Graph,
    name: str,
    exact: Fair,
    start: Any,
    members: np.ndarray,
    key_of: Callable[[Any], np.ndarray],
    info: dict,
) -> tuple[list[Step], list[Step]] | None:
    """The states over the quotient component `members` reachable from
    `start` inside it, searched for a fair cycle: (the steps to it, the
    cycle's steps), or None."""
    classes = {tuple(graph.keys[i].tolist()): i for i in np.flatnonzero(members).tolist()}
    index: dict[Any, int] = {start: 0}
    states, labels = [start], [_labels(spec, graph, start, classes[tuple(key_of(start).tolist())], name)]
    offsets, target, instance = [0], [], []
    for s in states:  # grows as states are found
        for _act, _args, nxt, _label, number in spec.labelled_successors(s):
            cls = classes.get(tuple(key_of(nxt).tolist()))
            if cls is not None and nxt not in index:
                index[nxt] = len(states)
                states.append(nxt)
                labels.append(_labels(spec, graph, nxt, cls, name))
            target.append(-1 if cls is None else index[nxt])
            instance.append(number)
        offsets.append(len(target))
    info["states_explored"] = info.get("states_explored", 0) + len(states)
    n = len(states)  # n: one node for every state outside the component
    sub = Graph(
        1,
        np.array(labels + [0], np.uint64),
        np.array(offsets + [len(target)], np.int64),
        np.array([n if t < 0 else t for t in target], np.int64),
        np.array(instance, np.uint16),
        np.zeros((n + 1, 1), np.uint64),
    )
    allowed = np.ones(n + 1, np.bool_)
    allowed[n] = False
    marked = regions(sub, spec, name)[2]
    enabled = enabled_groups(sub, exact.group_of)
    comp = fair_components(sub, allowed, enabled, exact, marked)
    if not (comp >= 0).any():
        return None
    inner, at = shortest(sub, allowed, only(sub, 0), (comp >= 0) & marked)
    loop = cycle(sub, comp == comp[at], at, enabled, exact, marked)

    def reaches(state: Any, t: int) -> bool:
        return state == states[t]

    return replayed(spec, sub, start, inner, reaches), replayed(spec, sub, states[at], loop, reaches)


def _labels(spec: Spec, graph: Graph, state: Any, cls: int, name: str) -> int:
    """`state`'s property labels, which must be its class's."""
    labels = spec.property_labels(state)
    if labels != int(graph.labels[cls]):
        raise ConfigError(
            f"--symmetry with temporal properties: a property's predicate tells renamed brokers apart "
            f"(checking {name!r}: two states of one class differ in it); leave out --symmetry"
        )
    return labels
