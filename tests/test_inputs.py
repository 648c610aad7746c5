"""Every input file is validated: whatever a config, scenario, trace, gate
or matrix file holds, a command answers (exit 0 or 1) or refuses it with one
line (exit 2), never a traceback."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nobody import as_nobody
from rich.console import Console
from strategies import fuzzing

from cli import main
from modelcheck.config import ConfigError, parse_override, read_file
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.formats.itf import to_itf
from modelcheck.formats.tracefile import TraceFile
from modelcheck.result import parse_expectation
from modelcheck.runs.gate import read_gate  # the commands import gate and matrix lazily: here, before
from modelcheck.runs.inputs import load_check_config
from modelcheck.runs.matrix import read_matrix  # as_nobody's child, which cannot read the interpreter's files
from modelcheck.runs.replay import parse_steps, replay, split_scenario
from modelcheck.trace import described
from modelcheck.views.html import render as render_html
from modelcheck.views.terminal import diff_table, replay_table, step_table, trace_table
from modelcheck.views.tracefile import open_trace
from specs.kafka_elr import VARIANTS, load, schema

ROOT = Path(__file__).parent.parent
SCENARIO = (ROOT / "specs/scenarios/motivation-legacy.toml").read_text()
GATE = '[[entry]]\nname = "kip966"\nconfig = { max_records = 1, max_fences = 0 }\nexpect = "holds"\n'
MATRIX = 'title = "t"\n[[cell]]\nname = "kip966"\nconfig = { max_records = 1, max_fences = 0 }\n'


def legacy_counterexample() -> dict[str, Any]:
    spec = load({"variant": "legacy", "max_records": 1})
    return TraceFile(
        spec.config, "NoAckedLoss", described(spec, run(spec, CheckOptions.of(engine="bfs")).trace)
    ).to_json()


TRACE = legacy_counterexample()  # as check --trace-out writes it
ITF = to_itf(TRACE["config"], TRACE["invariant"], TRACE["trace"], load({}).itf_types)  # as trace export does


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def refused(r, *parts: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr holding every part."""
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    for part in parts:
        assert part in r.stderr, r.stderr


@pytest.fixture
def shared_dir():
    """A directory an ordinary user may enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="modelcheck-inputs-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


FILES = {  # command -> (the file it reads, its content)
    "check": ("c.toml", "brokers = 3\n"),
    "replay": ("s.toml", SCENARIO),
    "trace show": ("t.json", "{}"),
    "gate": ("g.toml", GATE),
    "matrix": ("m.toml", MATRIX),
}


@pytest.mark.parametrize("command", FILES)
def test_an_unreadable_file_is_refused_with_one_line(shared_dir, command):
    name, text = FILES[command]
    path = shared_dir / name
    path.write_text(text)
    path.chmod(0)
    code, out, err = as_nobody(*command.split(), str(path))
    assert (code, out, err) == (2, "", f"error: {path}: cannot read it (permission denied)\n")


@pytest.mark.parametrize("command", FILES)
def test_a_directory_or_a_missing_file_is_refused_with_one_line(tmp_path, command):
    refused(invoke(*command.split(), str(tmp_path)), f"error: {tmp_path}: is a directory, not a file")
    refused(invoke(*command.split(), str(tmp_path / "nope")), f"error: {tmp_path / 'nope'}: no such file")


@pytest.mark.parametrize("command", FILES)
def test_a_byte_order_mark_is_named(tmp_path, command):
    """Neither TOML nor JSON allows one: the error names it, not a first
    character the parsers do not expect."""
    name, text = FILES[command]
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + text.encode())
    refused(
        invoke(*command.split(), str(tmp_path / name)),
        f"error: {tmp_path / name}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without one",
    )


@pytest.mark.parametrize("command", FILES)
def test_an_endless_input_is_refused_at_its_size_cap(command):
    """/dev/zero was read into memory until the machine ran out of it."""
    refused(invoke(*command.split(), "/dev/zero"), "error: /dev/zero: larger than 64 MiB, more than any input")


def test_an_endless_fifo_is_refused_at_its_size_cap(tmp_path):
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)

    def endless() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as f:
            while True:
                f.write(b"# a comment that never ends\n" * 4096)

    writer = threading.Thread(target=endless, daemon=True)
    writer.start()
    refused(invoke("check", str(fifo)), f"error: {fifo}: larger than 64 MiB")
    writer.join(10)
    assert not writer.is_alive()


DEEP = 100_000


@pytest.mark.parametrize(
    "command, suffix", [(c, s) for c in FILES for s in (".toml", ".json") if (c, s) != ("trace show", ".toml")]
)  # a trace is JSON
def test_deeply_nested_input_is_refused_with_one_line(tmp_path, command, suffix):
    path = tmp_path / Path(FILES[command][0]).with_suffix(suffix).name
    nested = "[" * DEEP + "]" * DEEP
    path.write_text(f"a = {nested}\n" if suffix == ".toml" else f'{{"a": {nested}}}')
    refused(invoke(*command.split(), str(path)), f"error: {path}: nested too deeply")


def test_nesting_within_the_parsers_limits_is_refused_too(tmp_path):
    """Deep enough to parse, too deep for what reads it afterwards."""
    path = tmp_path / "s.json"
    path.write_text('{"config": {}, "steps": [{"action": "Produce", "acks": ' + "[" * 500 + "]" * 500 + "}]}")
    refused(invoke("replay", str(path)), "nested more than 64 levels deep")


@pytest.mark.parametrize(
    "command, text, key",
    [
        ("check", '{"brokers": 1, "brokers": 1}', "brokers"),
        ("replay", '{"config": {}, "steps": [{"action": "Fetch", "broker": 1, "broker": 2}]}', "broker"),
        ("gate", '{"entry": [{"name": "a", "name": "b", "config": {}, "expect": "holds"}]}', "name"),
        ("matrix", '{"cell": [{"name": "a", "config": {"variant": "legacy", "variant": "kip966"}}]}', "variant"),
    ],
)
def test_duplicate_json_keys_are_refused_naming_the_key(tmp_path, command, text, key):
    path = tmp_path / "f.json"
    path.write_text(text)
    refused(invoke(command, str(path)), f"error: {path}: duplicate key {key!r}")


def test_a_duplicate_key_in_a_trace_is_refused(tmp_path):
    dup = tmp_path / "dup.json"
    dup.write_text(
        json.dumps(TRACE).replace('"invariant": "NoAckedLoss"', '"invariant": "NoAckedLoss", "invariant": null')
    )
    refused(invoke("trace", "show", str(dup)), f"error: {dup}: duplicate key 'invariant'")


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"brokers": NaN}', "NaN is not a JSON number"),
        ('{"brokers": ' + "1" * 5000 + "}", "a number has more than 4300 digits"),
        ('{"brokers": "\\ud800"}', "brokers: a string with an unpaired surrogate"),
    ],
)
def test_json_that_python_reads_but_is_not_text_or_json_is_refused(tmp_path, text, message):
    path = tmp_path / "c.json"
    path.write_text(text)
    refused(invoke("check", str(path)), f"error: {path}: ", message)


@pytest.mark.parametrize(
    "text, message",
    [
        ("brokers = " + "1" * 5000, "a number has more than 4300 digits"),
        ("brokers = 1979-05-27", "brokers: a date or time (1979-05-27)"),
    ],
)
def test_toml_values_no_modelcheck_file_holds_are_refused(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    refused(invoke("check", str(path)), f"error: {path}: ", message)


@pytest.mark.parametrize(
    "value, message",
    [
        ("[" * DEEP + "]" * DEEP, "nested too deeply"),
        ("1" * 5000, "a number has more than 4300 digits"),
        ("1979-05-27", "a date or time (1979-05-27)"),
    ],
)
def test_set_values_are_parsed_as_files_are(value, message):
    refused(invoke("check", "--set", f"brokers={value}"), "error: --set 'brokers=", message)


# ---- fuzz: random structures, mostly near-valid documents -------------------------------
# Each parser is driven in-process as its command drives it; it must return
# or raise ConfigError with a one-line message, never anything else.

SPEC = load({})
VOCAB = sorted(
    {
        *SPEC.actions,
        *SPEC.invariants,
        *SPEC.goals,
        *SPEC.describe(SPEC.init_states()[0]),
        *(k.name for k in schema()),
        *(a for ps in SPEC.params.values() for a in ps),
        *VARIANTS,
        "all",
        "1",
        "holds",
        "violated: NoAckedLoss",
        "violated: ",
        "name",
        "config",
        "expect",
        "steps",
        "action",
        "violates",
        "entry",
        "cell",
        "defaults",
        "states",
        "budget_s",
        "symmetry",
        "trace",
        "invariant",
        "args",
        "state",
        "#meta",
        "#bigint",
        "#set",
        "#tup",
        "#map",
        "tag",
        "value",
        "vars",
    }
)
ODD = ["", " ", "\n", "[/]", "[bold]x", "\ud800", "é", "２", "²", "-1", "1e400", "NaN", "🙂", "a\x00b"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 9),
    st.integers(),
    st.sampled_from([2**63, -(2**64), 10**40]),
    st.floats(),
    st.sampled_from(VOCAB),
    st.sampled_from(ODD),
    st.text(max_size=6),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(VOCAB) | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(doc: Any, at: tuple = ()) -> list[tuple]:
    """Every node's path (keys and indices) in a JSON-like document."""
    out = [at]
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out += paths(value, (*at, key))
    return out


def node(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw: Any, base: Any) -> Any:
    """`base` after a few random edits: a node replaced by a random value or
    by a copy of another node, deleted, given a new key or element, wrapped,
    or an integer nudged; near-valid, so the fuzz gets past the first check."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(paths(doc)[1:] or [()]))  # the root itself: rarely worth it
        old = node(doc, where)
        edit = draw(st.sampled_from(["value", "copy", "delete", "add", "wrap", "nudge"]))
        if edit == "value":
            new = draw(VALUES)
        elif edit == "copy":
            new = copy.deepcopy(node(doc, draw(st.sampled_from(paths(doc)))))
        elif edit == "wrap":
            new = draw(st.sampled_from([[old], {draw(st.sampled_from(VOCAB)): old}]))
        elif edit == "nudge" and isinstance(old, int) and not isinstance(old, bool):
            new = old + draw(st.sampled_from([-1, 1, 2**64]))
        elif edit == "add" and isinstance(old, dict):
            new = {**old, draw(st.sampled_from(VOCAB)): draw(VALUES)}
        elif edit == "add" and isinstance(old, list):
            new = old + [copy.deepcopy(old[-1]) if old and draw(st.booleans()) else draw(VALUES)]
        elif edit == "delete" and where:
            parent = node(doc, where[:-1])
            del parent[where[-1]]
            continue
        else:
            continue
        if where:
            node(doc, where[:-1])[where[-1]] = new
        else:
            doc = new
    return doc


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else "inf" if v > 0 else "-inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps("" if v is None else v)  # TOML has no null


@st.composite
def written(draw: Any, base: Any, formats: tuple[str, ...] = ("toml", "json")) -> tuple[str, str]:
    """(suffix, text) of a mutated document, sometimes cut short or given a duplicate key."""
    doc = draw(mutated(base))
    fmt = draw(st.sampled_from(formats)) if isinstance(doc, dict) else "json"
    if fmt == "toml":
        text = "\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items())
    else:
        text = json.dumps(doc)
    damage = draw(st.sampled_from(["none"] * 6 + ["cut", "duplicate"]))
    if damage == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif damage == "duplicate" and fmt == "json" and text.startswith("{") and len(text) > 2:
        text = text[:-1] + (", " if len(text) > 2 else "") + text[1:]
    return f".{fmt}", text


@pytest.fixture(scope="module")
def fuzz_dir():
    path = Path(tempfile.mkdtemp(prefix="modelcheck-fuzz-"))
    yield path
    shutil.rmtree(path)


def answers_or_refuses(directory: Path, suffix: str, text: str, read: Callable[[str], Any]) -> None:
    path = directory / f"input{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        read(str(path))
    except ConfigError as e:
        assert str(e) and "\n" not in str(e), repr(str(e))


def read_config(path: str) -> None:
    """As `modelcheck check CONFIG` reads it, up to the search."""
    given, expected = load_check_config(path, ())
    spec = load(given)
    if expected is not None:
        parse_expectation(expected, spec, path, "[expected] verdict")


def read_scenario(path: str) -> None:
    """As `modelcheck replay` reads and runs it, with its table drawn."""
    config, raw = split_scenario(read_file(path), path)
    spec = load(config)
    _initial, reports = replay(spec, parse_steps(spec, raw, path))
    Console(file=io.StringIO()).print(replay_table(spec, reports))


def read_trace(path: str) -> None:
    """As the trace commands read it, and what they draw and write."""
    spec, tf, steps = open_trace(path, load)
    console = Console(file=io.StringIO())
    console.print(trace_table(spec, steps), diff_table(spec, steps), step_table(spec, steps, len(steps) - 1))
    json.dumps(to_itf(tf.config, tf.invariant, tf.steps, spec.itf_types))
    render_html(spec, steps, tf.config, tf.invariant)


CONFIG = {
    "variant": "legacy",
    "brokers": 3,
    "min_isr": 2,
    "max_records": 1,
    "acks": ["all"],
    "invariants": ["NoAckedLoss", "TypeOK"],
    "expected": {"verdict": "violated: NoAckedLoss"},
}
SCENARIOS = [tomllib.loads(p.read_text()) for p in sorted((ROOT / "specs/scenarios").glob("*.toml"))]
GATE_DOC = tomllib.loads((ROOT / "specs/gate.toml").read_text())
MATRIX_DOC = tomllib.loads((ROOT / "specs/matrix.toml").read_text())
MATRIX_DOC["cell"] = MATRIX_DOC["cell"][:6]
FUZZ = fuzzing(150, HealthCheck.data_too_large)


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_fuzz_config_files(fuzz_dir, data):
    answers_or_refuses(fuzz_dir, *data.draw(written(CONFIG)), read_config)


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_fuzz_scenarios(fuzz_dir, data):
    answers_or_refuses(fuzz_dir, *data.draw(written(data.draw(st.sampled_from(SCENARIOS)))), read_scenario)


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_fuzz_traces_json_and_itf(fuzz_dir, data):
    answers_or_refuses(fuzz_dir, *data.draw(written(data.draw(st.sampled_from([TRACE, ITF])), ("json",))), read_trace)


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_fuzz_gate_files(fuzz_dir, data):
    answers_or_refuses(fuzz_dir, *data.draw(written(GATE_DOC)), lambda path: read_gate(path, load))


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_fuzz_matrix_files(fuzz_dir, data):
    answers_or_refuses(fuzz_dir, *data.draw(written(MATRIX_DOC)), lambda path: read_matrix(path, load))


@FUZZ
@given(st.text(max_size=30) | st.builds(lambda k, v: f"{k}={v}", st.sampled_from(VOCAB), st.text(max_size=20)))
def test_fuzz_set_overrides(text):
    try:
        key, value = parse_override(text)
        load({key: value})
    except ConfigError as e:
        assert str(e) and "\n" not in str(e), repr(str(e))


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_fuzz_the_commands_exit_0_1_or_2(fuzz_dir, data):
    """The real commands (those that run no search on what they read):
    exit 0, 1 or 2, never an exception, and a refusal is one line."""
    command, base = data.draw(
        st.sampled_from(
            [
                (["replay"], data.draw(st.sampled_from(SCENARIOS))),
                (["trace", "show"], TRACE),
                (["trace", "export"], ITF),
                (["trace", "show", "--diff"], ITF),
            ]
        )
    )
    suffix, text = data.draw(written(base, ("json",) if command[0] == "trace" else ("toml", "json")))
    path = fuzz_dir / f"cli{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    answered_or_refused(invoke(*command[:2], str(path), *command[2:]))


def answered_or_refused(r) -> None:
    """A command's answer (exit 0 or 1) or its refusal in one line (exit
    2, nothing on stdout), never an exception."""
    assert r.exit_code in (0, 1, 2) and (r.exception is None or isinstance(r.exception, SystemExit)), (
        r.exit_code,
        r.output,
        r.exception,
    )
    if r.exit_code == 2:
        assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr


@pytest.mark.parametrize("value", [2**63, 2**64, 10**40])
def test_a_huge_but_allowed_config_value_gets_a_verdict(value):
    """min_isr = 2^64 (effectively N, as min_isr = 3) packs into a field of
    64 bits, which the kernel's int64 words cannot hold: the kernel declines
    such a value (an OverflowError, exit 3, before) and the check runs
    interpreted."""
    r = invoke("check", "--set", f"min_isr={value}", "--set", "max_records=1", "--set", "max_fences=0", "-q")
    assert r.exit_code == 0 and "distinct states: 6,118" in r.stdout, (r.output, r.exception)
    assert "warning: no compiled kernel (" in r.stderr and "Traceback" not in r.output


REAL = {  # command -> a file it must refuse, as the fuzz found them
    "check": ("c.toml", "brokers = " + "[" * DEEP + "]" * DEEP),
    "replay": ("s.toml", '[config]\n[[steps]]\naction = ["Produce"]\n'),
    "trace show": (
        "t.json",
        json.dumps(
            {**ITF, "#meta": {**ITF["#meta"], "config": {}}, "states": [{"#meta": {}, "leader": {"#bigint": "abc"}}]}
        ),
    ),
    "gate": ("g.toml", GATE + "budget_s = nan\n"),
    "matrix": ("m.toml", MATRIX + 'expect = "violated: NoAckedLos"\n'),
}


@pytest.mark.parametrize("command", REAL)
def test_the_real_command_refuses_with_one_line_and_no_traceback(tmp_path, command):
    name, text = REAL[command]
    (tmp_path / name).write_text(text)
    p = subprocess.run(
        [sys.executable, "-c", "import cli; cli.main()", *command.split(), str(tmp_path / name)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MODELCHECK_KERNEL": "interpreted"},
    )
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith(f"error: {tmp_path / name}: "), p.stderr
