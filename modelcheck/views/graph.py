"""The reachable state graph of a (small) config, for GraphML and DOT tools.

Nodes are distinct states (keyed by the spec's canonical bytes, as the
checker's fingerprints), numbered in breadth-first order so the files are
deterministic; their attributes are the described variables. Edges are
labelled with the action and its arguments. Unlike `check`, exploration does
not stop at a violation: the whole graph is written, violating states carry
`violated`, and a counterexample's path carries `counterexample`.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import networkx as nx

from ..result import Step
from ..spec import Spec
from .terminal import format_action, plain


class GraphTooLarge(ValueError):
    """The reachable states exceed the limit (the message is the one line shown)."""


def attribute(value: Any) -> Any:
    """GraphML holds scalars only: anything else as compact JSON."""
    return value if isinstance(value, (bool, int, str)) else json.dumps(value, separators=(",", ":"))


def state_graph(spec: Spec, max_states: int) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    ids: dict[bytes, int] = {}
    queue: deque = deque()

    def node(state: Any) -> int:
        key = spec.canonical(state)
        if key not in ids:
            if len(ids) >= max_states:
                raise GraphTooLarge(
                    f"the reachable state graph has more than {max_states:,} states; "
                    f"use a smaller config or raise --max-states"
                )
            ids[key] = len(ids)
            d = spec.describe(state)
            columns, lanes = spec.trace_row(d)
            label = "\n".join(f"{k} {plain(c)}" for k, c in {**columns, **lanes}.items())
            graph.add_node(
                ids[key],
                label=label,
                initial=False,
                counterexample=False,
                violated=",".join(spec.violated(state)),
                **{k: attribute(v) for k, v in d.items()},
            )
            queue.append(state)
        return ids[key]

    for s in spec.init_states():
        graph.nodes[node(s)]["initial"] = True
    while queue:
        state = queue.popleft()
        src = ids[spec.canonical(state)]
        for name, args, nxt in spec.successors(state):
            label = format_action(name, args)
            graph.add_edge(
                src,
                node(nxt),
                key=label,
                label=label,
                action=name,
                args=json.dumps(args, separators=(",", ":")),
                counterexample=False,
            )
    return graph


def mark_path(graph: nx.MultiDiGraph, spec: Spec, trace: list[Step]) -> None:
    """Mark a trace's states (`trace_step`) and transitions: from its initial
    node, follow the edge labelled with each step's action (an action
    instance has one successor, so the label picks the edge)."""
    first = {k: attribute(v) for k, v in spec.describe(trace[0].state).items()}
    node = next(n for n, d in graph.nodes(data=True) if d["initial"] and all(d[k] == v for k, v in first.items()))
    for k, step in enumerate(trace):
        if k:
            label = format_action(step.action, step.args)
            node_before, node = node, next(b for _a, b, key in graph.out_edges(node, keys=True) if key == label)
            graph.edges[node_before, node, label]["counterexample"] = True
        graph.nodes[node].update(counterexample=True, trace_step=k)


def graphml(graph: nx.MultiDiGraph) -> str:
    return "\n".join(nx.generate_graphml(graph)) + "\n"


def dot(graph: nx.MultiDiGraph) -> str:
    """Graphviz DOT, written directly (no pydot): every attribute kept, the
    counterexample drawn red and bold, violating states filled."""

    def attrs(data: dict[str, Any], on_path: bool, bad: bool) -> str:
        extra = {
            **({"color": "red", "penwidth": 2} if on_path else {}),
            **({"style": "filled", "fillcolor": "#ffd8d8"} if bad else {}),
        }
        return ", ".join(f"{k}={quote(v)}" for k, v in {**data, **extra}.items())

    lines = [
        "digraph states {",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]
    for n, data in graph.nodes(data=True):
        lines.append(f"  {n} [{attrs(data, data['counterexample'], bool(data['violated']))}];")
    for a, b, data in graph.edges(data=True):
        lines.append(f"  {a} -> {b} [{attrs(data, data['counterexample'], False)}];")
    return "\n".join(lines + ["}"]) + "\n"


def quote(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
