"""Issue #14: the unclean recovery judged on its choice, RECOVERING carried
through leader changes, partition epochs, fenced brokers that keep
fetching, coverage per election type and reachability goals."""

from __future__ import annotations

from pathlib import Path

import pytest
from derived_specs import BalancedIgnoringLastKnownElr

from modelcheck.config import ConfigError, read_file
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from specs.kafka_elr import load
from specs.kafka_elr.types import NO_PROPOSAL, RECOVERED, RECOVERING, bit, mask_of

SCENARIOS = Path(__file__).parent.parent / "specs" / "scenarios"
# min ISR unclean shutdowns, one record, no network partition: the recovery runs
RECOVERY = {
    "max_records": 1,
    "max_fences": 0,
    "max_unclean_shutdowns": 2,
    "invariants": ["LeaderInIsr", "RecoveringIsrSingleton", "RecoveryKeepsLastKnownElrData", "NoneNeverElectsUnclean"],
}


def replay_file(name: str):
    config, raw = split_scenario(read_file(SCENARIOS / name), name)
    spec = load(config)
    return replay(spec, parse_steps(spec, raw, name))[1]


# ---- the recovery, judged on its choice ------------------------------------------------

# the compiled engine (kernels warmed by conftest; test_engines.py shows it
# reports what the reference engine does, goals included)


def test_balanced_holds_with_the_recovery_firing_and_its_goals_reached():
    r = run(load(RECOVERY), CheckOptions.of(engine="fast"))
    assert r.holds and r.coverage["UncleanRecovery"] > 0 and r.coverage["CompleteRecovery"] > 0
    assert (
        r.goals["RecoveryElects"] and r.goals["BalancedRecoveryWaitsForLastKnownElr"] and r.goals["RecoveryCompletes"]
    )


@pytest.mark.slow
def test_a_balanced_recovery_that_ignores_last_known_elr_is_caught():
    spec = BalancedIgnoringLastKnownElr(load(RECOVERY).config)
    r = run(spec, CheckOptions.of(engine="bfs"))
    assert (r.verdict, r.invariant) == ("violated", "RecoveryKeepsLastKnownElrData")
    assert r.trace[-1].state.last_known_elr and r.trace[-1].action in ("StartBroker", "UnfenceBroker")


@pytest.mark.parametrize(
    "variant,strategy,verdict",
    [
        ("balanced-fixed-responses", "balanced", "violated"),
        ("kip966", "aggressive", "violated"),
        ("kip966", "none", "holds"),
    ],
)
@pytest.mark.slow
def test_the_rejected_alternative_and_aggressive_fail_none_holds(variant, strategy, verdict):
    r = run(
        load({**RECOVERY, "variant": variant, "unclean_recovery_strategy": strategy}), CheckOptions.of(engine="fast")
    )
    assert r.verdict == verdict
    assert r.invariant == (None if verdict == "holds" else "RecoveryKeepsLastKnownElrData")
    if strategy == "none":
        assert r.coverage["UncleanRecovery"] == 0 and not r.goals["RecoveryElects"]


def test_none_never_elects_unclean_judges_the_state_not_the_code():
    spec = load({"unclean_recovery_strategy": "none"})
    s = spec.init_states()[0]
    assert spec.none_never_elects_unclean(s)
    assert not spec.none_never_elects_unclean(s._replace(leader_recovery=RECOVERING))
    assert spec.none_never_elects_unclean(s._replace(leader_recovery=RECOVERING, admin_elections=1))


@pytest.mark.slow
def test_the_goals_of_a_config_without_the_recovery_are_reported_not_reached():
    r = run(load({"max_records": 1, "max_fences": 0}), CheckOptions.of(engine="bfs"))
    assert r.holds and r.goals["ElrMemberElected"] and r.goals["UncleanShutdownDetected"]
    assert not r.goals["RecoveryElects"] and not r.goals["CleanShutdownRegistersClean"]
    violated = run(load({"variant": "legacy"}), CheckOptions.of(engine="bfs"))
    assert not violated.holds and violated.goals == {}  # reported for complete searches only


# ---- KIP-704: RECOVERING until the leader ends it -----------------------------------------


def test_a_recovering_leader_fenced_and_reelected_is_still_recovering():
    reports = replay_file("recovering-survives-reelection.toml")
    assert all(r.ok for r in reports)
    states = [r.state for r in reports[-3:]]
    assert [(s["leader"], s["leader_recovery"]) for s in states] == [
        (-1, "RECOVERING"),
        (0, "RECOVERING"),
        (0, "RECOVERED"),
    ]


def test_recovering_isr_singleton_allows_only_an_empty_or_single_isr_while_leaderless():
    spec = load({})
    s = spec.init_states()[0]._replace(leader=-1, leader_recovery=RECOVERING)
    assert spec.recovering_isr_singleton(s._replace(isr=0))
    assert spec.recovering_isr_singleton(s._replace(isr=bit(2)))
    assert not spec.recovering_isr_singleton(s._replace(isr=bit(1) | bit(2)))
    assert not spec.recovering_isr_singleton(s._replace(leader=0, isr=bit(1)))


# ---- partition epochs ------------------------------------------------------------------


def test_a_stale_alter_partition_is_rejected():
    reports = replay_file("stale-alter-partition-rejected.toml")
    assert all(r.ok for r in reports)
    assert reports[-1].state["isr"] == [0, 2] and reports[-1].state["pending_isr"] is None


def test_only_a_partition_change_makes_a_proposal_stale():
    spec = load({"max_fences": 2})
    s = spec.init_states()[0]
    ((_a, shrink),) = [(a, t) for a, t in spec.instances("ShrinkIsr", s) if a["brokers"] == [1]]
    assert shrink.pending_isr == bit(0) | bit(2) and not shrink.pending_stale
    # fencing ISR member 2 changes the ISR: a new partition epoch, the proposal is stale
    _a, fenced = next((a, t) for a, t in spec.instances("FenceBroker", shrink) if a["broker"] == 2)
    assert fenced.isr != shrink.isr and fenced.pending_stale
    committed = spec.commit_alter_partition(fenced)
    assert committed.isr == fenced.isr and committed.pending_isr == NO_PROPOSAL
    # a change outside the partition record (here only the fenced set) leaves it current
    assert not spec.recorded(shrink, shrink._replace(fenced=bit(1))).pending_stale


# ---- fence_cuts_data_plane ----------------------------------------------------------------


@pytest.mark.parametrize("cuts", [True, False])
def test_a_fenced_running_follower_fetches_only_when_fencing_does_not_cut_it_off(cuts):
    spec = load({"fence_cuts_data_plane": cuts})
    s = spec.init_states()[0]
    ((_a, s),) = [(a, t) for a, t in spec.instances("Produce", s) if a["acks"] == "1"]
    s = s._replace(fenced=bit(2), isr=mask_of([0, 1]))
    assert (spec.fetch(s, 2) is not None) == (not cuts)


def test_fence_cuts_data_plane_must_be_a_boolean():
    with pytest.raises(ConfigError, match="fence_cuts_data_plane"):
        load({"fence_cuts_data_plane": "no"})


# ---- coverage per election type ------------------------------------------------------------


def test_admin_elections_are_counted_per_type():
    kip, k4 = load({}), load({"variant": "kafka-4"})
    assert [x for x in kip.coverage_labels if x.startswith("Admin")] == [
        "AdminElectLeaders(PREFERRED)",
        "AdminElectLeaders(UNCLEAN)",
        "AdminElectLeaders(LONGEST_LOG_AGGRESSIVE)",
        "AdminElectLeaders(LONGEST_LOG_BALANCED)",
        "AdminElectLeaders(DESIGNATION)",
    ]
    assert [x for x in k4.coverage_labels if x.startswith("Admin")] == [
        "AdminElectLeaders(PREFERRED)",
        "AdminElectLeaders(UNCLEAN)",
    ]
    # both replicas crash: the partition is leaderless and every type has work
    r = run(
        load(
            {
                "brokers": 2,
                "max_records": 0,
                "max_fences": 0,
                "max_isr_shrinks": 0,
                "max_admin_elections": 1,
                "max_unclean_shutdowns": 2,
            }
        ),
        CheckOptions.of(engine="bfs"),
    )
    assert {x: n for x, n in r.coverage.items() if x.startswith("Admin")} == {
        "AdminElectLeaders(PREFERRED)": 7,
        "AdminElectLeaders(UNCLEAN)": 10,
        "AdminElectLeaders(LONGEST_LOG_AGGRESSIVE)": 12,
        "AdminElectLeaders(LONGEST_LOG_BALANCED)": 4,
        "AdminElectLeaders(DESIGNATION)": 12,
    }


# ---- kafka-4 at 4.0.0 ------------------------------------------------------------------------


def test_kafka4_leader_reports_recovered_with_its_first_isr_expansion():
    spec = load({"variant": "kafka-4"})
    s = spec.init_states()[0]._replace(leader_recovery=RECOVERING, isr=bit(0))
    ((_a, proposal),) = [(a, t) for a, t in spec.instances("ExpandIsr", s) if a["brokers"] == [1]]
    t = spec.commit_alter_partition(proposal)
    assert t.isr == bit(0) | bit(1) and t.leader_recovery == RECOVERED
    assert "CompleteRecovery" not in spec.actions


def test_kafka4_min_isr_change_makes_a_proposal_in_flight_stale():
    spec = load({"variant": "kafka-4", "max_min_isr_changes": 1})
    s = spec.init_states()[0]._replace(elr=bit(2), isr=bit(0) | bit(1), pending_isr=bit(0), pending_epochs=(1, 0, 0))
    t = spec.alter_min_isr(s, 3)
    assert t.elr == 0 and t.pending_stale
