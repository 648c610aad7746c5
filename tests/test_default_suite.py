"""`modelcheck check` without a config: the default suite, which together
must exercise the whole KIP (every action fires, every goal is reached),
and a first run that answers before its kernel is compiled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.config import ConfigError
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.check import check_command
from modelcheck.suite import read_suite
from specs.kafka_elr import DEFAULT_SUITE, load

ROOT = Path(__file__).parent.parent
# each member's distinct states, as the reference engine counts them (test below)
COUNTS = {"data": 108_175, "recovery": 4_660, "upgrades": 11_701, "propagated": 6_306}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def suite_json():
    r = invoke("check", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_default_check_fires_every_action_and_reaches_every_goal(suite_json):
    """The point of the suite: no action of kip966 that no member fires, no
    goal no member reaches, and every member holds."""
    assert suite_json["verdict"] == "holds"
    assert [c["name"] for c in suite_json["checks"]] == list(COUNTS)
    assert {c["name"]: c["distinct_states"] for c in suite_json["checks"]} == COUNTS
    assert all(c["verdict"] == "holds" and c["config"]["variant"] == "kip966" for c in suite_json["checks"])
    labels = {label for m in read_suite(DEFAULT_SUITE) for label in load(m.config).coverage_labels}
    goals = set(load({}).goals)
    coverage = suite_json["coverage"]
    assert set(coverage["actions"]) == labels and set(coverage["goals"]) == goals
    fired = {a for a, counts in coverage["actions"].items() if any(counts.values())}
    assert fired == labels and coverage["never_fired"] == []
    assert {g for g, by in coverage["goals"].items() if by} == goals and coverage["never_reached"] == []


def test_every_member_shares_one_kernel():
    """One compile serves the whole default check: every member has as many
    processes as the first (a spare broker counts as one)."""
    assert {load(m.config).n for m in read_suite(DEFAULT_SUITE)} == {3}


@pytest.mark.slow
def test_the_reference_engine_counts_each_member_alike():
    """The counts the suite is pinned to are the reference engine's too."""
    for member in read_suite(DEFAULT_SUITE):
        assert run(load(member.config), CheckOptions.of(engine="bfs")).distinct_states == COUNTS[member.name], (
            member.name
        )


def test_the_default_check_prints_a_verdict_line_each_and_the_coverage_table():
    r = invoke("check")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("default check (default.toml): 4 configurations that together fire every action")
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["holds", name, f"{count:,}"] for name, count in COUNTS.items()
    ]
    assert "  AdminElectLeaders(UNCLEAN) " in r.stdout and "  CleanShutdownRegistersClean " in r.stdout
    assert lines[-1] == "every action fired and every goal was reached in some configuration"


def test_any_set_checks_one_configuration():
    """--set (or CONFIG.toml) checks the embedded default with the keys
    given, as before the suite: one result, not the suite's."""
    r = invoke("check", "--set", "max_records=1", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["distinct_states"] == COUNTS["data"] and "checks" not in out


def test_a_checkpoint_of_the_default_check_is_refused_in_one_line(tmp_path):
    r = invoke("check", "--checkpoint", str(tmp_path / "cp"))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        "error: --checkpoint checkpoints one configuration, and without CONFIG.toml or --set check runs the "
        "default suite (default.toml): give the configuration to checkpoint\n"
    )
    assert not (tmp_path / "cp").exists()


def check_suite_file(path: Path, trace_out: str | None = None) -> int:
    """check_command on a suite file of the test's own (the CLI names the spec's): its exit status."""
    options = CheckOptions.of(workers=1)
    return check_command(load, None, (), options, as_json=False, trace_out=trace_out, quiet=True, suite=path)


def test_a_member_violated_fails_the_default_check_with_its_counterexample(tmp_path, capsys):
    """Exit 1; the verdict line names the invariant, the member's
    counterexample follows the table, and --trace-out holds it."""
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[[check]]\nname = "fine"\nabout = "holds"\n[check.config]\nmax_records = 1\nmax_fences = 0\n'
        '[[check]]\nname = "buggy"\nabout = "the HWM ignores min ISR"\n[check.config]\n'
        'variant = "hwm-ignores-min-isr"\nmax_records = 1\n'
    )
    status = check_suite_file(suite, str(tmp_path / "t.json"))
    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines()[1].split()[:3] == ["holds", "fine", "8,302"]
    assert out.splitlines()[2].split()[:3] == ["violated:", "ElrHasDataToHwm", "buggy"]
    assert "\nbuggy: the HWM ignores min ISR\n" in out and "a shortest counterexample, re-validated by replay" in out
    assert json.loads((tmp_path / "t.json").read_text())["invariant"] == "ElrHasDataToHwm"


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "no [[check]] tables"),
        ('[[check]]\nname = "a"\n', "[[check]] 1 must hold name, about and a [check.config] table"),
        (
            '[[check]]\nname = "a"\nabout = ""\nconfig = {}\n[[check]]\nname = "a"\nabout = ""\nconfig = {}\n',
            "two [[check]] tables are named 'a'",
        ),
        ("[[check", "Expected ']]' at the end of an array declaration"),
    ],
)
def test_a_suite_file_that_is_not_one_is_refused_saying_why(tmp_path, text, error):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=".*" + error.replace("[", r"\[").replace("]", r"\]")):
        read_suite(path)


FIRST_COMPILE = """
import sys; sys.path.insert(0, 'tests')
import modelcheck.engine
from test_engine import Counters
from modelcheck.engine.options import CheckOptions
from modelcheck.runs.first_compile import after_compile, first_compile
from modelcheck.engine import run
modelcheck.engine.KEEP_COMPILING_AFTER_S = 0.0
spec = Counters(limit=3)
job = first_compile(spec, CheckOptions())
result = run(spec, compiling=job, progress=lambda st: print(st.get("note", ""), file=sys.stderr))
print(result.run_info["kernel"], result.distinct_states)
after_compile(job, [result], quiet=False)
"""


@pytest.mark.slow
def test_a_first_run_answers_then_finishes_the_compile_and_says_where_the_kernel_is(tmp_path):
    """Cold: the interpreted engine answers while the kernel compiles (the
    progress says so, with an estimate); after the verdict the compile is
    finished, one line says where the kernel is, and the next run loads it."""
    env = {k: v for k, v in os.environ.items() if k != "MODELCHECK_KERNEL"} | {"MODELCHECK_CACHE": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-c", FIRST_COMPILE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert first.stdout == "interpreted (done before the kernel compiled) 16\n", first.stderr
    assert "compiling the kernel of Counters for 1 processes (about " in first.stderr
    assert (
        f"the kernel of Counters for 1 processes is compiled and cached in {tmp_path / 'kernels'}: "
        "the next run loads it" in first.stderr
    )
    times = json.loads((tmp_path / "kernels" / "compile-seconds.json").read_text())
    assert len(times) == 1 and next(iter(times.values()))["seconds"] > 0
    again = subprocess.run(
        [sys.executable, "-c", FIRST_COMPILE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert again.stdout == "compiled 16\n" and "compiling" not in again.stderr, again.stderr


def test_a_default_check_without_a_kernel_warns_once(tmp_path, capsys, monkeypatch):
    """Every member ran interpreted for want of a kernel: one warning line
    for the run, as a single check prints, not one a member."""
    monkeypatch.setenv("MODELCHECK_KERNEL", "interpreted")
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[[check]]\nname = "a"\nabout = ""\n[check.config]\nmax_records = 0\nmax_fences = 0\n'
        '[[check]]\nname = "b"\nabout = ""\n[check.config]\nmax_records = 0\n'
    )
    assert check_suite_file(suite) == 0
    assert capsys.readouterr().err == (
        "warning: no compiled kernel (MODELCHECK_KERNEL=interpreted); ran the interpreted engine\n"
    )
