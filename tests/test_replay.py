"""The shipped scenarios replay as the KIP tells them; broken ones fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.config import ConfigError, read_file
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from specs.kafka_elr import load

SCENARIOS = Path(__file__).parent.parent / "specs" / "scenarios"


def run(data: dict, where: str = "test"):
    config, raw = split_scenario(data, where)
    spec = load(config)
    return replay(spec, parse_steps(spec, raw, where))[1]


def run_file(name: str):
    return run(read_file(SCENARIOS / name), name)


def test_the_kip966_four_broker_example_replays_t0_to_t7():
    reports = run_file("kip966-elr-example.toml")
    assert len(reports) == 19 and all(r.ok for r in reports)
    after = {r.index: r.state for r in reports}
    assert (after[2]["isr"], after[2]["elr"]) == ([0, 1], [2, 3])  # T1
    assert (after[4]["isr"], after[4]["elr"]) == ([0, 1, 2], [])  # T2
    assert (after[6]["isr"], after[6]["elr"]) == ([0], [1, 2])  # T3
    assert (after[10]["isr"], after[10]["elr"]) == ([], [0, 1, 2, 3])  # T5
    assert (after[15]["leader"], after[15]["elr"]) == (1, [3])  # T6: b2 elected from ELR
    assert (after[19]["isr"], after[19]["elr"]) == ([0, 1, 2], [])  # T7


def test_motivation_legacy_reaches_global_data_loss():
    reports = run_file("motivation-legacy.toml")
    assert all(r.ok for r in reports)
    assert reports[6].violated == ["NoAckedLoss"]  # T2
    final = reports[-1].state
    assert final["acked"] == [1] and final["log"] == [[], [], []]


def test_motivation_kip966_elects_broker_1_from_the_elr():
    reports = run_file("motivation-kip966.toml")
    assert all(r.ok and not r.violated for r in reports)
    t3 = reports[9]
    assert t3.step.action == "UnfenceBroker" and t3.step.args == {"broker": 1, "leader": 1}
    assert t3.state["leader"] == 1 and t3.state["elr"] == [2]


def test_a_wrong_expectation_fails_that_step():
    reports = run(
        {
            "config": {},
            "steps": [
                {"action": "ShrinkIsr", "brokers": [2]},
                {"action": "CommitAlterPartition", "expect": {"isr": [0, 1], "elr": [1]}},
            ],
        }
    )
    assert reports[0].ok and not reports[1].ok
    assert reports[1].mismatches == [("elr", [1], [])]


def test_replay_stops_at_a_step_that_is_not_enabled():
    reports = run({"config": {}, "steps": [{"action": "CommitAlterPartition"}, {"action": "Produce", "acks": "all"}]})
    assert len(reports) == 1 and not reports[0].enabled and reports[0].error == "not enabled"


def test_an_unexpected_violation_fails_the_step():
    reports = run(
        {
            "config": {"variant": "legacy", "max_records": 1},
            "steps": [
                {"action": "Produce", "acks": "all"},
                {"action": "Fetch", "broker": 1},
                {"action": "Fetch", "broker": 2},
                {"action": "AdvanceHwm"},
                {"action": "ShrinkIsr", "brokers": [1, 2]},
                {"action": "CommitAlterPartition"},
                {"action": "UncleanShutdown", "broker": 0, "keep": 0},
            ],
        }
    )
    assert reports[-1].violated == ["NoAckedLoss"] and not reports[-1].ok


def test_an_underspecified_step_is_ambiguous():
    reports = run({"config": {}, "steps": [{"action": "FenceBroker", "broker": 0}]})
    assert reports[0].error.startswith("ambiguous: 2 instances match")


@pytest.mark.parametrize(
    "steps, message",
    [
        ([{"action": "Explode"}], "step 1: action 'Explode' does not exist"),
        ([{"acks": "all"}], 'step 1: needs action = "NAME"'),
        ([{"action": ["Produce"]}], "step 1: action ['Produce'] does not exist"),
        ([{"action": {"name": "Produce"}}], "step 1: action {'name': 'Produce'} does not exist"),
        ([{"action": "Produce", "expect": {"colour": 1}}], "'colour' is not a state variable"),
        ([{"action": "Produce", "expect": []}], "step 1: 'expect' must be a table of state variables"),
        (
            [{"action": "Produce", "violates": ["Nope"]}],
            "step 1: violates: 'Nope' is not an invariant this config checks (ConsistentRead, ",
        ),
        (
            [{"action": "Produce", "violates": [["NoAckedLoss"]]}],
            "step 1: violates: ['NoAckedLoss'] is not an invariant this config checks",
        ),
        ([{"action": "Produce", "violates": {"NoAckedLoss": True}}], "step 1: 'violates' must be a list of invariants"),
        ([{"action": "Produce", "violates": "NoAckedLoss"}], "step 1: 'violates' must be a list of invariants"),
        (
            [{"action": "Produce", "violates": ["NoAckedLoss", "NoAckedLoss"]}],
            "step 1: violates: 'NoAckedLoss' is listed twice",
        ),
        ([{"action": "Produce", "enabled": "no"}], "step 1: 'enabled' must be true or false"),
        (
            [{"action": "Produce", "enabled": False, "expect": {"leader": 0}}],
            "step 1: a step with enabled = false has no state to expect or violate",
        ),
    ],
)
def test_bad_steps_are_rejected_before_running(steps, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        run({"config": {}, "steps": steps})


def test_a_step_cannot_violate_a_temporal_property():
    """A step's `violates` is about its state: a property the config checks
    is refused there (it reached the invariants' table before, a KeyError)."""
    with pytest.raises(ConfigError, match=re.escape("step 1: violates: 'LeaderlessGetsLeader' is not an invariant")):
        run(
            {
                "config": {"properties": ["LeaderlessGetsLeader"]},
                "steps": [{"action": "Produce", "violates": ["LeaderlessGetsLeader"]}],
            }
        )


@pytest.mark.parametrize(
    "step, message",
    [
        ({"action": "Fetch", "brokr": 1}, "step 1: Fetch has no argument 'brokr' (its arguments: broker)"),
        (
            {"action": "CommitAlterPartition", "broker": 1},
            "step 1: CommitAlterPartition has no argument 'broker' (its arguments: none)",
        ),
        ({"action": "Fetch", "broker": 3}, "step 1: Fetch: broker = 3 is not a value it takes here (allowed: 0, 1, 2)"),
        ({"action": "Fetch", "broker": True}, "step 1: Fetch: broker = true is not a value it takes here"),
        ({"action": "Fetch", "broker": 1.0}, "step 1: Fetch: broker = 1.0 is not a value it takes here"),
        ({"action": "Fetch", "broker": [1]}, "step 1: Fetch: broker = [1] is not a value it takes here"),
        (
            {"action": "Produce", "acks": "most"},
            'step 1: Produce: acks = "most" is not a value it takes here (allowed: "1", "all")',
        ),
        ({"action": "FenceBroker", "broker": 0, "leader": -1}, "FenceBroker: leader = -1 is not a value"),
        (
            {"action": "ShrinkIsr", "brokers": [2, 1]},
            "ShrinkIsr: brokers = [2, 1] is not a value it takes here "
            "(allowed: [0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2])",
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"leader": "0"}},
            'step 1: expect leader = "0" is not a value of leader (Int)',
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"isr": {"a": 1}}},
            'step 1: expect isr = {"a": 1} is not a value of isr (Set(Int))',
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"log": [[1], [], []]}},
            "step 1: expect log = [[1], [], []] is not a value of log (Int -> Seq(<<Int, Int>>))",
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"pending_stale": 0}},
            "step 1: expect pending_stale = 0 is not a value of pending_stale (Bool)",
        ),
        (  # the right type, but no state is described so: a mismatch before
            {"action": "Produce", "acks": "all", "expect": {"isr": [2, 1, 0]}},
            "step 1: expect isr = [2, 1, 0] is not a value of isr "
            "(Set(Int): a set is written as a sorted list of distinct members)",
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"acked": [1, 1]}},
            "step 1: expect acked = [1, 1] is not a value of acked (Set(Int): a set is written as a sorted list",
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"hwm": [0, 0]}},
            "step 1: expect hwm = [0, 0] is not a value of hwm (Int -> Int: a value for each of the 3 brokers)",
        ),
        (
            {"action": "Produce", "acks": "all", "expect": {"log": [[[0, 1]], [], [], []]}},
            "step 1: expect log = [[[0, 1]], [], [], []] is not a value of log "
            "(Int -> Seq(<<Int, Int>>): a value for each of the 3 brokers)",
        ),
    ],
)
def test_an_argument_or_expectation_no_step_can_meet_is_bad_input(step, message):
    """Not "not enabled" (exit 1): no state of this config has such a step."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        run({"config": {}, "steps": [step]})


def test_an_argument_the_config_has_no_value_for_is_bad_input():
    with pytest.raises(
        ConfigError,
        match=re.escape("MetadataUpdate: broker = 0 is not a value it takes here (allowed: none in this config)"),
    ):
        run({"config": {}, "steps": [{"action": "MetadataUpdate", "broker": 0}]})


def test_a_violation_the_config_does_not_check_cannot_be_expected():
    with pytest.raises(
        ConfigError, match=re.escape("step 1: violates: 'NoAckedLoss' is not an invariant this config checks (TypeOK)")
    ):
        run({"config": {"invariants": ["TypeOK"]}, "steps": [{"action": "Produce", "violates": ["NoAckedLoss"]}]})


def test_a_scenario_needs_its_config_table():
    """Without [config] it would silently replay the default config."""
    with pytest.raises(ConfigError, match=re.escape("test: needs a [config] table (empty: the default config)")):
        run({"steps": [{"action": "Produce", "acks": "all"}]})
    assert run({"config": {}, "steps": [{"action": "Produce", "acks": "all"}]})[0].ok


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("*.toml")))
def test_every_shipped_scenario_replays(name):
    assert all(r.ok for r in run_file(name))


def test_a_scenario_needs_steps():
    with pytest.raises(ConfigError, match="'steps' must be a non-empty array"):
        run({"config": {}})


def test_a_step_may_say_that_no_instance_is_enabled():
    """`enabled = false` asserts a refusal (a Kafka test's "election not
    needed"): it passes where nothing is enabled, keeps the state, and the
    replay goes on; where an instance is enabled the step fails and replay stops."""
    refused = {"action": "CommitAlterPartition", "enabled": False}
    reports = run({"config": {}, "steps": [refused, {"action": "Produce", "acks": "all", "expect": {"produced": 1}}]})
    assert [r.ok for r in reports] == [True, True]
    assert not reports[0].enabled and reports[0].error is None and reports[0].state["produced"] == 0
    reports = run({"config": {}, "steps": [{"action": "Produce", "acks": "all", "enabled": False}, refused]})
    assert len(reports) == 1 and not reports[0].ok
    assert reports[0].error == "enabled (acks=all), expected not"


def test_a_scenario_may_say_what_it_reproduces():
    """The `[conformance]` table (tests/test_conformance.py reads it) is
    carried, not interpreted; anything but a table is bad input."""
    steps = [{"action": "Produce", "acks": "all"}]
    assert run({"config": {}, "conformance": {"test": "T.m", "line": 3}, "steps": steps})[0].ok
    with pytest.raises(ConfigError, match=re.escape("test: 'conformance' must be a table")):
        run({"config": {}, "conformance": "T.m", "steps": steps})
    with pytest.raises(
        ConfigError, match=re.escape("unknown top-level key 'kafka' (allowed: config, steps, description, conformance)")
    ):
        run({"config": {}, "kafka": {}, "steps": steps})


def test_a_fenced_broker_asking_to_shut_down_is_let_go_and_handled_as_fenced_again():
    """Issue 31: a fenced broker's controlled shutdown is granted at once
    (Kafka: SHUTDOWN_NOW, then handleBrokerFenced) and writes its
    CleanShutdownFile. Under kafka-4 the fenced last known leader elected by
    its unclean registration (KAFKA-19522) is then demoted into the ELR."""
    data = read_file(SCENARIOS / "kafka4-clean-restart-demotes-fenced-leader.toml")
    steps = data["steps"][:4] + [{"action": "CleanShutdown", "broker": 0}]
    reports = run({"config": data["config"], "steps": steps})
    assert all(r.ok for r in reports)
    last = reports[-1].state
    assert (last["leader"], last["isr"], last["elr"], last["leader_epoch"]) == (-1, [], [0], 3)
    assert (last["status"], last["clean_shutdown_epoch"]) == (["OFFLINE_CLEAN", "RUNNING"], [2, -1])
    # kip966: a fenced broker is outside the ISR, so only the file changes
    steps = [{"action": "FenceBroker", "broker": 2}, {"action": "CleanShutdown", "broker": 2}]
    reports = run({"config": {"min_isr": 3, "max_clean_shutdowns": 1}, "steps": steps})
    assert all(r.ok for r in reports)
    assert (reports[-1].state["elr"], reports[-1].state["clean_shutdown_epoch"]) == ([2], [-1, -1, 1])


def test_an_unsorted_set_expected_is_bad_input_not_a_failed_step(tmp_path):
    """It was a mismatch (exit 1) that no state could have met."""
    path = tmp_path / "s.toml"
    path.write_text('[config]\n[[steps]]\naction = "Produce"\nacks = "all"\nexpect = { isr = [1, 0, 2] }\n')
    r = CliRunner().invoke(main, ["replay", str(path)])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"error: {path}: step 1: expect isr = [1, 0, 2] is not a value of isr "
        "(Set(Int): a set is written as a sorted list of distinct members)\n"
    )
