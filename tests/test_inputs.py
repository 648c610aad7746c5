"""Every input file is validated: whatever a config, scenario, trace, gate
or matrix file holds, a command answers (exit 0 or 1) or refuses it with one
line (exit 2), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import modelcheck.gate  # noqa: F401  (the commands import them lazily; a child without
import modelcheck.matrix  # noqa: F401  access to the interpreter's files could not)
from cli import main

ROOT = Path(__file__).parent.parent
SCENARIO = (ROOT / "specs/scenarios/motivation-legacy.toml").read_text()
GATE = '[[entry]]\nname = "kip966"\nconfig = { max_records = 1, max_fences = 0 }\nexpect = "holds"\n'
MATRIX = 'title = "t"\n[[cell]]\nname = "kip966"\nconfig = { max_records = 1, max_fences = 0 }\n'
NOBODY = 65534


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def refused(r, *parts: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr holding every part."""
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    for part in parts:
        assert part in r.stderr, r.stderr


def as_nobody(*args: str) -> tuple[int, str, str]:
    """The command run by an ordinary user (in a forked child that drops
    root's privileges: root reads a mode-000 file, and the interpreter may
    live where that user cannot run it): (exit code, stdout, stderr)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: never returns into pytest
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            r = invoke(*args)
            os.write(write, json.dumps([r.exit_code, r.stdout, r.stderr]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return tuple(json.loads(data))


@pytest.fixture
def shared_dir():
    """A directory an ordinary user may enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="modelcheck-inputs-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def legacy_trace(path: Path) -> Path:
    r = invoke("check", "--set", "variant=legacy", "--set", "max_records=1", "--trace-out", str(path))
    assert r.exit_code == 1, r.output
    return path


FILES = {   # command -> (the file it reads, its content)
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


DEEP = 100_000


@pytest.mark.parametrize("command", FILES)
@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_deeply_nested_input_is_refused_with_one_line(tmp_path, command, suffix):
    name = Path(FILES[command][0]).with_suffix(suffix).name
    path = tmp_path / name
    nested = "[" * DEEP + "]" * DEEP
    path.write_text(f"a = {nested}\n" if suffix == ".toml" else f'{{"a": {nested}}}')
    if command == "trace show" and suffix == ".toml":
        return      # a trace is JSON whatever its name
    refused(invoke(*command.split(), str(path)), f"error: {path}: nested too deeply")


def test_nesting_within_the_parsers_limits_is_refused_too(tmp_path):
    """Deep enough to parse, too deep for what reads it afterwards."""
    path = tmp_path / "s.json"
    path.write_text('{"config": {}, "steps": [{"action": "Produce", "acks": ' + "[" * 500 + "]" * 500 + "}]}")
    refused(invoke("replay", str(path)), "nested more than 64 levels deep")


@pytest.mark.parametrize("command, text, key", [
    ("check", '{"brokers": 1, "brokers": 1}', "brokers"),
    ("replay", '{"config": {}, "steps": [{"action": "Fetch", "broker": 1, "broker": 2}]}', "broker"),
    ("gate", '{"entry": [{"name": "a", "name": "b", "config": {}, "expect": "holds"}]}', "name"),
    ("matrix", '{"cell": [{"name": "a", "config": {"variant": "legacy", "variant": "kip966"}}]}', "variant"),
])
def test_duplicate_json_keys_are_refused_naming_the_key(tmp_path, command, text, key):
    path = tmp_path / "f.json"
    path.write_text(text)
    refused(invoke(command, str(path)), f"error: {path}: duplicate key {key!r}")


def test_a_duplicate_key_in_a_trace_is_refused(tmp_path):
    text = legacy_trace(tmp_path / "t.json").read_text()
    dup = tmp_path / "dup.json"
    dup.write_text(text.replace('"invariant": "NoAckedLoss"', '"invariant": "NoAckedLoss", "invariant": null', 1))
    refused(invoke("trace", "show", str(dup)), f"error: {dup}: duplicate key 'invariant'")


@pytest.mark.parametrize("text, message", [
    ('{"brokers": NaN}', "NaN is not a JSON number"),
    ('{"brokers": ' + "1" * 5000 + "}", "a number has more than 4300 digits"),
    ('{"brokers": "\\ud800"}', "brokers: a string with an unpaired surrogate"),
])
def test_json_that_python_reads_but_is_not_text_or_json_is_refused(tmp_path, text, message):
    path = tmp_path / "c.json"
    path.write_text(text)
    refused(invoke("check", str(path)), f"error: {path}: ", message)


@pytest.mark.parametrize("text, message", [
    ("brokers = " + "1" * 5000, "a number has more than 4300 digits"),
    ("brokers = 1979-05-27", "brokers: a date or time (1979-05-27)"),
])
def test_toml_values_no_modelcheck_file_holds_are_refused(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    refused(invoke("check", str(path)), f"error: {path}: ", message)


@pytest.mark.parametrize("value, message", [
    ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    ("1" * 5000, "a number has more than 4300 digits"),
    ("1979-05-27", "a date or time (1979-05-27)"),
])
def test_set_values_are_parsed_as_files_are(value, message):
    refused(invoke("check", "--set", f"brokers={value}"), "error: --set 'brokers=", message)
