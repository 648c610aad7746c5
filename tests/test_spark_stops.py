"""How a Spark check ends when it does not reach a verdict, with real
Spark: a signal (the stop summary, 128 + the signal, no traceback), a
master that is not there, memory it is not given, a Python worker killed;
each a line that says why, and nothing left in the temp directory."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tools import need

from modelcheck.engine.spark.environment import REGISTRATION, memory_defaults
from modelcheck.engine.spark.session import job_failure

need("pyspark", "the spark extra is not installed")

CHECK = [sys.executable, "-c", "from cli import main; main()", "check", "--engine", "spark", "--master", "local[2]"]
ROOT = Path(__file__).resolve().parent.parent


def descendants(pid: int) -> dict[int, str]:
    """The processes under `pid`, with their command lines."""
    parent, cmd = {}, {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent[int(p)] = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd[int(p)] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
    found, todo = {}, [pid]
    while todo:
        here = todo.pop()
        for child in [c for c, pp in parent.items() if pp == here]:
            found[child] = cmd[child]
            todo.append(child)
    return found


def private_tmp(tmp_path: Path) -> dict[str, str]:
    """The environment of a check whose temp dir, its own and its JVM's
    (where Spark makes its spark-* and blockmgr-* directories), is
    tmp_path/tmp."""
    (tmp_path / "tmp").mkdir()
    where = str(tmp_path / "tmp")
    return {**os.environ, "TMPDIR": where, "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={where}"}


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    """A Spark check in a private temp dir, every level on the executors,
    once its Python workers run (a level is under way)."""
    p = subprocess.Popen(
        [*CHECK, "-q", "--spark-conf", "spark.modelcheck.driverStates=0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=private_tmp(tmp_path),
    )
    while p.poll() is None and not any("pyspark.daemon" in c for c in descendants(p.pid).values()):
        time.sleep(0.2)
    time.sleep(3)
    return p


def leftovers(tmp_path: Path) -> list[str]:
    """What is in the private temp dir (modelcheck's and Spark's), once the
    watchdog and the JVM's shutdown hooks had a moment."""
    for _ in range(150):
        found = sorted(f.name for f in (tmp_path / "tmp").iterdir())
        if not found:
            break
        time.sleep(0.2)
    return found


@contextmanager
def silent_master() -> Iterator[str]:
    """A spark:// URL of a server on loopback that accepts connections,
    reads what it is sent, and never answers (a wrong port behind a proxy)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"spark://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.slow
def test_a_signal_stops_a_spark_check_with_the_summary_and_no_leftovers(tmp_path, sig):
    p = start(tmp_path)
    assert p.poll() is None, p.communicate()
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 128 + sig, err
    assert err.startswith(f"stopped by {sig.name} after ") and "distinct states" in err, err
    assert "Traceback" not in err and out == ""
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_killed_spark_check_leaves_nothing_in_the_temp_dir(tmp_path):
    """SIGKILL: the run directory's watchdog removes it; the JVM log never had a name."""
    p = start(tmp_path)
    spark = descendants(p.pid)
    assert p.poll() is None and spark
    p.kill()
    p.communicate()
    assert leftovers(tmp_path) == []
    for _ in range(100):  # the JVM ends when the driver's pipe to it closes, its workers with it
        if not any(os.path.exists(f"/proc/{pid}") for pid in spark if "pyspark.daemon" in spark[pid]):
            break
        time.sleep(0.2)
    else:
        pytest.fail("Spark's Python workers outlived the killed check")


@pytest.mark.slow
def test_a_killed_python_worker_is_named_in_one_line(tmp_path):
    p = start(tmp_path)
    assert p.poll() is None
    while p.poll() is None:  # the workers Spark forked (an idle one's death fails no task: until one does)
        daemons = [pid for pid, cmd in descendants(p.pid).items() if "pyspark.daemon" in cmd]
        for worker in [pid for d in daemons for pid in descendants(d)]:
            os.kill(worker, signal.SIGKILL)
        time.sleep(0.5)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and out == ""
    assert err.startswith(
        "error: a Spark Python worker was killed (by a signal: most often the OS's "
        "out-of-memory killer, see dmesg); give the workers more memory: in local mode"
    ), err
    assert err.count("\n") == 1 and leftovers(tmp_path) == []


@pytest.mark.slow
def test_an_unreachable_master_fails_at_once_in_one_line(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    asked = time.monotonic()
    p = subprocess.run(
        [*CHECK[:-2], "--master", f"spark://127.0.0.1:{port}", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        env=private_tmp(tmp_path),
    )  # Spark itself gives up after about a minute
    assert time.monotonic() - asked < 15, "refused before Spark starts"
    assert p.returncode == 2 and p.stdout == ""
    assert (
        p.stderr == f"error: no Spark master at spark://127.0.0.1:{port}: cannot connect to "
        f"127.0.0.1:{port} (Connection refused)\n"
    )
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("command", ["check", "simulate"])
@pytest.mark.slow
def test_a_master_that_accepts_and_never_answers_fails_in_seconds_in_one_line(tmp_path, command):
    """Spark tries to register the application three times, 20 s each
    (hard-coded), then gives up: 66 s. The JVM is ended once the master has
    not answered for spark.modelcheck.registrationTimeout (5 s), and
    leaves nothing in its temp dir."""
    extra = ["--walks", "1000"] if command == "simulate" else ["--spark-conf", "spark.modelcheck.driverStates=0"]
    with silent_master() as master:
        asked = time.monotonic()
        p = subprocess.run(
            [*CHECK[:3], command, "--engine", "spark", "--master", master, "-q", *extra],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            env=private_tmp(tmp_path),
        )
        took = time.monotonic() - asked
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert p.stderr == (
        f"error: no answer from the Spark master at {master}: it accepted the connection but did not register "
        f"this application within 5 s ({REGISTRATION}; raise it with --spark-conf for a master that slow)\n"
    )
    assert took < 50, took  # the JVM's start (2-20 s, with the load), then 5 s; Spark's own retries take 60 s
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_python_worker_memory_limit_is_named_with_its_setting(tmp_path):
    p = subprocess.run(
        [
            *CHECK,
            "-q",
            "--set",
            "max_records=1",
            "--spark-conf",
            "spark.executor.pyspark.memory=300m",
            "--spark-conf",
            "spark.modelcheck.driverStates=0",
        ],  # every level on the executors
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert (
        p.stderr == "error: a Spark Python worker reached its memory limit (spark.executor.pyspark.memory=300m): "
        "raise it with --spark-conf, or leave it unset\n"
    )


@pytest.mark.slow
def test_too_little_driver_memory_is_named_with_its_setting():
    p = subprocess.run(
        [*CHECK, "-q", "--spark-conf", "spark.driver.memory=100m"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert p.stderr.startswith("error: Spark did not start with master local[2]: ") and p.stderr.endswith(
        ": raise spark.driver.memory (now 100m) with --spark-conf\n"
    ), p.stderr


def test_failures_spark_reports_are_named_with_the_setting_to_raise():
    conf = {"spark.master": "local[2]", "spark.driver.memory": "1g"}.get
    assert (
        job_failure(
            "Job aborted",
            'Exception in thread "Executor task launch worker" java.lang.OutOfMemoryError: Java heap space\n',
            conf,
        )
        == "Spark's JVM ran out of memory (OutOfMemoryError: Java heap space): raise spark.driver.memory=1g "
        "(in local mode the driver's JVM is the executor) with --spark-conf"
    )
    cluster = {"spark.master": "spark://h:7077", "spark.executor.memory": "4g"}.get
    lost = (
        "Job aborted due to stage failure: Task 3 in stage 7.0 failed 4 times, most recent failure: Lost task "
        "3.3 in stage 7.0 (TID 40) (10.0.0.2 executor 1): ExecutorLostFailure (executor 1 exited caused by one "
        "of the running tasks) Reason: Command exited with code 137"
    )
    assert (
        job_failure(lost, "", cluster)
        == "a Spark executor was lost (executor 1 exited caused by one of the running tasks): raise "
        "spark.executor.memory=4g or spark.executor.memoryOverhead, unset if it ran out of memory"
    )
    other = (
        "Job aborted due to stage failure: Task 1 in stage 35.0 failed 1 times, most recent failure: Lost task "
        "1.0 in stage 35.0 (TID 71) (127.0.0.1 executor driver): java.io.IOException: No space left on device"
    )
    assert job_failure(other, "", conf) == "a Spark job failed: No space left on device"
    assert job_failure("PythonException: Traceback (most recent call last):\n  ZeroDivisionError", "", conf) is None


def test_local_spark_gives_the_driver_a_share_of_the_available_memory():
    assert memory_defaults("local[2]", 24 << 30) == {"spark.driver.memory": "6144m"}
    assert memory_defaults("local[*]", 64 << 30) == {"spark.driver.memory": "8192m"}
    assert memory_defaults("local[1]", 2 << 30) == {"spark.driver.memory": "1024m"}
    assert memory_defaults("spark://h:7077", 24 << 30) == {"spark.executor.memoryOverhead": "2g"}


@pytest.mark.parametrize(
    ("command", "sig"), [("check", signal.SIGTERM), ("check", signal.SIGINT), ("simulate", signal.SIGTERM)]
)
@pytest.mark.slow
def test_a_stop_while_spark_waits_on_a_master_that_never_answers_is_at_once(tmp_path, command, sig):
    """A master that accepts connections and never answers held the start
    for Spark's minute of registration retries, and SIGTERM then exited 2."""
    with silent_master() as master:
        extra = ["--walks", "1000"] if command == "simulate" else ["--spark-conf", "spark.modelcheck.driverStates=0"]
        extra += ["--spark-conf", f"{REGISTRATION}=600"]  # the stop, not the registration's timeout, ends it
        p = subprocess.Popen(
            [*CHECK[:3], command, "--engine", "spark", "--master", master, "-q", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=private_tmp(tmp_path),
        )
        try:
            while p.poll() is None and not any("SparkSubmit" in c for c in descendants(p.pid).values()):
                time.sleep(0.2)
            time.sleep(5)  # the JVM registers with the master
            asked = time.monotonic()
            p.send_signal(sig)
            out, err = p.communicate(timeout=40)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert (p.returncode, out) == (128 + sig, ""), err
    assert time.monotonic() - asked < 15 and "Traceback" not in err
    said = {"check": "stopped by ", "simulate": "simulate stopped by "}[command]
    assert err.startswith(f"{said}{sig.name} after "), err
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_cluster_master_without_a_shared_state_dir_is_refused_before_spark_starts():
    """It was said at once, then the check waited for Spark's start to
    end: a minute of retries on a master that never answers."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the address a route would use
            outward = probe.getsockname()[0]
    except OSError:
        pytest.skip("no route off this machine")
    with socket.socket() as silent:
        silent.bind(("0.0.0.0", 0))
        silent.listen(16)
        master = f"spark://{outward}:{silent.getsockname()[1]}"
        asked = time.monotonic()
        p = subprocess.run(
            [*CHECK[:-2], "--master", master, "-q"], capture_output=True, text=True, cwd=ROOT, timeout=50
        )
    assert time.monotonic() - asked < 15 and (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (
        f"error: a Spark check keeps its shards' state in files every executor must see: on master {master}, "
        "give a directory on storage they share with --spark-conf spark.modelcheck.stateDir=DIR\n"
    )
