"""Checkpoints that cannot destroy or lie (issue 32): a checkpoint
directory is modelcheck's alone and only what its manifests name is ever
removed; two runs cannot write into one at once; a damaged or edited
checkpoint is refused in one line (exit 2) and never resumed to a wrong
answer, fuzzed with random damage to real checkpoints; a failed write
leaves no temporary behind."""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import resource
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from nobody import as_nobody
from resuming import interrupted, resume
from strategies import fuzzing

from cli import main
from modelcheck.config import ConfigError
from modelcheck.engine.storage.checkpoint import LOCK, MANIFEST, Checkpoints
from modelcheck.engine.storage.state_json import dump_states, load_states
from modelcheck.fingerprint import fingerprint
from specs.kafka_elr import load

CONFIG = {"variant": "legacy", "max_records": 1}  # violated at depth 8, 6,858 states: small, with a trace
SETS = [arg for k, v in CONFIG.items() for arg in ("--set", f"{k}={v}")]
FIELDS = ("verdict", "invariant", "distinct_states", "generated_states", "depth", "coverage", "goals", "trace")


def invoke(*args: str | Path):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(r, message: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr: `message`."""
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n"), (r.exit_code, r.stderr, r.exception)


@functools.cache
def uninterrupted(engine: str) -> dict:
    r = invoke("check", *SETS, "--engine", engine, "--json", "-q")
    assert r.exit_code == 1, r.stderr
    return {k: json.loads(r.stdout)[k] for k in FIELDS}


@functools.cache
def checkpoint_of(engine: str) -> Path:
    """A real checkpoint of CONFIG, stopped after its third level (kept for the session)."""
    directory = Path(tempfile.mkdtemp(prefix=f"modelcheck-ck-{engine}-")) / "ck"
    interrupted(load(CONFIG), engine, directory, 3)
    return directory


def copy_of(engine: str, where: Path) -> Path:
    target = where / "ck"
    shutil.copytree(checkpoint_of(engine), target)
    return target


def resumed(directory: Path):
    return invoke("check", "--resume", directory, "--json", "-q")


def answers_as_uninterrupted(r, engine: str) -> None:
    assert r.exit_code == 1, (r.exit_code, r.stderr, r.exception)
    assert {k: json.loads(r.stdout)[k] for k in FIELDS} == uninterrupted(engine)


def reseal(directory: Path, edit) -> None:
    """Edit the manifest as a hand (or a bug) would, and give it its checksum
    again: what its schema alone must refuse."""
    manifest = json.loads((directory / MANIFEST).read_text())
    edit(manifest)
    rest = {k: v for k, v in manifest.items() if k != "digest"}
    manifest["digest"] = hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    (directory / MANIFEST).write_text(json.dumps(manifest))


def named(directory: Path, prefix: str) -> str:
    return next(p.name for p in sorted(directory.iterdir()) if p.name.startswith(prefix))


# ---- a checkpoint directory is ours alone ------------------------------------------------------------------------
def test_a_resumed_run_removes_only_what_its_manifests_named(tmp_path):
    """Files put into a checkpoint directory (one even named as a checkpoint
    file would be) survive every later checkpoint; the files of replaced
    checkpoints do not."""
    ck = copy_of("bfs", tmp_path)
    (ck / "firmware.bin").write_bytes(b"\x7fELF")
    (ck / "fps.99.bin").write_bytes(b"mine")
    result = resume(CONFIG, "bfs", ck)
    assert (result.distinct_states, result.generated_states) == (6858, 14250)
    assert (ck / "firmware.bin").read_bytes() == b"\x7fELF" and (ck / "fps.99.bin").read_bytes() == b"mine"
    manifest = json.loads((ck / MANIFEST).read_text())
    files = sorted(f["file"] for f in manifest["files"].values())
    assert manifest["state"]["depth"] > 3 and all(name.endswith(f".{manifest['serial']}.bin") for name in files)
    assert sorted(p.name for p in ck.iterdir()) == sorted([LOCK, MANIFEST, "firmware.bin", "fps.99.bin", *files])


def test_files_a_torn_checkpoint_left_are_removed_by_the_next(tmp_path):
    """A kill while writing leaves new files no manifest holds yet; they were
    named (pending) before they were written, so the next checkpoint removes
    them, and nothing accumulates."""
    ck = copy_of("bfs", tmp_path)
    checkpoints = Checkpoints(ck, every_s=0)
    checkpoints.prepare(resuming=True)
    checkpoints._intend(["fps.90.bin", "parents.90.bin"])  # as a save does before it writes; then the kill
    (ck / "fps.90.bin").write_bytes(b"half")
    (ck / ".parents.90.bin.tmp").write_bytes(b"ha")
    checkpoints.release()
    assert json.loads((ck / MANIFEST).read_text())["pending"] == ["fps.90.bin", "parents.90.bin"]
    result = resume(CONFIG, "bfs", ck)  # a checkpoint every level
    assert (result.distinct_states, result.generated_states) == (6858, 14250)
    files = [f["file"] for f in json.loads((ck / MANIFEST).read_text())["files"].values()]
    assert sorted(p.name for p in ck.iterdir()) == sorted([LOCK, MANIFEST, *files])


def test_a_file_that_appears_where_a_checkpoint_would_write_is_left_alone(tmp_path):
    ck = copy_of("bfs", tmp_path)
    checkpoints = Checkpoints(ck, every_s=0)
    checkpoints.prepare(resuming=True)
    theirs = ck / f"fps.{checkpoints.serial + 1}.bin"
    theirs.write_bytes(b"mine")
    before = (ck / MANIFEST).read_bytes()
    with pytest.raises(ConfigError) as refusal:
        checkpoints.save({}, {"fps": np.zeros(3, np.uint64)})
    checkpoints.release()
    assert str(refusal.value) == (
        f"checkpoint directory {str(ck)!r}: {theirs.name} appeared there during the run and is not modelcheck's; "
        "it is left as it is, and the check stops without this checkpoint"
    )
    assert theirs.read_bytes() == b"mine" and (ck / MANIFEST).read_bytes() == before


def test_a_directory_that_holds_other_files_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "firmware.bin").write_bytes(b"\x7fELF")
    (tmp_path / "notes.txt").write_text("mine")
    r = invoke("check", *SETS, "--engine", "bfs", "--checkpoint", tmp_path)
    refused(
        r,
        f"--checkpoint {str(tmp_path)!r} is not empty and holds no checkpoint ('firmware.bin' and 1 more): a "
        "checkpoint directory is modelcheck's alone (it removes the files its checkpoints replace); "
        "give a new or empty one",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["firmware.bin", "notes.txt"]


def test_a_directory_another_run_writes_into_is_refused(tmp_path):
    other = Checkpoints(tmp_path / "ck")
    other.prepare(resuming=False)  # a run that is writing checkpoints there
    r = invoke("check", *SETS, "--engine", "bfs", "--checkpoint", tmp_path / "ck")
    refused(
        r,
        f"--checkpoint {str(tmp_path / 'ck')!r} is in use: another modelcheck run is writing checkpoints there "
        f"(it holds the lock on {LOCK}); wait for it to end, or give another directory",
    )
    other.release()
    ck = copy_of("bfs", tmp_path / "b")
    other = Checkpoints(ck)
    other.prepare(resuming=True)
    refused(
        resumed(ck),
        f"--resume {str(ck)!r} is in use: another modelcheck run is writing checkpoints there "
        f"(it holds the lock on {LOCK}); wait for it to end, or give another directory",
    )
    other.release()
    answers_as_uninterrupted(resumed(ck), "bfs")  # the lock ends with the run that held it


def test_a_run_that_ends_before_its_first_checkpoint_leaves_a_directory_the_next_may_take(tmp_path):
    ck = tmp_path / "ck"
    r = invoke("check", *SETS, "--engine", "bfs", "--checkpoint", ck, "-q", "--json")
    assert r.exit_code == 1, r.stderr
    refused(
        resumed(ck), f"--resume {str(ck)!r}: no checkpoint there yet (the run that made it wrote none before it ended)"
    )
    assert invoke("check", *SETS, "--engine", "bfs", "--checkpoint", ck, "-q", "--json").exit_code == 1


# ---- a damaged checkpoint is refused -----------------------------------------------------------------------------
def zero_visited(ck: Path) -> str:
    name = named(ck, "fps.")
    data = bytearray((ck / name).read_bytes())
    data[8:40] = bytes(32)
    (ck / name).write_bytes(data)
    return f"{name} does not match its checksum (it was damaged)"


def noise_in_frontier(ck: Path) -> str:
    name = named(ck, "frontier.")
    data = bytearray((ck / name).read_bytes())
    data[len(data) // 2] ^= 0x5A
    (ck / name).write_bytes(data)
    return f"{name} does not match its checksum (it was damaged)"


def deleted_file(ck: Path) -> str:
    name = named(ck, "parents.")
    (ck / name).unlink()
    return f"{name} is missing (the manifest names it)"


def symlink_out(ck: Path) -> str:
    name = named(ck, "frontier.")
    outside = ck.parent / "elsewhere.bin"
    shutil.move(ck / name, outside)
    (ck / name).symlink_to(outside)
    return f"{name} is a symbolic link, not a file of the checkpoint"


def edited_count(ck: Path) -> str:
    text = (ck / MANIFEST).read_text()
    generated = json.loads(text)["state"]["generated"]
    (ck / MANIFEST).write_text(text.replace(f'"generated": {generated}', f'"generated": {generated + 1}'))
    return f"{MANIFEST} does not match its checksum (it was damaged or edited)"


def nan_depth(ck: Path) -> str:
    text = (ck / MANIFEST).read_text()
    depth = json.loads(text)["state"]["depth"]
    (ck / MANIFEST).write_text(text.replace(f'"depth": {depth}', '"depth": NaN'))
    return f"cannot read {MANIFEST} (NaN is not a number a checkpoint holds)"


def resealed(edit, message: str):
    def damage(ck: Path) -> str:
        reseal(ck, edit)
        return f"{MANIFEST} is damaged: {message}"

    damage.__name__ = message.split(" ")[0]
    return damage


DAMAGE = [
    zero_visited,
    noise_in_frontier,
    deleted_file,
    symlink_out,
    edited_count,
    nan_depth,
    resealed(lambda m: m["state"].update(depth=-1), "state.depth is -1: expected a non-negative integer"),
    resealed(lambda m: m["state"].pop("generated"), "state.generated is missing"),
    resealed(
        lambda m: m["state"].update(elapsed_s=-1.5), "state.elapsed_s is -1.5: expected a finite non-negative number"
    ),
    resealed(
        lambda m: m["state"]["identity"].update(engine="spark"),
        'state.identity.engine is "spark": expected "fast" or "bfs"',
    ),
    resealed(
        lambda m: m["files"]["frontier"].update(file="../../../etc/hostname"),
        'files.frontier.file is "../../../etc/hostname": '
        "expected a plain file name in the directory (not the manifest)",
    ),
    resealed(
        lambda m: m["files"]["fps"].update(file="/etc/hostname"),
        'files.fps.file is "/etc/hostname": expected a plain file name in the directory (not the manifest)',
    ),
    resealed(
        lambda m: m["files"]["fps"].update(dtype="|O"),
        'files.fps.dtype is "|O": expected a dtype of plain numbers (such as "<u8", or a list of [name, dtype] pairs)',
    ),
    resealed(lambda m: m.pop("files"), "files is missing"),
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__ for d in DAMAGE])
def test_a_damaged_checkpoint_is_refused_in_one_line(tmp_path, damage):
    ck = copy_of("bfs", tmp_path)
    message = damage(ck)
    refused(resumed(ck), f"--resume {str(ck)!r}: {message}")


def forged_frontier(ck: Path, data: bytes) -> None:
    """Replace the reference engine's frontier with `data`, its size and
    checksum in the manifest, and the manifest's own: a forgery every
    checksum passes."""
    name = named(ck, "frontier.")
    (ck / name).write_bytes(data)
    reseal(
        ck,
        lambda m: m["files"]["frontier"].update(shape=[len(data)], digest=hashlib.sha256(data).hexdigest()),
    )


class Planted:
    """Unpickled, it creates the file it names: code a checkpoint must never run."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_a_forged_frontier_never_runs_code_and_is_refused(tmp_path):
    """The reference engine's frontier was a pickle: a file that passed
    every checksum ran whatever it named when resumed."""
    ck = copy_of("bfs", tmp_path)
    planted = tmp_path / "planted"
    forged_frontier(ck, pickle.dumps([Planted(planted)]))
    r = resumed(ck)
    assert not planted.exists()
    name = named(ck, "frontier.")
    assert r.stderr.startswith(f"error: --resume {str(ck)!r}: {name} is not a frontier this modelcheck wrote (not JSON")
    assert (r.exit_code, r.stdout, len(r.stderr.splitlines())) == (2, "", 1)


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (
            lambda d: d.update(version=0),
            'is not a frontier this modelcheck wrote ({"format": "modelcheck states", '
            "\"version\": 0}; expected format 'modelcheck states', version 1)",
        ),
        (lambda d: d.update(fields=["x"]), "holds states of another type than State"),
        (
            lambda d: d["states"][0][1].__setitem__(0, d["states"][0][1][0] + 1),
            ": state 0 cannot be read back (not the state its fingerprint says)",
        ),
        (lambda d: d["states"][1].pop(), ": state 1 cannot be read back (not enough values to unpack"),
        (
            lambda d: d["states"][2][1].__setitem__(3, {"set": [1]}),
            ': state 2 cannot be read back (an object that is not a frozenset: {"set": [1]})',
        ),
    ],
    ids=["version", "fields", "value", "shape", "object"],
)
def test_a_frontier_edited_and_resealed_is_refused(tmp_path, forge, message):
    """States are read back as the spec's state type, and each must have
    the fingerprint it was written with."""
    ck = copy_of("bfs", tmp_path)
    document = json.loads((ck / named(ck, "frontier.")).read_bytes())
    forge(document)
    forged_frontier(ck, json.dumps(document).encode())
    r = resumed(ck)
    assert (r.exit_code, r.stdout, len(r.stderr.splitlines())) == (2, "", 1), r.stderr
    assert r.stderr.startswith(
        f"error: --resume {str(ck)!r}: {named(ck, 'frontier.')}{'' if message[0] == ':' else ' '}{message}"
    ), r.stderr


def test_a_write_that_fails_leaves_no_temporary_and_the_last_checkpoint_usable(tmp_path):
    """A full disk, as a file size limit makes one (root too is held to it):
    one line, exit 2, no partial `.tmp`; the last whole checkpoint resumes."""
    ck = tmp_path / "ck"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (24 << 10, hard))
    try:
        r = invoke("check", *SETS, "--engine", "bfs", "--checkpoint", ck, "--checkpoint-every", "0", "-q")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert (r.exit_code, r.stdout) == (2, "") and r.stderr.startswith("error: File too large"), r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert [p.name for p in ck.iterdir() if p.name.endswith(".tmp")] == []
    assert json.loads((ck / MANIFEST).read_text())["state"]["depth"] > 1
    answers_as_uninterrupted(resumed(ck), "bfs")


# ---- the command line ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--checkpoint", "--resume"])
def test_a_directory_without_search_permission_is_one_line_exit_2(option):
    shared = Path(tempfile.mkdtemp(prefix="modelcheck-ck-"))
    try:
        shared.chmod(0o755)
        ck = copy_of("bfs", shared) if option == "--resume" else shared / "ck"
        ck.mkdir(exist_ok=True)
        ck.chmod(0o644)  # read, but no search: nothing in it can be opened
        args = ["check", *SETS, "--engine", "bfs"] if option == "--checkpoint" else ["check"]
        got = as_nobody(*args, option, ck)
        assert got == (2, "", f"error: {option} {str(ck)!r}: Permission denied\n")
    finally:
        shutil.rmtree(shared)


def test_a_resume_reads_a_partial_set_over_the_checkpoints_config(tmp_path):
    ck = copy_of("bfs", tmp_path)
    answers_as_uninterrupted(invoke("check", "--resume", ck, "--set", "max_records=1", "--json", "-q"), "bfs")
    refused(
        invoke("check", "--resume", ck, "--set", "variant=kip966"),
        f'--resume {ck}: the checkpoint\'s variant is "legacy", not "kip966" '
        "(leave out the config to take the checkpoint's)",
    )


def test_resume_with_checkpoint_is_refused_before_anything_is_created(tmp_path):
    ck = copy_of("bfs", tmp_path)
    before = {p.name: p.read_bytes() for p in ck.iterdir()}
    r = invoke("check", "--resume", ck, "--checkpoint", tmp_path / "b")
    refused(
        r,
        f"--checkpoint {str(tmp_path / 'b')!r} with --resume: a resumed check keeps checkpointing into its "
        "--resume directory; leave out --checkpoint",
    )
    assert not (tmp_path / "b").exists() and {p.name: p.read_bytes() for p in ck.iterdir()} == before


# ---- fuzzing: random damage to real checkpoints -------------------------------------------------------------------
@st.composite
def damaged(draw, ck: Path) -> list[str]:
    """Damage `ck` as a disk, a copy or a hand might, one to three times;
    what was done, for the report of a failing example."""
    done = []
    for _ in range(draw(st.integers(1, 3))):
        names = sorted(p.name for p in ck.iterdir())
        kind = draw(st.sampled_from(["flip", "truncate", "zeros", "append", "delete", "rename", "edit"]))
        if kind == "edit" and MANIFEST not in names or not names:
            continue
        name = MANIFEST if kind == "edit" else draw(st.sampled_from(names))
        path = ck / name
        data = bytearray(path.read_bytes())
        at = draw(st.integers(0, 1 << 20)) % max(1, len(data))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[at:]
        elif kind == "zeros":
            end = min(len(data), at + draw(st.integers(1, 1 << 16)))
            data[at:end] = bytes(end - at)
        elif kind == "append":
            data += draw(st.binary(min_size=1, max_size=64))
        elif kind == "delete":
            path.unlink()
        elif kind == "rename":
            path.rename(ck / draw(st.sampled_from([*names, "x.bin", f"{name}.old"])))
        elif kind == "edit" and readable(data):
            data = bytearray(edited(draw, json.loads(data)).encode())
        if kind not in ("delete", "rename"):
            path.write_bytes(bytes(data))
        done.append(f"{kind} {name} at {at}")
    return done


def readable(data: bytes | bytearray) -> bool:
    try:
        manifest = json.loads(data)
    except ValueError:
        return False
    return isinstance(manifest, dict) and bool(manifest)


def edited(draw, manifest: dict) -> str:
    """The manifest with one value replaced (not sealed again: a damage, not a forgery)."""
    places: list = []

    def walk(node) -> None:
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            places.append((node, key))
            if isinstance(value, dict | list):
                walk(value)

    walk(manifest)
    node, key = draw(st.sampled_from(places))
    old = node[key]
    node[key] = draw(
        st.one_of(
            st.sampled_from([None, True, -1, 0, "", [], {}, "../x.bin"]),
            st.integers(-2, 1 << 40),
            st.just(old + 1 if isinstance(old, int) and not isinstance(old, bool) else old),
            st.text(max_size=8),
        )
    )
    return json.dumps(manifest, indent=1)


FUZZ = fuzzing(50, HealthCheck.data_too_large)


@pytest.mark.parametrize("engine", ["fast", "bfs"])
@pytest.mark.slow
def test_fuzz_a_damaged_checkpoint_resumes_to_the_same_answer_or_is_refused(engine):
    uninterrupted(engine)
    checkpoint_of(engine)

    @FUZZ
    @given(st.data())
    def fuzz(data):
        with tempfile.TemporaryDirectory() as where:
            ck = copy_of(engine, Path(where))
            data.draw(damaged(ck))
            r = resumed(ck)
            if r.exit_code == 2:
                assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
                assert r.stderr.startswith(f"error: --resume {str(ck)!r}"), r.stderr
            else:
                answers_as_uninterrupted(r, engine)

    fuzz()


class Kinds(NamedTuple):
    n: int
    pair: tuple
    members: frozenset
    flag: bool
    name: str | None


class Inner(NamedTuple):
    x: int


def test_states_of_every_kind_of_value_come_back_as_they_were_written():
    """Ints, bools, strings, None, nested tuples and frozensets (of tuples),
    as the reference engine may hold them; a value JSON cannot carry as it
    was (a NamedTuple inside a state) is refused when read back, not
    resumed as another state."""
    # a canonical encoding must not depend on a set's order (a pickle's does)
    spec = SimpleNamespace(
        state_type=Kinds, canonical=lambda s: repr([sorted(v) if isinstance(v, frozenset) else v for v in s]).encode()
    )
    states = [
        Kinds(-(1 << 70), ((1, 2), ()), frozenset({(3, 1), (1, 2)}), True, "b\u00e9"),
        Kinds(0, (False,), frozenset(), False, None),
    ]
    pairs = [(fingerprint(spec.canonical(s)), s) for s in states]
    back = load_states(spec, dump_states(spec, pairs), "f")
    assert back == pairs and [[type(v) for v in s] for _fp, s in back] == [[type(v) for v in s] for s in states]
    assert type(back[0][1].pair[1]) is tuple and type(back[1][1].pair[0]) is bool
    nested = Kinds(1, (Inner(2),), frozenset(), False, None)
    with pytest.raises(ConfigError, match=r"^f: state 0 cannot be read back \(not the state its fingerprint says\)$"):
        load_states(spec, dump_states(spec, [(fingerprint(spec.canonical(nested)), nested)]), "f")
    with pytest.raises(TypeError, match="a state holds a set: a checkpoint of the reference engine holds ints"):
        dump_states(spec, [(0, Kinds(1, (), {1}, False, None))])
