"""The engines agree: the fast engine, on one or two processes, reports the
reference BFS's verdict, counts, coverage and trace; symmetry reduction
keeps the verdict and the shortest trace length with fewer states."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from modelcheck.engine import run
from modelcheck.engine.fast import NO_PARENT, Batch, Worker
from modelcheck.fingerprint import fingerprint, fingerprints, shard_of
from specs.kafka_elr import load
from specs.kafka_elr.types import permute

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
def test_fast_engine_reproduces_the_reference_exactly(config):
    spec = load(config)
    reference = summary(run(spec, engine="bfs"))
    assert summary(run(spec, engine="fast", workers=1)) == reference
    assert summary(run(spec, engine="fast", workers=2)) == reference


def test_the_legacy_default_counterexample_is_the_same_on_every_engine():
    spec = load({"variant": "legacy"})
    results = [run(spec, engine=e, workers=w) for e, w in (("bfs", 1), ("fast", 1), ("fast", 2))]
    assert {(r.invariant, r.distinct_states, len(r.trace) - 1) for r in results} == {("NoAckedLoss", 15970, 7)}


def test_a_violating_initial_state_is_reported_at_depth_1():
    spec = load({"min_isr": 2, "invariants": ["ElectableAtLeastMinIsr"]})
    spec.eff_min_isr = lambda s: 4                 # no initial ISR of 3 reaches 4
    reference = summary(run(spec, engine="bfs"))
    assert reference[:5] == ("violated", "ElectableAtLeastMinIsr", 1, 1, 1)
    assert summary(run(spec, engine="fast", workers=2)) == reference


@pytest.mark.parametrize("variant", ["kip966", "kafka-4", "legacy"])
def test_actions_skipped_as_never_enabled_are_never_enabled(variant):
    spec = load({"variant": variant, "max_records": 1, "max_fences": 2, "max_unclean_shutdowns": 0,
                 "max_isr_shrinks": 0})
    skipped = spec.never_enabled()
    assert skipped == {"UncleanShutdown", "CleanShutdown", "ShrinkIsr", "AlterMinIsr", "AdminElectLeaders"}
    seen, todo = set(), list(spec.init_states())
    while todo:
        s = todo.pop()
        assert not [a for name in skipped for a in spec.instances(name, s)]
        for _name, _args, t in spec.successors(s):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    assert len(seen) > 100


def test_batch_fingerprints_and_shards_equal_the_scalar_ones():
    canons = [b"", b"x", bytes(range(256)) * 3]
    fps = fingerprints(canons)
    assert fps.dtype == np.uint64 and fps.tolist() == [fingerprint(c) for c in canons]
    assert shard_of(fps, 3).tolist() == [shard_of(fingerprint(c), 3) for c in canons]


def test_the_visited_set_costs_8_bytes_a_state_and_parent_links_16():
    """One worker driven level by level: the visited shard is one uint64 a
    state, the parent links two, and no state is kept once it is expanded."""
    spec = load({"max_records": 1, "max_fences": 0})
    init = spec.init_states()[0]
    w = Worker(spec, 0, 1)
    w.receive(Batch.encoded(np.array([fingerprint(spec.canonical(init))], dtype=np.uint64),
                            np.zeros(1, dtype=np.int64), np.array([NO_PARENT], dtype=np.uint64), [spec.encode(init)]))
    count = 0
    while True:
        keys, violation = w.settle()
        assert violation is None
        if not len(keys):
            break
        count += len(keys)
        w.advance(np.argsort(np.argsort(keys)))
        w.expand()
    assert count == 7768
    assert w.memory() == {"visited_bytes": 8 * count, "links_bytes": 16 * count}
    assert run(spec, workers=2).memory == w.memory()


# ---- symmetry over brokers 1..N-1 ---------------------------------------------------

def class_of(spec, state) -> bytes:
    """The class of a state under renaming brokers 1..N-1, by brute force:
    the smallest encoding over all (N-1)! renamings."""
    return min(spec.encode(permute(state, [0, *p])) for p in permutations(range(1, spec.n)))


def test_the_symmetric_form_identifies_exactly_the_renamed_states():
    spec = load({"max_records": 1, "max_fences": 0, "brokers": 4})
    sym = load({"max_records": 1, "max_fences": 0, "brokers": 4})
    sym.enable_symmetry()
    states, frontier = [], spec.init_states()
    for _depth in range(7):
        frontier = [t for s in frontier for _n, _a, t in spec.successors(s)]
        states += frontier[::5]
    assert len(states) > 1000
    for s in states[::10]:
        assert len({sym.canonical(permute(s, [0, *p])) for p in permutations(range(1, 4))}) == 1
    pairs = {(class_of(spec, s), sym.canonical(s)) for s in states}
    assert len(pairs) == len({c for c, _ in pairs}) == len({f for _, f in pairs}) < len(states)


def test_symmetry_explores_exactly_one_state_per_class():
    """The reduced count equals the number of classes of the full state
    space under renaming brokers 1..N-1, counted by brute force."""
    spec = load({"max_records": 1, "max_fences": 0})
    seen, todo = {spec.encode(s): s for s in spec.init_states()}, list(spec.init_states())
    while todo:
        for _name, _args, nxt in spec.successors(todo.pop()):
            key = spec.encode(nxt)
            if key not in seen:
                seen[key] = nxt
                todo.append(nxt)
    classes = {class_of(spec, s) for s in seen.values()}
    assert len(seen) == 7768
    sym_spec = load({"max_records": 1, "max_fences": 0})
    sym_spec.enable_symmetry()
    for engine, workers in (("bfs", 1), ("fast", 1), ("fast", 2)):
        r = run(sym_spec, engine=engine, workers=workers)
        assert r.holds and r.distinct_states == len(classes) < len(seen)


@pytest.mark.parametrize("config", [{"variant": "legacy"}, {"max_records": 1, "max_unclean_shutdowns": 2},
                                    {"variant": "hwm-on-maximal-isr"}, {"max_records": 1}])
def test_symmetry_keeps_the_verdict_and_the_shortest_trace_with_fewer_states(config):
    plain = run(load(config), engine="fast")
    spec = load(config)
    spec.enable_symmetry()
    reduced = [run(spec, engine=e, workers=w) for e, w in (("bfs", 1), ("fast", 1), ("fast", 2))]
    assert summary(reduced[1]) == summary(reduced[2]) == summary(reduced[0])
    r = reduced[0]
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
