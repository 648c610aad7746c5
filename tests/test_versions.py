"""Upgrades and downgrades (issue 41, docs/model.md "Upgrades and
downgrades"): the versions' start keys and their errors, the operator's
steps and their guards, each rule a version changes, and the shortest
counterexamples the checker finds across an upgrade and a downgrade."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from symmetry_classes import reachable

from cli import main
from modelcheck.config import ConfigError
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.replay import apply_step
from specs.kafka_elr import load
from specs.kafka_elr.types import NEW, NO_LEADER, OLD, bit

SMALL = {"max_records": 1}


def steps(result) -> list[str]:
    return [
        s.action + (f"({', '.join(f'{k}={v}' for k, v in s.args.items())})" if s.args else "") for s in result.trace[1:]
    ]


def replayed(config: dict, raw: list[dict]):
    """The spec and the states after each of `raw`'s steps (each enabled,
    with one successor; an `expect` is checked against the described state)."""
    spec = load(config)
    state, states = spec.init_states()[0], []
    for step in raw:
        args = {k: v for k, v in step.items() if k not in ("action", "expect")}
        found = {spec.encode(t): t for _a, t in apply_step(spec, state, step["action"], args)}
        assert len(found) == 1, (step, len(found))
        state = next(iter(found.values()))
        shown = spec.describe(state)
        assert {k: shown[k] for k in step.get("expect", {})} == step.get("expect", {}), step
        states.append(state)
    return spec, states


# ---- the start keys and their errors ----------------------------------------------------


@pytest.mark.parametrize(
    "given, message",
    [
        (
            {"elr_version": 1, "metadata_version": "old"},
            "config key 'elr_version': 1 with metadata_version = \"old\" (allowed: 0; ELRV_1 depends on the new "
            "metadata.version, Kafka's 4.0-IV1)",
        ),
        (
            {"software": "old"},
            'config key \'software\': a broker runs "old" software with metadata_version = "new" (allowed: every '
            'broker "new"; the controller refuses a metadata.version that a registered broker does not support)',
        ),
        (
            {"software": ["old", "new"], "elr_version": 0, "metadata_version": "old"},
            'config key \'software\': 2 entries for 3 brokers (allowed: "old", "new", or a list of them, one for '
            "each of the 3 brokers)",
        ),
        (
            {"variant": "legacy", "max_version_changes": 1},
            "config key 'max_version_changes': variant 'legacy' has no eligible.leader.replicas.version to change "
            "(allowed: the default; kip966 or kafka-4 with elr_version = 0 is a cluster with ELR off)",
        ),
        ({"elr_version": 2}, "config key 'elr_version': 2 is not allowed (allowed: 0 or 1)"),
        ({"elr_version": True}, "config key 'elr_version': true is not allowed (allowed: 0 or 1)"),
        ({"metadata_version": "4.0"}, "config key 'metadata_version': \"4.0\" is not allowed (allowed: old | new)"),
        ({"software": ["new", "newer", "new"]}, "config key 'software': "),
        (
            {"max_software_changes": -1},
            "config key 'max_software_changes': -1 is not allowed (allowed: an integer >= 0)",
        ),
        (
            {"elr_switch_when": "never"},
            "config key 'elr_switch_when': \"never\" is not allowed (allowed: any | at-min-isr)",
        ),
    ],
)
def test_a_start_kafka_cannot_be_in_is_refused_in_one_line(given, message):
    with pytest.raises(ConfigError) as e:
        load(given)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_the_cli_refuses_a_bad_start_with_exit_2_and_one_line():
    r = CliRunner().invoke(main, ["check", "--set", "elr_version=1", "--set", "metadata_version=old"])
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "config key 'elr_version'" in r.stderr


def test_the_starting_versions_are_the_initial_state_and_shown_only_where_not_the_newest():
    spec = load({"software": ["old", "new", "old"], "metadata_version": "old", "elr_version": 0})
    s = spec.init_states()[0]
    assert (s.metadata_version, s.elr_version, s.software) == (OLD, 0, (OLD, NEW, OLD))
    shown = spec.describe(s)
    assert (shown["metadata_version"], shown["elr_version"], shown["software"]) == ("old", 0, ["old", "new", "old"])
    default = load({})
    assert "software" not in default.describe(default.init_states()[0])


def test_the_defaults_add_no_state():
    """The versions are constants unless the config lets them change: the
    counts are those before issue 41 (tests/test_engines.py pins 8,302)."""
    assert len(reachable(load({"max_records": 1, "max_fences": 0}))) == 8302


# ---- the operator's steps ---------------------------------------------------------------


@pytest.mark.slow
def test_every_operator_step_changes_its_version_and_counter_only():
    spec = load(
        {
            "brokers": 2,
            "max_records": 0,
            "software": "old",
            "metadata_version": "old",
            "elr_version": 0,
            "max_version_changes": 4,
            "max_software_changes": 4,
            "max_clean_shutdowns": 2,
        }
    )
    fired = set()
    for s in reachable(spec).values():
        for name, args, t in spec.successors(s):
            if name in ("UpgradeMetadataVersion", "DowngradeMetadataVersion"):
                assert t.version_changes == s.version_changes + 1 and t.metadata_version != s.metadata_version
                fields = {"version_changes": 0, "metadata_version": 0, "elr": 0, "last_known_elr": 0}
                fields["last_known_leader"] = NO_LEADER
                assert t._replace(**fields) == s._replace(**fields)
                if name == "UpgradeMetadataVersion":
                    assert s.software == (NEW, NEW)  # the rolling upgrade first
                else:
                    assert s.elr_version == 0 and t.elr == t.last_known_elr == 0  # the fields are gone
                    assert t.last_known_leader == NO_LEADER
            elif name in ("UpgradeElrVersion", "DowngradeElrVersion"):
                assert t == s._replace(version_changes=s.version_changes + 1, elr_version=1 - s.elr_version)
                assert name == "DowngradeElrVersion" or s.metadata_version == NEW
            elif name in ("UpgradeSoftware", "DowngradeSoftware"):
                # a stopped broker starts on the other software: a StartBroker
                # whose registration is the new software's
                b = args["broker"]
                assert s.status[b] != 0 and t.software[b] != s.software[b] and t.status[b] == 0
                assert name == "UpgradeSoftware" or s.metadata_version == OLD
                assert t == spec.started(spec.on_software(s, b, t.software[b]), b)
            else:
                continue
            fired.add(name)
    assert fired == set(spec.VERSION_STEPS)


def test_kafka_4_has_no_metadata_version_downgrade():
    """4.0-IV1 changed the metadata: Kafka refuses a downgrade below it."""
    spec = load({"variant": "kafka-4", "max_version_changes": 1})
    assert "DowngradeMetadataVersion" not in spec.actions and "UpgradeElrVersion" in spec.actions


# ---- what the versions change -----------------------------------------------------------


@pytest.mark.parametrize("variant", ["kip966", "kafka-4"])
def test_with_the_feature_off_the_isr_never_empties(variant):
    """The last ISR member stays, fenced, with no leader ("the leader can
    only enable empty ISR after the new metadata version"; PCB:445-453)."""
    _spec, states = replayed(
        {"variant": variant, "elr_version": 0, **SMALL},
        [
            {"action": "ShrinkIsr", "brokers": [1, 2]},
            {"action": "CommitAlterPartition"},
            {"action": "FenceBroker", "broker": 0},
        ],
    )
    assert (states[-1].isr, states[-1].elr, states[-1].leader) == (bit(0), 0, NO_LEADER)


def test_kip966_ignores_the_elr_after_a_downgrade_and_removes_it_on_the_next_change():
    spec, states = replayed(
        {"elr_version": 1, "max_version_changes": 1, "max_fences": 2, **SMALL},
        [
            {"action": "ShrinkIsr", "brokers": [2]},
            {"action": "CommitAlterPartition", "expect": {"isr": [0, 1], "elr": []}},
            {"action": "FenceBroker", "broker": 1},
            {"action": "DowngradeElrVersion", "expect": {"isr": [0], "elr": [1]}},
        ],
    )
    s = states[-1]
    assert spec.elr_in_force(s) == 0 and s.elr == bit(1)  # kept, ignored
    # the next change (the leader fenced: ISR {0} stays, no leader) removes it
    _name, _args, t = next(x for x in spec.successors(s) if x[0] == "FenceBroker" and x[1]["broker"] == 0)
    assert (t.isr, t.elr, t.leader) == (bit(0), 0, NO_LEADER)


def test_kafka_4_still_elects_from_the_elr_with_the_feature_off_and_clears_it_on_any_build():
    """isValidNewLeader reads the partition's ELR while the feature is off
    (PCB:127, 322-326); maybeUpdateRecordElr clears it (PCB:513-516)."""
    config = {"variant": "kafka-4", "max_version_changes": 1, "max_fences": 2, **SMALL}
    start = [
        {"action": "ShrinkIsr", "brokers": [2]},
        {"action": "CommitAlterPartition"},
        {"action": "FenceBroker", "broker": 1},
        {"action": "FenceBroker", "broker": 0, "expect": {"isr": [], "elr": [0, 1], "leader": -1}},
        {"action": "DowngradeElrVersion"},
    ]
    _spec, states = replayed(config, [*start, {"action": "UnfenceBroker", "broker": 1, "leader": 1}])
    assert (states[-1].leader, states[-1].isr, states[-1].elr) == (1, bit(1), 0)
    # the trap 4.0.0 has: another broker unfenced first builds the leaderless
    # partition, elects nobody, and clears the ELR
    config["max_fences"] = 3
    _spec, states = replayed(
        config,
        [
            *start[:2],
            {"action": "FenceBroker", "broker": 2},  # out of the ISR already: no partition change
            *start[2:],
            {"action": "UnfenceBroker", "broker": 2, "expect": {"leader": -1, "isr": [], "elr": []}},
        ],
    )
    assert states[-1].last_known_elr == bit(0)  # LastKnownELR stays (PCB:496, 531)


@pytest.mark.parametrize("variant", ["kip966", "kafka-4"])
def test_old_software_advances_the_hwm_under_min_isr_and_registers_uncleanly(variant):
    spec = load({"variant": variant, "software": ["old", "new", "new"], "metadata_version": "old", "elr_version": 0})
    s = spec.init_states()[0]._replace(isr=bit(0))
    assert spec.hwm_may_advance(s, 0) and not spec.hwm_may_advance(s._replace(leader=1), 1)
    stopped = spec.stopped_cleanly(s, 0)
    assert stopped.clean_shutdown_epoch[0] == -1  # old software writes no epoch
    assert spec.stopped_cleanly(s, 1).clean_shutdown_epoch[1] == 1


def test_kip966_detects_clean_shutdowns_only_from_the_new_metadata_version():
    for mv, clean in (("old", False), ("new", True)):
        spec = load({"metadata_version": mv, "elr_version": 0})
        s = spec.stopped_cleanly(spec.init_states()[0], 1)._replace(fenced=bit(1))
        assert spec.registration_is_clean(s, 1) is clean
    k4 = load({"variant": "kafka-4", "metadata_version": "old", "elr_version": 0})
    s = k4.stopped_cleanly(k4.init_states()[0], 1)
    assert k4.registration_is_clean(s, 1)  # 4.0.0: the registration's version, not the metadata's


# ---- what the checker finds (docs/verdicts.md "Upgrades and downgrades") ----------------


def test_an_upgrade_starts_with_an_empty_elr_below_min_isr():
    r = run(load({"elr_version": 0, "max_version_changes": 1, **SMALL}), CheckOptions.of(engine="bfs"))
    assert r.invariant == "ElectableAtLeastMinIsr"
    assert steps(r) == ["ShrinkIsr(brokers=[1, 2])", "CommitAlterPartition", "UpgradeElrVersion"]


@pytest.mark.slow
def test_an_upgrade_leaves_a_partition_below_min_isr_unprotected():
    """The ELR starts empty: the replica shrunk out before the upgrade never
    enters it, and one crash after the upgrade loses its acked record."""
    r = run(
        load({"elr_version": 0, "max_version_changes": 1, "invariants": ["NoAckedLossUnderElr"], **SMALL}),
        CheckOptions.of(engine="bfs"),
    )
    assert r.invariant == "NoAckedLossUnderElr"
    assert steps(r) == [
        "FenceBroker(broker=0, leader=1)",
        "Produce(acks=all)",
        "Fetch(broker=2)",
        "AdvanceHwm",
        "ShrinkIsr(brokers=[2])",
        "CommitAlterPartition",
        "UpgradeElrVersion",
        "UncleanShutdown(broker=1, keep=0)",
    ]


@pytest.mark.slow
def test_kip966_a_downgrade_strands_records_only_the_elr_holds():
    """The KIP's controller ignores the ELR once the feature is off: the
    acked record only an ELR member holds is no longer cleanly electable
    (the crash happened with the ELR on, before the downgrade)."""
    r = run(
        load({"max_version_changes": 1, "invariants": ["NoAckedLossUnderElr"], **SMALL}), CheckOptions.of(engine="bfs")
    )
    assert steps(r) == [
        "FenceBroker(broker=0, leader=1)",
        "Produce(acks=all)",
        "Fetch(broker=2)",
        "AdvanceHwm",
        "ShrinkIsr(brokers=[2])",
        "CommitAlterPartition",
        "UncleanShutdown(broker=1, keep=0)",
        "DowngradeElrVersion",
    ]


@pytest.mark.slow
def test_kip966_a_broker_that_crashed_stays_in_the_ignored_elr_and_comes_back_with_the_feature():
    r = run(
        load({"max_version_changes": 2, "invariants": ["ElrHasDataToHwmUnderElr"], **SMALL}),
        CheckOptions.of(engine="bfs"),
    )
    assert steps(r) == [
        "FenceBroker(broker=0, leader=1)",
        "Produce(acks=1)",
        "Fetch(broker=2)",
        "AdvanceHwm",
        "UncleanShutdown(broker=1, keep=0)",
        "FenceBroker(broker=1, leader=2)",
        "DowngradeElrVersion",
        "StartBroker(broker=1)",
        "UpgradeElrVersion",
    ]


@pytest.mark.slow
def test_kafka_4_keeps_a_crashed_broker_in_the_elr_after_a_downgrade():
    """4.0.0 handles an unclean registration as a fence while the feature is
    off (RCM:1446-1458), and still elects from the ELR."""
    r = run(
        load({"variant": "kafka-4", "max_version_changes": 1, "invariants": ["ElrHasDataToHwmUnderElr"], **SMALL}),
        CheckOptions.of(engine="bfs"),
    )
    assert steps(r)[-2:] == ["DowngradeElrVersion", "StartBroker(broker=1)"]


@pytest.mark.parametrize(
    "config, invariant, length",
    [
        ({"variant": "elr-kept-on-downgrade", "max_version_changes": 2}, "ElrDisjointIsr", 6),
        (
            {"variant": "elr-populated-on-upgrade", "elr_version": 0, "max_version_changes": 1},
            "ElrHasDataToHwmUnderElr",
            7,
        ),
    ],
)
def test_the_plans_mutants_are_refuted(config, invariant, length):
    checked = ["ElrDisjointIsr", "ElrOnlyUnderMinIsr", "ElrHasDataToHwmUnderElr", "LogMatching"]
    r = run(load({**config, "invariants": checked, **SMALL}), CheckOptions.of(engine="bfs"))
    assert (r.invariant, len(r.trace) - 1) == (
        invariant + ("UnderElr" if invariant == "ElrHasDataToHwm" else ""),
        length,
    )


@pytest.mark.slow
def test_trusting_clean_shutdowns_before_the_metadata_version_changes_no_state():
    """Before the new metadata version the ELR is off, and a registration
    taken as unclean is handled as a fence: the mutant's state space is
    kip966's, state for state."""
    config = {
        "metadata_version": "old",
        "elr_version": 0,
        "max_version_changes": 2,
        "max_clean_shutdowns": 1,
        "max_fences": 0,
        "max_records": 0,
    }
    mutant = {**config, "variant": "detection-before-metadata-version"}
    assert set(reachable(load(config))) == set(reachable(load(mutant)))  # the states' encodings


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["kip966", "kafka-4"])
def test_turning_the_elr_on_only_at_min_isr_keeps_every_invariant(variant):
    """What an operator can check first (no partition under min ISR): the
    empty ELR is then the right one, and every invariant holds with one
    crash (docs/verdicts.md "upgrade: ..., only when no partition is
    under min ISR"); at any time, the window is open."""
    config = {"variant": variant, "elr_version": 0, "max_version_changes": 1, **SMALL}
    spec = load({**config, "elr_switch_when": "at-min-isr"})
    r = run(spec, CheckOptions.of(engine="fast", workers=1))
    assert r.holds and r.coverage["UpgradeElrVersion"] > 0 and r.goals["ElrMemberElected"]
    assert "ElectableAtLeastMinIsr" in spec.checked_invariants()
    assert r.distinct_states == {"kip966": 366068, "kafka-4": 297016}[variant]
    assert not run(load(config), CheckOptions.of(engine="fast", workers=1)).holds


def test_the_elr_is_turned_on_or_off_only_at_min_isr_when_asked():
    spec = load(
        {"brokers": 2, "max_records": 0, "elr_version": 0, "max_version_changes": 3, "elr_switch_when": "at-min-isr"}
    )
    switched = 0
    for s in reachable(spec).values():
        for name, _args, _t in spec.successors(s):
            if name in ("UpgradeElrVersion", "DowngradeElrVersion"):
                assert bin(s.isr).count("1") >= spec.eff_min_isr(s)
                switched += 1
    assert switched > 100
