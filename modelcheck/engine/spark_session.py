"""Starting Spark for the engine: checks that say in one line what is
missing (pyspark, Java 17+, a master at the URL), a SparkContext that is
quiet, local-safe and sized for the machine by default, the one line that
names why a job failed and the setting to change, a run directory that no
stop leaves behind, and the zip that carries modelcheck and a spec to
executors. pyspark is imported here only when a context is asked for."""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from importlib import util as importlib_util
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar

from ..config import ConfigError
from ..lifetime import Stopped, StopRequest
from ..memory import physical_memory

MIN_JAVA = 17
LOG4J = Path(__file__).with_name("spark-log4j2.properties")
MEMORY_KEYS = (
    "spark.driver.memory",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.pyspark.memory",
)
PROBE_SECONDS = 5  # to connect to a spark:// master before Spark is started
STATE_DIR = "spark.modelcheck.stateDir"  # the run's files on a cluster: storage every executor sees
DRIVER_STATES = "spark.modelcheck.driverStates"  # the largest level the driver runs while executors start
REGISTRATION = "spark.modelcheck.registrationTimeout"  # seconds a standalone master may take to register the app
REGISTRATION_SECONDS = 5.0  # it takes about 1 s on loopback with the machine's 2 cores loaded 5x over
# what the JVM logs (spark-log4j2.properties sets these loggers to INFO) when it asks a standalone
# master to register the application, and when the master has answered
JVM_GRACE_SECONDS = 5  # for a JVM to end once asked to (its shutdown hooks)
CONNECTING = "Connecting to master "
CONNECTED = "Connected to Spark cluster with app ID "


def _seconds(text: str) -> bool:
    try:
        return 0 < float(text) < math.inf
    except ValueError:
        return False


# modelcheck's own --spark-conf keys: whether a value is one, and what is expected
OWN_SETTINGS: dict[str, tuple[Callable[[str], bool], str]] = {
    STATE_DIR: (bool, "a directory"),
    DRIVER_STATES: (lambda v: v.isascii() and v.isdigit(), "a whole number of states, 0 or more"),
    REGISTRATION: (_seconds, "a number of seconds above 0"),
}


def check_own_settings(settings: dict[str, str]) -> None:
    """Refuse (one line) a spark.modelcheck.* key that is not one of
    modelcheck's, or a value it does not take: caught before Spark starts."""
    for key, value in settings.items():
        if not key.startswith("spark.modelcheck."):
            continue
        if key not in OWN_SETTINGS:
            known = ", ".join(OWN_SETTINGS)
            raise ConfigError(f"--spark-conf {key}: not a setting of modelcheck's (those are {known})")
        valid, expected = OWN_SETTINGS[key]
        if not valid(value):
            raise ConfigError(f"--spark-conf {key}={value!r}: expected {expected}")


class EngineUnavailable(ConfigError):
    """The Spark engine cannot start here (no pyspark, no Java 17+)."""


def require_spark() -> None:
    """Raise EngineUnavailable (one line: what is missing, how to get it)
    unless pyspark can be imported and Java 17+ runs; checked before Spark
    starts, so its JVM errors never reach the user."""
    if importlib_util.find_spec("pyspark") is None:
        raise EngineUnavailable(
            "--engine spark needs pyspark, which is not installed: "
            "pip install '.[spark]' in a modelcheck checkout, or pip install pyspark"
        )
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.isfile(java):
        raise EngineUnavailable(
            f"--engine spark needs Java {MIN_JAVA} or newer, and no java was found "
            f"({'JAVA_HOME=' + home if home else 'none on PATH'}); install a JDK {MIN_JAVA}+"
        )
    shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=120)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown.stderr + shown.stdout)
    major = 0 if not found else int(found.group(2) or 0) if found.group(1) == "1" else int(found.group(1))
    if major < MIN_JAVA:
        raise EngineUnavailable(
            f"--engine spark needs Java {MIN_JAVA} or newer; {java} is "
            f"{'Java ' + str(major) if major else 'not a Java it can read'}: set JAVA_HOME to a JDK {MIN_JAVA}+"
        )


def loopback(master: str) -> bool:
    """Executors on this machine: a local master, or a standalone one on loopback."""
    host = re.sub(r"^spark://([^:/]+).*", r"\1", master)
    return master.startswith("local") or host in ("127.0.0.1", "localhost")


def available_memory() -> int:
    """MemAvailable (what can be had without swapping), within the cgroup's limit."""
    try:
        found = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    except OSError:
        found = None
    free = int(found.group(1)) * 1024 if found else physical_memory() // 2
    return min(free, physical_memory())


def memory_defaults(master: str | None, available: int) -> dict[str, str]:
    """Memory settings sized for the machine. In local mode the driver's
    JVM is the executor: it gets a quarter of the available RAM (1-8 GiB),
    and the rest is left to the Python workers (the kernel, ~100 MB each,
    and a shard's batches) and the page cache that holds the shards'
    files. On a cluster each executor's Python workers live outside its
    JVM heap, so its memory overhead is raised from Spark's 384 MiB."""
    if master is None or master.startswith("local"):
        mib = min(8 << 10, max(1 << 10, available // 4 >> 20))
        return {"spark.driver.memory": f"{mib // 256 * 256}m"}
    return {"spark.executor.memoryOverhead": "2g"}


def probe_master(master: str) -> None:
    """Fail in seconds, not after Spark's minute of retries, when no
    spark:// master (any of an HA list) accepts a connection."""
    if not master.startswith("spark://"):
        return
    tried = []
    for where in master[len("spark://") :].split(","):
        host, _, port = where.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=PROBE_SECONDS).close()
            return
        except (OSError, ValueError) as e:
            tried.append(f"{where} ({getattr(e, 'strerror', None) or e})")
    raise EngineUnavailable(f"no Spark master at {master}: cannot connect to {', '.join(tried)}")


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


Archive = TypeVar("Archive", str, IO[bytes])


def _found(name: str) -> ModuleSpec:
    spec = importlib_util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"{name} is not importable here: nothing to send to executors")
    return spec


def package_archive(path: Archive, packages: list[str], modules: tuple[str, ...] = ()) -> Archive:
    """Zip the installed packages (and top-level modules) for executors'
    sys.path (spark-submit --py-files, SparkContext.addPyFile) into a path
    or an open file (spark-env's output); returns path."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in dict.fromkeys(packages):
            root = Path(next(iter(_found(name).submodule_search_locations or ())))
            for f in sorted(root.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts:
                    archive.write(f, (Path(name) / f.relative_to(root)).as_posix())
        for name in modules:
            origin = Path(_found(name).origin or name)
            archive.write(origin, origin.name)
    return path
