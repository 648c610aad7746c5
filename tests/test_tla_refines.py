"""TLC's refinement verdicts on the TLA+ mirror (issue 33, docs/tla.md
"Refinement").

specs/tla/KIP966Refines.tla EXTENDS KIP966 (the implementation: its
Variant) and INSTANCEs it again as `Abstract` (AbstractVariant, the
refinement mapping substituted for the variables); each
specs/tla/refines/*.cfg has `SPECIFICATION Spec` and `PROPERTY
AbstractSpec`, which TLC checks as refinement with stuttering. Pinned
here: TLC's verdict, and for a failure the length and actions of its
shortest trace; that trace, replayed through the Python spec, is a
behaviour of the implementation whose last step, and only that one, is
neither a step of the abstract variant nor a stutter under the same
mapping.

Needs Java and tla2tools.jar as tests/test_tla_mirror.py does (need_tlc).
"""

from __future__ import annotations

import functools
import json
import re

import pytest
from click.testing import CliRunner
from test_tla_mirror import (
    CONSTANT_OF,
    TLA_DIR,
    assert_constants_are_the_config,
    cfg_body,
    cfg_constants,
    header_command,
    need_tlc,
    py_state,
    set_options,
    tla_state,
)

from cli import main
from modelcheck.tlc import ModelValue, cfg_properties, parse_output, run_tlc
from specs.kafka_elr import load
from specs.kafka_elr.types import NO_LEADER

REFINES = "refines"
WRAPPER = TLA_DIR / "KIP966Refines.tla"

# TLC's verdict per config: None where it holds, else the actions of its
# shortest trace (None for the initial state) up to the first step the
# abstract spec does not allow
EXPECTED: dict[str, list | None] = {
    # (a) kip966 against legacy, the ELR projected away: the ISR empties
    # (legacy keeps the last replica standing in it)
    "kip966_legacy_n2": [None, "FenceBroker", "UncleanShutdown", "FenceBroker"],
    "kip966_legacy_tiny": None,
    # without the projection the first ELR (the commit of a shrink) is new
    "kip966_legacy_tiny_identity": [None, "ShrinkIsr", "CommitAlterPartition"],
    # (b) the mutant against kip966: a cancellation under min ISR
    "mutant_kip966_reassign": [None, "ReassignPartition", "ShrinkIsr", "CommitAlterPartition", "CancelReassignment"],
    "mutant_kip966_reassign_fence": [None, "FenceBroker", "ReassignPartition", "CancelReassignment"],
    # (c) kip966 only strengthens the mutant's guard: it refines it
    "kip966_mutant_reassign": None,
}

ALL = sorted(p.stem for p in (TLA_DIR / REFINES).glob("*.cfg"))

# KIP966Refines.tla's projection (Mapping = "elr-projected-away"): each
# projected variable, the constant it reads as in Python and in the TLA+
PROJECTED = {"elr": (0, "{}"), "last_known_elr": (0, "{}"), "last_known_leader": (NO_LEADER, "NoLeader")}
# the mappings of KIP966Refines.tla, as the Python values they give the variables they do not keep
MAPPINGS: dict[str, dict] = {"identity": {}, "elr-projected-away": {v: py for v, (py, _) in PROJECTED.items()}}


def image(mapping: str, state):
    return state._replace(**MAPPINGS[mapping])


def read_refines_cfg(name: str) -> tuple[str, str, str, dict, dict]:
    """(implementation variant, abstract variant, mapping, the Python config
    of the header's `modelcheck refines` line, the CONSTANTS)."""
    text = (TLA_DIR / REFINES / f"{name}.cfg").read_text()
    words = header_command(name, text, "refines")
    impl, abstract = words[2], words[3]
    mapping = words[words.index("--mapping") + 1]
    return impl, abstract, mapping, set_options(words), cfg_constants(cfg_body(text))


def test_every_refines_cfg_is_tested():
    assert set(EXPECTED) == set(ALL)
    assert None in EXPECTED.values() and any(EXPECTED.values())  # both verdicts


@pytest.mark.parametrize("name", ALL)
def test_refines_cfg_matches_its_python_command(name):
    """The constants are the config of the header's `modelcheck refines`
    line, Variant its implementation, AbstractVariant and Mapping its
    abstract variant and mapping; the property is the abstract spec."""
    impl, abstract, mapping, config, constants = read_refines_cfg(name)
    spec = load({**config, "variant": impl})
    assert_constants_are_the_config(name, constants, spec.config)
    assert constants["NoProposal"] == ModelValue("NoProposal")
    assert (constants["AbstractVariant"], constants["Mapping"]) == (abstract, mapping)
    assert set(constants) == set(CONSTANT_OF.values()) | {"NoProposal", "AbstractVariant", "Mapping"}
    text = (TLA_DIR / REFINES / f"{name}.cfg").read_text()
    assert re.search(r"^SPECIFICATION Spec$", text, re.M)
    assert cfg_properties(text) == ["AbstractSpec"]


def test_the_mapping_is_the_tla_one():
    """MAPPINGS above is the substitution of KIP966Refines.tla, variable by variable."""
    text = WRAPPER.read_text()
    projected = dict(re.findall(r"^\s+(\w+) <- IF Projected THEN (\S+) ELSE \1,?$", text, re.M))
    assert projected == {v: tla for v, (_, tla) in PROJECTED.items()}
    assert set(re.findall(r'"([\w-]+)"', re.search(r"^ASSUME Mapping \\in \{(.*)\}$", text, re.M).group(1))) == set(
        MAPPINGS
    )


@pytest.mark.parametrize("name", ALL)
def test_the_mapping_is_the_one_the_python_variant_declares(name):
    """The Python side's mapping is the contract: the implementation
    variant declares each non-identity Mapping of the configs, for the
    same abstract variant, with the same constants."""
    impl, abstract, mapping, config, _ = read_refines_cfg(name)
    spec = load({**config, "variant": impl})
    declared = [r for r in spec.refinements if (r.name, r.abstract) == (mapping, abstract)]
    if mapping == "identity":
        assert not declared
        return
    (r,) = declared
    assert (r.constant, r.computed) == (MAPPINGS[mapping], {})


@functools.cache
def tlc_result(name: str) -> dict:
    return run_tlc(WRAPPER, TLA_DIR / REFINES / f"{name}.cfg", workers=1, timeout=300)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.slow
def test_tlc_refinement_verdict(name):
    need_tlc()
    tlc = tlc_result(name)
    expected = EXPECTED[name]
    if expected is None:
        assert (tlc["verdict"], tlc["property"]) == ("holds", False)
        return
    assert (tlc["verdict"], tlc["action"], tlc["invariant"]) == ("violated", True, "AbstractSpec")
    assert tlc["actions"] == expected and tlc["trace_length"] == len(expected)


@pytest.mark.parametrize("name", [n for n in ALL if EXPECTED[n] is not None])
@pytest.mark.slow
def test_tlc_counterexample_is_a_refinement_failure_in_python(name):
    """TLC's trace, state by state, is a behaviour of the Python
    implementation spec; under the mapping every step but the last is a
    step of the Python abstract spec or a stutter, the last is neither."""
    need_tlc()
    impl_name, abstract_name, mapping, config, _ = read_refines_cfg(name)
    impl, abstract = load({**config, "variant": impl_name}), load({**config, "variant": abstract_name})
    trace = [tla_state(d) for d in tlc_result(name)["trace"]]
    (state,) = [s for s in impl.init_states() if py_state(s) == trace[0]]
    assert py_state(image(mapping, state)) in {py_state(s) for s in abstract.init_states()}
    allowed = []
    for want in trace[1:]:
        (nxt,) = {t for _, _, t in impl.successors(state) if py_state(t) == want}
        before = image(mapping, state)
        steps = {py_state(t) for _, _, t in abstract.successors(before)} | {py_state(before)}
        allowed.append(py_state(image(mapping, nxt)) in steps)
        state = nxt
    assert allowed == [True] * (len(trace) - 2) + [False]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.slow
def test_modelcheck_refines_gives_tlcs_answer(name):
    """`modelcheck refines`, the header's command line, agrees with TLC: the
    verdict; where it holds, the same states and transitions checked; where
    it fails, a shortest trace of the same length and actions, its last
    step not allowed."""
    need_tlc()
    words = header_command(name, (TLA_DIR / REFINES / f"{name}.cfg").read_text(), "refines")
    r = CliRunner().invoke(main, [*words[1:], "--json", "-q"])
    ours, tlc, expected = json.loads(r.output), tlc_result(name), EXPECTED[name]
    assert (ours["verdict"], r.exit_code) == (tlc["verdict"], 0 if expected is None else 1)
    if expected is None:
        # TLC counts the initial state among the states it generated
        assert (ours["states"], ours["transitions"] + 1) == (tlc["distinct"], tlc["generated"])
        return
    assert [step["action"] for step in ours["trace"]] == expected == tlc["actions"]
    assert ours["trace"][-1]["abstract_step"] == "NOT ALLOWED"


# ---- parse_output on TLC's refinement messages (no Java) ------------------------

ACTION_VIOLATED = """Error: Action property line 694, col 17 to line 694, col 29 of module KIP966 is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ x = 0
/\\ y = 0

State 2: <Tick line 9, col 1 to line 9, col 20 of module M>
/\\ x = 1
/\\ y = 0

3 states generated, 3 distinct states found, 1 states left on queue.
The depth of the complete state graph search is 2.
"""

INITIAL_VIOLATED = """Computing initial states...
Error: Property Init is violated by the initial state:
/\\ x = 0
/\\ y = 0

Finished in 01s at (2026-01-01 00:00:01)
"""


def test_parse_output_action_property():
    r = parse_output(ACTION_VIOLATED)
    assert (r["verdict"], r["invariant"], r["action"], r["property"], r["temporal"]) == (
        "violated",
        None,
        True,
        True,
        False,
    )
    assert (r["trace_length"], r["actions"], r["distinct"], r["loop"]) == (2, [None, "Tick"], 3, None)
    assert r["trace"][1] == {"x": 1, "y": 0}


def test_parse_output_initial_state_of_a_property():
    r = parse_output(INITIAL_VIOLATED)
    assert (r["verdict"], r["invariant"], r["action"], r["property"], r["distinct"]) == (
        "violated",
        None,
        False,
        True,
        None,
    )
    assert (r["trace"], r["actions"], r["trace_length"]) == ([{"x": 0, "y": 0}], [None], 1)
