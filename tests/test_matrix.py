"""`modelcheck matrix`: cells, pins, the markdown page, bad matrix files."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.runs.matrix import read_matrix
from specs.kafka_elr import PROTOCOL, VARIANTS, load

DEFAULT_MATRIX = PROTOCOL.default_matrix

CELLS = """
title = "t"
outro = "## After the cells"
[defaults]
max_records = 1
[[cell]]
name = "legacy"
config = { variant = "legacy" }
expect = "violated: NoAckedLoss"
claim = "the last replica standing"
[[cell]]
name = "no HWM rule"
config = { variant = "hwm-ignores-min-isr" }
expect = "violated: ElrHasDataToHwm"
"""


def run(tmp_path, text: str, *args: str):
    path = tmp_path / "m.toml"
    path.write_text(text)
    return CliRunner().invoke(main, ["matrix", str(path), "-j", "1", *args])


@pytest.mark.slow
def test_cells_as_pinned_exit_0_with_rows_and_stories(tmp_path):
    out = tmp_path / "verdicts.md"
    r = run(tmp_path, CELLS, "--json", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["name"], x["verdict"], x["invariant"], x["trace_length"], x["as_expected"]) for x in rows] == [
        ("legacy", "violated", "NoAckedLoss", 7, True),
        ("no HWM rule", "violated", "ElrHasDataToHwm", 4, True),
    ]
    assert rows[0]["config"]["max_records"] == 1 and "r1" in rows[0]["story"]
    page = out.read_text()
    assert "| [legacy](#legacy) | violated: NoAckedLoss | 7 |" in page
    assert "Claim: the last replica standing" in page and "NoAckedLoss breaks: acked record(s) r1" in page
    assert page.endswith("\n\n## After the cells\n")  # the outro, after every cell


@pytest.mark.slow
def test_a_verdict_that_differs_from_its_pin_exits_1(tmp_path):
    r = run(tmp_path, CELLS.replace('expect = "violated: ElrHasDataToHwm"', 'expect = "holds"'))
    assert r.exit_code == 1
    assert "DIFFERS (holds)" in r.stdout


@pytest.mark.parametrize(
    "change, message",
    [
        (('variant = "legacy"', 'variant = "nope"'), "cell 1 (legacy): config key 'variant'"),
        (
            ('expect = "violated: NoAckedLoss"', 'expect = "fails"'),
            'cell 1 (legacy): expect is \'fails\'; allowed: "holds" or "violated: NAME"',
        ),
        (('claim = "the last', 'colour = "red"\nclaim = "the last'), "cell 1 (legacy): unknown key 'colour'"),
        (('[[cell]]\nname = "no HWM rule"', '[[cell]]\nname = "legacy"'), "cell 2: duplicate name 'legacy'"),
        (
            ('claim = "the last', 'symmetry = "yes"\nclaim = "the last'),
            "cell 1 (legacy): symmetry is 'yes'; allowed: true or false",
        ),
        (
            ('variant = "legacy" }', 'variant = "kafka-4" }\nsymmetry = true'),
            "cell 1 (legacy): --symmetry: kafka-4 elects the first valid replica in assignment order",
        ),
        (
            ('expect = "violated: NoAckedLoss"', 'expect = "violated: NoAckedLos"'),
            "cell 1 (legacy): expect: 'NoAckedLos' is not an invariant this config checks (ConsistentRead, ",
        ),
        (
            ('variant = "legacy" }', 'variant = "legacy", invariants = ["ConsistentRead"] }'),
            "cell 1 (legacy): expect: 'NoAckedLoss' is not an invariant this config checks (ConsistentRead)",
        ),
        (
            ('variant = "hwm-ignores-min-isr" }', 'variant = "kafka-4" }\nsymmetry = true'),
            "cell 2 (no HWM rule): --symmetry: kafka-4 elects the first valid replica in assignment order",
        ),
        (('claim = "the last replica standing"', "claim = 7"), "cell 1 (legacy): claim is 7; allowed: text"),
        (('title = "t"', 'title = ["t"]'), 'title is ["t"]; allowed: text'),
    ],
)
def test_bad_matrix_files_exit_2_with_one_line(tmp_path, change, message):
    text = CELLS.replace(*change)
    assert text != CELLS
    r = run(tmp_path, text, "--out", str(tmp_path / "v.md"))
    assert r.exit_code == 2 and r.stdout == "" and not (tmp_path / "v.md").exists()
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")
    assert message in r.stderr, r.stderr


@pytest.mark.slow
def test_a_cell_may_explore_one_state_of_each_symmetry_class(tmp_path):
    text = CELLS.replace('claim = "the last', 'symmetry = true\nclaim = "the last')
    r = run(
        tmp_path,
        text + CELLS.split("[[cell]]")[1].replace('"legacy"', '"legacy, all states"', 1).join(["[[cell]]", ""]),
        "--json",
        "--out",
        str(tmp_path / "v.md"),
    )
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    reduced, full = rows["legacy"], rows["legacy, all states"]
    assert reduced["symmetry"] and not full["symmetry"]
    assert reduced["distinct_states"] < full["distinct_states"]
    assert (reduced["verdict"], reduced["trace_length"]) == (full["verdict"], full["trace_length"])
    assert "(with `--symmetry`: one state of each class" in (tmp_path / "v.md").read_text()


def test_only_names_a_cell_that_exists(tmp_path):
    r = run(tmp_path, CELLS, "--only", "nope")
    assert r.exit_code == 2 and "--only 'nope': no such cell" in r.stderr


def test_the_shipped_matrix_covers_every_variant_with_one_and_two_unclean_shutdowns():
    _meta, cells = read_matrix(str(DEFAULT_MATRIX), load)
    at = {
        (c.config["variant"], c.config.get("max_unclean_shutdowns", 1))
        for c in cells
        if c.config["brokers"] == 3 and c.config["min_isr"] == 2
    }
    assert {(v, k) for v in VARIANTS for k in (1, 2)} <= at


def test_a_cell_that_holds_without_firing_what_its_claim_is_about_is_vacuous(tmp_path):
    text = """
title = "t"
[defaults]
max_records = 1
max_fences = 0
[[cell]]
name = "recovery"
config = { variant = "kip966" }
expect = "holds"
exercises = ["UncleanRecovery", "UncleanShutdown"]
goals = ["RecoveryElects", "ElrMemberElected"]
"""
    out = tmp_path / "v.md"
    r = run(tmp_path, text, "--json", "--out", str(out))
    assert r.exit_code == 0, r.stderr  # a report, not a gate: it marks, the gate fails
    (row,) = json.loads(r.stdout)
    assert row["vacuous"] == ["UncleanRecovery never fired", "goal RecoveryElects not reached"]
    assert "UncleanRecovery" in row["never_fired"] and "UncleanShutdown" not in row["never_fired"]
    assert row["goals"]["ElrMemberElected"] is True
    page = out.read_text()
    assert "**VACUOUS** (UncleanRecovery never fired; goal RecoveryElects not reached)" in page
    assert "goals RecoveryElects NOT reached, ElrMemberElected reached" in page


@pytest.mark.parametrize(
    "line, message",
    [
        ('exercises = ["Teleport"]', "exercises: 'Teleport' is not an action of this variant"),
        ('goals = ["Nirvana"]', "goals: 'Nirvana' is not a goal of this variant"),
        ('goals = "RecoveryElects"', "goals is 'RecoveryElects'; allowed: a list of names"),
    ],
)
def test_exercises_and_goals_must_name_what_the_variant_has(tmp_path, line, message):
    r = run(tmp_path, CELLS.replace('claim = "the last', line + '\nclaim = "the last'))
    assert r.exit_code == 2 and message in r.stderr, r.stderr


# ---- resources: processes and memory follow the cells that run, not -j ----------------------


@pytest.mark.slow
def test_processes_and_memory_shares_follow_the_cells_that_run_not_jobs(tmp_path, cell_pools):
    """`matrix --only ONE -j 40` gave the cell 1/40 of the memory and forked 40 processes."""
    from modelcheck.memory import default_limit

    pools = cell_pools
    r = run(tmp_path, CELLS, "--only", "legacy", "-j", "40", "--json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert (row["memory_limit"], row["spilled"], pools) == (default_limit(), False, [])  # one cell: run here
    r = run(tmp_path, CELLS, "-j", "40", "--json")
    assert r.exit_code == 0, r.output
    assert [x["memory_limit"] for x in json.loads(r.stdout)] == [default_limit(share_among=2)] * 2 and pools == [2]


def test_a_cell_stopped_at_the_memory_limit_is_stopped_in_the_json_never_holds(tmp_path):
    r = run(tmp_path, CELLS, "--only", "legacy", "--max-memory", "1M", "--json")
    assert r.exit_code == 1, r.output
    (row,) = json.loads(r.stdout)
    assert (row["verdict"], row["invariant"], row["as_expected"]) == ("stopped", None, False)
    assert (row["memory_limit"], row["spilled"], row["segments"]) == (1 << 20, None, None)


@pytest.mark.slow  # the fast tier compiles no hwm-ignores-min-isr kernel
def test_a_cell_the_search_cannot_finish_is_a_stopped_row_and_the_others_are_reported(tmp_path, monkeypatch):
    """A limit met while running (temporal properties' graph too big for
    the memory limit) was a traceback, exit 3, after the other cells ran."""
    from modelcheck.config import ConfigError
    from modelcheck.runs import matrix as mx

    real = mx.run_engine

    def too_big_for_legacy(spec, *args, **kwargs):
        if spec.config["variant"] == "legacy":
            raise ConfigError("the behaviour graph needs 2.0 GiB beyond what the check holds")
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(mx, "run_engine", too_big_for_legacy)
    r = run(tmp_path, CELLS, "--json", "--out", str(tmp_path / "v.md"))
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    assert rows["legacy"]["verdict"] == "stopped" and rows["legacy"]["as_expected"] is False
    assert (rows["no HWM rule"]["invariant"], rows["no HWM rule"]["as_expected"]) == ("ElrHasDataToHwm", True)
    assert (
        "| stopped: the behaviour graph needs 2.0 GiB beyond what the check holds |" in (tmp_path / "v.md").read_text()
    )
