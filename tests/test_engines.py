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


# ---- symmetry over brokers 1..N-1 ---------------------------------------------------

def test_symmetry_explores_exactly_one_state_per_orbit():
    """The reduced count equals the number of classes of the full state
    space under renaming brokers 1..N-1, counted independently."""
    full_spec = load({"max_records": 1, "max_fences": 0})
    sym_spec = load({"max_records": 1, "max_fences": 0})
    sym_spec.enable_symmetry()
    seen, todo = {full_spec.canonical(s) for s in full_spec.init_states()}, list(full_spec.init_states())
    while todo:
        for _name, _args, nxt in full_spec.successors(todo.pop()):
            key = full_spec.canonical(nxt)
            if key not in seen:
                seen.add(key)
                todo.append(nxt)
    orbits = {sym_spec.canonical(full_spec.decode(k)) for k in seen}
    assert len(seen) == 7768
    for engine, workers in (("bfs", 1), ("parallel", 1), ("parallel", 2)):
        r = run(sym_spec, engine=engine, workers=workers)
        assert r.holds and r.distinct_states == len(orbits) < len(seen)


@pytest.mark.parametrize("config", [{"variant": "legacy"}, {"max_records": 1, "max_unclean_shutdowns": 2},
                                    {"variant": "hwm-on-maximal-isr"}])
def test_symmetry_keeps_the_verdict_and_the_shortest_trace_with_fewer_states(config):
    plain = run(load(config), engine="bfs")
    spec = load(config)
    spec.enable_symmetry()
    for engine, workers in (("bfs", 1), ("parallel", 2)):
        r = run(spec, engine=engine, workers=workers)
        assert (r.verdict, r.invariant, len(r.trace)) == (plain.verdict, plain.invariant, len(plain.trace))
        assert r.distinct_states < plain.distinct_states


@pytest.mark.parametrize("sets, why", [
    (["variant=kafka-4"], "kafka-4 elects the first valid replica in assignment order"),
    (["max_admin_elections=1"], "admin UNCLEAN elections pick the first live replica"),
])
def test_symmetry_is_refused_where_brokers_are_told_apart(sets, why):
    from click.testing import CliRunner
    from cli import main
    r = CliRunner().invoke(main, ["check", "--symmetry", *(x for s in sets for x in ("--set", s))])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error: --symmetry: ") and why in r.stderr and r.stderr.count("\n") == 1
