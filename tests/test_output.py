"""Every file a command writes (check --trace-out, matrix --out, gate --junit
and --trace-dir, spark-env -o, trace html/export -o, graph -o): replaced
atomically when it is a regular file, written to when it is a device, a
symlink followed, and a path that cannot be written refused before any work,
in one line with exit 2."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck import output
from modelcheck.config import ConfigError

ROOT = Path(__file__).parent.parent
TINY = ["--set", "max_records=1", "--set", "max_fences=0"]
LEGACY = ["check", "--engine", "bfs", "-q", "--set", "variant=legacy", *TINY]  # NoAckedLoss, 1,939 states
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.json"
    assert invoke(*LEGACY, "--trace-out", str(path)).exit_code == 1
    return path


def commands(tmp: Path, trace: Path, out: str) -> dict[str, list[str]]:
    """Each command that writes a file, writing `out` (relative to tmp)."""
    (tmp / "m.toml").write_text(
        '[[cell]]\nname = "legacy"\nconfig = { variant = "legacy", max_records = 1, max_fences = 0 }\n'
    )
    (tmp / "g.toml").write_text(
        '[[entry]]\nname = "legacy"\n'
        'config = { variant = "legacy", max_records = 1, max_fences = 0 }\n'
        'expect = "holds"\n'
    )
    o = str(tmp / out)
    return {
        "check --trace-out": [*LEGACY, "--trace-out", o],
        "matrix --out": ["matrix", str(tmp / "m.toml"), "-j", "1", "--out", o],
        "gate --junit": ["gate", str(tmp / "g.toml"), "-j", "1", "--junit", o],
        "spark-env --out": ["spark-env", "--out", o],
        "trace html -o": ["trace", "html", str(trace), "-o", o],
        "trace export -o": ["trace", "export", str(trace), "-o", o],
        "graph -o": ["graph", *TINY, "--set", "brokers=2", "--set", "variant=legacy", "-o", o],
    }


COMMANDS = [
    "check --trace-out",
    "matrix --out",
    "gate --junit",
    "spark-env --out",
    "trace html -o",
    "trace export -o",
    "graph -o",
]


@ROOT_ONLY
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.slow
def test_a_device_is_written_to_never_replaced(tmp_path, trace, command):
    """`--trace-out /dev/null` as root replaced the device by a regular file."""
    os.mknod(tmp_path / "null.dot", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    r = invoke(*commands(tmp_path, trace, "null.dot")[command])
    assert r.exit_code in (0, 1) and "Traceback" not in r.output, r.output
    st = (tmp_path / "null.dot").lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


@ROOT_ONLY
@pytest.mark.parametrize("command", ["spark-env --out", "trace export -o", "graph -o"])
def test_a_full_device_is_one_line_exit_2_and_stays_a_device(tmp_path, trace, command):
    os.mknod(tmp_path / "full.dot", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    r = invoke(*commands(tmp_path, trace, "full.dot")[command])
    assert r.exit_code == 2, r.output
    option = command.split()[-1]
    assert r.stderr == f"error: {option} {tmp_path / 'full.dot'}: cannot write: No space left on device\n"
    st = (tmp_path / "full.dot").lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 7)


AFTER_A_RUN = {  # the outputs written once a run is over, and what its result printed says
    "check --trace-out": ([*LEGACY, "--trace-out", "OUT"], "violated: NoAckedLoss"),
    "simulate --trace-out": (
        ["simulate", "-q", "--set", "max_unclean_shutdowns=2", "--walks", "300", "--depth", "40", "--seed", "3",
         "--pick", "action", "--trace-out", "OUT"],
        "violated: NoAckedLoss in walk",
    ),
    "matrix --out": (["matrix", "TMP/m.toml", "-j", "1", "--out", "OUT"], "violated: NoAckedLoss"),
    "gate --junit": (["gate", "TMP/g.toml", "-j", "1", "--junit", "OUT"], "0 passed, 1 failed, 0 skipped"),
    "gate --trace-dir": (["gate", "TMP/g.toml", "-j", "1", "--trace-dir", "OUT"], "0 passed, 1 failed, 0 skipped"),
}  # fmt: skip


@pytest.mark.parametrize("command", AFTER_A_RUN)
@pytest.mark.parametrize("as_json", [False, True])
def test_an_output_that_fails_after_the_run_comes_after_the_result_exit_4(
    tmp_path, trace, monkeypatch, command, as_json
):
    """`--trace-out /dev/full` printed the write error and never the verdict:
    a run of hours lost its answer to a full disk."""
    commands(tmp_path, trace, "unused")  # the matrix and gate files
    args, result = AFTER_A_RUN[command]
    out = tmp_path / ("traces" if command.endswith("--trace-dir") else "out")
    args = [a.replace("OUT", str(out)).replace("TMP", str(tmp_path)) for a in args]
    if as_json:
        if command.startswith("matrix"):
            result = '"invariant": "NoAckedLoss"'
        elif command.startswith("gate"):
            result = '"status": "failed"'
        else:
            result = '"verdict": "violated"'

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(output.os, "fsync", no_space)  # every file written fails as on a full disk
    r = invoke(*args, *(["--json"] if as_json else []))
    shown = out / "legacy.json" if command.endswith("--trace-dir") else out
    failure = f"error: {command.split()[-1]} {shown}: cannot write: No space left on device\n"
    assert (r.exit_code, r.stderr.endswith(failure), result in r.stdout) == (4, True, True), r.output
    assert r.output.endswith(failure) and "Traceback" not in r.output  # the result, then the failure
    assert not os.path.exists(shown) and not [p for p in tmp_path.rglob(".modelcheck-*")]


@ROOT_ONLY
@pytest.mark.parametrize("command", [*COMMANDS, "gate --trace-dir"])
@pytest.mark.parametrize("target", ["/proc/x.dot", "/sys/x.dot"])
def test_a_file_system_that_takes_no_file_is_refused_before_the_run(tmp_path, trace, monkeypatch, command, target):
    """As root, the permission bits let any directory be written, and the
    run started; its output then failed."""
    for work in ("modelcheck.runs.check.run_engine", "modelcheck.runs.matrix.run", "modelcheck.runs.gate.run_gate"):
        monkeypatch.setattr(work, lambda *a, **k: pytest.fail("the run started"))
    args = commands(tmp_path, trace, target)[command.replace("--trace-dir", "--junit")]
    r = invoke(*args[:-2], command.split()[-1], target)
    why = {"/proc": "No such file or directory", "/sys": "Permission denied"}[os.path.dirname(target)]
    assert (r.exit_code, r.stdout) == (2, ""), r.output
    option = command.split()[-1]
    assert r.stderr == f"error: {option} {target}: cannot write in directory '{os.path.dirname(target)}' ({why})\n"


def test_stdout_full_is_one_line_exit_2(trace):
    """`trace export` writes to stdout (-o -, the default) directly."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    p = subprocess.run(
        f"{sys.executable} -c 'import cli; cli.main()' trace export {trace} > /dev/full",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 2 and p.stderr == "error: -o -: cannot write: No space left on device\n"


def test_a_symlink_stays_a_link_and_the_file_it_names_is_replaced_keeping_its_mode(tmp_path, trace):
    real, link = tmp_path / "real.html", tmp_path / "link.html"
    real.write_text("old")
    real.chmod(0o640)
    link.symlink_to("real.html")
    assert invoke("trace", "html", str(trace), "-o", str(link)).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == "real.html"
    assert "<html" in real.read_text() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "real.html"]


def test_a_dangling_symlink_creates_the_file_it_names(tmp_path, trace):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "t.itf.json"
    link.symlink_to("sub/target.json")
    assert invoke("trace", "export", str(trace), "-o", str(link)).exit_code == 0
    assert link.is_symlink() and (tmp_path / "sub" / "target.json").read_text().startswith("{")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["missing directory", "a directory", "read-only file"])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, trace, monkeypatch, command, where):
    """Found after the whole run, with a traceback and no verdict, before."""

    def ran(*args, **kwargs):
        raise AssertionError("the run started")

    for work in (
        "modelcheck.runs.check.run_engine",
        "modelcheck.runs.graph.state_graph",
        "modelcheck.runs.trace.render_html",
        "modelcheck.runs.matrix.run",
        "modelcheck.runs.gate.run_gate",
        "modelcheck.engine.spark.environment.package_archive",
    ):
        monkeypatch.setattr(work, ran)
    out = {"missing directory": "no/x.dot", "a directory": "d.dot", "read-only file": "ro.dot"}[where]
    args = commands(tmp_path, trace, out)[command]
    (tmp_path / "d.dot").mkdir()
    (tmp_path / "ro.dot").write_text("keep")
    (tmp_path / "ro.dot").chmod(0o444)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = invoke(*args)
    assert r.exit_code == 2 and r.stdout == "", r.output
    option, shown = command.split()[-1], tmp_path / out
    why = {
        "missing directory": f"no such directory '{tmp_path / 'no'}'",
        "a directory": "is a directory",
        "read-only file": "is read-only",
    }[where]
    assert r.stderr == f"error: {option} {shown}: {why}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "ro.dot").read_text() == "keep"


def test_stdout_is_refused_where_a_command_prints_its_own_output(tmp_path):
    r = invoke(*LEGACY, "--trace-out", "-")
    assert r.exit_code == 2 and r.stderr.startswith("error: --trace-out -: this output cannot go to stdout")


def test_a_failed_write_keeps_the_existing_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text("good")

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(output.os, "fsync", no_space)
    with pytest.raises(ConfigError, match=r"^--trace-out .*t.json: cannot write: No space left on device$"):
        output.write_text(str(path), "--trace-out", "new and longer")
    r = invoke(*LEGACY, "--trace-out", str(path))
    assert r.stderr == f"error: --trace-out {path}: cannot write: No space left on device\n"
    assert path.read_text() == "good" and [p.name for p in tmp_path.iterdir()] == ["t.json"]
    assert r.exit_code == 4 and "violated: NoAckedLoss" in r.stdout


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_mid_write_leaves_no_temporary(tmp_path, signum):
    """The process still ends by the signal, the file as it was, and
    nothing else in the directory: the .modelcheck-*.tmp was left."""
    target = tmp_path / "out.json"
    target.write_text("old\n")
    script = (
        "import os, signal, sys\n"
        # as a terminal's process has it, even when the suite runs under nohup
        f"signal.signal({int(signum)}, signal.SIG_DFL)\n"
        "from modelcheck.output import writing\n"
        "with writing(sys.argv[1], '--out') as f:\n"
        "    f.write('half a file')\n"
        "    f.flush()\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
        "    sum(range(10**6))\n"
        "print('not ended')\n"
    )
    p = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, cwd=ROOT)
    assert (p.returncode, p.stdout) == (-signum, "")
    assert os.listdir(tmp_path) == ["out.json"] and target.read_text() == "old\n"


def test_modes_new_files_follow_the_umask_replaced_ones_keep_theirs(tmp_path):
    old = os.umask(0o027)
    try:
        output.write_text(str(tmp_path / "new"), "-o", "x")
    finally:
        os.umask(old)
    kept = tmp_path / "kept"
    kept.write_text("x")
    kept.chmod(0o600)
    output.write_text(str(kept), "-o", "y")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o640
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text() == "y"


# ---- as an ordinary user: the permission bits apply ----------------------------------------

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def python_for_nobody() -> str | None:
    """An interpreter user 65534 can run with this one's packages (a venv's
    may live under /root, mode 0700)."""
    for exe in dict.fromkeys(
        [
            sys.executable,
            getattr(sys, "_base_executable", ""),
            shutil.which("python3") or "",
            f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}",
        ]
    ):
        probe = f"import sys; assert sys.version_info[:2] == {tuple(sys.version_info[:2])}"
        if exe and subprocess.run([*NOBODY, exe, "-c", probe], capture_output=True).returncode == 0:
            return exe
    return None


def as_nobody(exe: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    """modelcheck ARGS run by user 65534 (interpreted: root's kernel cache is not its)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MODELCHECK_KERNEL": "interpreted",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()]),
    }
    return subprocess.run(
        [*NOBODY, exe, "-c", "import cli; cli.main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=60,
    )


@pytest.fixture
def shared_dir():
    """A directory every user may read but only root may write."""
    path = Path(tempfile.mkdtemp(prefix="modelcheck-nobody-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["check", "-q", "--set", "variant=legacy", "--trace-out", "DIR/t.json"],
            "error: --trace-out DIR/t.json: cannot write in directory 'DIR'",
        ),
        (
            ["check", "-q", "--set", "variant=legacy", "--trace-out", "DIR/root.json"],
            "error: --trace-out DIR/root.json: cannot write in directory 'DIR'",
        ),
        (
            ["gate", "DIR/g.toml", "--trace-dir", "DIR/traces"],
            "error: --trace-dir DIR/traces: cannot write in directory 'DIR'",
        ),
        (
            ["gate", "DIR/g.toml", "--update-baseline"],
            "error: --update-baseline DIR/g.toml: cannot write in directory 'DIR'",
        ),
    ],
)
def test_permission_denied_as_an_ordinary_user_is_one_line_before_the_run(shared_dir, args, message):
    exe = python_for_nobody()
    if exe is None:
        pytest.skip("no interpreter user 65534 can run")
    (shared_dir / "root.json").write_text("keep")
    (shared_dir / "g.toml").write_text(
        '[[entry]]\nname = "legacy"\nconfig = { variant = "legacy" }\nexpect = "holds"\n'
    )
    before = sorted(p.name for p in shared_dir.iterdir())
    p = as_nobody(exe, shared_dir, *[a.replace("DIR", str(shared_dir)) for a in args])
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr == message.replace("DIR", str(shared_dir)) + "\n"
    assert sorted(p.name for p in shared_dir.iterdir()) == before


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_another_users_file_in_a_sticky_directory_is_refused_before_the_run():
    """Writable by its mode, so it passed the check; the rename over it
    after the run failed (only its owner may replace it in /tmp)."""
    exe = python_for_nobody()
    if exe is None:
        pytest.skip("no interpreter user 65534 can run")
    sticky = Path(tempfile.mkdtemp(prefix="modelcheck-sticky-"))
    try:
        sticky.chmod(0o1777)
        (sticky / "root.json").write_text("keep")
        (sticky / "root.json").chmod(0o666)
        p = as_nobody(exe, sticky, *LEGACY, "--trace-out", str(sticky / "root.json"))
        assert (p.returncode, p.stdout) == (2, ""), p.stderr
        assert p.stderr == (
            f"error: --trace-out {sticky / 'root.json'}: another user's file in a sticky directory "
            f"('{sticky}'): only its owner may replace it\n"
        )
        assert (
            sorted(x.name for x in sticky.iterdir()) == ["root.json"] and (sticky / "root.json").read_text() == "keep"
        )
    finally:
        shutil.rmtree(sticky)
