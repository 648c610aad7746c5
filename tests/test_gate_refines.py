"""The gate's refinement checks: an entry's `refines = "VARIANT"`, and
`--against REF`, which compares each entry's variant with itself at another
git revision of specs/ (here a throwaway repository whose commit changes
one rule)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.cli.ci import specs_at
from modelcheck.config import ConfigError
from modelcheck.engine.refinement.refine import check
from modelcheck.runs.gate import read_gate
from modelcheck.runs.refines import images
from specs.kafka_elr import load, load_as

SPECS = Path(__file__).parent.parent / "specs"
ENTRY = """
[defaults]
brokers = 2
max_records = 1

[[entry]]
name = "legacy"
config = {{ variant = "legacy" }}
expect = "violated: NoAckedLoss"
{extra}
"""
# the rule the throwaway repository's second commit changes: legacy's HWM never advances
RULE = "    def hwm_may_advance(self, s: State, ld: int) -> bool:\n        return True\n"
CHANGED = "    def hwm_may_advance(self, s: State, ld: int) -> bool:\n        return False\n"


def gate_file(tmp_path, extra: str = "") -> str:
    path = tmp_path / "gate.toml"
    path.write_text(ENTRY.format(extra=extra))
    return str(path)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository whose first commit is specs/ as it is here and whose
    second makes legacy's high watermark never advance."""
    root = tmp_path / "repo"
    shutil.copytree(SPECS, root / "specs", ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q")
    git(root, "add", "specs")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "specs as they are")
    variants = root / "specs" / "kafka_elr" / "variants.py"
    text = variants.read_text()
    assert text.count(RULE) == 2  # legacy's (first) and hwm-ignores-min-isr's
    variants.write_text(text.replace(RULE, CHANGED, 1))
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "legacy: the HWM never advances")
    return root


def test_a_refines_pin_is_checked_when_the_gate_is_read(tmp_path):
    with pytest.raises(ConfigError, match=r"refines is 3; allowed: the name of a variant"):
        read_gate(gate_file(tmp_path, "refines = 3"), load, load_as)
    with pytest.raises(ConfigError, match=r"refines: ABSTRACT nope: config key 'variant': \"nope\" is not allowed"):
        read_gate(gate_file(tmp_path, 'refines = "nope"'), load, load_as)
    [entry] = read_gate(gate_file(tmp_path, 'refines = "kip966"'), load, load_as)
    assert entry.refines == "kip966"


@pytest.mark.slow
def test_an_entry_that_does_not_refine_what_it_pins_fails_with_the_step(tmp_path):
    r = CliRunner().invoke(main, ["gate", gate_file(tmp_path, 'refines = "kip966"'), "-j", "1", "--json"])
    assert r.exit_code == 1, r.output
    [row] = json.loads(r.stdout)
    assert row["status"] == "failed" and row["failures"] == [
        "refines kip966: the image of step 1 is no kip966 step: 1. FenceBroker(broker=0, leader=1)"
    ]
    r = CliRunner().invoke(main, ["gate", gate_file(tmp_path, 'refines = "legacy"'), "-j", "1", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["failures"] == []


@pytest.mark.slow
def test_the_spec_at_a_revision_is_imported_beside_this_one(repo):
    """The commit that stops legacy's HWM only removes behaviours: it refines
    the spec before it; the spec before it has a new behaviour over it."""
    new, old = specs_at(str(repo), "HEAD"), specs_at(str(repo), "HEAD~1")
    assert check(images((new, old), "legacy", "legacy", {"brokers": 2, "max_records": 1}, None, "here")).holds
    result = check(images((old, new), "legacy", "legacy", {"brokers": 2, "max_records": 1}, None, "here"))
    assert [(s.action, s.args) for s in result.trace[1:]] == [
        ("FenceBroker", {"broker": 0, "leader": 1}),
        ("Produce", {"acks": "1"}),
        ("AdvanceHwm", {}),
    ]
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_against_reports_the_first_new_behaviour(tmp_path, repo):
    """This checkout's legacy against the repository's HEAD, whose HWM never
    advances: the first new behaviour is the HWM advancing."""
    args = ["gate", gate_file(tmp_path), "--against", "HEAD", "--repo", str(repo)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines() == [
        "NEW BEHAVIOUR: legacy: the image of step 3 is no legacy at HEAD step: 1. FenceBroker(broker=0, leader=1), "
        "2. Produce(acks=1), 3. AdvanceHwm"
    ]
    assert "legacy: the first new behaviour" in r.stdout and "0 entries without new behaviour, 1 with" in r.stdout
    r = CliRunner().invoke(main, [*args[:3], "HEAD~1", *args[4:], "--json"])
    assert r.exit_code == 0, r.output
    [row] = json.loads(r.stdout)
    assert (row["name"], row["verdict"], row["implementation"], row["abstract"]) == (
        "legacy",
        "holds",
        "legacy",
        "legacy at HEAD~1",
    )
    assert (row["states"], row["transitions"], row["stutters"]) == (6115, 12847, 0)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--against", "nope"], "error: --against nope: not a commit of the git repository {repo}"),
        (["--repo", "{repo}"], "error: --repo applies to --against only"),
        (
            ["--against", "HEAD", "--junit", "j.xml"],
            "error: --junit applies to the gate's pinned checks, not to --against",
        ),
    ],
)
def test_against_bad_input_is_one_line(tmp_path, repo, args, message):
    args = [a.format(repo=repo) for a in args]
    r = CliRunner().invoke(
        main, ["gate", gate_file(tmp_path), *args, *(["--repo", str(repo)] if "--against" in args else [])]
    )
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.splitlines() == [message.format(repo=repo)]
