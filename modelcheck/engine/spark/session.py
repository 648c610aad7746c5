"""Starting Spark for the engine: a SparkContext that is quiet, local-safe
and sized for the machine by default, the one line that names why a job
failed and the setting to change, and a run directory that no stop
leaves behind. pyspark is imported here only when a context is asked
for; environment.py checks first that it can start."""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ...config import ConfigError
from ...lifetime import Stopped, StopRequest
from ..control import Control
from .environment import (
    MEMORY_KEYS,
    REGISTRATION,
    REGISTRATION_SECONDS,
    EngineUnavailable,
    available_memory,
    loopback,
    memory_defaults,
    package_archive,
    probe_master,
    require_spark,
)

LOG4J = Path(__file__).with_name("spark-log4j2.properties")
# what the JVM logs (spark-log4j2.properties sets these loggers to INFO) when it asks a standalone
# master to register the application, and when the master has answered
JVM_GRACE_SECONDS = 5  # for a JVM to end once asked to (its shutdown hooks)
CONNECTING = "Connecting to master "
CONNECTED = "Connected to Spark cluster with app ID "


@contextmanager
def spark_context(
    master: str | None,
    spec_package: str,
    settings: dict[str, str] | None = None,
    scratch: str | None = None,
    note: Any = None,
    stop: StopRequest | None = None,
) -> Iterator[Any]:
    """A SparkContext that is quiet and local-safe by default: no UI, no
    console progress bars, log4j at ERROR, bound to loopback when the
    master is local; `settings` (spark.* keys) override these. On a
    cluster the engine and the spec's package are shipped to the
    executors as a zip (addPyFile). A Spark that does not start, or stops
    (e.g. no master at the URL), raises EngineUnavailable with Spark's
    reason; a `stop` asked while it starts raises Stopped at once. The JVM
    is started once a process: settings of the JVM itself
    (spark.driver.memory, ...) take effect for the first context only."""
    require_spark()
    from pyspark import SparkConf, SparkContext

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        master = "local[*]"
    if master:
        probe_master(master)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    conf = SparkConf().setAppName("modelcheck")
    if master:
        conf.setMaster(master)
    conf.setAll(
        [
            ("spark.ui.enabled", "false"),
            ("spark.ui.showConsoleProgress", "false"),
            ("spark.executorEnv.PYTHONHASHSEED", os.environ["PYTHONHASHSEED"]),
        ]
    )
    if master and loopback(master):  # executors on this machine run this very Python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf.set("spark.driver.bindAddress", "127.0.0.1").set("spark.driver.host", "127.0.0.1")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit its JVM is sized already
        conf.setAll(sorted(memory_defaults(master, available_memory()).items()))
    conf.setAll(sorted((settings or {}).items()))
    conf.set("spark.driver.extraJavaOptions", _java_options(conf.get("spark.driver.extraJavaOptions")))
    if note:
        memory = ", ".join(f"{k}={conf.get(k)}" for k in MEMORY_KEYS if conf.get(k))
        note(f"starting Spark ({master or 'the master spark-submit gives'}; {memory or 'memory: Spark defaults'}) ...")
    _quiet_py4j()
    handler = signal.getsignal(signal.SIGINT)  # SparkContext puts its own, which raises KeyboardInterrupt
    patience = float((settings or {}).get(REGISTRATION, REGISTRATION_SECONDS))
    silent = threading.Event()  # set when the master did not register the application in time
    try:
        with _watch_start(stop, silent, patience if master and master.startswith("spark://") else None):
            sc = SparkContext(conf=conf, gateway=None if SparkContext._gateway else _quiet_gateway(conf))
    except Stopped:
        raise
    except Exception as e:  # the JVM would not start, or refused the master or a setting
        if stop is not None and stop.asked:
            raise stop.stopped() from None
        if silent.is_set():
            raise _no_registration(master, patience) from None
        why = _reason(e)
        if re.search(r"INVALID_DRIVER_MEMORY|Insufficient driver memory", why):
            why += f": raise spark.driver.memory (now {conf.get('spark.driver.memory')}) with --spark-conf"
        raise EngineUnavailable(f"Spark did not start with master {master or 'from spark-submit'}: {why}") from None
    finally:
        if signal.getsignal(signal.SIGINT) is not handler and handler is not None:
            signal.signal(signal.SIGINT, handler)
    if silent.is_set():  # the JVM was killed just as the context came up
        raise _no_registration(master, patience)
    sc.setLogLevel("ERROR")
    if settings and settings.get("spark.checkpoint.dir") and sc.getCheckpointDir() is None:
        sc.setCheckpointDir(settings["spark.checkpoint.dir"])  # Spark < 4 has no such setting
    try:
        with ExitStack() as stack:
            if not str(sc.master).startswith("local"):
                where = scratch or stack.enter_context(scratch_dir())
                sc.addPyFile(package_archive(os.path.join(where, "modelcheck.zip"), ["modelcheck", spec_package]))
            yield sc
    except (Stopped, ConfigError):
        raise
    except Exception as e:
        if not type(e).__module__.startswith(("py4j", "pyspark")):
            raise  # not Spark's: the driver's own code failed, a bug shown whole
        if sc._jsc.sc().isStopped():
            raise EngineUnavailable(
                f"Spark stopped before the check ended (master {sc.master}): {_reason(e)}"
            ) from None
        failure = job_failure(str(e), _log_text(), sc.getConf().get)
        if failure is None:
            raise  # the engine's own code failed in a task: a bug, shown whole
        raise EngineUnavailable(failure) from None
    finally:
        _remove_checkpoints(sc)
        sc.stop()


def _java_options(given: str | None) -> str:
    """The driver JVM's options: modelcheck's log4j configuration, then
    those given (--spark-conf spark.driver.extraJavaOptions), unless these
    name a log4j configuration of their own."""
    ours = f"-Dlog4j2.configurationFile={LOG4J.as_uri()}"
    if not given:
        return ours
    return given if "log4j2.configurationFile" in given else f"{ours} {given}"


def _no_registration(master: str | None, patience: float) -> EngineUnavailable:
    return EngineUnavailable(
        f"no answer from the Spark master at {master}: it accepted the connection but did not register this "
        f"application within {patience:g} s ({REGISTRATION}; raise it with --spark-conf for a master that slow)"
    )


@contextmanager
def _watch_start(stop: StopRequest | None, silent: threading.Event, patience: float | None) -> Iterator[None]:
    """While Spark starts, kill this process's JVM when a stop is asked, or
    (`patience` given: a standalone master) when the master has not
    registered the application `patience` seconds after the JVM asked it
    to (then `silent` is set). A master that accepts connections and never
    answers would hold the start for Spark's fixed three 20 s attempts,
    and a stop must not wait for them. The next context starts a JVM of
    its own."""
    from pyspark import SparkContext

    done = threading.Event()

    def registered_in_time(asked: list[float]) -> bool:
        log = _log_text()
        if CONNECTED in log or CONNECTING not in log:
            return True
        asked[:] = asked or [time.monotonic()]
        return time.monotonic() - asked[0] <= (patience or 0)

    def watch() -> None:
        asked: list[float] = []
        while not done.wait(0.1):
            if patience is not None and not silent.is_set() and not registered_in_time(asked):
                silent.set()
            gateway = SparkContext._gateway
            if (silent.is_set() or (stop is not None and stop.asked)) and gateway is not None:
                SparkContext._gateway = SparkContext._jvm = None
                _end(gateway.proc)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _end(jvm: subprocess.Popen[bytes]) -> None:
    """End a JVM by SIGTERM, so that its shutdown hooks remove the
    directories Spark made in its temp dir (SIGKILL leaves them), and by
    SIGKILL if that takes more than a few seconds."""
    jvm.terminate()
    try:
        jvm.wait(JVM_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        jvm.kill()


@contextmanager
def scratch_dir(where: str | None = None) -> Iterator[str]:
    """A new directory modelcheck-spark-* (in `where`, default the temp
    dir), removed when the block ends, and by a watchdog process if this
    one is killed (SIGKILL included): the watchdog waits for its stdin, a
    pipe from this process, to close without a word, in a session of its
    own so that Ctrl-C does not stop it first, and removes it again a
    little later (a task still running when the check was killed may
    write to it)."""
    path = tempfile.mkdtemp(prefix="modelcheck-spark-", dir=where)
    watchdog: subprocess.Popen[bytes] = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "import shutil, sys, time\nif not sys.stdin.read():\n"
            "    shutil.rmtree(sys.argv[1], True); time.sleep(5); shutil.rmtree(sys.argv[1], True)",
            path,
        ],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        assert watchdog.stdin is not None
        watchdog.stdin.write(b"done")  # removed here: the watchdog need not
        watchdog.stdin.close()
        watchdog.wait()


def _remove_checkpoints(sc: Any) -> None:
    """Delete this context's directory under spark.checkpoint.dir (Spark
    names one per context and leaves it behind)."""
    where = sc.getCheckpointDir()
    if where and not sc._jsc.sc().isStopped():
        path = sc._jvm.org.apache.hadoop.fs.Path(where)
        path.getFileSystem(sc._jsc.hadoopConfiguration()).delete(path, True)


_jvm_log: list[BinaryIO] = []  # the log of this process's Spark JVM, once started: a file with no name


class _NotPy4j(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "py4j" not in Path(record.pathname).parts


def _quiet_py4j() -> None:
    """py4j reports a lost connection to the JVM (which a stop ends) with
    `logging.exception` on the root logger; with no handler there, logging
    gives it one that prints the traceback on stderr, after the stop's
    one line. The root logger gets that handler now, minus py4j's records
    (a process that configured logging keeps its own)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
        handler.addFilter(_NotPy4j())
        root.addHandler(handler)


def _quiet_gateway(conf: Any) -> Any:
    """Start Spark's JVM with its stdout and stderr in a log file, unlinked
    at once (the JVM writes to it by its descriptor, the engine reads it
    through its own), so no stop of any kind leaves it behind: the JVM
    prints start-up warnings that no log setting silences."""
    from pyspark.java_gateway import launch_gateway

    log = tempfile.TemporaryFile(prefix="modelcheck-spark-", suffix=".log")
    _jvm_log[:] = [log]
    return launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})


def _log_text() -> str:
    """What the JVM wrote so far (read at an offset: the JVM's writes move
    the descriptor's offset, which a read must not)."""
    if not _jvm_log:
        return ""
    fd = _jvm_log[0].fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")


def _reason(error: Exception) -> str:
    """One line on why Spark failed: the JVM log's last exception (where
    Spark says it), else the first line of the Python error."""
    said = [line for line in _log_text().splitlines() if re.search(r"\bERROR \S+: |\w(Exception|Error): ", line)]
    text = said[-1] if said else next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    text = re.sub(r"^.*?\bERROR \S+: ", "", text.strip())  # log4j's time, level and logger
    return re.sub(r"^.*?(\w+(Exception|Error)): ", r"\1: ", text)[:300]


def job_failure(error: str, log: str, setting: Any) -> str | None:
    """One line on why a Spark job failed, and the setting to raise, from
    the Py4J error's text and the JVM's log (`setting(key)`: the value in
    effect); None when the engine's own Python code failed in a task (a
    bug: its traceback is what helps)."""

    def now(key: str) -> str:
        return f"{key}={setting(key)}" if setting(key) else f"{key}, unset"

    local = (setting("spark.master") or "").startswith("local")
    text = f"{error}\n{log}"
    jvm_oom = re.search(r"java\.lang\.OutOfMemoryError:? ?([^\n]*)", text)
    if jvm_oom:
        raise_it = (
            now("spark.driver.memory") + " (in local mode the driver's JVM is the executor)"
            if local
            else now("spark.executor.memory")
        )
        return (
            f"Spark's JVM ran out of memory (OutOfMemoryError: {jvm_oom.group(1).strip() or 'heap'}): "
            f"raise {raise_it} with --spark-conf"
        )
    if re.search(r"^\s*MemoryError\b|failed to map segment|Cannot allocate memory|std::bad_alloc", text, re.M):
        if setting("spark.executor.pyspark.memory"):
            return (
                f"a Spark Python worker reached its memory limit ({now('spark.executor.pyspark.memory')}): "
                f"raise it with --spark-conf, or leave it unset"
            )
        return (
            "a Spark Python worker ran out of memory (MemoryError): the machine has too little free memory "
            f"for this check; {'use fewer cores (local[N])' if local else 'raise spark.executor.memoryOverhead'}"
        )
    lost = re.search(r"ExecutorLostFailure \(([^)\n]*)\)|Lost executor \S+ on [^:]*: ([^\n]*)", text)
    if re.search(r"Python worker exited unexpectedly|worker crashed|Connection reset|BrokenPipeError", text):
        more = (
            (
                f"in local mode they share the machine with the driver's JVM: lower {now('spark.driver.memory')} "
                f"or use fewer cores (local[N])"
            )
            if local
            else f"raise {now('spark.executor.memoryOverhead')}"
        )
        return (
            "a Spark Python worker was killed (by a signal: most often the OS's out-of-memory killer, "
            f"see dmesg); give the workers more memory: {more}"
        )
    if lost:
        return (
            f"a Spark executor was lost ({(lost.group(1) or lost.group(2)).strip()}): raise "
            f"{now('spark.executor.memory')} or {now('spark.executor.memoryOverhead')} if it ran out of memory"
        )
    if re.search(r"PythonException|Traceback \(most recent call last\)", error):
        return None
    cause = re.search(r"most recent failure: [^\n]*?\): (?:\S+?(?:Exception|Error): )?([^\n]+)", error)
    return f"a Spark job failed: {(cause.group(1) if cause else _reason(RuntimeError(error))).strip()[:300]}"


class cancel_on_stop:
    """A thread that cancels Spark's jobs once a stop is asked (a signal
    only sets the request: the driver's thread waits in Py4J)."""

    def __init__(self, sc: Any, control: Control):
        self.sc, self.control, self.done = sc, control, threading.Event()

    def _watch(self) -> None:
        while not self.done.wait(0.1):
            if self.control.stop.asked:
                self.sc.cancelAllJobs()
                return

    def __enter__(self) -> None:
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
