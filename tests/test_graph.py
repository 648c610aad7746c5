"""`modelcheck graph`: the reachable state graph as GraphML and DOT."""

from __future__ import annotations

import json
import re

import networkx as nx
import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.engine.bfs import check
from modelcheck.views.terminal import format_action
from specs.kafka_elr import load

TINY = ["--set", "brokers=2", "--set", "max_records=1", "--set", "max_fences=0"]  # 635 states, holds
TINY_LEGACY = [*TINY, "--set", "variant=legacy"]  # NoAckedLoss in 6 steps
# every state TINY_LEGACY reaches, past the violation too: the reference
# engine's count with only TypeOK checked (it holds), 1,498 generated
TINY_LEGACY_STATES = 839


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_graphml_has_a_node_per_distinct_state_and_an_edge_per_transition(tmp_path):
    checked = json.loads(invoke("check", *TINY, "--json").stdout)
    assert checked["verdict"] == "holds"
    out = tmp_path / "g.graphml"
    r = invoke("graph", *TINY, "-o", str(out))
    assert r.exit_code == 0, r.output
    g = nx.read_graphml(out, force_multigraph=True)
    assert g.number_of_nodes() == checked["distinct_states"] == 635
    assert g.number_of_edges() == checked["generated_states"] - 1  # every successor but the initial state
    assert f"{g.number_of_nodes():,} states" in r.stdout
    first = g.nodes["0"]
    assert first["initial"] and first["isr"] == "[0,1]" and first["leader"] == 0
    assert not any(d["counterexample"] for _n, d in g.nodes(data=True))
    assert {d["action"] for *_e, d in g.edges(data=True)} >= {"Produce", "Fetch", "UncleanShutdown"}


@pytest.mark.slow
def test_the_counterexample_path_is_marked(tmp_path):
    trace = json.loads(invoke("check", *TINY_LEGACY, "--engine", "bfs", "--json").stdout)["trace"]
    out = tmp_path / "g.graphml"
    assert invoke("graph", *TINY_LEGACY, "-o", str(out)).exit_code == 0
    g = nx.read_graphml(out, force_multigraph=True)
    path = sorted((d["trace_step"], n) for n, d in g.nodes(data=True) if d["counterexample"])
    assert [k for k, _n in path] == list(range(len(trace)))
    assert "NoAckedLoss" in g.nodes[path[-1][1]]["violated"]
    marked = {(a, b): d["label"] for a, b, d in g.edges(data=True) if d["counterexample"]}
    assert [marked[(path[k - 1][1], path[k][1])] for k in range(1, len(path))] == [
        format_action(s["action"], s["args"]) for s in trace[1:]
    ]


def test_the_graph_count_is_the_reference_engines():
    """TINY_LEGACY_STATES is every reachable state (no invariant stops the search)."""
    r = check(load({"brokers": 2, "max_records": 1, "max_fences": 0, "variant": "legacy", "invariants": ["TypeOK"]}))
    assert r.holds and (r.distinct_states, r.generated_states) == (TINY_LEGACY_STATES, 1498)


def test_dot_is_written_without_pydot(tmp_path):
    out = tmp_path / "g.dot"
    assert invoke("graph", *TINY_LEGACY, "-o", str(out)).exit_code == 0
    text = out.read_text()
    assert text.startswith("digraph states {") and text.endswith("}\n")
    nodes = re.findall(r"^  (\d+) \[", text, re.M)
    assert len(nodes) == len(set(nodes)) == TINY_LEGACY_STATES  # the whole graph, past the violation
    assert len(re.findall(r"^  \d+ -> \d+ ", text, re.M)) == 1498 - 1  # every transition
    assert len(re.findall(r'counterexample="true"', text)) == 7 + 6  # 7 states, 6 transitions
    assert re.search(r'^  0 -> \d+ \[.*label="Produce\(acks=1\)"', text, re.M)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--max-states", "100", "-o", "g.dot"],
            "error: the reachable state graph has more than 100 states; use a smaller config or raise --max-states",
        ),
        (["-o", "g.png"], "error: -o g.png: the name must end in .graphml or .dot"),
        (["--set", "brokers=0", "-o", "g.dot"], "error: config key 'brokers'"),
    ],
)
def test_refusals_exit_2_with_one_line(tmp_path, args, message):
    r = invoke("graph", *[str(tmp_path / a) if a.startswith("g.") else a for a in args])
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(message.replace("g.png", str(tmp_path / "g.png"))), r.stderr
    assert not list(tmp_path.iterdir())
