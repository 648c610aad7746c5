"""A refinement failure as a trace file (`refines --trace-out`): `trace show`
and `trace html` show it as `refines` did, its image recomputed from the
replayed steps (a file that is not such a failure is refused), in JSON and
in ITF, and the HTML page's image rows follow the current step in Chromium."""

from __future__ import annotations

import json

import pytest
from browser import Browser
from click.testing import CliRunner
from tools import need

from cli import main

TWO = ["--set", "brokers=2", "--set", "max_records=1"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def failure(tmp_path_factory):
    """kafka-4 against kip966 on two brokers: the trace file and what refines printed."""
    path = tmp_path_factory.mktemp("refines") / "r.json"
    r = invoke("refines", "kafka-4", "kip966", *TWO, "-q", "--engine", "bfs", "--trace-out", str(path))
    assert r.exit_code == 1, r.output
    return path, r.stdout


def failure_part(out: str) -> str:
    """What refines printed from its verdict to its closest steps (not the config, mapping and counts)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("violated"))
    end = next(i for i, line in enumerate(lines) if line.startswith("distinct states:"))
    return "\n".join(lines[start:end])


def test_the_file_names_the_abstract_variant_and_mapping_and_refines_says_where_it_is(failure):
    path, out = failure
    doc = json.loads(path.read_text())
    assert doc["refines"] == {"abstract": "kip966", "mapping": "last-known-leader"} and doc["invariant"] is None
    assert doc["config"]["variant"] == "kafka-4"
    assert [s["action"] for s in doc["trace"]] == [None, "FenceBroker", "UncleanShutdown", "StartBroker"]
    assert f"trace written to {path}; view it with: modelcheck trace html {path} -o PAGE.html" in out


def test_show_gives_what_refines_printed(failure):
    path, out = failure
    r = invoke("trace", "show", str(path))
    assert r.exit_code == 0, r.output
    assert r.stdout.rstrip("\n") == failure_part(out)
    assert "StartBroker(broker=0): differs in 1 variable(s): last_known_elr={0}" in r.stdout


def test_show_of_one_step_ends_with_the_failure_in_one_line(failure):
    r = invoke("trace", "show", str(failure[0]), "--step", "2")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1] == (
        "the image of step 3 is no kip966 step: 1. FenceBroker(broker=0, leader=1), "
        "2. UncleanShutdown(broker=0, keep=0), 3. StartBroker(broker=0)"
    )


def test_itf_keeps_the_refinement(failure, tmp_path):
    path = failure[0]
    itf, back = tmp_path / "r.itf.json", tmp_path / "back.json"
    assert invoke("trace", "export", str(path), "-o", str(itf)).exit_code == 0
    assert json.loads(itf.read_text())["#meta"]["refines"] == {"abstract": "kip966", "mapping": "last-known-leader"}
    assert invoke("trace", "show", str(itf)).stdout == invoke("trace", "show", str(path)).stdout
    assert invoke("trace", "export", str(itf), "--format", "json", "-o", str(back)).exit_code == 0
    assert json.loads(back.read_text()) == json.loads(path.read_text())


@pytest.mark.parametrize(
    "edit, message",
    [
        # kafka-4 refines itself under the identity: every step of the trace is allowed
        (
            {"refines": {"abstract": "kafka-4", "mapping": "identity"}},
            "not a failure of kafka-4 refinement: replay: the image of step 3 is allowed",
        ),
        ({"refines": {"abstract": "kip966"}}, 'refines is {"abstract": "kip966"}; allowed: {"abstract": VARIANT'),
        ({"invariant": "NoAckedLoss"}, "refines is"),
        (
            {"refines": {"abstract": "kip966", "mapping": "nope"}},
            "refines: --mapping 'nope': Kafka4 declares no such mapping to 'kip966'",
        ),
        ({"refines": {"abstract": "zookeeper", "mapping": "identity"}}, "refines: config key 'variant'"),
    ],
)
def test_a_file_that_is_not_a_refinement_failure_is_refused_in_one_line(failure, tmp_path, edit, message):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(json.loads(failure[0].read_text()) | edit))
    for command in (["show"], ["html", "-o", str(tmp_path / "p.html")]):
        r = invoke("trace", command[0], str(bad), *command[1:])
        assert r.exit_code == 2 and r.stdout == "", r.output
        assert len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "p.html").exists()


def test_a_check_that_holds_removes_the_failure_an_earlier_run_left(failure, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(failure[0].read_text())
    r = invoke("refines", "kip966", "hwm-ignores-min-isr", *TWO, "-q", "--engine", "bfs", "--trace-out", str(path))
    assert r.exit_code == 0 and "holds" in r.stdout and not path.exists()


def test_html_shows_the_image_beside_each_step_and_its_rows_follow_in_chromium(failure, tmp_path):
    page = tmp_path / "r.html"
    r = invoke("trace", "html", str(failure[0]), "-o", str(page))
    assert r.exit_code == 0 and f"wrote {page} (4 steps)" in r.stdout
    html = page.read_text()
    assert html.count('<tr class="step') == html.count('<tr class="img') == 4
    assert "<title>modelcheck: kafka-4 does not refine kip966: step 3 is no kip966 step</title>" in html
    need("chromium", ".ci/run installs Debian's chromium")
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page.as_uri())

        def images():
            return browser.js(
                "Array.from(document.querySelectorAll('tr.img')).map(r => r.id + ':' + r.className).join()"
            )

        assert images() == "img-0:img current,img-1:img future,img-2:img future,img-3:img future"
        browser.key("End", 35)
        assert images() == "img-0:img,img-1:img,img-2:img,img-3:img current"
        last = browser.js("document.getElementById('detail-3').textContent")
        assert (
            "Its image in kip966: NOT ALLOWED" in last and "Closest: the kip966 steps from the previous image" in last
        )
        assert "StartBroker(broker=0): differs in 1 variable(s)" in last
        browser.click("#step-1 td.act")
        assert browser.js("document.querySelector('tr.img.current').id") == "img-1"
        assert "Its image in kip966: FenceBroker(broker=0, leader=1)" in browser.js(
            "document.getElementById('detail-1').textContent"
        )
        assert browser.js("performance.getEntriesByType('resource').length") == 0  # no network
    finally:
        browser.close()


def test_an_itf_whose_meta_is_null_is_refused_in_one_line_not_a_traceback(failure, tmp_path):
    """(Found by test_inputs' fuzz: reading `#meta.refines` assumed #meta an object.)"""
    itf = tmp_path / "r.itf.json"
    assert invoke("trace", "export", str(failure[0]), "-o", str(itf)).exit_code == 0
    itf.write_text(json.dumps(json.loads(itf.read_text()) | {"#meta": None}))
    r = invoke("trace", "show", str(itf))
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.output
    assert "an ITF trace without modelcheck's #meta.config cannot be replayed" in r.stderr
