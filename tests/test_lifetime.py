"""Signals and kills, as a user (or CI's timeout) delivers them to the
installed command: a check stops at a safe point with what it had done and
resumes to the uninterrupted answer; nothing a command started outlives
it, whatever ends it; nothing is left in /dev/shm."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import xml.etree.ElementTree as ET
from functools import partial

import pytest
from processes import ROOT, alive, descendants, gone, shm, start, wait_for

# 850,000 states over 24 levels in a second or two: long enough to stop half-way
CONFIG = ["--set", "max_records=3", "--set", "max_fences=0"]
# cells that would run for a minute each: they are stopped long before
SLOW = 'config = { max_records = 3 }\nexpect = "holds"\n'


def checkpoint_depth(directory) -> int:
    manifest = directory / "manifest.json"
    state = json.loads(manifest.read_text())["state"] if manifest.is_file() else None
    return state["depth"] if state else 0  # a run claims its directory with a manifest of no checkpoint yet


def check_json(*args: str) -> dict:
    r = subprocess.run(["modelcheck", "check", *args, "--json", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


SAME = ("verdict", "invariant", "distinct_states", "generated_states", "depth", "coverage", "goals", "trace", "config")


@pytest.fixture(scope="module")
def uninterrupted() -> dict:
    return check_json(*CONFIG)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_a_signal_stops_at_a_safe_point_and_the_resumed_check_ends_as_an_uninterrupted_one(
    tmp_path, sig, uninterrupted
):
    ck = tmp_path / "ck"
    p = start("check", *CONFIG, "--checkpoint", str(ck), "--checkpoint-every", "0", "-w", "2")
    wait_for(lambda: checkpoint_depth(ck) >= 8, what="a checkpoint at depth 8")
    p.send_signal(sig)
    out, err = (x.decode() for x in p.communicate(timeout=120))
    assert p.returncode == 128 + sig
    assert "Traceback" not in err and out == ""
    stats = re.search(
        rf"^stopped by {signal.Signals(sig).name} after [\d.]+ s, no verdict: ([\d,]+) distinct states, "
        r"([\d,]+) generated, (\d+) levels complete$",
        err,
        re.M,
    )
    assert stats, err
    assert f"checkpoint in {ck}; resume with: modelcheck check --resume {ck}" in err
    assert "stopping: writing a checkpoint (a second signal exits at once, without it)\n" in err
    state = json.loads((ck / "manifest.json").read_text())["state"]
    assert (state["distinct"], state["generated"], state["depth"]) == (
        int(stats[1].replace(",", "")),
        int(stats[2].replace(",", "")),
        int(stats[3]),
    )
    assert 8 <= state["depth"] < uninterrupted["depth"]
    resumed = check_json("--resume", str(ck), "-w", "1")  # another number of workers: the same answer
    assert {k: resumed[k] for k in SAME} == {k: uninterrupted[k] for k in SAME}


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_counts(tmp_path, uninterrupted):
    ck = tmp_path / "ck"
    p = start("check", *CONFIG, "--checkpoint", str(ck), "--checkpoint-every", "0")
    wait_for(lambda: checkpoint_depth(ck) >= 12, what="a checkpoint at depth 12")
    p.kill()
    p.communicate()
    resumed = check_json("--resume", str(ck))
    assert {k: resumed[k] for k in SAME} == {k: uninterrupted[k] for k in SAME}


@pytest.mark.slow
def test_ctrl_c_without_a_checkpoint_says_so_and_exits_130():
    p = start("check", *CONFIG, "--json", "-w", "2")
    wait_for(lambda: len(os.listdir(f"/proc/{p.pid}/task")) >= 4, what="the search's two threads")
    p.send_signal(signal.SIGINT)
    out, err = (x.decode() for x in p.communicate(timeout=120))
    assert p.returncode == 130 and "Traceback" not in err
    doc = json.loads(out)
    assert doc["verdict"] == "stopped" and doc["reason"] == "stopped by SIGINT"
    assert doc["checkpoint"] is None and doc["resume"] is None


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.slow
def test_a_compile_racing_the_check_dies_with_it(tmp_path, sig):
    """The first check of a variant compiles its kernel in a child while the
    interpreted engine runs: however the check ends, the child ends too."""
    p = start("check", env={"MODELCHECK_CACHE": str(tmp_path / "cache"), "MODELCHECK_KERNEL": ""})
    child = wait_for(
        lambda: next(
            (c for c in descendants(p.pid) if b"modelcheck.engine.kernel" in open(f"/proc/{c}/cmdline", "rb").read()),
            None,
        ),
        what="the compile child",
    )
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == (-9 if sig == signal.SIGKILL else 143)
    wait_for(lambda: not alive(child), timeout=10, what="the compile child to end")


def matrix_file(tmp_path, cells: int = 3):
    path = tmp_path / "m.toml"
    path.write_text("".join(f'[[cell]]\nname = "slow {i}"\n{SLOW}\n' for i in range(cells)))
    return path


def workers_running(p: subprocess.Popen, n: int) -> list[int]:
    kids = [c for c in descendants(p.pid) if alive(c)]
    return kids if len(kids) >= n else []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_stopped_matrix_leaves_no_process_and_nothing_in_dev_shm(tmp_path, sig):
    before = shm()
    p = subprocess.Popen(
        ["modelcheck", "matrix", str(matrix_file(tmp_path)), "-j", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    kids = wait_for(lambda: workers_running(p, 2), what="two cells running")
    # Ctrl-C reaches the whole process group; SIGTERM and SIGKILL the coordinator only
    (os.killpg if sig == signal.SIGINT else os.kill)(p.pid, sig)
    out, err = (x.decode() for x in p.communicate(timeout=60))
    for kid in kids:
        wait_for(partial(gone, kid), timeout=10, what=f"cell process {kid} to end")
    assert shm() == before
    if sig != signal.SIGKILL:
        assert p.returncode == 128 + sig
        assert "Traceback" not in err
        assert f"stopped by {signal.Signals(sig).name}: 0 of 3 cells done" in err


@pytest.mark.slow
def test_a_stopped_gate_still_writes_its_junit_with_what_did_not_run_skipped(tmp_path):
    gate = tmp_path / "g.toml"
    gate.write_text(
        '[[entry]]\nname = "fast"\nconfig = { max_records = 1, max_fences = 0 }\nexpect = "holds"\n\n'
        + "".join(f'[[entry]]\nname = "slow {i}"\n{SLOW}\n' for i in range(3))
    )
    junit, log = tmp_path / "gate.xml", tmp_path / "stderr"
    with open(log, "wb") as stderr:
        p = subprocess.Popen(
            ["modelcheck", "gate", str(gate), "-j", "2", "--junit", str(junit)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        wait_for(lambda: "passed: fast" in log.read_text(), what="the first entry to pass")
        kids = wait_for(lambda: workers_running(p, 2), what="two slow entries running")
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    err = log.read_text()
    assert p.returncode == 143 and "Traceback" not in err
    assert "stopped by SIGTERM: 1 of 4 entries done" in err
    cases = {c.get("name"): c for c in ET.parse(junit).getroot()}
    assert cases["fast"].find("failure") is None and cases["fast"].find("skipped") is None
    for i in range(3):
        assert cases[f"slow {i}"].find("skipped").get("message") == "not run: the gate was stopped by SIGTERM"
    for kid in kids:
        wait_for(partial(gone, kid), timeout=10, what="the entry's process to end")
