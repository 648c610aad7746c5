"""`modelcheck explore`: the pages served (statuses, exports) and, in a
real headless Chromium, a walk through the legacy counterexample by
clicks: the diff and invariant marks on the way, back and forward, the
URL reproducing a state, and the exported scenario replayed."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import struct
import threading
import urllib.error
import urllib.request

import pytest
from browser import Browser
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import start, wait_for
from strategies import fuzzing
from tools import need

from cli import main
from modelcheck.engine.reach import index
from modelcheck.lifetime import Stopped, stop_on_signals
from modelcheck.views.explorer import Explorer, NotFound, address, server
from modelcheck.views.tracefile import open_trace
from specs import kafka_elr


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """The legacy counterexample (check --trace-out), its steps and its URL path."""
    path = tmp_path_factory.mktemp("trace") / "t.json"
    r = invoke("check", "--set", "variant=legacy", "--trace-out", str(path))
    assert r.exit_code == 1, r.output
    spec, _tf, steps = open_trace(str(path), kafka_elr.load)
    return path, steps, Explorer(spec).path_of(steps)


@pytest.fixture(scope="module")
def served(legacy):
    """An explorer of the legacy config on a free loopback port, with a
    seen-index of the first 200,000 states a check visits."""
    spec = kafka_elr.load({"variant": "legacy"})
    explorer = Explorer(spec, index(spec, 200_000))
    httpd = server(explorer, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield address(httpd), explorer
    httpd.shutdown()
    httpd.server_close()


def get(url: str, method: str = "GET") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method)) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_path_of_the_legacy_counterexample(legacy):
    _path, steps, path = legacy
    assert [s.action for s in steps[1:]] == [
        "FenceBroker",
        "Produce",
        "Fetch",
        "AdvanceHwm",
        "ShrinkIsr",
        "CommitAlterPartition",
        "UncleanShutdown",
    ]
    assert path == (0, 1, 0, 0, 3, 0, 4)


def test_bad_urls_are_4xx_pages_never_tracebacks(served, legacy):
    base, _ = served
    path = "/".join(map(str, legacy[2]))
    cases = {
        "0/0/999": 404,
        "0/x": 404,
        "-1": 404,
        "0?then=1&x=2": 400,
        "0?then=a": 404,
        "/".join(["0"] * 1001): 414,
        "scenario.toml": 404,
        f"{path}/99": 404,
    }
    for target, status in cases.items():
        code, body = get(base + target)
        assert code == status, (target, code)
        assert "Traceback" not in body and f"<h1>{status}:" in body, target
    code, body = get(base + "0/0/999")
    assert "step 3: the state after step 2 has" in body and 'id="nearest" href="/0/0"' in body
    assert get(base, "POST")[0] == 405
    assert get(base + f"{path}?then=")[0] == 200


def test_exports_read_back(served, legacy, tmp_path):
    base, _ = served
    path = "/".join(map(str, legacy[2]))
    status, toml = get(f"{base}{path}/scenario.toml")
    assert status == 200 and 'variant = "legacy"' in toml and 'violates = ["NoAckedLoss"]' in toml
    (tmp_path / "s.toml").write_text(toml)
    r = invoke("replay", str(tmp_path / "s.toml"), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ok"]
    status, trace = get(f"{base}{path}/trace.json")
    assert json.loads(trace)["trace"] == json.loads(legacy[0].read_text())["trace"]
    assert json.loads(trace)["invariant"] == "NoAckedLoss"


@pytest.mark.slow
def test_click_through_the_legacy_counterexample_in_chromium(served, legacy, tmp_path):
    need("chromium", ".ci/run installs Debian's chromium")
    base, _explorer = served
    _file, steps, path = legacy
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(base)
        assert browser.js("document.body.dataset.step") == "0"
        assert browser.js("performance.getEntriesByType('resource').map(e => e.name)") == []  # nothing fetched
        assert browser.js("Array.from(document.querySelectorAll('th.lane')).map(e => e.textContent)") == [
            "b0",
            "b1",
            "b2",
        ]
        for k, i in enumerate(path):
            choice = f'li.action[data-index="{i}"]'
            assert browser.js(f"document.querySelector('{choice}').dataset.action") == steps[k + 1].action
            last = k == len(path) - 1
            # only the last step breaks an invariant; every state of a shortest counterexample
            # is seen by the checker at its depth
            assert browser.js(f"document.querySelector('{choice}').dataset.violates") == ("NoAckedLoss" if last else "")
            assert browser.js(f"document.querySelector('{choice}').dataset.seen") == str(k + 1)
            browser.click(f"{choice} > a")
            browser.wait(f"document.body.dataset.step === '{k + 1}'")
        assert browser.js("location.pathname") == "/" + "/".join(map(str, path))
        detail = browser.js("document.querySelector('.detail').textContent")
        assert "Step 7: UncleanShutdown(broker=1, keep=0)" in detail and "violates NoAckedLoss" in detail
        diff = browser.js("Array.from(document.querySelectorAll('.detail table.diff tr')).map(r => r.textContent)")
        assert any(d.startswith("b1") and "down:dirty" in d for d in diff), diff
        assert browser.js("document.querySelectorAll('tr.step').length") == 8
        assert browser.js("document.querySelector('tr.current').id") == "step-7"
        # the invariant marks of the next choices: the state after the loss breaks it still
        assert (
            browser.js("document.querySelectorAll('li.action.bad').length")
            == browser.js("document.querySelectorAll('li.action').length")
            > 0
        )

        browser.key("ArrowLeft", 37)
        browser.wait("document.body.dataset.step === '6'")
        assert browser.js("location.search") == f"?then={path[-1]}"
        assert browser.js("document.querySelectorAll('tr.future').length") == 1
        browser.click("#back")
        browser.wait("document.body.dataset.step === '5'")
        browser.click("#forward")
        browser.wait("document.body.dataset.step === '6'")
        browser.key("ArrowRight", 39)
        browser.wait("document.body.dataset.step === '7'")

        # the URL is the state: opened afresh, the same page
        here = browser.js("location.href")
        shown = browser.js("document.querySelector('main').innerHTML")
        browser.open(here)
        assert browser.js("document.querySelector('main').innerHTML") == shown

        # export the path as a scenario through the page's own link, and replay it
        toml = browser.js("fetch(document.getElementById('export-scenario').href).then(r => r.text())")
        scenario = tmp_path / "walked.toml"
        scenario.write_text(toml)
        r = invoke("replay", str(scenario))
        assert r.exit_code == 0, r.output
        assert "UncleanShutdown" in r.stdout

        browser.open(base + "0/0/999")
        assert browser.js("document.title") == "modelcheck explore: 404"
        browser.click("#nearest")
        browser.wait("document.body.dataset.step === '2'")
    finally:
        browser.close()


@pytest.mark.slow
def test_explore_serves_until_ctrl_c(legacy):
    proc = start("explore", "--trace", str(legacy[0]), "--step", "5", "--port", "0", "--seen-states", "0")
    try:
        line = wait_for(proc.stdout.readline, 60, "the serving line").decode()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        p = legacy[2]
        assert url.endswith("/" + "/".join(map(str, p[:5])) + "?then=" + "/".join(map(str, p[5:])))
        status, body = get(url)
        assert status == 200 and "Step 5 of 7" in body
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        assert proc.stderr.read().decode().strip().splitlines()[-1] == "explorer stopped by SIGINT"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_ctrl_c_while_a_request_is_dispatched_stops_serving(capfd):
    """Under load the main thread can still be dispatching a request when
    its answer is out and Ctrl-C comes: socketserver's `except Exception`
    there must not take the stop for a failed request and serve on; the
    answer cut short is no traceback on the terminal."""
    httpd = server(Explorer(kafka_elr.load({})), "127.0.0.1", 0)

    def ask(url: str) -> None:  # its answer may be cut short by the stop
        try:
            get(url)
        except (OSError, http.client.HTTPException):
            pass

    dispatch = httpd.process_request

    def dispatch_then_ctrl_c(request, client_address):
        dispatch(request, client_address)
        os.kill(os.getpid(), signal.SIGINT)

    httpd.process_request = dispatch_then_ctrl_c
    before = set(threading.enumerate())
    give_up = threading.Timer(20, httpd.shutdown)  # a failure, not a hang
    give_up.start()
    try:
        with stop_on_signals():
            threading.Thread(target=ask, args=(address(httpd),), daemon=True).start()
            with pytest.raises(Stopped, match="stopped by SIGINT"):
                httpd.serve_forever()
    finally:
        give_up.cancel()
        httpd.server_close()
    for thread in set(threading.enumerate()) - before:
        thread.join(10)
    assert "Traceback" not in capfd.readouterr().err


def refused(r, message: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr."""
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--step", "2"], "--step applies to --trace only"),
        (["--set", "brokers=0"], "brokers"),
        (["--port", "1", "--host", "203.0.113.7"], "--host 203.0.113.7 --port 1: cannot serve there"),
    ],
)
def test_explore_bad_input_is_one_line(args, message):
    refused(invoke("explore", "--seen-states", "0", *args), message)


def test_explore_trace_step_out_of_range(legacy):
    refused(invoke("explore", "--trace", str(legacy[0]), "--step", "9"), "--step 9: the trace's steps are 0 to 7")
    refused(invoke("explore", "--trace", str(legacy[0]), "--set", "brokers=4"), "a trace brings its own config")


def test_a_step_past_a_deadlock_is_a_404_saying_so():
    """A state with no enabled action: the page says it is a deadlock, not
    "numbered 0 to -1"."""
    bounds = ("max_records", "max_unclean_shutdowns", "max_fences", "max_isr_shrinks")
    spec = kafka_elr.load({"brokers": 1, "min_isr": 1, **dict.fromkeys(bounds, 0)})
    with pytest.raises(NotFound) as e:
        Explorer(spec).get("/0")
    assert e.value.status == 404
    assert str(e.value) == "step 1: the state after step 0 has no enabled action (a deadlock); there is no action 0"


def test_requests_a_browser_cancels_print_nothing(capfd):
    """A browser that resets its connection before or while the answer is
    written (a click on, a closed tab) is no traceback on the terminal."""
    httpd = server(Explorer(kafka_elr.load({})), "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    before = set(threading.enumerate())
    try:
        for target in ["/0/0/0/0", "/0/0/scenario.toml", "/0/trace.json", "/0"] * 5:
            with socket.create_connection((host, port)) as s:
                s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
        assert get(address(httpd))[0] == 200  # still serving
    finally:
        httpd.shutdown()
        httpd.server_close()
    for t in set(threading.enumerate()) - before:
        t.join(10)
    assert capfd.readouterr().err == ""


# ---- fuzzing what a browser can send -------------------------------------------------

FUZZ = fuzzing(200, HealthCheck.function_scoped_fixture)
STEP = st.one_of(st.integers(0, 12).map(str), st.sampled_from(["", "-1", "x", "1e3", "٣", "%30", "0" * 7, "99999"]))
STEPS = st.lists(STEP, max_size=12).map("/".join)
TARGET = st.one_of(
    st.builds(
        "/{}{}{}".format,
        STEPS,
        st.sampled_from(["", "/", "/scenario.toml", "/trace.json", "/scenario.toml/0", "//"]),
        st.one_of(st.just(""), st.builds("?then={}".format, STEPS), st.text(max_size=20).map(lambda q: "?" + q)),
    ),
    st.text(max_size=40).map(lambda t: "/" + t),
)


@FUZZ
@given(target=TARGET)
def test_fuzz_explorer_urls_answer_or_are_one_line_4xx(served, target):
    """Whatever the path and query: a page, or a 4xx naming what is wrong
    in one line; never an exception."""
    _base, explorer = served
    try:
        status, kind, body = explorer.get(target)
    except NotFound as e:
        assert e.status in (400, 404, 414) and str(e) and "\n" not in str(e), (target, e.status, str(e))
    else:
        assert status == 200 and body and kind.split(";")[0] in ("text/html", "text/plain", "application/json")


REQUEST = st.one_of(
    st.builds(
        "{} {} {}\r\n\r\n".format,
        st.sampled_from(["GET", "HEAD", "POST", "BREW", "", "get"]),
        TARGET,
        st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/9", ""]),
    ),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)


def test_fuzz_raw_requests_never_print_a_traceback(capfd):
    """The server, as a browser or anything else reaches it: an answer (an
    HTTP/0.9 one to a request line without a version) or a closed
    connection, never a 500, nothing on the terminal."""
    httpd = server(Explorer(kafka_elr.load({"max_records": 1})), "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    @settings(max_examples=100, deadline=None, derandomize=True, database=None)
    @given(request=REQUEST)
    def answered(request: str) -> None:
        with socket.create_connection(httpd.server_address[:2], timeout=10) as s:
            s.sendall(request.encode("utf-8", "surrogatepass"))
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert b"Traceback" not in answer and b" 500 " not in answer.split(b"\r\n")[0], answer[:200]

    try:
        answered()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert capfd.readouterr().err == ""
