"""The engines agree: the fast engine (the spec compiled, one or two
threads, stopped and resumed from a checkpoint) reports the reference
engine's verdict, counts, coverage and trace on every variant and on
random configs; symmetry reduction keeps the verdict and the shortest
trace length with fewer states. (tests/test_spark.py adds Spark.)"""

from __future__ import annotations

import tempfile
from itertools import permutations

import pytest
from derived_specs import LeaderlessKip966
from hypothesis import HealthCheck, given, settings
from resuming import stopped_and_resumed
from strategies import SMALL, small_enough
from symmetry_classes import class_of, reachable, rename

from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from specs.kafka_elr import VARIANTS, load
from specs.kafka_elr.types import permute

CONFIGS = [
    {"max_records": 1, "max_fences": 0},  # holds, 8,302 states
    {"brokers": 2, "min_isr": 2},  # holds, 41,381 states
    {"brokers": 4, "min_isr": 3, "max_records": 1, "max_fences": 0, "max_isr_shrinks": 0},
    {"variant": "legacy"},  # NoAckedLoss, 7 steps
    {"variant": "hwm-on-maximal-isr"},  # ElrHasDataToHwm, 6 steps
    {"variant": "kafka-4", "max_unclean_shutdowns": 2, "invariants": ["LeaderUnfenced"]},
    {"max_records": 1, "max_fences": 0, "metadata": "propagated"},  # holds, 14,530 states
    {
        "variant": "kafka-4",
        "max_records": 1,
        "max_unclean_shutdowns": 0,
        "max_min_isr_changes": 1,
        "metadata": "propagated",
        "invariants": ["ElrHasDataToHwm"],
    },  # KAFKA-16540, 6 steps
    {"min_isr": 5, "max_records": 0, "invariants": ["ElectableAtLeastMinIsr"]},  # holds: min(5, N)
    # a rolling upgrade from old software, then the feature on and off (issue 41)
    {
        "max_records": 1,
        "max_fences": 0,
        "software": ["new", "old", "new"],
        "metadata_version": "old",
        "elr_version": 0,
        "max_software_changes": 1,
        "max_clean_shutdowns": 1,
        "max_version_changes": 3,
    },
    {"variant": "kafka-4", "max_records": 1, "max_version_changes": 2, "invariants": ["NoAckedLossUnderElr"]},
    # the Balanced unclean recovery runs (min ISR unclean shutdowns), judged on its choice
    {
        "max_records": 1,
        "max_fences": 0,
        "max_unclean_shutdowns": 2,
        "invariants": ["LeaderInIsr", "RecoveringIsrSingleton", "RecoveryKeepsLastKnownElrData"],
    },
] + [  # every variant, with every action its config can enable
    {
        "variant": v,
        "max_records": 1,
        "max_unclean_shutdowns": 2,
        "max_clean_shutdowns": 1,
        "max_min_isr_changes": 1,
        "max_admin_elections": 1,
        "max_fences": 0,
    }
    for v in sorted(VARIANTS)
]


def summary(r):
    return (
        r.verdict,
        r.invariant,
        r.distinct_states,
        r.generated_states,
        r.depth,
        r.coverage,
        r.goals,
        [(s.action, s.args) for s in r.trace],
    )


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.slow
def test_the_compiled_engine_reproduces_the_reference_exactly(config):
    spec = load(config)
    reference = summary(run(spec, CheckOptions.of(engine="bfs")))
    one = run(spec, CheckOptions.of(engine="fast", workers=1))
    assert one.run_info["kernel"] == "compiled"
    assert summary(one) == reference
    assert summary(run(spec, CheckOptions.of(engine="fast", workers=2))) == reference


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(SMALL)
@pytest.mark.slow
def test_random_configs_give_the_same_answers_on_every_engine(config):
    """Random small configs of every variant (3 brokers, so each variant's
    kernel is compiled once; at most SMALL_STATES states, so that the
    reference engine's share stays small): verdict, counts, coverage and
    trace equal."""
    spec = load(config)
    one = summary(small_enough(spec, CheckOptions.of(engine="fast", workers=1)))
    reference = summary(run(spec, CheckOptions.of(engine="bfs")))
    assert one == reference
    assert summary(run(spec, CheckOptions.of(engine="fast", workers=2))) == reference
    with tempfile.TemporaryDirectory() as tmp:  # stopped after its 3rd level, resumed on one worker
        assert summary(stopped_and_resumed(spec, "fast", tmp, 3)) == reference


@pytest.mark.slow
def test_the_legacy_default_counterexample_is_the_same_on_every_engine():
    spec = load({"variant": "legacy"})
    results = [run(spec, CheckOptions.of(engine=e, workers=w)) for e, w in (("bfs", 1), ("fast", 1), ("fast", 2))]
    assert {(r.invariant, r.distinct_states, len(r.trace) - 1) for r in results} == {("NoAckedLoss", 16590, 7)}


@pytest.mark.slow
def test_a_violating_initial_state_is_reported_at_depth_1():
    spec = LeaderlessKip966(load({"max_records": 1}).config)
    reference = summary(run(spec, CheckOptions.of(engine="bfs")))
    assert reference == ("violated", "Leaderless", 1, 1, 1, dict.fromkeys(spec.coverage_labels, 0), {}, [(None, {})])
    assert summary(run(spec, CheckOptions.of(engine="fast", workers=1))) == reference
    assert summary(run(spec, CheckOptions.of(engine="fast", workers=2))) == reference


@pytest.mark.slow
def test_memory_a_state_visited_set_8_or_16_bytes_links_6():
    """Exact keys take 16 bytes a state when a packed state needs two
    words, fingerprints 8; a parent link 6 (row and successor index)."""
    exact = run(load({"max_records": 1}), CheckOptions.of(engine="fast", workers=2))
    assert exact.run_info["state_keys"] == "exact" and exact.run_info["state_bits"] > 64
    assert exact.memory["visited_bytes"] == 16 * exact.distinct_states
    assert exact.memory["links_bytes"] == 6 * exact.distinct_states
    fingerprinted = run(load({"max_fences": 0}), CheckOptions.of(engine="fast", workers=2))
    assert fingerprinted.holds
    assert fingerprinted.run_info["state_keys"] == "fingerprint" and fingerprinted.run_info["state_bits"] > 128
    assert fingerprinted.run_info["fingerprint_bits"] == 64
    assert 0 < fingerprinted.run_info["collision_probability"] < 1e-6
    assert fingerprinted.memory["visited_bytes"] == 8 * fingerprinted.distinct_states
    wide = run(load({"max_fences": 0}), CheckOptions.of(engine="fast", workers=2, fingerprint_bits=128))
    assert summary(wide) == summary(fingerprinted) and wide.run_info["fingerprint_bits"] == 128
    assert wide.memory["visited_bytes"] == 16 * wide.distinct_states
    assert wide.run_info["collision_probability"] < 1e-20


# ---- symmetry over the brokers -------------------------------------------------------


@pytest.mark.slow
def test_the_symmetric_form_identifies_exactly_the_renamed_states():
    spec = load({"max_records": 1, "max_fences": 0, "brokers": 4})
    sym = load({"max_records": 1, "max_fences": 0, "brokers": 4})
    sym.enable_symmetry()
    states, frontier = [], spec.init_states()
    for _depth in range(6):
        frontier = [t for s in frontier for _n, _a, t in spec.successors(s)]
        states += frontier[::7]
    assert len(states) > 1000
    for s in states[::20]:
        assert len({sym.canonical(rename(s, p)) for p in permutations(range(4))}) == 1
    pairs = {(class_of(spec, s), sym.canonical(s)) for s in states}
    assert len(pairs) == len({c for c, _ in pairs}) == len({f for _, f in pairs}) < len(states)


@pytest.mark.parametrize(
    "config, states",
    [
        ({"max_records": 0, "metadata": "propagated"}, 12782),
        (
            {"max_records": 1, "max_fences": 0, "max_reassignments": 1, "spare_brokers": 1, "max_unclean_shutdowns": 0},
            9175,
        ),
        ({"max_records": 1, "max_fences": 0}, 8302),
        # brokers on different software, the feature turned on and off
        (
            {
                "max_records": 0,
                "max_fences": 0,
                "max_clean_shutdowns": 1,
                "software": ["old", "new", "new"],
                "metadata_version": "old",
                "elr_version": 0,
                "max_software_changes": 1,
                "max_version_changes": 3,
                "variant": "elr-before-software",  # the ELR on with old software too
            },
            73532,
        ),
    ],
)
@pytest.mark.slow
def test_permute_renames_every_broker_the_oracle_renames(config, states):
    """The spec's `permute` (generated from its VARIABLES table) against
    the test's own renaming, variable by variable, under every renaming
    of every reachable state."""
    spec = load(config)
    seen = list(reachable(spec).values())
    assert len(seen) == states
    for s in seen:
        for p in permutations(range(spec.n)):
            assert permute(s, p) == rename(s, p)


@pytest.mark.slow
def test_symmetry_explores_exactly_one_state_per_class():
    """The reduced count equals the number of classes of the full state
    space under renaming the brokers (all N!, broker 0 too), counted by
    brute force; the states those classes hold are exactly the states
    reachable from the initial states and their renamings."""
    spec = load({"max_records": 1, "max_fences": 0})
    seen = reachable(spec)
    classes = {class_of(spec, s) for s in seen.values()}
    everywhere = reachable(spec, renamed=True)
    assert len(seen) == 8302 and len({class_of(spec, s) for s in everywhere.values()}) == len(classes)
    sym_spec = load({"max_records": 1, "max_fences": 0})
    sym_spec.enable_symmetry()
    for engine, workers in (("bfs", 1), ("fast", 1), ("fast", 2)):
        r = run(sym_spec, CheckOptions.of(engine=engine, workers=workers))
        assert r.holds and r.distinct_states == len(classes) < len(seen)
        assert r.run_info["symmetry"]["classes"] == len(classes)
        assert r.run_info["symmetry"]["class_states"] == len(everywhere) > len(seen)


@pytest.mark.slow
def test_symmetry_is_exact_with_propagated_metadata():
    """Brokers' views name brokers (the leader they follow, the ISR a leader
    sees): the sorted form still keeps one state per class."""
    spec = load({"max_records": 0, "metadata": "propagated"})
    seen = reachable(spec)
    classes = {class_of(spec, s) for s in seen.values()}
    sym_spec = load({"max_records": 0, "metadata": "propagated"})
    sym_spec.enable_symmetry()
    reduced = [run(sym_spec, CheckOptions.of(engine=e, workers=w)) for e, w in (("bfs", 1), ("fast", 2))]
    assert summary(reduced[0]) == summary(reduced[1])
    assert len(seen) == 12782 and reduced[0].distinct_states == len(classes)
    states = len(reachable(spec, renamed=True))
    assert reduced[0].run_info["symmetry"] == reduced[1].run_info["symmetry"]
    assert reduced[0].run_info["symmetry"]["class_states"] == states >= len(seen)


@pytest.mark.parametrize(
    "config",
    [
        {"variant": "legacy"},
        {"max_records": 1, "max_unclean_shutdowns": 2},
        {"variant": "hwm-on-maximal-isr"},
        {"max_records": 1},
    ],
)
@pytest.mark.slow
def test_symmetry_keeps_the_verdict_and_the_shortest_trace_with_fewer_states(config):
    plain = run(load(config), CheckOptions.of(engine="fast"))
    spec = load(config)
    spec.enable_symmetry()
    reduced = [run(spec, CheckOptions.of(engine=e, workers=w)) for e, w in (("bfs", 1), ("fast", 1), ("fast", 2))]
    assert summary(reduced[1]) == summary(reduced[2]) == summary(reduced[0])
    assert reduced[0].run_info["symmetry"] == reduced[1].run_info["symmetry"] == reduced[2].run_info["symmetry"]
    r = reduced[0]
    assert (r.verdict, r.invariant, len(r.trace)) == (plain.verdict, plain.invariant, len(plain.trace))
    assert r.distinct_states < plain.distinct_states


@pytest.mark.parametrize(
    "sets, why",
    [
        (["variant=kafka-4"], "kafka-4 elects the first valid replica in assignment order"),
        (["max_admin_elections=1"], "admin UNCLEAN elections pick the first live replica"),
    ],
)
def test_symmetry_is_refused_where_brokers_are_told_apart(sets, why):
    from click.testing import CliRunner

    from cli import main

    r = CliRunner().invoke(main, ["check", "--symmetry", *(x for s in sets for x in ("--set", s))])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error: --symmetry: ") and why in r.stderr and r.stderr.count("\n") == 1
