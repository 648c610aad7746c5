"""Apache Kafka 4.0.0's own tests, replayed through the model
(specs/scenarios/conformance/, docs/conformance.md).

Each scenario carries a `[conformance]` table naming the Kafka test it
reproduces and its status. `agree`: the replay passes. `differs`: the model
disagrees with Kafka today; the scenario holds Kafka's values, and its
replay must fail at exactly `fails_at` (its first failing step), so that a
spec change that closes the difference fails this test and says to flip the
status, as a strict xfail would.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from modelcheck.config import read_file
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from specs.kafka_elr import load

ROOT = Path(__file__).parent.parent
CONFORMANCE = ROOT / "specs" / "scenarios" / "conformance"
TABLE = ROOT / "docs" / "conformance.md"
FILES = sorted(CONFORMANCE.glob("*.toml"))
STATUSES = ("agree", "differs")
REQUIRED = {"test": str, "file": str, "line": int, "brokers": str, "status": str}
DIFFERS = {"difference": str, "fails_at": int, "section": str}


def first_failure(path: Path) -> tuple[int | None, str]:
    """The index of the first step that does not replay as written (None if
    all do), and what went wrong there."""
    data = read_file(path)
    config, raw = split_scenario(data, path.name)
    spec = load(config)
    for r in replay(spec, parse_steps(spec, raw, path.name))[1]:
        if not r.ok:
            return r.index, f"{r.step.action} {r.step.args}: {r.error or ''} {r.mismatches} {r.violated}"
    return None, ""


def meta(path: Path) -> dict[str, Any]:
    return read_file(path)["conformance"]


def test_there_is_a_suite():
    assert len(FILES) >= 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_conformance_table_names_the_kafka_test(path):
    m = meta(path)
    wanted = {**REQUIRED, **(DIFFERS if m.get("status") == "differs" else {})}
    for key, kind in wanted.items():
        assert isinstance(m.get(key), kind), f"{path.name}: [conformance] {key} must be a {kind.__name__}"
    assert m["status"] in STATUSES
    assert re.fullmatch(r"[A-Za-z]+\.test\w+", m["test"]), m["test"]
    assert m["file"].endswith((".java", ".scala")) and m["test"].split(".")[0] in m["file"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_kafka_case_replays_as_its_status_says(path):
    m = meta(path)
    at, what = first_failure(path)
    if m["status"] == "agree":
        assert at is None, f"{path.name} agrees with Kafka no longer: step {at} {what}"
    elif at is None:
        pytest.fail(
            f"{path.name} now replays as Kafka's test asserts: set its status to agree (and docs/conformance.md)"
        )
    else:
        assert at == m["fails_at"], f"{path.name} fails at step {at}, not {m['fails_at']}: {what}"


def table_rows() -> list[list[str]]:
    rows = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 4 and cells[0] not in ("Kafka test", "") and "---" not in cells[0]:
            rows.append(cells)
    return rows


def test_the_docs_table_lists_every_scenario_with_its_status():
    """docs/conformance.md: a row a Kafka test (file, method, status, scenario,
    reason); every scenario appears with its status, and every scenario a
    row names exists."""
    rows = table_rows()
    named = {}
    for cells in rows:
        assert cells[2] in (*STATUSES, "inexpressible"), cells
        for name in re.findall(r"[\w-]+\.toml", cells[3]):
            assert (CONFORMANCE / name).exists(), f"docs/conformance.md names {name}, which does not exist"
            named.setdefault(name, set()).add(cells[2])
        if cells[2] != "agree":
            assert cells[4] and "model.md" in cells[4], f"a {cells[2]} row needs its reason and section: {cells}"
    for path in FILES:
        assert meta(path)["status"] in named.get(path.name, set()), f"{path.name} is not in docs/conformance.md as such"
    assert sum(cells[2] == "inexpressible" for cells in rows) >= 5
