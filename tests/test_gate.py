"""`modelcheck gate`: pinned verdicts and counts, JUnit, baselines, bad files."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tomllib
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.runs import gate as gt
from modelcheck.runs.gate import read_gate
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
name = "two unclean shutdowns"
config = { variant = "kip966", max_unclean_shutdowns = 2 }
expect = "violated: NoAckedLoss"
"""


def gate(tmp_path, text: str, *args: str):
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return path, CliRunner().invoke(main, ["gate", str(path), "-j", "1", *args])


@pytest.mark.slow
def test_a_gate_whose_expectations_hold_exits_0(tmp_path):
    junit = tmp_path / "gate.xml"
    _path, r = gate(tmp_path, GATE, "--junit", str(junit), "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(x["name"], x["status"], x["distinct_states"]) for x in rows] == [
        ("kip966", "passed", 8302),
        ("legacy", "passed", 16590),
        ("two unclean shutdowns", "passed", 5288),
    ]
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "0"


@pytest.mark.slow
def test_one_changed_expectation_fails_one_testcase_with_the_trace(tmp_path):
    junit = tmp_path / "gate.xml"
    text = GATE.replace('expect = "violated: NoAckedLoss"', 'expect = "holds"', 1)
    _path, r = gate(tmp_path, text, "--junit", str(junit), "--trace-dir", str(tmp_path / "traces"))
    assert r.exit_code == 1
    assert "2 passed, 1 failed, 0 skipped" in r.stdout
    cases = ET.parse(junit).getroot().findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["legacy"]
    failure = failed[0].find("failure")
    assert failure.get("message") == "verdict: expected holds, got violated: NoAckedLoss"
    assert (
        "1. FenceBroker(broker=0, leader=1)" in failure.text and "7. UncleanShutdown(broker=1, keep=0)" in failure.text
    )
    saved = json.loads((tmp_path / "traces" / "legacy.json").read_text())
    assert saved["invariant"] == "NoAckedLoss" and len(saved["trace"]) == 8


@pytest.mark.slow
def test_the_summary_a_pull_request_reads_names_each_failure_and_its_trace_command(tmp_path):
    """--summary appends markdown (GitHub's $GITHUB_STEP_SUMMARY is written by
    every step in turn): the failing entry, why, and a check that shows it."""
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's\n")
    text = GATE.replace("states = 8302", "states = 7700")
    path, r = gate(tmp_path, text, "--summary", str(summary))
    assert r.exit_code == 1
    lines = summary.read_text().splitlines()
    assert lines[:5] == [
        "an earlier step's",
        f"## modelcheck gate `{path}`: **FAILED**",
        "",
        "2 passed, 1 failed, 0 skipped.",
        "",
    ]
    command = "modelcheck check --set max_records=1 --set max_fences=0 --set variant=kip966"
    assert lines[7:] == [
        f"| kip966 | failed | holds | 8,302 (7,700) | distinct states: pinned 7,700, got 8,302 | `{command}` |",
    ]
    shown = CliRunner().invoke(main, ["check", *command.split()[2:], "--json"])
    assert json.loads(shown.stdout)["distinct_states"] == 8302


def test_a_pinned_count_mismatch_names_both_numbers(tmp_path):
    _path, r = gate(tmp_path, GATE.replace("states = 8302", "states = 7700"), "--json")
    assert r.exit_code == 1
    failures = {x["name"]: x["failures"] for x in json.loads(r.stdout)}
    assert failures["kip966"] == ["distinct states: pinned 7,700, got 8,302"]


def test_a_budget_overrun_warns_and_fails_only_when_strict(tmp_path):
    """A budget is wall-clock seconds: a busy machine stretches them, so an
    overrun must not fail a right verdict unless --strict-budgets asks."""
    text = GATE.replace("budget_s = 600", "budget_s = 0.001")
    junit = tmp_path / "gate.xml"
    _path, r = gate(tmp_path, text, "--json", "--junit", str(junit))
    assert r.exit_code == 0, r.output
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    late = rows["legacy"]
    assert (late["status"], late["failures"]) == ("passed", [])
    assert re.fullmatch(r"time: [0-9.]+ s, over the budget of 0.001 s", late["warnings"][0])
    assert rows["kip966"]["warnings"] == []
    assert "warning: time:" in ET.parse(junit).getroot().find("testcase[@name='legacy']/system-out").text
    _path, r = gate(tmp_path, text, "--json", "--strict-budgets")
    assert r.exit_code == 1
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    assert rows["legacy"]["status"] == "failed" and rows["legacy"]["failures"][0].startswith("time: ")
    assert rows["legacy"]["warnings"] == [] and rows["kip966"]["status"] == "passed"


def test_update_baseline_rewrites_only_the_counts(tmp_path):
    text = GATE.replace("states = 8302", "states = 7700")
    path, r = gate(tmp_path, text, "--update-baseline")
    assert r.exit_code == 0, r.output
    assert "baseline kip966: states 7700 -> 8302" in r.stderr
    assert "baseline two unclean shutdowns: states unpinned -> 5288" in r.stderr
    new = path.read_text()
    assert "states = 8302" in new and new.count("states = ") == 3
    assert [e.states for e in read_gate(str(path), load)] == [8302, 16590, 5288]


def test_fail_fast_skips_the_rest(tmp_path):
    text = GATE.replace('expect = "holds"', 'expect = "violated: NoAckedLoss"')
    _path, r = gate(tmp_path, text, "--fail-fast", "--json")
    assert r.exit_code == 1
    assert [x["status"] for x in json.loads(r.stdout)] == ["failed", "skipped", "skipped"]


@pytest.mark.parametrize(
    "change, message",
    [
        (('variant = "legacy"', 'variant = "nope"'), "entry 2 (legacy): config key 'variant': \"nope\" is not allowed"),
        (('expect = "holds"', 'expect = "fine"'), "entry 1 (kip966): expect is 'fine'; allowed: \"holds\" or "),
        (('expect = "holds"\n', ""), "entry 1 (kip966): expect is required"),
        (("states = 8302", "states = -1"), "entry 1 (kip966): states is -1; allowed: a positive integer"),
        (("budget_s = 600", 'budget_s = "soon"'), "entry 2 (legacy): budget_s is 'soon'"),
        (('[[entry]]\nname = "kip966"', '[[entry]]\nnme = "kip966"'), "entry 1: needs name"),
        (
            ('expect = "violated: NoAckedLoss"', 'expect = "violated: NoAckedLos"'),
            "entry 2 (legacy): expect: 'NoAckedLos' is not an invariant this config checks (ConsistentRead, ",
        ),
        (
            ("max_fences = 1 }", 'max_fences = 1, invariants = ["ConsistentRead", "LeaderInIsr"] }'),
            "entry 2 (legacy): expect: 'NoAckedLoss' is not an invariant this config checks "
            "(ConsistentRead, LeaderInIsr)",
        ),
        (
            ("max_fences = 1 }", 'max_fences = 1, invariants = ["NoAckedLoss", "NoAckedLoss"] }'),
            'entry 2 (legacy): config key \'invariants\': ["NoAckedLoss", "NoAckedLoss"] is not allowed (allowed: '
            "a non-empty list of distinct invariant names of the variant)",
        ),
        (
            ("budget_s = 600", "budget_s = nan"),
            "entry 2 (legacy): budget_s is nan; allowed: a positive number of seconds",
        ),
        (
            ("budget_s = 600", "budget_s = inf"),
            "entry 2 (legacy): budget_s is inf; allowed: a positive number of seconds",
        ),
        (("budget_s = 600", "budget_s = 600\nnote = 5"), "entry 2 (legacy): note is 5; allowed: text"),
        (
            ('name = "kip966"', 'name = "kip\\n966"'),
            'entry 1: name is "kip\\n966"; allowed: non-empty text on one line',
        ),
        (('name = "kip966"', 'name = " "'), 'entry 1: name is " "; allowed: non-empty text on one line'),
    ],
)
def test_bad_gate_files_exit_2_with_one_line(tmp_path, change, message):
    text = GATE.replace(*change)
    assert text != GATE
    _path, r = gate(tmp_path, text)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and message in r.stderr, r.stderr


def test_symmetry_a_variant_forbids_is_refused_before_any_entry_runs_and_nothing_is_written(tmp_path):
    """It ran the entries before it, then a traceback (exit 3), --junit and
    --trace-dir never written; check refuses the same pair with exit 2."""
    both = 'variant = "kafka-4", max_unclean_shutdowns = 2 }\nsymmetry = true'
    text = GATE.replace('variant = "kip966", max_unclean_shutdowns = 2 }', both)
    junit, traces = tmp_path / "j.xml", tmp_path / "traces"
    _path, r = gate(tmp_path, text, "--junit", str(junit), "--trace-dir", str(traces))
    assert (r.exit_code, r.stdout) == (2, ""), r.output
    assert r.stderr.startswith(f"error: {tmp_path / 'gate.toml'}: entry 3 (two unclean shutdowns): ")
    assert "kafka-4 elects the first valid replica in assignment order" in r.stderr and r.stderr.count("\n") == 1
    assert not junit.exists() and not traces.exists()


def test_a_vacuous_holds_fails_its_entry(tmp_path):
    text = GATE.replace(
        "states = 8302",
        'states = 8302\nexercises = ["UncleanRecovery", "Fetch"]\ngoals = ["ElrMemberElected", "RecoveryCompletes"]',
    )
    _path, r = gate(tmp_path, text, "--json")
    assert r.exit_code == 1
    failures = {x["name"]: x["failures"] for x in json.loads(r.stdout)}
    assert failures["kip966"] == ["vacuous: UncleanRecovery never fired", "vacuous: goal RecoveryCompletes not reached"]


# ---- --update-baseline on the files people write; --trace-dir names ----------------------

TINY_ENTRY = 'config = { variant = "legacy", max_records = 1, max_fences = 0 }\nexpect = "violated: NoAckedLoss"\n'
LAYOUTS = {  # entries "a" and "b"; set_states must pin both and change nothing else
    "indented, comment after the name": '[[entry]]\n  name = "a"\n  config = {}\n\n[[entry]]\nname = "b"  # why\n'
    "config = {}\n",
    "single quotes, quoted key, spaced header": "[[ entry ]]  # first\n'name' = 'a'\n[[entry]]\nname='b'#x\n",
    "multi-line names": "[[entry]]\nname = \"\"\"\na\"\"\"\nconfig = {}\n[[entry]]\nname = '''\nb'''\n",
    "states pinned, with a comment, before the name": '[[entry]]\nstates = 5  # by hand\nname = "a"\n'
    '[[entry]]\nname = "b"\nstates = 1_000 # old\n',
    "a note that looks like entries": '[[entry]]\nname = "a"\nnote = """\n[[entry]]\nname = "b"\nstates = 3\n"""\n'
    '[[entry]]\nname = "b"\n',
    "sub-tables and defaults after": '[[entry]]\nname = "a"\n[entry.config]\nvariant = "legacy"\n[[entry]]\n'
    'name = "b"\nexercises = [\n  "Fetch",\n]\n[defaults]\nbrokers = 3\n',
    "CRLF, no newline at the end": '[[entry]]\r\nname = "a"\r\n[[entry]]\r\nname = "b"',
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_set_states_edits_every_toml_layout_and_only_the_counts(tmp_path, layout):
    path = tmp_path / "gate.toml"
    path.write_bytes(LAYOUTS[layout].encode())
    new = gt.set_states(str(path), {"a": 11, "b": 22})
    before, after = tomllib.loads(LAYOUTS[layout]), tomllib.loads(new)
    assert [e.pop("states") for e in after["entry"]] == [11, 22]
    for e in before["entry"]:
        e.pop("states", None)
    assert after == before

    def others(text: str) -> list[str]:
        return [line for line in text.splitlines() if not re.match(r"\s*'?states'?\s*=", line)]

    assert others(new) == others(LAYOUTS[layout])
    assert new.count("\n") == new.count("\r\n") if "\r" in LAYOUTS[layout] else "\r" not in new


def test_a_layout_set_states_cannot_edit_is_refused_before_running(tmp_path, monkeypatch):
    monkeypatch.setattr("modelcheck.runs.gate.run_gate", lambda *a: pytest.fail("the gate ran"))
    text = 'entry = [{ name = "a", config = { max_records = 1 }, expect = "holds" }]\n'
    path, r = gate(tmp_path, text, "--update-baseline")
    assert (
        r.exit_code == 2
        and r.stderr
        == f"error: {path}: cannot locate each [[entry]]'s name to update its "
        "states = N; set them by hand (or write entries as [[entry]] tables)\n"
    )
    assert path.read_text() == text


def test_update_baseline_rewrites_a_json_gate_file_keeping_key_order(tmp_path):
    """It crashed after running every entry, losing --junit."""
    doc = {
        "defaults": {"max_records": 1, "max_fences": 0},
        "entry": [
            {"name": "kip966", "config": {"variant": "kip966"}, "expect": "holds", "states": 7700},
            {"name": "legacy", "config": {"variant": "legacy"}, "expect": "violated: NoAckedLoss"},
        ],
    }
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(doc))
    r = CliRunner().invoke(
        main, ["gate", str(path), "-j", "1", "--update-baseline", "--junit", str(tmp_path / "j.xml")]
    )
    assert r.exit_code == 0, r.output
    new = json.loads(path.read_text())
    assert [list(e) for e in new["entry"]] == [
        ["name", "config", "expect", "states"],
        ["name", "states", "config", "expect"],
    ]
    assert [e["states"] for e in new["entry"]] == [8302, 1939] and (tmp_path / "j.xml").exists()


def test_update_baseline_with_an_indented_name_and_a_comment_after_it(tmp_path):
    text = f'[[entry]]\n  name = "legacy"  # the old protocol\n  {TINY_ENTRY}  states = 5  # stale\n'
    path, r = gate(tmp_path, text, "--update-baseline")
    assert r.exit_code == 0, r.output
    assert path.read_text() == text.replace("states = 5", "states = 1939")


def test_a_read_only_gate_file_is_refused_before_running_and_left_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr("modelcheck.runs.gate.run_gate", lambda *a: pytest.fail("the gate ran"))
    path = tmp_path / "gate.toml"
    path.write_text(GATE)
    path.chmod(0o444)
    r = CliRunner().invoke(main, ["gate", str(path), "-j", "1", "--update-baseline"])
    assert r.exit_code == 2 and r.stderr == f"error: --update-baseline {path}: is read-only\n"
    assert path.read_text() == GATE and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_symlinked_gate_file_stays_a_link_and_its_target_keeps_its_mode(tmp_path):
    real, link = tmp_path / "real.toml", tmp_path / "gate.toml"
    real.write_text(f'[[entry]]\nname = "legacy"\n{TINY_ENTRY}')
    real.chmod(0o640)
    link.symlink_to("real.toml")
    r = CliRunner().invoke(main, ["gate", str(link), "-j", "1", "--update-baseline"])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [e.states for e in read_gate(str(real), load)] == [1939]


def test_the_reports_are_written_when_the_baseline_cannot_be(tmp_path, monkeypatch):
    replace = os.replace

    def full_for_the_gate_file(src, dst):
        if str(dst).endswith("gate.toml"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        replace(src, dst)

    monkeypatch.setattr("modelcheck.output.os.replace", full_for_the_gate_file)
    text = f'[[entry]]\nname = "legacy"\n{TINY_ENTRY.replace("violated: NoAckedLoss", "holds")}'
    text += f'[[entry]]\nname = "re-pinned"\nstates = 5\n{TINY_ENTRY}'  # its verdict as expected: re-pinned
    path, r = gate(
        tmp_path, text, "--update-baseline", "--junit", str(tmp_path / "j.xml"), "--trace-dir", str(tmp_path / "traces")
    )
    assert r.exit_code == 4 and "Traceback" not in r.output and "1 passed, 1 failed" in r.stdout
    assert r.stderr.splitlines()[-1] == f"error: --update-baseline {path}: cannot write: No space left on device"
    assert path.read_text() == text and (tmp_path / "traces" / "legacy.json").exists()
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "1"


def test_trace_file_names_are_unique_visible_and_stable():
    names = ["legacy, 3 brokers", "legacy; 3 brokers", "!!!", "kip966", "Kafka 4", "kafka-4"]
    files = gt.trace_file_names(names)
    assert files == gt.trace_file_names(names) and len({f.lower() for f in files}) == len(names)
    assert files[3] == "kip966.json" and all(re.fullmatch(r"\w[\w-]*\.json", f) for f in files)
    assert re.fullmatch(r"legacy-3-brokers-[0-9a-f]{8}\.json", files[0]) and re.fullmatch(
        r"entry-[0-9a-f]{8}\.json", files[2]
    )


@pytest.mark.slow
def test_trace_dir_gives_each_failing_entry_its_own_file(tmp_path):
    """ "legacy, 3 brokers" and "legacy; 3 brokers" shared a file, "!!!" wrote a hidden ".json"."""
    names = ["legacy, 3 brokers", "legacy; 3 brokers", "!!!"]
    text = "".join(f'[[entry]]\nname = "{n}"\n{TINY_ENTRY.replace("violated: NoAckedLoss", "holds")}' for n in names)
    _path, r = gate(tmp_path, text, "--trace-dir", str(tmp_path / "traces"))
    assert r.exit_code == 1
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == sorted(gt.trace_file_names(names))


def test_a_gate_file_changed_during_the_run_is_not_updated_wrong(tmp_path, monkeypatch):
    run_gate = gt.run_gate

    def renaming_meanwhile(*args):
        outcomes = run_gate(*args)
        path.write_text(path.read_text().replace('name = "legacy"', 'name = "renamed"'))
        return outcomes

    monkeypatch.setattr("modelcheck.runs.gate.run_gate", renaming_meanwhile)
    path = tmp_path / "gate.toml"
    path.write_text(f'[[entry]]\nname = "legacy"\n{TINY_ENTRY}')
    r = CliRunner().invoke(main, ["gate", str(path), "-j", "1", "--update-baseline"])
    assert r.exit_code == 4 and r.stderr.splitlines()[-1] == (
        f"error: {path}: cannot read its entries back to update them (KeyError: 'legacy')"
    )
    assert "states" not in path.read_text() and "1 passed, 0 failed" in r.stdout  # the result all the same


@pytest.mark.slow
def test_entries_share_memory_among_the_processes_that_run_them_not_jobs(tmp_path, cell_pools):
    from modelcheck.memory import default_limit

    text = f'[[entry]]\nname = "a"\n{TINY_ENTRY}[[entry]]\nname = "b"\n{TINY_ENTRY}'
    _path, r = gate(tmp_path, text, "-j", "40", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(x["memory_limit"], x["spilled"]) for x in rows] == [(default_limit(share_among=2), False)] * 2
    assert cell_pools == [2]


def test_update_baseline_does_not_re_pin_an_entry_whose_verdict_failed(tmp_path):
    """A wrong verdict's count is no baseline: the entry keeps its pin and
    fails on both counts, and the output says it was not re-pinned."""
    text = f'[[entry]]\nname = "legacy"\nstates = 5\n{TINY_ENTRY.replace("violated: NoAckedLoss", "holds")}'
    path, r = gate(tmp_path, text, "--update-baseline", "--json")
    assert r.exit_code == 1
    assert path.read_text() == text
    assert "baseline legacy: not re-pinned, its verdict failed (expected holds, got violated: NoAckedLoss)" in r.stderr
    assert f"{path}: 0 pinned count(s) updated" in " ".join(r.stderr.split())
    [row] = json.loads(r.stdout)
    assert row["failures"][0] == "verdict: expected holds, got violated: NoAckedLoss"
    assert row["failures"][1].startswith("distinct states: pinned 5, got ")


def test_trace_dir_loses_the_trace_of_an_entry_that_now_passes(tmp_path):
    """A stale legacy.json read as a failure of this run; files there that
    are not the entries' traces stay."""
    traces = tmp_path / "traces"
    _path, r = gate(
        tmp_path,
        f'[[entry]]\nname = "legacy"\n{TINY_ENTRY.replace("NoAckedLoss", "TypeOK")}',
        "--trace-dir",
        str(traces),
    )
    assert r.exit_code == 1 and (traces / "legacy.json").exists()
    (traces / "other.json").write_text((traces / "legacy.json").read_text())
    _path, r = gate(tmp_path, f'[[entry]]\nname = "legacy"\n{TINY_ENTRY}', "--trace-dir", str(traces))
    assert r.exit_code == 0 and sorted(p.name for p in traces.iterdir()) == ["other.json"]


def test_the_workflow_docs_ci_md_shows_is_the_one_the_project_runs():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, ".github", "workflows", "gate.yml")) as f:
        workflow = f.read()
    with open(os.path.join(root, "docs", "ci.md")) as f:
        assert f"```yaml\n{workflow}```" in f.read()
