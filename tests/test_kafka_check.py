"""Verdicts of the Kafka spec, cross-checked against an independent search."""

from __future__ import annotations

import networkx as nx
import pytest

from modelcheck.engine import run
from modelcheck.engine.bfs import check
from modelcheck.engine.options import CheckOptions
from specs.kafka_elr import load


def state_graph(spec):
    """Every reachable state as a networkx graph keyed by canonical bytes:
    an exploration that shares nothing with the engine but the spec."""
    graph = nx.DiGraph()
    inits = [spec.canonical(s) for s in spec.init_states()]
    todo = list(zip(inits, spec.init_states()))
    graph.add_nodes_from(inits)
    bad = set()
    while todo:
        key, state = todo.pop()
        if spec.first_violation(state):
            bad.add(key)
        for _name, _args, nxt in spec.successors(state):
            k = spec.canonical(nxt)
            if k not in graph:
                todo.append((k, nxt))
            graph.add_edge(key, k)
    return graph, inits, bad


@pytest.mark.slow
def test_default_kip966_holds(default_kip966):
    spec, r = default_kip966
    assert spec.config["variant"] == "kip966"
    assert r.verdict == "holds" and r.invariant is None
    assert r.distinct_states > 1000
    assert (r.distinct_states, r.generated_states, r.depth) == (1_800_802, 5_433_771, 26)  # TLC agrees (docs/tla.md)
    assert r.generated_states > r.distinct_states
    fired = {name for name, count in r.coverage.items() if count}
    assert {
        "Produce",
        "Fetch",
        "AdvanceHwm",
        "ShrinkIsr",
        "ExpandIsr",
        "CommitAlterPartition",
        "FenceBroker",
        "UnfenceBroker",
        "UncleanShutdown",
        "StartBroker",
    } <= fired
    # bounds that default to 0 keep their actions disabled
    assert r.coverage["AlterMinIsr"] == r.coverage["CleanShutdown"] == 0
    assert [n for label, n in r.coverage.items() if label.startswith("AdminElectLeaders(")] == [0] * 5


def test_legacy_loses_an_acked_record_as_the_last_replica_standing(default_legacy):
    spec, r = default_legacy
    assert r.verdict == "violated" and r.invariant == "NoAckedLoss"
    assert [(s.action, s.args) for s in r.trace] == [
        (None, {}),
        ("FenceBroker", {"broker": 0, "leader": 1}),  # T0: broker 0 leaves; 1 leads
        ("Produce", {"acks": "all"}),
        ("Fetch", {"broker": 2}),
        ("AdvanceHwm", {}),  # r1 acknowledged on ISR {1, 2}
        ("ShrinkIsr", {"brokers": [2]}),  # T1: broker 2 leaves too
        ("CommitAlterPartition", {}),
        ("UncleanShutdown", {"broker": 1, "keep": 0}),  # T2: the last ISR member loses it
    ]
    last = spec.describe(r.trace[-1].state)
    assert last["isr"] == [1] and last["acked"] == [1] and last["log"] == [[], [], [[1, 1]]]


def test_kip966_tolerates_min_isr_minus_one_unclean_shutdowns_but_not_min_isr(default_kip966):
    assert default_kip966[1].holds  # 1 = min_isr - 1 unclean shutdown
    r = check(load({"max_unclean_shutdowns": 2}))
    assert r.invariant == "NoAckedLoss"
    assert len(r.trace) - 1 == 6
    assert [s.action for s in r.trace[-2:]] == ["UncleanShutdown", "UncleanShutdown"]


@pytest.mark.parametrize(
    "config",
    [
        {"max_records": 1, "max_fences": 0},
        {"brokers": 2, "min_isr": 2},
        {"variant": "legacy", "max_records": 1, "max_unclean_shutdowns": 0},
    ],
)
@pytest.mark.slow
def test_distinct_states_match_an_independent_search(config):
    spec = load(config)
    r = check(spec)
    graph, _inits, bad = state_graph(spec)
    assert r.holds and not bad
    assert r.distinct_states == graph.number_of_nodes()
    assert r.generated_states == 1 + sum(r.coverage.values())


@pytest.mark.parametrize(
    "config",
    [
        {"variant": "legacy", "max_records": 1},
        {"max_records": 1, "max_unclean_shutdowns": 2, "max_fences": 0},  # 106,529 states, 7 steps
    ],
)
@pytest.mark.slow
def test_counterexamples_are_as_short_as_networkx_finds(config):
    spec = load(config)
    r = check(spec)
    graph, inits, bad = state_graph(spec)
    distances = nx.multi_source_dijkstra_path_length(graph, set(inits))
    assert r.verdict == "violated"
    assert len(r.trace) - 1 == min(distances[b] for b in bad)


@pytest.mark.slow
def test_only_the_listed_invariants_are_checked():
    """The restriction changes the answer: every invariant checked, two
    unclean shutdowns lose an acked record in 6 steps; ConsistentRead alone
    breaks only 7 steps later."""
    config = {"max_unclean_shutdowns": 2, "max_records": 1}
    every = run(load(config), CheckOptions.of(engine="fast"))
    assert (every.invariant, len(every.trace) - 1) == ("NoAckedLoss", 6)
    r = run(load({**config, "invariants": ["ConsistentRead"]}), CheckOptions.of(engine="fast"))
    assert (r.invariant, len(r.trace) - 1) == ("ConsistentRead", 13)
