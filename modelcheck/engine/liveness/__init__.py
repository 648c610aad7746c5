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

With symmetry the graph is the quotient (a node a class): quotient.py
searches it coarsely for where a fair cycle could be, and the states over
each such component exactly.

A violation is a lasso: a shortest path from an initial state, then the
cycle, going through one transition of each fair action taken in the
component and one state where each weakly fair action not taken is
disabled. The engine replays it through the interpreted spec, checks it
reaches the states found, and trace.validate_lasso checks that it violates
the property under the fairness before it is shown.

Cost: while the search runs, 14 bytes a transition (22 with 128-bit keys)
and 16 a state, spilled to disk with the frontier under --max-memory; the
numbered graph, 10 bytes a transition and about 40 a state; each property,
time linear in states and transitions, once more for each refinement a
strong fairness constraint forces. Where the graph in memory would pass
--max-memory, its transitions and keys are put on disk and read through
the page cache, and so are the searches' arrays (graph.Arena): about 40
bytes a state stay in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...result import Step
from ...spec import Spec
from ...trace import TraceError, validate_lasso
from .fair import Lasso, fairness, triggers, violation
from .graph import Graph, Recorder
from .paths import replayed
from .quotient import quotient_violation

__all__ = ["Graph", "Lasso", "Recorder", "check_properties", "lasso_steps"]


# ---- a lasso as a trace ----------------------------------------------------------------


def lasso_steps(
    spec: Spec, graph: Graph, lasso: Lasso, initial_state: Any, key_of: Callable[[Any], np.ndarray]
) -> tuple[list[Step], int]:
    """The lasso replayed through the interpreted spec, each step checked
    to reach the state the search numbered: (steps, the loop's start)."""
    if not np.array_equal(key_of(initial_state), graph.keys[lasso.initial]):
        raise TraceError("the lasso's initial state is not the one the search found")
    steps = replayed(
        spec, graph, initial_state, lasso.prefix + lasso.cycle, lambda s, t: np.array_equal(key_of(s), graph.keys[t])
    )
    return [Step(None, {}, initial_state), *steps], len(lasso.prefix)


def check_properties(
    spec: Spec, recorder: Recorder, initial_states: list, key_of: Callable[[Any], np.ndarray], info: dict
) -> tuple[tuple[str, list[Step], int] | None, dict[str, int]]:
    """The first checked property a fair behaviour violates, with its lasso
    re-validated by replay: (name, steps, loop start), None if all hold;
    and each checked property's `triggers` count (of classes, with
    symmetry: the graph is then the quotient, searched as quotient.py
    says, which counts its work in `info`)."""
    graph = recorder.graph(len(initial_states))
    if graph.arena.on_disk:
        info["graph_on_disk"] = True
    counts = {name: triggers(graph, spec, name) for name in spec.checked_properties()}
    lifted: dict[str, int] = {}
    for name in spec.checked_properties():
        if spec.symmetric:
            found = quotient_violation(spec, graph, name, initial_states, key_of, lifted)
            info["liveness_under_symmetry"] = {"proposed": 0, "states_explored": 0, **lifted}
            if found is None:
                continue
            steps, loop = found
        else:
            lasso = violation(graph, spec, name, fairness(spec, name))
            if lasso is None:
                continue
            steps, loop = lasso_steps(spec, graph, lasso, initial_states[lasso.initial], key_of)
        validate_lasso(spec, steps, loop, name)
        return (name, steps, loop), counts
    return None, counts
