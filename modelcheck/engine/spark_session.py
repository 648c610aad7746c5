"""Starting Spark for the engine: checks that say in one line what is
missing (pyspark, Java 17+), a SparkContext that is quiet and local-safe by
default, and the zip that carries modelcheck and a spec to executors.
pyspark is imported here only when a context is asked for."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from importlib import util as importlib_util
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ..config import ConfigError

MIN_JAVA = 17
LOG4J = Path(__file__).with_name("spark-log4j2.properties")


class EngineUnavailable(ConfigError):
    """The Spark engine cannot start here (no pyspark, no Java 17+)."""


def require_spark() -> None:
    """Raise EngineUnavailable (one line: what is missing, how to get it)
    unless pyspark can be imported and Java 17+ runs; checked before Spark
    starts, so its JVM errors never reach the user."""
    if importlib_util.find_spec("pyspark") is None:
        raise EngineUnavailable("--engine spark needs pyspark, which is not installed: "
                                "pip install '.[spark]' in a modelcheck checkout, or pip install pyspark")
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.isfile(java):
        raise EngineUnavailable(f"--engine spark needs Java {MIN_JAVA} or newer, and no java was found "
                                f"({'JAVA_HOME=' + home if home else 'none on PATH'}); install a JDK {MIN_JAVA}+")
    shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=120)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown.stderr + shown.stdout)
    major = 0 if not found else int(found.group(2) or 0) if found.group(1) == "1" else int(found.group(1))
    if major < MIN_JAVA:
        raise EngineUnavailable(f"--engine spark needs Java {MIN_JAVA} or newer; {java} is "
                                f"{'Java ' + str(major) if major else 'not a Java it can read'}: set JAVA_HOME to a JDK {MIN_JAVA}+")


def _loopback(master: str) -> bool:
    host = re.sub(r"^spark://([^:/]+).*", r"\1", master)
    return master.startswith("local") or host in ("127.0.0.1", "localhost")


@contextmanager
def spark_context(master: str | None, spec_package: str, settings: dict[str, str] | None = None) -> Iterator[Any]:
    """A SparkContext that is quiet and local-safe by default: no UI, no
    console progress bars, log4j at ERROR, bound to loopback when the
    master is local; `settings` (spark.* keys) override these. On a
    cluster the engine and the spec's package are shipped to the
    executors as a zip (addPyFile). A Spark that does not start, or stops
    (e.g. no master at the URL), raises EngineUnavailable with Spark's
    reason. The JVM is started once a process: settings of the JVM itself
    (spark.driver.memory, ...) take effect for the first context only."""
    require_spark()
    from pyspark import SparkConf, SparkContext

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:     # not under spark-submit
        master = "local[*]"
    os.environ.setdefault("PYTHONHASHSEED", "0")
    conf = SparkConf().setAppName("modelcheck")
    if master:
        conf.setMaster(master)
    conf.setAll([("spark.ui.enabled", "false"), ("spark.ui.showConsoleProgress", "false"),
                 # each level's shuffle files are deleted when the driver JVM collects the
                 # level's RDDs; its default is every 30 minutes, while a level takes seconds
                 ("spark.cleaner.periodicGC.interval", "1min"),
                 ("spark.cleaner.referenceTracking.cleanCheckpoints", "true"),
                 ("spark.executorEnv.PYTHONHASHSEED", os.environ["PYTHONHASHSEED"]),
                 ("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")])
    if master and _loopback(master):       # executors on this machine run this very Python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf.set("spark.driver.bindAddress", "127.0.0.1").set("spark.driver.host", "127.0.0.1")
    conf.setAll(sorted((settings or {}).items()))
    try:
        sc = SparkContext(conf=conf, gateway=None if SparkContext._gateway else _quiet_gateway(conf))
    except Exception as e:          # the JVM would not start, or refused the master or a setting
        raise EngineUnavailable(f"Spark did not start with master {master or 'from spark-submit'}: "
                                f"{_reason(e)}") from None
    sc.setLogLevel("ERROR")
    if settings and settings.get("spark.checkpoint.dir") and sc.getCheckpointDir() is None:
        sc.setCheckpointDir(settings["spark.checkpoint.dir"])       # Spark < 4 has no such setting
    shipped = None
    try:
        if not sc.master.startswith("local"):
            shipped = tempfile.mkdtemp(prefix="modelcheck-spark-")
            sc.addPyFile(package_archive(os.path.join(shipped, "modelcheck.zip"), ["modelcheck", spec_package]))
        yield sc
    except Exception as e:
        if "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in str(e):
            raise EngineUnavailable("an executor was lost, and with it blocks of the check that lived only on it "
                                    "(local checkpoints): rerun, or set --spark-conf spark.checkpoint.dir=DIR "
                                    "on reliable storage so that lost blocks are recomputed") from None
        if not sc._jsc.sc().isStopped():
            raise               # a job failed while Spark ran: a real error, shown whole
        raise EngineUnavailable(f"Spark stopped before the check ended (master {sc.master}): {_reason(e)}") from None
    finally:
        _remove_checkpoints(sc)
        sc.stop()
        if shipped:
            shutil.rmtree(shipped, ignore_errors=True)


def _remove_checkpoints(sc: Any) -> None:
    """Delete this context's directory under spark.checkpoint.dir (Spark
    names one per context and leaves it behind)."""
    where = sc.getCheckpointDir()
    if where and not sc._jsc.sc().isStopped():
        path = sc._jvm.org.apache.hadoop.fs.Path(where)
        path.getFileSystem(sc._jsc.hadoopConfiguration()).delete(path, True)


_jvm_log: list[str] = []      # the log file of this process's Spark JVM, once started


def _quiet_gateway(conf: Any) -> Any:
    """Start Spark's JVM with its stdout and stderr in a log file (removed
    at exit): the JVM prints start-up warnings that no log setting silences."""
    from pyspark.java_gateway import launch_gateway

    log = tempfile.NamedTemporaryFile(prefix="modelcheck-spark-", suffix=".log", delete=False)
    atexit.register(os.unlink, log.name)
    _jvm_log[:] = [log.name]
    return launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})


def _reason(error: Exception) -> str:
    """One line on why Spark failed: the JVM log's last exception (where
    Spark says it), else the first line of the Python error."""
    lines = Path(_jvm_log[0]).read_text(errors="replace").splitlines() if _jvm_log else []
    said = [line for line in lines if re.search(r"\bERROR \S+: |\w(Exception|Error): ", line)]
    text = said[-1] if said else next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    text = re.sub(r"^.*?\bERROR \S+: ", "", text.strip())            # log4j's time, level and logger
    return re.sub(r"^.*?(\w+(Exception|Error)): ", r"\1: ", text)[:300]


def package_archive(path: str | BinaryIO, packages: list[str], modules: tuple[str, ...] = ()) -> str | BinaryIO:
    """Zip the installed packages (and top-level modules) for executors'
    sys.path (spark-submit --py-files, SparkContext.addPyFile) into a path
    or an open file (spark-env's output); returns path."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in dict.fromkeys(packages):
            root = Path(next(iter(importlib_util.find_spec(name).submodule_search_locations)))
            for f in sorted(root.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts:
                    archive.write(f, (Path(name) / f.relative_to(root)).as_posix())
        for name in modules:
            origin = Path(importlib_util.find_spec(name).origin)
            archive.write(origin, origin.name)
    return path
