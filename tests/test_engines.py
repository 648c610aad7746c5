"""The engines agree exactly: the parallel engine, on one or two processes,
reports the reference BFS's verdict, counts, coverage and trace."""

from __future__ import annotations

import pytest

from modelcheck.engine import run
from modelcheck.engine.parallel import Worker
from specs.kafka_elr import load

CONFIGS = [
    {"max_records": 1, "max_fences": 0},                       # holds, 7,768 states
    {"brokers": 2, "min_isr": 2},                               # holds, 41,381 states
    {"variant": "legacy"},                                      # NoAckedLoss, 7 steps
    {"variant": "hwm-on-maximal-isr"},                          # ElrHasDataToHwm, 6 steps
    {"variant": "kafka-4", "max_unclean_shutdowns": 2, "invariants": ["LeaderUnfenced"]},
    {"min_isr": 5, "max_records": 0, "invariants": ["ElectableAtLeastMinIsr"]},   # holds: min(5, N)
]


def summary(r):
    return (r.verdict, r.invariant, r.distinct_states, r.generated_states, r.depth, r.coverage,
            [(s.action, s.args) for s in r.trace])


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_parallel_engine_reproduces_the_reference_exactly(config):
    spec = load(config)
    reference = summary(run(spec, engine="bfs"))
    assert summary(run(spec, engine="parallel", workers=1)) == reference
    assert summary(run(spec, engine="parallel", workers=2)) == reference


def test_a_violating_initial_state_is_reported_at_depth_1():
    spec = load({"min_isr": 2, "invariants": ["ElectableAtLeastMinIsr"]})
    spec.eff_min_isr = lambda s: 4                 # no initial ISR of 3 reaches 4
    reference = summary(run(spec, engine="bfs"))
    assert reference[:5] == ("violated", "ElectableAtLeastMinIsr", 1, 1, 1)
    assert summary(run(spec, engine="parallel", workers=2)) == reference


def test_the_visited_set_costs_8_bytes_a_state():
    spec = load({"max_records": 1, "max_fences": 0})
    w = Worker(spec, 0, 1)
    w.receive([(0, 1, 2**64 - 1, spec.canonical(spec.init_states()[0]))])
    count = 0
    while True:
        keys, _violation = w.settle()
        if not len(keys):
            break
        count += len(keys)
        w.advance(keys.argsort().argsort())
        w.receive(w.expand()[0])
    assert count == 7768 and w.visited.nbytes == 8 * count
    assert w.memory() == 8 * count + 16 * count       # plus parent links: fingerprint and parent
