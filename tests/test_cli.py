"""The command line as a user runs it: outputs, exit codes, bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import modelcheck.runs.check as check_run
from cli import main

ROOT = Path(__file__).parent.parent
SMALL = ["--set", "max_records=1", "--set", "max_fences=0"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_check_json_holds():
    r = invoke("check", *SMALL, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["verdict"] == "holds" and out["invariant"] is None and out["trace"] == []
    assert out["distinct_states"] == 8302 and out["depth"] == 17
    assert out["generated_states"] == 1 + sum(out["coverage"].values())
    assert out["config"]["variant"] == "kip966" and out["config"]["max_records"] == 1
    assert set(out) >= {"elapsed_s", "coverage", "config"}


@pytest.mark.slow
def test_a_new_users_first_small_check_answers_interpreted_without_a_warning(tmp_path):
    """As a first run on a fresh machine: no kernel in the cache, so the
    compile races the interpreted engine, which answers first; that is not
    a failure to report (nor a crash), and no compile is left running."""
    env = {k: v for k, v in os.environ.items() if k != "MODELCHECK_KERNEL"} | {"MODELCHECK_CACHE": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-c", "import cli; cli.main()", "check", *SMALL],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert "holds: 16 invariants hold" in r.stdout and "distinct states: 8,302" in r.stdout
    assert "warning" not in r.stderr and "Traceback" not in r.stderr
    assert "compiling the kernel of Kip966 for 3 processes (about " in r.stderr
    assert "; once: later runs load it); the interpreted engine checks meanwhile" in r.stderr


@pytest.mark.slow  # the only fast test of this variant: its kernel's compile would double a cold fast tier's
def test_the_explanation_of_a_violation_prints_the_logs_it_quotes():
    """Logs read "[r1@0]", which rich would take for markup and drop."""
    r = invoke("check", "--set", "variant=hwm-on-maximal-isr")
    assert r.exit_code == 1
    assert "ElrHasDataToHwm: ELR member(s) [2] lack data below the high watermark ([r1@0])" in r.stdout


def test_check_json_violation_has_the_trace_from_the_initial_state():
    r = invoke("check", "--set", "variant=legacy", "--json")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["verdict"] == "violated" and out["invariant"] == "NoAckedLoss"
    first, last = out["trace"][0], out["trace"][-1]
    assert first["action"] is None and first["args"] == {} and first["state"]["isr"] == [0, 1, 2]
    assert last["action"] == "UncleanShutdown" and last["args"] == {"broker": 1, "keep": 0}
    assert last["state"]["status"][1] == "OFFLINE_DIRTY"


def test_check_human_output_shows_the_trace_and_why(tmp_path):
    trace = tmp_path / "t.json"
    r = invoke("check", "--set", "variant=legacy", "--trace-out", str(trace))
    assert r.exit_code == 1
    assert "violated: NoAckedLoss after 7 steps" in r.stdout
    assert "UncleanShutdown(broker=1, keep=0)" in r.stdout
    assert "acked record(s) r1 are on no replica the controller may elect cleanly" in r.stdout
    saved = json.loads(trace.read_text())
    assert saved["invariant"] == "NoAckedLoss" and len(saved["trace"]) == 8


def test_check_holds_writes_no_trace(tmp_path):
    trace = tmp_path / "t.json"
    r = invoke("check", *SMALL, "--trace-out", str(trace))
    assert r.exit_code == 0 and "holds" in r.stdout and not trace.exists()


def test_check_reads_a_config_file_with_its_expected_verdict(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('variant = "legacy"\nmax_records = 1\n[expected]\nverdict = "violated: NoAckedLoss"\n')
    r = invoke("check", str(cfg), "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["expected"] == "violated: NoAckedLoss" and out["as_expected"] is True


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "colour=3"], "error: config key 'colour' does not exist"),
        (["--set", "min_isr=0"], "error: config key 'min_isr': 0 is not allowed (allowed: an integer >= 1)"),
        (["--set", "max_fences=-1"], "error: config key 'max_fences': -1 is not allowed (allowed: an integer >= 0)"),
        (["--set", "brokers=0"], "error: config key 'brokers': 0 is not allowed"),
        (
            ["--set", "variant=kip999"],
            "error: config key 'variant': \"kip999\" is not allowed "
            "(allowed: kip966 | legacy | kip966-elr-only | kafka-4",
        ),
        (["--set", "unclean_recovery_strategy=fast"], "error: config key 'unclean_recovery_strategy'"),
        (["--set", 'acks=["2"]'], "error: config key 'acks'"),
        (["--set", 'invariants=["Nope"]'], "error: config key 'invariants': 'Nope' is not an invariant"),
        (
            ["--set", "variant=legacy", "--set", 'invariants=["ElrDisjointIsr"]'],
            "error: config key 'invariants': 'ElrDisjointIsr' is not an invariant of variant 'legacy'",
        ),
        (["--set", "novalue"], "error: --set 'novalue': expected KEY=VALUE"),
        (["missing.toml"], "error: missing.toml: no such file"),
        (
            ["--set", "max_records=8"],
            "error: config key 'max_records': 8 is not allowed (allowed: an integer from 0 to 7)",
        ),
        (
            ["--set", 'invariants=["TypeOK", "TypeOK"]'],
            'error: config key \'invariants\': ["TypeOK", "TypeOK"] is not '
            "allowed (allowed: a non-empty list of distinct invariant names of the variant)",
        ),
        (
            ["--engine", "bfs", "--fingerprint-bits", "128"],
            "error: --fingerprint-bits applies to the compiled engines (fast, spark); "
            "the reference engine keeps 64-bit",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message):
    r = invoke("check", *args)
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), r.stderr


@pytest.mark.parametrize(
    "config, message",
    [
        (
            'variant = "legacy"\n[expected]\nverdict = "violated: NoAckedLos"\n',
            "[expected] verdict: 'NoAckedLos' is not an invariant this config checks (ConsistentRead, ",
        ),
        (
            'variant = "legacy"\ninvariants = ["ConsistentRead"]\n[expected]\nverdict = "violated: NoAckedLoss"\n',
            "[expected] verdict: 'NoAckedLoss' is not an invariant this config checks (ConsistentRead)",
        ),
        (
            '[expected]\nverdict = "violated"\n',
            '[expected] verdict is \'violated\'; allowed: "holds" or "violated: NAME"',
        ),
    ],
)
def test_an_expected_verdict_that_can_never_come_out_exits_2(tmp_path, config, message):
    """Refused before the check runs, not reported as DIFFERS after it."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(config)
    r = invoke("check", str(cfg))
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.output
    assert r.stderr.startswith(f"error: {cfg}: {message}"), r.stderr


def test_malformed_toml_exits_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("brokers = = 3\n")
    r = invoke("check", str(bad))
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "bad.toml: malformed TOML" in r.stderr


def test_bad_input_writes_no_trace(tmp_path):
    trace = tmp_path / "t.json"
    r = invoke("check", "--set", "variant=nope", "--trace-out", str(trace))
    assert r.exit_code == 2 and not trace.exists()


def test_replay_json_reports_every_step():
    r = invoke("replay", str(ROOT / "specs/scenarios/kip966-elr-example.toml"), "--json")
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["ok"] is True and len(out["steps"]) == 19
    assert out["steps"][1]["state"]["elr"] == [2, 3] and out["initial"]["isr"] == [0, 1, 2, 3]


def test_replay_of_a_failing_json_scenario_exits_1(tmp_path):
    scen = tmp_path / "s.json"
    scen.write_text(
        json.dumps(
            {
                "config": {},
                "steps": [
                    {"action": "ShrinkIsr", "brokers": [2]},
                    {"action": "CommitAlterPartition", "expect": {"isr": [0, 1, 2]}},
                ],
            }
        )
    )
    r = invoke("replay", str(scen))
    assert r.exit_code == 1
    assert "isr: expected {0,1,2}, got {0,1}" in r.stdout and "FAILED" in r.stdout


def test_replay_prints_an_expected_value_as_written(tmp_path):
    """A string in a scenario is text, not rich markup ("[/]" crashed the table)."""
    scen = tmp_path / "s.toml"
    scen.write_text('[config]\n[[steps]]\naction = "Produce"\nacks = "all"\nexpect = { leader_recovery = "[/]" }\n')
    r = invoke("replay", str(scen))
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), (r.output, r.exception)
    assert "leader_recovery: expected [/], got RECOVERED" in r.stdout and "FAILED" in r.stdout


def test_replay_bad_scenario_exits_2(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text('[config]\nbrokers = 2\n[[steps]]\naction = "Teleport"\n')
    r = invoke("replay", str(scen))
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error: ") and "action 'Teleport' does not exist" in r.stderr


@pytest.mark.skipif(shutil.which("modelcheck") is None, reason="the package is not installed")
@pytest.mark.slow
def test_the_installed_command_runs():
    p = subprocess.run(
        ["modelcheck", "check", "--set", "variant=legacy", "--json"], capture_output=True, text=True, check=False
    )
    assert p.returncode == 1 and json.loads(p.stdout)["invariant"] == "NoAckedLoss"


def test_help_teaches_the_config_keys():
    r = invoke("check", "--help")
    assert r.exit_code == 0 and "max_unclean_shutdowns" in r.stdout and "Exit status" in r.stdout


def test_an_engine_failure_is_exit_3_never_a_verdict(monkeypatch):
    """Exit 1 means "violated": an exception without a verdict must not look like one."""

    def broken(spec, *args, **kw):
        raise RuntimeError("replay: step 3 Fetch{'broker': 1} is not enabled")

    monkeypatch.setattr(check_run, "run_engine", broken)
    r = CliRunner().invoke(main, ["check", "-q"])
    assert r.exit_code == 3
    assert r.output.rstrip().endswith("error: internal error, no verdict (the traceback above is a bug to report)")
    assert "RuntimeError: replay: step 3" in r.output


def test_every_local_engine_gives_the_same_json_keys():
    """The interpreted engine left out memory_limit, spilled, segments (and
    kernel); only how states are keyed may differ (its 64-bit fingerprints)."""
    fast, bfs = (json.loads(invoke("check", *SMALL, "--json", "--engine", e).stdout) for e in ("fast", "bfs"))
    assert set(bfs) - set(fast) == {"fingerprint_bits", "collision_probability"} and set(fast) <= set(bfs)
    assert (bfs["kernel"], bfs["spilled"], bfs["segments"], bfs["memory_limit"]) == (
        "interpreted",
        False,
        bfs["depth"],
        fast["memory_limit"],
    )


@pytest.mark.parametrize("command", [["check"], ["simulate", "--walks", "50"]])
def test_a_run_with_no_counterexample_removes_an_earlier_one_at_trace_out(tmp_path, command):
    """A trace file left by an earlier run read as this run's violation;
    a file there that is no trace of ours is left as it was."""
    trace, notes = tmp_path / "t.json", tmp_path / "notes.json"
    assert invoke("check", "--set", "variant=legacy", *SMALL, "--trace-out", str(trace)).exit_code == 1
    notes.write_text('{"mine": true}\n')
    r = invoke(*command, *SMALL, "-q", "--trace-out", str(trace))
    assert r.exit_code == 0 and not trace.exists(), r.output
    assert r.stderr == (
        f"--trace-out {trace}: removed the counterexample an earlier run left there (this run found none)\n"
    )
    r = invoke(*command, *SMALL, "-q", "--trace-out", str(notes))
    assert (r.exit_code, r.stderr, notes.read_text()) == (0, "", '{"mine": true}\n')
