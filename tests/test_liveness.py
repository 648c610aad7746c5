"""Temporal properties: verdicts under fairness, lassos re-validated by
replay, the engines agreeing, and the outputs that carry a lasso.

The toy arbiter (tests/liveness_specs.py) grants a request only while its
clock bit is 1, so each verdict is known by hand:
- RequestGranted (weak Tick, strong Grant): the clock keeps ticking, Grant
  is enabled infinitely often, so strong fairness takes it: holds.
- RequestGrantedWeakly (weak Tick and Grant): ticking disables Grant every
  other step, so weak fairness never forces it: violated by ticking for ever.
- RequestGrantedUnfairly (no fairness): violated by stopping after Request.
- GrantedOften ([]<>granted, fair to all): holds.
- EventuallyIdle (<>[]not requested, fair to all): Request is weakly fair,
  so requests come back for ever: violated by a loop through a request.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from liveness_specs import Arbiter, ArbiterState, Chain
from resuming import stopped_and_resumed

from cli import main
from modelcheck.config import ConfigError
from modelcheck.engine import run
from modelcheck.engine.liveness import Recorder
from modelcheck.engine.options import CheckOptions
from modelcheck.formats.itf import from_itf, to_itf
from modelcheck.lifetime import Stopped
from modelcheck.memory import anon_rss
from modelcheck.result import Step
from modelcheck.trace import TraceError, validate_lasso
from specs.kafka_elr import load

HOLDS = {"RequestGranted", "GrantedOften"}


def lasso(r) -> list[tuple]:
    return [(s.action, tuple(s.state)) for s in r.trace]


@pytest.mark.parametrize("prop", list(Arbiter.properties))
def test_toy_verdicts_and_engines_agree(prop):
    results = [
        run(Arbiter((prop,)), CheckOptions.of(engine=e, workers=w)) for e, w in (("bfs", 1), ("fast", 1), ("fast", 2))
    ]
    reference = results[0]
    assert reference.verdict == ("holds" if prop in HOLDS else "violated")
    assert reference.distinct_states == 6 and reference.triggers[prop] > 0
    for r in results[1:]:
        assert (r.verdict, r.invariant, r.loop, lasso(r), r.triggers) == (
            reference.verdict,
            reference.invariant,
            reference.loop,
            lasso(reference),
            reference.triggers,
        )
    if prop not in HOLDS:
        assert reference.invariant == prop
        validate_lasso(Arbiter((prop,)), reference.trace, reference.loop, prop)


def test_toy_lassos_are_the_expected_behaviours():
    unfair = run(Arbiter(("RequestGrantedUnfairly",)), CheckOptions.of(engine="bfs"))
    assert (lasso(unfair), unfair.loop) == ([(None, (0, 0, 0)), ("Request", (0, 1, 0))], 1)  # stops there
    weak = run(Arbiter(("RequestGrantedWeakly",)), CheckOptions.of(engine="bfs"))
    assert lasso(weak) == [(None, (0, 0, 0)), ("Request", (0, 1, 0)), ("Tick", (1, 1, 0)), ("Tick", (0, 1, 0))]
    assert weak.loop == 1  # ticks for ever, Grant enabled only every other state
    idle = run(Arbiter(("EventuallyIdle",)), CheckOptions.of(engine="bfs"))
    looped = idle.trace[idle.loop :]
    assert looped[0].state == looped[-1].state and any(s.state.requested for s in looped)
    assert {s.action for s in looped[1:]} == {"Tick", "Request", "Grant", "Release"}  # fair to every action


def test_a_lasso_whose_trigger_is_the_initial_state_starts_there():
    """The trigger is initial and the fair cycle further on: the lasso's
    initial state was taken from the cycle (an IndexError, or a replay
    that failed at step 1)."""
    r = run(Chain(), CheckOptions.of(engine="bfs"))
    assert (r.verdict, r.invariant, r.loop) == ("violated", "ZeroLeadsToNothing", 1)
    assert [s.state.x for s in r.trace] == [0, 1, 2, 1]


def steps(*states: tuple[str | None, tuple]) -> list[Step]:
    return [Step(a, {}, ArbiterState(*s)) for a, s in states]


@pytest.mark.parametrize(
    "prop, trace, loop, why",
    [
        # stopping after a request is unfair to Tick, enabled there for ever
        ("RequestGrantedWeakly", steps((None, (0, 0, 0)), ("Request", (0, 1, 0))), 1, "not fair to WF(Tick)"),
        # ticking for ever with the request pending is unfair to the strongly fair Grant
        (
            "RequestGranted",
            steps((None, (0, 0, 0)), ("Request", (0, 1, 0)), ("Tick", (1, 1, 0)), ("Tick", (0, 1, 0))),
            1,
            "not fair to SF(Grant)",
        ),
        # the request is granted inside the loop
        (
            "RequestGrantedUnfairly",
            steps((None, (0, 0, 0)), ("Request", (0, 1, 0)), ("Tick", (1, 1, 0)), ("Grant", (1, 0, 1))),
            3,
            "does not violate",
        ),
        (
            "RequestGrantedWeakly",
            steps((None, (0, 0, 0)), ("Request", (0, 1, 0)), ("Tick", (1, 1, 0))),
            1,
            "does not return to step 1",
        ),
        ("RequestGrantedUnfairly", steps((None, (0, 0, 0)), ("Grant", (1, 0, 1))), 1, "step 1 Grant{} is not enabled"),
    ],
)
def test_a_lasso_that_is_not_a_fair_violation_is_refused(prop, trace, loop, why):
    with pytest.raises(TraceError, match=why.replace("(", r"\(").replace(")", r"\)")):
        validate_lasso(Arbiter((prop,)), trace, loop, prop)


# ---- the KIP's availability claims, on configs small enough for every engine ----

SMALL = dict(
    brokers=2,
    min_isr=1,
    max_records=1,
    max_unclean_shutdowns=2,
    max_fences=0,
    max_isr_shrinks=0,
    acks=["all"],
    invariants=["TypeOK"],
)


def kafka(engine: str, workers: int = 1, **config):
    return run(load({**SMALL, **config}), CheckOptions.of(engine=engine, workers=workers))


def test_none_stops_the_partition_until_an_operator_acts():
    """KIP-966 4c: with unclean.recovery.strategy=None "the controller will
    not attempt to elect a leader. Waiting for the user operations": every
    broker back, unfenced, and still no leader, for ever."""
    config = dict(unclean_recovery_strategy="none", properties=["LeaderlessGetsLeaderOnceBrokersRestart"])
    r = kafka("bfs", **config)
    assert (r.verdict, r.invariant, r.loop) == ("violated", "LeaderlessGetsLeaderOnceBrokersRestart", 8)
    assert [(s.action, s.args) for s in r.trace[1:]] == [
        ("UncleanShutdown", {"broker": 0, "keep": 0}),
        ("FenceBroker", {"broker": 0, "leader": 1}),
        ("StartBroker", {"broker": 0}),
        ("UncleanShutdown", {"broker": 1, "keep": 0}),
        ("FenceBroker", {"broker": 1}),
        ("StartBroker", {"broker": 1}),
        ("UnfenceBroker", {"broker": 0}),
        ("UnfenceBroker", {"broker": 1}),
    ]
    fast = kafka("fast", workers=2, **config)
    assert (fast.verdict, fast.loop, fast.trace, fast.distinct_states, fast.triggers) == (
        r.verdict,
        r.loop,
        r.trace,
        r.distinct_states,
        r.triggers,
    )


@pytest.mark.parametrize(
    "config, verdict, length",
    [
        # Balanced elects once every LastKnownELR member is back (and so once every broker is)
        (
            dict(properties=["BalancedElectsOnceLastKnownElrIsBack", "LeaderlessGetsLeaderOnceBrokersRestart"]),
            "holds",
            None,
        ),
        # ... but not while the brokers it waits for stay down
        (dict(properties=["LeaderlessGetsLeader"]), "violated", 4),
        # before KIP-966 too the last ISR member had to come back (slow: the
        # fast tier compiles no legacy kernel for 2 brokers)
        pytest.param(
            dict(variant="legacy", properties=["LeaderlessGetsLeader"]), "violated", 4, marks=pytest.mark.slow
        ),
        pytest.param(
            dict(variant="legacy", properties=["LeaderlessGetsLeaderOnceBrokersRestart"]),
            "holds",
            None,
            marks=pytest.mark.slow,
        ),
        (dict(properties=["HwmAdvancesAtMinIsr"]), "holds", None),
    ],
)
def test_kafka_property_verdicts_agree_across_engines(config, verdict, length):
    r = kafka("bfs", **config)
    assert r.verdict == verdict and all(n > 0 for n in r.triggers.values())  # none held vacuously
    assert (len(r.trace) - 1 if r.trace else None) == length
    fast = kafka("fast", workers=2, **config)
    assert (fast.verdict, fast.invariant, fast.loop, fast.trace, fast.triggers) == (
        r.verdict,
        r.invariant,
        r.loop,
        r.trace,
        r.triggers,
    )


@pytest.mark.slow
@pytest.mark.parametrize("symmetry", [False, True])
def test_a_checkpointed_search_resumes_to_the_same_lasso(tmp_path, symmetry):
    spec = load(
        {**SMALL, "unclean_recovery_strategy": "none", "properties": ["LeaderlessGetsLeaderOnceBrokersRestart"]}
    )
    if symmetry:  # the quotient's graph is saved and resumed as the states' is
        spec.enable_symmetry()
    whole = run(spec, CheckOptions.of(engine="fast", workers=1))
    for engine in ("fast", "bfs"):
        resumed = stopped_and_resumed(spec, engine, tmp_path / engine, reports=3)
        assert (resumed.verdict, resumed.loop, resumed.trace, resumed.distinct_states, resumed.triggers) == (
            whole.verdict,
            whole.loop,
            whole.trace,
            whole.distinct_states,
            whole.triggers,
        )


def test_properties_refuse_spark():
    spec = load({**SMALL, "properties": ["LeaderlessGetsLeader"]})
    with pytest.raises(ConfigError, match="--engine spark does not check temporal properties"):
        run(spec, CheckOptions.of(engine="spark"))


# ---- the command line ---------------------------------------------------------------

ARGS = [f"--set={k}={json.dumps(v)}" for k, v in SMALL.items()] + [
    "--set=unclean_recovery_strategy=none",
    '--set=properties=["LeaderlessGetsLeaderOnceBrokersRestart"]',
]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_check_prints_and_writes_the_lasso(tmp_path):
    out = tmp_path / "lasso.json"
    r = invoke("check", *ARGS, "--trace-out", str(out), "-q")
    assert r.exit_code == 1, r.output
    assert "violated: LeaderlessGetsLeaderOnceBrokersRestart by a fair behaviour of 8 steps" in r.stdout
    assert "⟲ step 8 stays unchanged for ever" in r.stdout
    assert "the partition stays without a leader for ever" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["loop"] == 8 and doc["invariant"] == "LeaderlessGetsLeaderOnceBrokersRestart" and len(doc["trace"]) == 9
    as_json = json.loads(invoke("check", *ARGS, "--json").stdout)
    assert (as_json["loop"], as_json["properties"]) == (8, {"LeaderlessGetsLeaderOnceBrokersRestart": 294})
    assert as_json["trace"] == doc["trace"]


def test_check_with_symmetry_prints_a_lasso_of_states():
    r = invoke("check", *ARGS, "--symmetry", "--json")
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert (out["invariant"], out["loop"], len(out["trace"])) == ("LeaderlessGetsLeaderOnceBrokersRestart", 8, 9)
    assert out["liveness_under_symmetry"] == {"proposed": 1, "states_explored": 1}
    text = invoke("check", *ARGS, "--symmetry", "-q").stdout
    assert "properties, classes where a violation could begin: LeaderlessGetsLeaderOnceBrokersRestart" in text
    assert "fair cycles under symmetry: components of classes proposed 1, states over them searched again 1" in text


def test_a_holds_names_the_properties_and_what_triggered_them():
    r = invoke("check", *[a for a in ARGS if "strategy" not in a], "-q")
    assert r.exit_code == 0, r.output
    assert "1 temporal properties hold in every fair behaviour (LeaderlessGetsLeaderOnceBrokersRestart)" in r.stdout
    assert "states where a violation could begin: LeaderlessGetsLeaderOnceBrokersRestart 294" in r.stdout


def test_trace_views_and_itf_carry_the_loop(tmp_path):
    src = tmp_path / "lasso.json"
    assert invoke("check", *ARGS, "--trace-out", str(src), "-q").exit_code == 1
    shown = invoke("trace", "show", str(src), "--diff")
    assert shown.exit_code == 0 and "8 ⟲" in shown.stdout
    page = tmp_path / "lasso.html"
    assert invoke("trace", "html", str(src), "-o", str(page)).exit_code == 0
    assert 'data-loop="8"' in page.read_text() and "stays unchanged for ever" in page.read_text()
    itf = tmp_path / "lasso.itf.json"
    assert invoke("trace", "export", str(src), "-o", str(itf)).exit_code == 0
    doc = json.loads(itf.read_text())
    assert doc["loop"] == 8 and len(doc["states"]) == 9 and "loopAction" not in doc["#meta"]
    back = tmp_path / "back.json"
    assert invoke("trace", "export", str(itf), "--format", "json", "-o", str(back)).exit_code == 0
    assert json.loads(back.read_text()) == json.loads(src.read_text())


def test_itf_writes_a_loop_back_as_its_loop_field():
    """ITF's `loop` is the index of the state the last one is followed by:
    the closing state (a copy of that one) is dropped and its step's action
    kept in #meta.loopAction; reading it back restores the closing step."""
    r = run(Arbiter(("RequestGrantedWeakly",)), CheckOptions.of(engine="bfs"))
    steps = [{"action": s.action, "args": s.args, "state": s.state._asdict()} for s in r.trace]
    doc = json.loads(json.dumps(to_itf({}, "RequestGrantedWeakly", steps, {}, r.loop)))
    assert doc["loop"] == 1 and len(doc["states"]) == 3
    assert doc["#meta"]["loopAction"] == {"action": "Tick", "args": {}}
    assert from_itf(doc) == ({}, "RequestGrantedWeakly", steps, 1)


def test_a_tampered_loop_is_refused(tmp_path):
    src = tmp_path / "lasso.json"
    assert invoke("check", *ARGS, "--trace-out", str(src), "-q").exit_code == 1
    doc = json.loads(src.read_text())
    for loop, why in (
        (7, "the last step does not return to step 7"),
        (9, "loop is 9; allowed"),
        (None, "is a temporal property: its counterexample needs a loop"),
    ):
        src.write_text(json.dumps({**doc, "loop": loop}))
        bad = invoke("trace", "show", str(src))
        assert bad.exit_code == 2 and why in bad.stderr, bad.output


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ['--set=properties=["LeaderlessGetsLeaderr"]'],
            "config key 'properties': 'LeaderlessGetsLeaderr' is not a temporal property of variant 'kip966'",
        ),
        (['--set=properties=["LeaderlessGetsLeader"]', "--engine", "spark"], "--engine spark does not check temporal"),
    ],
)
def test_bad_property_input_is_one_line_exit_2(args, message):
    r = invoke("check", *[a for a in ARGS if "properties" not in a], *args, "-q")
    assert r.exit_code == 2, r.output
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("engine", ["fast", "bfs"])
def test_a_graph_past_the_memory_limit_is_searched_on_disk_to_the_same_lasso(monkeypatch, engine):
    """The graph in memory would pass --max-memory: its transitions and
    keys go to disk, and the search finds the same lasso there."""
    whole = json.loads(invoke("check", *ARGS, "--engine", engine, "--json").stdout)
    monkeypatch.setattr(Recorder, "bytes_needed", lambda self: 1 << 50)
    r = invoke("check", *ARGS, "--engine", engine, "--max-memory", "1T", "--json")
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert out["graph_on_disk"] is True and "graph_on_disk" not in whole
    for key in ("verdict", "invariant", "loop", "trace", "properties", "distinct_states"):
        assert out[key] == whole[key], key


@pytest.mark.parametrize("engine", ["fast", "bfs"])
def test_a_property_search_stopped_at_the_memory_limit_prints_its_json(monkeypatch, engine):
    """--json printed nothing: the stop was bad input, not a stop."""
    monkeypatch.setattr(Recorder, "bytes_out_of_core", lambda self: 1 << 50)
    r = invoke("check", *ARGS, "--engine", engine, "--max-memory", "1T", "--json")
    assert r.exit_code == 2, r.output
    out = json.loads(r.stdout)
    assert out["verdict"] == "stopped" and out["reason"].startswith("temporal properties: the behaviour graph of ")
    assert out["distinct_states"] > 0 and out["checkpoint"] is None
    assert r.stderr == f"error: {out['reason']}\n"


def test_a_graph_too_big_for_the_memory_limit_stops_the_search_as_it_grows():
    """Said while exploring (at the first transitions past the limit), not
    by running out of memory in the search for fair cycles at the end:
    the states count (their transitions would go to disk)."""
    n = 1 << 20
    roomy = Recorder(1, max_memory=anon_rss() + (200 << 20))
    labels, edges = (
        np.zeros(n, np.uint64),
        (np.arange(n), np.arange(n, dtype=np.uint64).reshape(-1, 1), np.zeros(n, np.uint16)),
    )
    roomy.add_states(np.arange(n, dtype=np.uint64).reshape(-1, 1), labels)
    roomy.add_transitions(*edges)  # about 96 MiB to search: room left
    with pytest.raises(
        Stopped,
        match=r"the behaviour graph of [0-9,]+ states and [0-9,]+ transitions so far "
        r"needs about [0-9.]+ MiB to search for fair cycles with its transitions on disk, more than is left",
    ) as stop:
        for _ in range(8):  # each adds 96 MiB to the search
            roomy.add_states(np.arange(n, dtype=np.uint64).reshape(-1, 1), labels)
            roomy.add_transitions(*edges)
    assert roomy.states < 8 * n
    assert (stop.value.signum, stop.value.distinct, stop.value.generated) == (None, roomy.states, roomy.transitions)
