"""The real-bug mutants (specs/kafka_elr/bugs.py) and `modelcheck mutate`
(issue 42): each bug has a source; the gate entry that kills it breaks
with the bug and holds without it (the kill is the bug's, not the
config's); the gate's known survivors are mutants; and mutate tells a kill,
an equivalent mutant and a survivor apart. Searches run interpreted: each
is small, and no mutant's kernel is compiled for the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.gate import read_gate
from modelcheck.runs.matrix import verdict_text
from modelcheck.runs.mutate import known_survivors
from specs.kafka_elr import ALL_VARIANTS, BUGS, MUTANTS, VARIANTS, load
from specs.kafka_elr.types import NO_LEADER

GATE_FILE = str(Path(__file__).resolve().parent.parent / "specs" / "gate.toml")
GATE = {e.cell.name: e for e in read_gate(GATE_FILE, load)}
MIN_ISR_CHANGE = "kip966, a min.insync.replicas change, no unclean shutdown"
LIVE_ONLY = "kip966-elr-only, min ISR 1: the controller elects only live brokers"
UNCLEAN_ELECTS = "kafka-4, unclean.leader.election.enable, 2 brokers, min ISR 1: a leaderless partition gets a leader"
STOPS_FOR_GOOD = "kip966, a broker stops for good: the HWM still advances at min ISR"
RECOVERS = "kip966, unclean.leader.election.enable: a RECOVERING leader recovers"
# bug -> the gate entry that kills it first, the invariant (or property: the steps are the
# lasso's) and the steps (`modelcheck mutate specs/gate.toml`)
KILLS = {
    "fenced-last-known-leader": (LIVE_ONLY, "LeaderUnfenced", 6),
    "min-isr-change-keeps-elr": (MIN_ISR_CHANGE, "ElrOnlyUnderMinIsr", 3),
    "leader-own-min-isr": (MIN_ISR_CHANGE, "ElrHasDataToHwm", 5),
    "stale-broker-epoch-accepted": ("kip966", "ConsistentRead", 13),
    "rebooted-follower-epoch-race": ("kip966", "ConsistentRead", 13),
    "kafka-4-no-unclean-detection": ("kafka-4", "ElrHasDataToHwm", 7),
    "fenced-replica-joins-isr": ("kip966", "IsrMembersEligible", 5),
    "unclean-config-ignored": (UNCLEAN_ELECTS, "LeaderlessGetsLeader", 4),
    "hwm-waits-for-ineligible": (STOPS_FOR_GOOD, "HwmAdvancesAtMinIsrWithoutRestarts", 3),
    "recovery-change-dropped": (RECOVERS, "RecoveringLeaderRecovers", 7),
}


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    monkeypatch.setenv("MODELCHECK_KERNEL", "interpreted")


def test_every_bug_has_a_source_and_is_killed():
    survivors = known_survivors(GATE_FILE)
    bugs = {cls.variant for cls in BUGS}
    assert set(survivors) <= set(MUTANTS) and not bugs & set(survivors)
    assert bugs == set(KILLS)
    for cls in BUGS:
        assert cls.variant in ALL_VARIANTS and cls.variant not in VARIANTS
        assert cls.source and cls.__doc__ and MUTANTS[cls.variant] == cls.__bases__[0].variant


@pytest.mark.parametrize("bug", sorted(KILLS))
@pytest.mark.slow
def test_the_entry_that_kills_a_bug_breaks_with_it_and_holds_without_it(bug):
    name, invariant, steps = KILLS[bug]
    entry = GATE[name]
    assert entry.cell.expect == "holds" and load(entry.cell.config).variant == MUTANTS[bug]
    mutant = run(load({**entry.cell.config, "variant": bug}), CheckOptions.of(engine="bfs"))
    assert (verdict_text(mutant.holds, mutant.invariant), len(mutant.trace) - 1) == (f"violated: {invariant}", steps)
    correct = run(load(entry.cell.config), CheckOptions.of(engine="bfs"))
    assert correct.holds and correct.distinct_states == entry.states


def test_isr_members_eligible_lets_the_elr_off_keep_its_last_member():
    """KIP-841's invariant allows one fenced ISR member: the last one an ISR
    keeps while it cannot empty (the ELR off), with no leader; kip966 with
    the ELR empties the ISR instead."""
    states = {}
    for variant in ("legacy", "kip966"):
        spec = load({"variant": variant, "brokers": 2, "max_records": 1, "max_fences": 2})
        s = spec.fence_broker(spec.init_states()[0], 1, NO_LEADER)
        s = spec.fence_broker(s, 0, NO_LEADER)  # the leader, the last ISR member
        states[variant] = (s.isr, s.elr, s.leader, spec.isr_members_eligible(s))
        if variant == "legacy":
            assert not spec.isr_members_eligible(s._replace(leader=0))  # not while it leads
    assert states == {"legacy": (0b01, 0, NO_LEADER, True), "kip966": (0, 0b11, NO_LEADER, True)}


@pytest.mark.slow
def test_isr_members_eligible_holds_for_legacy_and_kafka_4_breaks_it_only_electing_a_fenced_leader():
    legacy = run(
        load({"variant": "legacy", "max_records": 1, "invariants": ["IsrMembersEligible"]}),
        CheckOptions.of(engine="bfs"),
    )
    assert (legacy.holds, legacy.distinct_states) == (True, 88631)
    # KAFKA-19522: the same state, and steps, as the gate's entry that LeaderUnfenced breaks
    config = {"variant": "kafka-4", "max_records": 1, "max_unclean_shutdowns": 2, "invariants": ["IsrMembersEligible"]}
    kafka4 = run(load(config), CheckOptions.of(engine="bfs"))
    last = kafka4.trace[-1].state
    assert (verdict_text(kafka4.holds, kafka4.invariant), len(kafka4.trace) - 1) == ("violated: IsrMembersEligible", 7)
    assert last.isr == 1 << last.leader and last.fenced >> last.leader & 1


SMALL = {"brokers": 2, "max_records": 1, "max_unclean_shutdowns": 0, "max_fences": 1}


def small_gate(tmp_path, survivors: list[str], generate: str = "") -> str:
    """Two kip966 entries at 2 brokers, their counts pinned as they are
    (`generate`: more of the [mutation] table)."""
    change = {**SMALL, "max_min_isr_changes": 1, "invariants": ["ElrOnlyUnderMinIsr"]}
    counts = [run(load(c), CheckOptions.of(engine="bfs")).distinct_states for c in (SMALL, change)]
    text = f"""
[defaults]
variant = "kip966"

[[entry]]
name = "plain"
config = {json.dumps(SMALL).replace('":', '" =')}
expect = "holds"
states = {counts[0]}

[[entry]]
name = "min ISR change"
config = {json.dumps(change).replace('":', '" =')}
expect = "holds"
states = {counts[1]}

[mutation]
survivors = {json.dumps(survivors)}
{generate}
"""
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return str(path)


def mutate(*args: str):
    return CliRunner().invoke(main, ["mutate", *args, "-j", "1"])


@pytest.mark.slow
def test_mutate_tells_a_kill_an_equivalent_mutant_and_a_survivor(tmp_path):
    path = small_gate(tmp_path, ["detection-before-metadata-version", "leader-own-min-isr"])
    chosen = ["min-isr-change-keeps-elr", "detection-before-metadata-version", "leader-own-min-isr"]
    summary = tmp_path / "summary.md"
    r = mutate(path, *(a for m in chosen for a in ("--mutant", m)), "--json", "--summary", str(summary))
    assert r.exit_code == 0, r.output
    heading = f"## modelcheck mutate `{path}`: 1 killed of 2 the gate can tell apart"
    assert summary.read_text().splitlines()[0] == heading
    out = json.loads(r.stdout)
    got = {m["mutant"]: (m["status"], m["killed_by"], m["invariant"], m["entries_run"]) for m in out["mutants"]}
    assert got == {
        "min-isr-change-keeps-elr": ("killed", "min ISR change", "ElrOnlyUnderMinIsr", 2),
        "detection-before-metadata-version": ("equivalent", None, None, 2),
        # ElrOnlyUnderMinIsr alone: the leader's own min ISR only moves the HWM (754 states of 835)
        "leader-own-min-isr": ("survived", None, None, 2),
    }
    killed = next(m for m in out["mutants"] if m["status"] == "killed")
    assert killed["command"] == (
        "modelcheck check --set variant=min-isr-change-keeps-elr --set brokers=2 --set max_records=1 "
        "--set max_unclean_shutdowns=0 --set max_fences=1 --set max_min_isr_changes=1 "
        "--set 'invariants=[\"ElrOnlyUnderMinIsr\"]'"
    )
    assert out["score"] == {"killed": 1, "non_equivalent": 2, "mutants": 3}
    # a survivor the gate file does not list fails the run; so does a listed mutant killed
    path = small_gate(tmp_path, ["min-isr-change-keeps-elr"])
    r = mutate(path, "--mutant", "min-isr-change-keeps-elr", "--mutant", "leader-own-min-isr")
    assert r.exit_code == 1
    assert "unexpected: min-isr-change-keeps-elr was killed: remove it from [mutation] survivors" in r.stdout
    assert "unexpected: leader-own-min-isr survived (not listed in [mutation] survivors)" in r.stdout


def test_mutate_refuses_an_unknown_mutant_in_one_line(tmp_path):
    path = tmp_path / "g.toml"
    entry = '[defaults]\n[[entry]]\nname = "a"\nconfig = {}\nexpect = "holds"\n'
    path.write_text(entry + '[mutation]\nsurvivors = ["nope"]\n')
    r = mutate(str(path))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "mutant 'nope': no such mutant (allowed: " in r.stderr
    path.write_text(entry + "[mutation]\nkeep = 1\n")
    r = mutate(str(path))
    allowed = "(allowed: survivors, generate, hunt_on, min_score)"
    assert r.exit_code == 2 and f"[mutation] keep: no such key {allowed}" in r.stderr
    for line, error in (
        ('generate = ["nope"]', "[mutation] generate: 'nope' is not a variant"),
        ("min_score = 2", "[mutation] min_score is 2; allowed: a number from 0 to 1"),
        ('generate = ["kip966"]\nhunt_on = ["b"]', "[mutation] hunt_on: 'b' is no entry that pins holds for a"),
    ):
        path.write_text(entry + f"[mutation]\n{line}\n")
        r = mutate(str(path))
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and error in r.stderr, (line, r.stderr)


def test_a_mutant_whose_base_no_entry_checks_is_untested_and_fails_the_run(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('[defaults]\n[[entry]]\nname = "a"\nconfig = {}\nexpect = "holds"\n')
    r = mutate(str(path), "--mutant", "kafka-4-no-unclean-detection", "--json")
    assert r.exit_code == 1
    (m,) = json.loads(r.stdout)["mutants"]
    assert (m["status"], m["reason"], m["expected"]) == ("untested", "no entry pins holds for kafka-4", False)


@pytest.mark.slow
def test_mutate_hunts_generated_points_and_lists_the_survivors_by_rule(tmp_path):
    """A point killed (by the cheapest entry first), one equivalent, one
    that survives (the HWM kept: nothing is acked, so nothing is lost) and
    one no entry can run (a clean shutdown, which neither entry allows)."""
    path = small_gate(tmp_path, [], 'generate = ["kip966"]')
    points = ("--point", "4", "--point", "1", "--point", "13", "--point", "27")
    r = mutate(path, *points, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    got = {
        m["mutant"]: (m["status"], m["killed_by"], m["invariant"], m["steps"], m["entries_run"], m["entries_unreached"])
        for m in out["generated"]
    }
    assert got == {
        "kip966#4": ("killed", "plain", "ElrHasDataToHwm", 3, 1, 0),
        "kip966#1": ("equivalent", None, None, None, 2, 0),
        "kip966#13": ("survived", None, None, None, 2, 0),
        "kip966#27": ("unreached", None, None, None, 0, 2),
    }
    assert out["mutants"] == [] and out["generated_score"] == {"killed": 1, "non_equivalent": 3, "mutants": 4}
    by_name = {m["mutant"]: m for m in out["generated"]}
    assert [m["mutant"] for m in out["generated"]] == ["kip966#1", "kip966#4", "kip966#13", "kip966#27"]
    assert by_name["kip966#13"]["change"] == "replace_at(s.hwm, ld, new)  ->  s.hwm (kept)"
    assert by_name["kip966#4"]["command"].startswith("modelcheck check --set variant=kip966 --set brokers=2")
    assert by_name["kip966#4"]["command"].endswith("--set mutation=4")
    r = mutate(path, *points)
    lines = r.stdout.splitlines()
    assert lines[0] == "generated mutants: 4: 1 killed, 1 survived, 1 unreached, 1 equivalent"
    assert lines[1:3] == ["  Broker.advance_hwm:", lines[2]] and lines[2].startswith("    kip966#1 EQUIVALENT (")
    assert lines[-1] == "generated mutation score: 1 killed of 3 not shown equivalent (0.333)"


def test_a_generated_score_below_its_pin_fails_and_list_points_names_every_point(tmp_path):
    from modelcheck.runs.mutate import Verdict, low_score
    from specs.kafka_elr import schemata

    verdicts = [Verdict("a", "kip966", killed_by="e"), Verdict("b", "kip966", ran=1, moved=1)]
    assert low_score(verdicts, 0.5) == ""
    assert low_score(verdicts, 0.6) == "generated mutation score 0.500 is below [mutation] min_score 0.6"
    r = mutate(small_gate(tmp_path, [], 'generate = ["kip966"]'), "--list-points")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == len(schemata("kip966").points)
    assert r.stdout.splitlines()[3].startswith("kip966#4 Broker.advance_hwm (specs/kafka_elr/broker.py:")


def test_a_mutant_that_writes_outside_a_tuple_is_killed_by_the_evaluation_error():
    """Dropping `ld == NO_LEADER` lets a leaderless partition's HWM be
    written at index -1: TLC stops at such an error, and so does the hunt
    (Python would wrap the index, numba would not: the reference engine
    judges)."""
    from modelcheck.runs.matrix import Cell
    from modelcheck.runs.mutate import judged
    from specs.kafka_elr import schemata

    point = next(
        p
        for p in schemata("kip966").points
        if p.rule == "Broker.advance_hwm"
        and p.change.endswith("->  not self.running(s, ld) or not self.hwm_may_advance(s, ld)")
    )
    config = {**GATE["kip966, propagated metadata"].cell.config, "mutation": point.number}
    assert judged(load, Cell("propagated", config, "holds")) == (
        "an evaluation error (replace_at: index -1 outside a tuple of 3)"
    )
