"""TLC on the TLA+ mirror's temporal properties agrees with modelcheck.

specs/tla/KIP966.tla states the seven `@leads_to` properties of
specs/kafka_elr/temporal.py and their fairness (ControllerSpec,
RestartsSpec, ReplicationSpec, ReassignmentSpec,
ReplicationWithoutRestartsSpec: docs/tla.md "Temporal
properties in the mirror"). For each small config of specs/tla/liveness/ TLC and the
reference engine give the same verdict on the same number of distinct
states, and TLC's counterexample, replayed through the Python spec, is a
fair behaviour that violates the property (trace.validate_lasso). The
other configs there (TLC takes 6 to 50 s each) are measured in
docs/tla.md.

Needs Java and tla2tools.jar as tests/test_tla_mirror.py does (need_tlc).
"""

from __future__ import annotations

import functools
import re

import pytest
from test_tla_mirror import SPEC, TLA_DIR, assert_constants_are_the_config, need_tlc, py_state, read_cfg, tla_state

from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.result import Step
from modelcheck.tlc import cfg_properties, parse_output, run_tlc
from modelcheck.trace import validate_lasso
from specs.kafka_elr import load
from specs.kafka_elr.temporal import CONTROLLER, REASSIGNMENT, REPLICATION, RESTARTS

LIVE = "liveness"

# checked against TLC here (each a few seconds), with the verdict both give
TESTED = {
    "small_none_leaderless": "violated",
    "small_none_restart": "violated",
    "small_balanced_leaderless": "violated",
    "small_balanced_restart": "holds",
    "small_balanced_lkelr": "holds",
    "small_legacy_hwm": "holds",
    "small_propagated_hwm": "holds",
    "small_balanced_reassign": "holds",
    "small_none_reassign": "violated",
    "small_hwm_no_restart": "holds",
    "small_aggressive_recovers": "holds",
}
# measured in docs/tla.md (TLC: 6 to 50 s each)
DOCUMENTED = {"none_leaderless", "none_restart", "balanced_restart", "balanced_lkelr", "legacy_restart", "legacy_hwm"}

ALL = sorted(p.stem for p in (TLA_DIR / LIVE).glob("*.cfg"))

# the specification of each fairness set of temporal.py
SPEC_OF_FAIRNESS = {
    frozenset(CONTROLLER): "ControllerSpec",
    frozenset(CONTROLLER + RESTARTS): "RestartsSpec",
    frozenset(CONTROLLER + REPLICATION + RESTARTS): "ReplicationSpec",
    frozenset(CONTROLLER + REPLICATION + RESTARTS + REASSIGNMENT): "ReassignmentSpec",
    frozenset(CONTROLLER + REPLICATION): "ReplicationWithoutRestartsSpec",
}
# and its conjuncts in KIP966.tla
FAIRNESS_OF_SPEC = {
    "ControllerSpec": ["ControllerFairness"],
    "RestartsSpec": ["ControllerFairness", "RestartFairness"],
    "ReplicationSpec": ["ControllerFairness", "ReplicationFairness", "RestartFairness"],
    "ReassignmentSpec": ["ControllerFairness", "ReplicationFairness", "RestartFairness", "ReassignmentFairness"],
    "ReplicationWithoutRestartsSpec": ["ControllerFairness", "ReplicationFairness"],
}


def config_of(name: str) -> dict:
    return read_cfg(f"{LIVE}/{name}")[0]


def cfg_text(name: str) -> str:
    return (TLA_DIR / LIVE / f"{name}.cfg").read_text()


def test_every_liveness_cfg_is_tested_or_documented():
    assert set(TESTED) | DOCUMENTED == set(ALL)
    assert {"holds", "violated"} <= set(TESTED.values())


@pytest.mark.parametrize("name", ALL)
def test_liveness_cfg_matches_its_python_config(name):
    """Constants, invariants and property of the modelcheck command in the
    header; the specification of the property's fairness."""
    config, constants, invariants = read_cfg(f"{LIVE}/{name}")
    spec = load(config)
    assert_constants_are_the_config(name, constants, spec.config)
    assert invariants == spec.checked_invariants()
    text = cfg_text(name)
    (prop,) = spec.checked_properties()
    assert cfg_properties(text) == [prop]
    specification = re.search(r"^SPECIFICATION\s+(\w+)", text, re.M).group(1)
    # the variant's fairness: temporal.py's tuples less the actions it lacks
    assert {specification} == {
        tla
        for fairness, tla in SPEC_OF_FAIRNESS.items()
        if {f for f in fairness if f.action in spec.actions} == set(spec.fairness[prop])
    }


def tla_definition(name: str) -> str:
    """The body of `name ==` in KIP966.tla (up to the next line not indented)."""
    body = re.search(rf"^{name} ==(.*?)(?=\n\S|\n\n)", SPEC.read_text(), re.M | re.S)
    assert body, f"{name} is not defined in KIP966.tla"
    return body.group(1)


@pytest.mark.parametrize("specification", sorted(FAIRNESS_OF_SPEC))
def test_tla_fairness_mirrors_protocol_py(specification):
    """Each specification's fairness names the actions of its Python tuples:
    AFair(b) under \\A b for weak("A", each="broker"), AFair for weak("A")."""
    assert re.sub(r"\s+", " ", tla_definition(specification)).strip() == " /\\ ".join(
        ["Spec"] + FAIRNESS_OF_SPEC[specification]
    )
    (wanted,) = [fairness for fairness, spec in SPEC_OF_FAIRNESS.items() if spec == specification]
    found = set()
    for part in FAIRNESS_OF_SPEC[specification]:
        for action, per_broker in re.findall(r"(\w+)Fair(\(b\))?", tla_definition(part)):
            found.add((action, "broker" if per_broker else None))
    assert found == {(f.action, f.each) for f in wanted}
    assert not any(f.strong for f in wanted)
    for action, each in found:  # each fairness operator is WF of its action
        head = f"{action}Fair(b)" if each else f"{action}Fair"
        body = re.search(rf"^{re.escape(head)} == (.*)$", SPEC.read_text(), re.M).group(1)
        arg = "(b)" if each else ""
        assert body == (
            f"[]<>~Moves({action}Next{'Of(St, b)' if each else '(St)'}) "
            f"\\/ []<><<{action}{'Of' if each else ''}{arg}>>_vars"
        )


@functools.cache
def python_result(name: str):
    return run(load(config_of(name)), CheckOptions.of(engine="bfs"))


@functools.cache
def tlc_result(name: str) -> dict:
    # liveness checked once, on the complete graph: the full state count
    return run_tlc(SPEC, TLA_DIR / LIVE / f"{name}.cfg", workers=1, timeout=120, lncheck="final")


def replayed(spec, tlc: dict) -> tuple[list[Step], int]:
    """TLC's lasso as modelcheck Steps: each TLC state matched (by the
    encoding of tests/test_tla_mirror.py) to a successor in the Python spec
    by the action TLC names; when the lasso goes back to an earlier state,
    the step back to it is added (modelcheck's form)."""
    states = [tla_state(d) for d in tlc["trace"]]
    init = [s for s in spec.init_states() if py_state(s) == states[0]]
    assert init, "TLC's lasso does not start at the initial state"
    steps = [Step(None, {}, init[0])]

    def step_to(want: tuple, action: str | None) -> Step:
        found = [
            (n, a, t) for n, a, t in spec.successors(steps[-1].state) if py_state(t) == want and action in (None, n)
        ]
        assert found, f"no {action or 'step'} from TLC's state {len(steps)} to its next in the Python spec"
        return Step(*found[0])

    for want, action in zip(states[1:], tlc["actions"][1:]):
        steps.append(step_to(want, action))
    loop = tlc["loop"]
    if loop < len(states) - 1:
        steps.append(step_to(states[loop], None))
    return steps, loop


@pytest.mark.parametrize("name", sorted(TESTED))
@pytest.mark.slow
def test_tlc_same_temporal_verdict(name):
    need_tlc()
    ours, tlc = python_result(name), tlc_result(name)
    assert ours.verdict == TESTED[name]
    assert (tlc["verdict"], tlc["invariant"]) == (ours.verdict, ours.invariant)
    assert tlc["distinct"] == ours.distinct_states
    if ours.verdict == "violated":
        assert tlc["temporal"] and ours.loop is not None
        spec = load(config_of(name))
        steps, loop = replayed(spec, tlc)
        validate_lasso(spec, steps, loop, ours.invariant)  # raises unless fair and violating


# ---- parsing TLC's temporal output (no Java) -----------------------------------------

LASSO = """TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)
Implied-temporal checking--satisfiability problem has 1 branches.
Error: Temporal properties were violated.

Error: The following behavior constitutes a counter-example:

State 1: <Initial predicate>
/\\ x = 0

State 2: <Tick line 9, col 1 to line 9, col 20 of module M>
/\\ x = 1

State 3: <Tock line 10, col 1 to line 10, col 20 of module M>
/\\ x = 2

{end}
Finished checking temporal properties in 00s at 2026-01-01 00:00:01
12 states generated, 3 distinct states found, 0 states left on queue.
Finished in 01s at (2026-01-01 00:00:01)
"""


def test_parse_output_temporal():
    stutter = parse_output(LASSO.format(end="State 4: Stuttering"))
    assert (stutter["verdict"], stutter["invariant"], stutter["temporal"]) == ("violated", None, True)
    assert (stutter["trace_length"], stutter["loop"], stutter["distinct"]) == (3, 2, 3)
    assert stutter["trace"] == [{"x": 0}, {"x": 1}, {"x": 2}]
    assert stutter["actions"] == [None, "Tick", "Tock"]
    back = parse_output(LASSO.format(end="Back to state 2: <Tick line 9, col 1 to line 9, col 20 of module M>"))
    assert (back["trace_length"], back["loop"]) == (3, 1)
    holds = parse_output(
        "Model checking completed. No error has been found.\n"
        "5 states generated, 4 distinct states found, 0 states left on queue.\n"
    )
    assert (holds["verdict"], holds["temporal"], holds["loop"]) == ("holds", False, None)
    assert cfg_properties("SPECIFICATION S\nPROPERTIES A\n  B \\* PROPERTY C\nINVARIANT I\n") == ["A", "B"]
