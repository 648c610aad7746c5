"""`modelcheck refines`: refinement verdicts between the variants (docs/verdicts.md
"Refinement"), each failure's shortest trace pinned, and that the check can
fail: with a deliberately wrong mapping, at a step and at the initial state."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.config import ConfigError
from modelcheck.declare import action
from modelcheck.engine.refinement.refine import check, replay
from modelcheck.engine.refinement.refine_fast import run as run_engine
from modelcheck.refinement import Image, Refinement, identity, mapping_for
from modelcheck.result import Step
from modelcheck.spec import Spec
from modelcheck.trace import TraceError
from specs.kafka_elr import load_as
from specs.kafka_elr.types import NO_LEADER

TWO = {"brokers": 2, "max_records": 1}  # the smallest config where every failure below shows


def image(impl: str, abstract: str, config: dict, mapping: Refinement | None = None) -> Image:
    i, a = load_as(impl, config, "here"), load_as(abstract, config, "here")
    return Image(i, a, mapping or mapping_for(i, abstract, None))


def steps(result) -> list[str]:
    return [f"{s.action}{s.args or ''}" for s in result.trace[1:]]


@pytest.mark.parametrize(
    "impl, abstract, config, trace",
    [
        # kip966 records the ELR member that shut down uncleanly in LastKnownELR; 4.0 does not
        (
            "kafka-4",
            "kip966",
            {},
            [
                "FenceBroker{'broker': 0, 'leader': 1}",
                "UncleanShutdown{'broker': 0, 'keep': 0}",
                "StartBroker{'broker': 0}",
            ],
        ),
        # without unclean shutdowns: 4.0's auto leader rebalance moves leadership back to replica 0
        (
            "kafka-4",
            "kip966",
            {"max_unclean_shutdowns": 0},
            [
                "FenceBroker{'broker': 0, 'leader': 1}",
                "UnfenceBroker{'broker': 0}",
                "ExpandIsr{'brokers': [0]}",
                "CommitAlterPartition",
                "ElectLeader{'leader': 0}",
            ],
        ),
        # fencing the last ISR member: kip966 empties the ISR, legacy keeps it
        (
            "kip966",
            "legacy",
            {},
            [
                "FenceBroker{'broker': 0, 'leader': 1}",
                "UncleanShutdown{'broker': 1, 'keep': 0}",
                "FenceBroker{'broker': 1}",
            ],
        ),
        (
            "hwm-ignores-min-isr",
            "kip966",
            {},
            ["FenceBroker{'broker': 0, 'leader': 1}", "Produce{'acks': '1'}", "AdvanceHwm"],
        ),
        (
            "no-unclean-detection",
            "kip966",
            {},
            [
                "FenceBroker{'broker': 0, 'leader': 1}",
                "UncleanShutdown{'broker': 0, 'keep': 0}",
                "StartBroker{'broker': 0}",
            ],
        ),
        (
            "reassignment-ignores-min-isr",
            "kip966",
            {"spare_brokers": 1, "max_reassignments": 1},
            ["FenceBroker{'broker': 0, 'leader': 1}", "ReassignPartition{'replicas': [0, 2]}", "CancelReassignment"],
        ),
        (
            "kip966-elr-only",
            "kip966",
            {"unclean_leader_election": True},
            [
                "FenceBroker{'broker': 0, 'leader': 1}",
                "UncleanShutdown{'broker': 1, 'keep': 0}",
                "FenceBroker{'broker': 1}",
                "StartBroker{'broker': 1}",
                "UnfenceBroker{'broker': 1, 'leader': 1}",
            ],
        ),
    ],
)
def test_a_variant_that_does_not_refine_another_fails_at_a_pinned_shortest_step(impl, abstract, config, trace):
    result = check(image(impl, abstract, TWO | config))
    assert result.verdict == "violated" and steps(result) == trace
    assert result.matched[-1] == (False, []) and all(m[1] for m in result.matched[:-1])
    assert result.depth == len(trace) + 1


@pytest.mark.slow
def test_the_maximal_isr_mutant_advances_the_hwm_where_kip966_does_not():
    result = check(image("hwm-on-maximal-isr", "kip966", TWO))
    assert steps(result) == [
        "FenceBroker{'broker': 0, 'leader': 1}",
        "Produce{'acks': '1'}",
        "UnfenceBroker{'broker': 0}",
        "ExpandIsr{'brokers': [0]}",
        "Fetch{'broker': 0}",
        "AdvanceHwm",
    ]


def test_kafka4_reads_its_last_known_leader_as_kip966s_and_its_closest_step_names_the_difference():
    """The first step kip966 does not allow differs from kip966's own
    StartBroker in LastKnownELR only: kip966 records the ELR member's
    unclean shutdown there, 4.0 records nothing."""
    result = check(image("kafka-4", "kip966", TWO))
    near = result.closest[0]
    assert (near.action, near.args, near.differs) == ("StartBroker", {"broker": 0}, ("last_known_elr",))
    assert result.images[1].last_known_leader == NO_LEADER and result.images[-1].last_known_elr == 0
    spec = load_as("kafka-4", TWO, "here")
    fenced_last = spec.init_states()[0]._replace(last_known_elr=0b10)
    assert (
        spec.last_known_leader_kept(fenced_last) == 1
        and spec.last_known_leader_kept(fenced_last._replace(last_known_elr=0)) == NO_LEADER
    )


@pytest.mark.slow
def test_kip966_refines_the_mutants_that_only_drop_its_hwm_rule():
    """The HWM rule only removes behaviours: every kip966 step is one of the
    mutant without it."""
    result = check(image("kip966", "hwm-ignores-min-isr", TWO))
    assert (result.verdict, result.states, result.transitions, result.stutters) == ("holds", 4781, 9198, 0)


@pytest.mark.slow
def test_the_rejected_fixed_responses_alternative_elects_where_kip966_waits():
    """Balanced recovery with fixed responses elects once min ISR replicas
    answered; kip966 waits for the LastKnownELR member (broker 2 here)."""
    config = {"max_records": 1, "max_unclean_shutdowns": 2, "max_isr_shrinks": 0}
    result = check(image("balanced-fixed-responses", "kip966", config))
    assert steps(result)[-3:] == [
        "UnfenceBroker{'broker': 0}",
        "UnfenceBroker{'broker': 1}",
        "UncleanRecovery{'leader': 0}",
    ]
    assert (len(result.trace) - 1, result.states) == (10, 38879)


def test_a_wrong_mapping_fails_at_the_first_step_it_misreads():
    """fences read as 0: kip966's FenceBroker counts the fence, the image does not."""
    wrong = Refinement("fences-forgotten", "kip966", "a mapping that forgets the fence counter", constant={"fences": 0})
    result = check(image("kip966", "kip966", TWO, wrong))
    assert steps(result) == ["FenceBroker{'broker': 0, 'leader': 1}"]
    assert (result.closest[0].action, result.closest[0].differs) == ("FenceBroker", ("fences",))


def test_an_initial_state_whose_image_is_not_initial_fails_with_no_step():
    wrong = Refinement("led-by-1", "kip966", "a mapping that names broker 1 leader", constant={"leader": 1})
    result = check(image("kip966", "kip966", TWO, wrong))
    assert result.verdict == "violated" and len(result.trace) == 1 and result.matched == []
    assert [(n.action, n.differs) for n in result.closest] == [(None, ("leader",))]


class XY(NamedTuple):
    x: int
    y: int


class OnlyX(Spec):
    """x counts to 2; y stays 0."""

    abstract = False
    state_type = XY

    def init_states(self):
        return [XY(0, 0)]

    @action("IncX")
    def inc_x(self, s):
        return s._replace(x=s.x + 1) if s.x < 2 else None


class Both(OnlyX):
    """x and y count to 2, each on its own."""

    @action("IncY")
    def inc_y(self, s):
        return s._replace(y=s.y + 1) if s.y < 2 else None


def test_a_step_whose_image_does_not_change_is_a_stutter():
    """Both refines OnlyX with y projected away: its IncY steps stutter;
    read as it is, y's first step is no step of OnlyX."""
    projected = Refinement("y-away", "only-x", "", constant={"y": 0})
    result = check(Image(Both(), OnlyX(), projected))
    assert (result.verdict, result.states, result.transitions, result.stutters, result.depth) == ("holds", 9, 12, 6, 5)
    result = check(Image(Both(), OnlyX(), identity("only-x")))
    assert [s.action for s in result.trace] == [None, "IncY"] and result.matched == [(False, [])]


def test_replay_refuses_a_trace_that_is_not_a_failure():
    im = image("kip966", "kip966", TWO)
    init = im.impl.init_states()[0]
    name, args, nxt = im.impl.successors(init)[0]
    with pytest.raises(TraceError, match="the image of step 1 is allowed"):
        replay(im.impl, im.abstract, im, [Step(None, {}, init), Step(name, args, nxt)])
    with pytest.raises(TraceError, match="image is an initial state"):
        replay(im.impl, im.abstract, im, [Step(None, {}, init)])


def test_a_mapping_must_name_variables_and_methods_that_exist():
    i, a = load_as("kafka-4", TWO, "here"), load_as("kip966", TWO, "here")
    with pytest.raises(ConfigError, match="'lkl' is not a variable of the abstract spec"):
        Image(i, a, Refinement("x", "kip966", "", constant={"lkl": 0}))
    with pytest.raises(ConfigError, match="the implementation has no method 'nope'"):
        Image(i, a, Refinement("x", "kip966", "", computed={"leader": "nope"}))
    assert mapping_for(i, "kip966", None).name == "last-known-leader"
    assert mapping_for(i, "legacy", None) == identity("legacy")


def run(*args: str):
    return CliRunner().invoke(main, ["refines", *args])


def test_the_command_prints_the_trace_its_image_and_the_closest_steps():
    r = run("kafka-4", "kip966", "--set", "brokers=2", "--set", "max_records=1", "-q", "--engine", "bfs")
    assert r.exit_code == 1, r.output
    assert "violated: the image of step 3, StartBroker(broker=0), is no kip966 step" in r.stdout
    assert "its image in kip966" in r.stdout and "NOT ALLOWED" in r.stdout
    assert (
        "StartBroker(broker=0): differs in 1 variable(s): last_known_elr={0} where the image has last_known_elr={}"
        in r.stdout
    )


@pytest.mark.slow
def test_the_command_says_holds_with_its_counts():
    r = run("kip966", "hwm-ignores-min-isr", "--set", "brokers=2", "--set", "max_records=1", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["verdict"], out["states"], out["transitions"], out["stutters"], out["mapping"]["name"]) == (
        "holds",
        4781,
        9198,
        0,
        "identity",
    )
    r = run("kip966", "hwm-ignores-min-isr", "--set", "brokers=2", "--set", "max_records=1", "-q")
    said = " ".join(r.stdout.split())
    assert (
        r.exit_code == 0
        and (
            "holds: kip966 refines hwm-ignores-min-isr: the image of every initial state is initial, and each of "
            "9,198 transitions is a hwm-ignores-min-isr step or a stutter (0 stutters)"
        )
        in said
    )


def test_the_command_in_json():
    r = run("kip966", "legacy", "--set", "brokers=2", "--set", "max_records=1", "--json", "--engine", "bfs")
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["mapping"]["variables"] == {
        "elr": "= 0",
        "last_known_elr": "= 0",
        "last_known_leader": "= -1",
    }
    assert [t["abstract_step"] for t in out["trace"]] == [
        None,
        "FenceBroker(broker=0, leader=1)",
        "UncleanShutdown(broker=1, keep=0)",
        "NOT ALLOWED",
    ]
    assert out["closest"][0]["action"] == "FenceBroker" and out["closest"][0]["differs"] == ["isr"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["foo", "kip966"], "IMPL foo: config key 'variant': \"foo\" is not allowed (allowed: kip966 | legacy"),
        (
            ["kafka-4", "kip966", "--set", "controlled_shutdown=staged"],
            "ABSTRACT kip966: config key 'controlled_shutdown': \"staged\" with variant 'kip966' is not modelled",
        ),
        (
            ["kafka-4", "kip966", "--mapping", "nope"],
            "--mapping 'nope': Kafka4 declares no such mapping to 'kip966' (allowed: identity, last-known-leader)",
        ),
        (
            ["kafka-4", "kip966", "--set", "variant=legacy"],
            "IMPL kafka-4: config key 'variant': the variants are named on the command line (IMPL ABSTRACT)",
        ),
        (["kafka-4"], "Missing argument 'ABSTRACT'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and message in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "impl, abstract",
    [
        ("kip966", "hwm-ignores-min-isr"),  # holds; identity on packed rows
        ("hwm-ignores-min-isr", "kip966"),
        ("kafka-4", "kip966"),  # a computed variable: images mapped in Python, packed for kip966's kernel
        ("kip966", "legacy"),  # constants
    ],
)
def test_the_compiled_check_finds_what_the_reference_finds(impl, abstract):
    im = image(impl, abstract, TWO)
    fast, reference = run_engine(im, "fast"), run_engine(im, "bfs")
    assert fast.run_info["kernel"] == "compiled" and reference.run_info["kernel"] == "interpreted"
    assert (fast.verdict, fast.states, fast.transitions, fast.stutters, fast.depth) == (
        reference.verdict,
        reference.states,
        reference.transitions,
        reference.stutters,
        reference.depth,
    )
    assert fast.trace == reference.trace and fast.closest == reference.closest and fast.matched == reference.matched


def test_a_spec_without_a_kernel_is_checked_interpreted_and_says_why():
    result = run_engine(Image(Both(), OnlyX(), Refinement("y-away", "only-x", "", constant={"y": 0})), "fast")
    assert result.holds and result.run_info["kernel"].startswith("interpreted: ")
