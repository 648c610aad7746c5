"""The counterexample viewer: terminal view, ITF round trip, HTML page in a
real headless Chromium."""

from __future__ import annotations

import json
import re

import pytest
from browser import Browser
from click.testing import CliRunner
from tools import need

from cli import main
from modelcheck.formats.itf import decode


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """The legacy counterexample as `check --trace-out` writes it, and check's output."""
    path = tmp_path_factory.mktemp("trace") / "t.json"
    r = invoke("check", "--set", "variant=legacy", "--trace-out", str(path))
    assert r.exit_code == 1, r.output
    return path, r.stdout


def rows_of(out: str) -> dict[int, str]:
    """Table rows of a trace view by step number."""
    return {int(m.group(1)): line for line in out.splitlines() if (m := re.match(r"│\s+(\d+) │", line))}


def test_check_prints_the_command_to_view_the_trace(legacy):
    path, out = legacy
    assert f"view it with: modelcheck trace show {path}" in out


def test_show_names_the_lost_record_and_marks_the_changed_fields(legacy):
    r = invoke("trace", "show", str(legacy[0]))
    assert r.exit_code == 0, r.output
    assert "\x1b[" not in r.stdout  # no colour in a pipe
    rows = rows_of(r.stdout)
    assert sorted(rows) == list(range(8))
    assert "FenceBroker(broker=0, leader=1)" in rows[1] and "*1/1" in rows[1] and "*{1,2}" in rows[1]
    assert "*fenced" in rows[1] and "fences=1" in rows[1]
    assert "*{1}" in rows[6]  # CommitAlterPartition shrinks the ISR
    assert "*leader isr down:dirty -" in rows[7]  # broker 1 loses its log
    assert "| r1@1✓" in rows[7]  # broker 2 still holds acked r1
    assert "*" not in rows[0]
    assert "NoAckedLoss: acked record(s) r1 are on no replica the controller may elect cleanly" in r.stdout.replace(
        "\n", " "
    )


def test_show_diff_lists_only_changes(legacy):
    r = invoke("trace", "show", str(legacy[0]), "--diff")
    assert r.exit_code == 0
    assert "ISR: {1,2} -> {1}" in r.stdout and "pending_isr: {1} -> None" in r.stdout
    assert "b1: leader isr r1@1✓ | -> leader isr down:dirty -" in r.stdout
    assert "leader_epoch" not in r.stdout  # unchanged variables are not listed
    assert "acked record(s) r1" in r.stdout


def test_show_step_shows_one_state_in_full(legacy):
    last = invoke("trace", "show", str(legacy[0]), "--step", "7")
    assert last.exit_code == 0
    assert "step 7 of 7: UncleanShutdown(broker=1, keep=0)" in last.stdout
    assert "*status" in last.stdout and "[RUNNING, OFFLINE_DIRTY, RUNNING]" in last.stdout
    assert "admin_elections" in last.stdout  # every variable, changed or not
    assert "invariants violated here: NoAckedLoss" in last.stdout and "acked record(s) r1" in last.stdout
    middle = invoke("trace", "show", str(legacy[0]), "--step", "3")
    assert "invariants violated here: none" in middle.stdout and "acked record(s)" not in middle.stdout


def test_json_to_itf_to_json_gives_the_same_steps(legacy, tmp_path):
    itf, back = tmp_path / "t.itf.json", tmp_path / "back.json"
    assert invoke("trace", "export", str(legacy[0]), "--format", "itf", "-o", str(itf)).exit_code == 0
    assert invoke("trace", "export", str(itf), "--format", "json", "-o", str(back)).exit_code == 0
    original = json.loads(legacy[0].read_text())
    assert json.loads(back.read_text()) == original

    doc = json.loads(itf.read_text())  # the ITF forms (Apalache ADR-015)
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["varTypes"]["log"] == "Int -> Seq(<<Int, Int>>)"
    assert doc["vars"] == list(original["trace"][0]["state"])
    last = doc["states"][-1]
    assert last["#meta"] == {"index": 7, "action": "UncleanShutdown", "args": {"broker": 1, "keep": 0}}
    assert last["isr"] == {"#set": [{"#bigint": "1"}]}
    assert last["log"]["#map"][2] == [{"#bigint": "2"}, [{"#tup": [{"#bigint": "1"}, {"#bigint": "1"}]}]]
    assert last["pending_isr"] == {"tag": "None", "value": {"#tup": []}}
    assert doc["states"][5]["pending_isr"] == {"tag": "Some", "value": {"#set": [{"#bigint": "1"}]}}
    assert all(s["#meta"]["index"] == i for i, s in enumerate(doc["states"]))


def test_views_read_itf_as_they_read_json(legacy, tmp_path):
    itf = tmp_path / "t.itf.json"
    invoke("trace", "export", str(legacy[0]), "-o", str(itf))
    assert invoke("trace", "show", str(itf)).stdout == invoke("trace", "show", str(legacy[0])).stdout


def test_itf_written_by_other_tools_decodes():
    """ITF allows plain JSON integers and sets in any order."""
    assert decode({"#set": [{"#bigint": "10"}, 2, 1]}) == [1, 2, 10]
    assert decode({"#map": [[1, "b"], [0, "a"]]}) == ["a", "b"]
    assert decode({"#map": [["x", 1]]}) == [["x", 1]]


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "missing.json"], "error: missing.json: no such file"),
        (["show", "pyproject.toml"], "error: pyproject.toml: not a trace"),
        (["show", "TRACE", "--step", "8"], "error: --step '8': expected a step number from 0 to 7"),
        (["show", "TRACE", "--step", "x"], "error: --step 'x': expected a step number from 0 to 7"),
        (["show", "TRACE", "--step", "\u00b2"], "error: --step '\u00b2': expected a step number from 0 to 7"),
        (["show", "TRACE", "--step", "\u0663"], "error: --step '\u0663': expected a step number from 0 to 7"),
        (["html", "missing.json", "-o", "x.html"], "error: missing.json: no such file"),
        (["export", "missing.json"], "error: missing.json: no such file"),
    ],
)
def test_bad_input_exits_2_with_one_line(legacy, args, message):
    r = invoke("trace", *[str(legacy[0]) if a == "TRACE" else a for a in args])
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(message), r.stderr


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["trace"][3]["state"].update(leader=2), "step 3 (Fetch) does not follow from step 2"),
        (lambda d: d.update(invariant="ConsistentRead"), "not a counterexample to ConsistentRead"),
        (lambda d: d["trace"].pop(), "not a counterexample to NoAckedLoss"),
        (lambda d: d.pop("trace"), "not a trace"),
    ],
)
def test_a_trace_the_spec_cannot_produce_is_refused(legacy, tmp_path, edit, message):
    doc = json.loads(legacy[0].read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = invoke("trace", "show", str(bad))
    assert r.exit_code == 2 and r.stdout == "" and message in r.stderr and len(r.stderr.splitlines()) == 1


def set_at(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["states", 1, "leader"], {"#bigint": "abc"}, 'malformed ITF: #bigint "abc" is not a decimal integer'),
        (["states", 1, "leader"], {"#bigint": 1}, "malformed ITF: #bigint 1 is not a decimal integer"),
        (["states", 1, "leader"], {"#bigint": "1" * 5000}, 'malformed ITF: #bigint "1111111111'),
        (["#meta"], [1], "malformed ITF: #meta is [1], not an object"),
        (["#meta"], "x", 'malformed ITF: #meta is "x", not an object'),
        (["states", 1, "#meta"], [1], "malformed ITF: state 1: #meta is [1], not an object"),
        (["states", 1], [1], "malformed ITF: state 1 is [1], not an object"),
        (["states", 1, "isr"], {"#set": 5}, "malformed ITF: #set 5 is not a list"),
        (["states", 1, "isr"], {"#tup": {"a": 1}}, 'malformed ITF: #tup {"a": 1} is not a list'),
        (["states", 1, "isr"], {"#map": [1]}, "malformed ITF: #map [1] is not a list of [key, value] pairs"),
        (["states", 1, "isr"], {"tag": "Some", "value": {"#set": 3}}, "malformed ITF: #set 3 is not a list"),
        (["vars"], [["leader"]], 'malformed ITF: vars is [["leader"]], not a list of variable names'),
        (["states"], {"0": {}}, 'malformed ITF: states is {"0": {}}, not a list'),
        (["states", 1, "#meta", "action"], ["Produce"], "step 1: action ['Produce'] does not exist"),
        (["#meta", "config"], {"brokers": 0}, "config key 'brokers': 0 is not allowed"),
        (["#meta", "config"], {"invariants": ["TypeOK", "TypeOK"]}, 'config key \'invariants\': ["TypeOK", "TypeOK"]'),
    ],
)
def test_malformed_itf_is_refused_with_one_line(legacy, tmp_path, path, value, message):
    itf = tmp_path / "t.itf.json"
    assert invoke("trace", "export", str(legacy[0]), "-o", str(itf)).exit_code == 0
    doc = json.loads(itf.read_text())
    set_at(doc, path, value)
    itf.write_text(json.dumps(doc))
    for command in (["show"], ["export"], ["html", "-o", str(tmp_path / "t.html")]):
        r = invoke("trace", command[0], str(itf), *command[1:])
        assert r.exit_code == 2 and r.stdout == "", (r.output, r.exception)
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(f"error: {itf}: "), r.stderr
        assert message in r.stderr, r.stderr
    assert not (tmp_path / "t.html").exists()


def test_an_itf_without_states_is_refused(tmp_path):
    itf = tmp_path / "t.itf.json"
    itf.write_text(json.dumps({"#meta": {"config": {}}, "vars": ["leader"]}))
    r = invoke("trace", "show", str(itf))
    assert r.exit_code == 2 and r.stderr == f"error: {itf}: malformed ITF: states is missing, not a list\n"


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["trace", 1, "action"], ["Produce"], "step 1: action ['Produce'] does not exist"),
        (["trace", 1, "args", "brokr"], 1, "step 1: FenceBroker has no argument 'brokr'"),
        (["trace", 1, "args", "broker"], True, "step 1: FenceBroker: broker = true is not a value it takes here"),
        (["config", "brokers"], "3", "config key 'brokers': \"3\" is not allowed"),
    ],
)
def test_a_trace_with_ill_typed_fields_is_refused(legacy, tmp_path, path, value, message):
    doc = json.loads(legacy[0].read_text())
    set_at(doc, path, value)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = invoke("trace", "show", str(bad))
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (r.output, r.exception)
    assert r.stderr.startswith(f"error: {bad}: ") and message in r.stderr, r.stderr


def test_html_is_one_self_contained_file(legacy, tmp_path):
    page = tmp_path / "t.html"
    r = invoke("trace", "html", str(legacy[0]), "-o", str(page))
    assert r.exit_code == 0 and f"wrote {page} (8 steps)" in r.stdout
    html = page.read_text()
    assert not re.search(r"<link|\bsrc=|\bhref=|@import|url\(", html)  # nothing fetched
    assert html.count('<tr class="step') == 8 and "acked record(s) r1" in html


def test_html_loads_shows_every_step_and_steps_in_chromium(legacy, tmp_path):
    need("chromium", ".ci/run installs Debian's chromium")
    page = tmp_path / "t.html"
    assert invoke("trace", "html", str(legacy[0]), "-o", str(page)).exit_code == 0
    steps = json.loads(legacy[0].read_text())["trace"]
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())
        assert browser.js("document.body.dataset.step") == "0"
        actions = browser.js("Array.from(document.querySelectorAll('tr.step td.act')).map(e => e.textContent)")
        assert actions[0] == "Init" and len(actions) == len(steps) == 8
        assert actions[7] == "UncleanShutdown(broker=1, keep=0)"
        assert browser.js("Array.from(document.querySelectorAll('th.lane')).map(e => e.textContent)") == [
            "b0",
            "b1",
            "b2",
        ]
        assert "acked record(s) r1" in browser.js("document.querySelector('.verdict').textContent")
        assert browser.js("performance.getEntriesByType('resource').length") == 0  # no network

        def shown():
            return (
                browser.js("document.body.dataset.step"),
                browser.js(
                    "Array.from(document.querySelectorAll('.detail')).filter(d => !d.hidden).map(d => d.id).join()"
                ),
                browser.js("document.querySelector('tr.current').id"),
                browser.js("document.getElementById('slider').value"),
            )

        for _ in range(3):
            browser.key("ArrowRight", 39)
        assert shown() == ("3", "detail-3", "step-3", "3")
        assert "Fetch(broker=2)" in browser.js("document.getElementById('detail-3').textContent")
        browser.key("End", 35)
        assert shown() == ("7", "detail-7", "step-7", "7")
        assert "violates NoAckedLoss" in browser.js("document.getElementById('detail-7').textContent")
        browser.key("ArrowRight", 39)  # stays on the last step
        browser.key("ArrowLeft", 37)
        assert shown()[0] == "6"
        browser.key("Home", 36)
        assert shown() == ("0", "detail-0", "step-0", "0")
        browser.js("var s = document.getElementById('slider'); s.value = 5; s.dispatchEvent(new Event('input'))")
        assert shown() == ("5", "detail-5", "step-5", "5")
        browser.click("#step-2 td.act")
        assert shown() == ("2", "detail-2", "step-2", "2")
        assert browser.js("document.querySelectorAll('tr.future').length") == 5
    finally:
        browser.close()
