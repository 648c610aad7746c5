"""`modelcheck gate`: pinned verdicts and counts, JUnit, baselines, bad files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.gate import read_gate
from specs.kafka_elr import load

GATE = """
[defaults]
max_records = 1
max_fences = 0

[[entry]]
name = "kip966"
config = { variant = "kip966" }
expect = "holds"
states = 8302

[[entry]]
name = "legacy"
config = { variant = "legacy", max_records = 2, max_fences = 1 }
expect = "violated: NoAckedLoss"
states = 16590
budget_s = 600

[[entry]]
name = "no HWM rule"
config = { variant = "hwm-ignores-min-isr" }
expect = "violated: ElrHasDataToHwm"
"""


def gate(tmp_path, text: str, *args: str):
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return path, CliRunner().invoke(main, ["gate", str(path), "-j", "1", *args])


def test_a_gate_whose_expectations_hold_exits_0(tmp_path):
    junit = tmp_path / "gate.xml"
    _path, r = gate(tmp_path, GATE, "--junit", str(junit), "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(x["name"], x["status"], x["distinct_states"]) for x in rows] == [
        ("kip966", "passed", 8302), ("legacy", "passed", 16590), ("no HWM rule", "passed", rows[2]["distinct_states"])]
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0"


def test_one_changed_expectation_fails_one_testcase_with_the_trace(tmp_path):
    junit = tmp_path / "gate.xml"
    text = GATE.replace('expect = "violated: NoAckedLoss"', 'expect = "holds"')
    _path, r = gate(tmp_path, text, "--junit", str(junit), "--trace-dir", str(tmp_path / "traces"))
    assert r.exit_code == 1
    assert "2 passed, 1 failed, 0 skipped" in r.stdout
    cases = ET.parse(junit).getroot().findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["legacy"]
    failure = failed[0].find("failure")
    assert failure.get("message") == "verdict: expected holds, got violated: NoAckedLoss"
    assert "1. FenceBroker(broker=0, leader=1)" in failure.text and "7. UncleanShutdown(broker=1, keep=0)" in failure.text
    saved = json.loads((tmp_path / "traces" / "legacy.json").read_text())
    assert saved["invariant"] == "NoAckedLoss" and len(saved["trace"]) == 8


def test_a_pinned_count_mismatch_names_both_numbers(tmp_path):
    _path, r = gate(tmp_path, GATE.replace("states = 8302", "states = 7700"), "--json")
    assert r.exit_code == 1
    failures = {x["name"]: x["failures"] for x in json.loads(r.stdout)}
    assert failures["kip966"] == ["distinct states: pinned 7,700, got 8,302"]


def test_update_baseline_rewrites_only_the_counts(tmp_path):
    text = GATE.replace("states = 8302", "states = 7700")
    path, r = gate(tmp_path, text, "--update-baseline")
    assert r.exit_code == 0, r.output
    assert "baseline kip966: states 7700 -> 8302" in r.stderr
    assert "baseline no HWM rule: states unpinned -> " in r.stderr
    new = path.read_text()
    assert "states = 8302" in new and new.count("states = ") == 3
    assert [e.states for e in read_gate(str(path), load)][:2] == [8302, 16590]


def test_fail_fast_skips_the_rest(tmp_path):
    text = GATE.replace('expect = "holds"', 'expect = "violated: NoAckedLoss"')
    _path, r = gate(tmp_path, text, "--fail-fast", "--json")
    assert r.exit_code == 1
    assert [x["status"] for x in json.loads(r.stdout)] == ["failed", "skipped", "skipped"]


@pytest.mark.parametrize("change, message", [
    (('variant = "legacy"', 'variant = "nope"'), "entry 2 (legacy): config key 'variant': \"nope\" is not allowed"),
    (('expect = "holds"', 'expect = "fine"'), "entry 1 (kip966): expect is 'fine'; allowed: \"holds\" or "),
    (('expect = "holds"\n', ''), "entry 1 (kip966): expect is required"),
    (("states = 8302", "states = -1"), "entry 1 (kip966): states is -1; allowed: a positive integer"),
    (("budget_s = 600", "budget_s = \"soon\""), "entry 2 (legacy): budget_s is 'soon'"),
    (("[[entry]]\nname = \"kip966\"", "[[entry]]\nnme = \"kip966\""), "entry 1: needs name"),
])
def test_bad_gate_files_exit_2_with_one_line(tmp_path, change, message):
    text = GATE.replace(*change)
    assert text != GATE
    _path, r = gate(tmp_path, text)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and message in r.stderr, r.stderr


def test_a_vacuous_holds_fails_its_entry(tmp_path):
    text = GATE.replace('states = 8302', 'states = 8302\nexercises = ["UncleanRecovery", "Fetch"]\n'
                                         'goals = ["ElrMemberElected", "RecoveryCompletes"]')
    _path, r = gate(tmp_path, text, "--json")
    assert r.exit_code == 1
    failures = {x["name"]: x["failures"] for x in json.loads(r.stdout)}
    assert failures["kip966"] == ["vacuous: UncleanRecovery never fired", "vacuous: goal RecoveryCompletes not reached"]
