"""Whether the Spark engine can run here, said in one line before Spark
starts: pyspark, Java 17+, a master at the URL, modelcheck's own
--spark-conf keys; memory defaults sized for the machine; and the zip
that carries modelcheck and a spec to executors."""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import subprocess
import zipfile
from collections.abc import Callable
from importlib import util as importlib_util
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import IO, TypeVar

from ...config import ConfigError
from ...memory import physical_memory

MIN_JAVA = 17
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


def parallelism(master: str | None, settings: dict[str, str]) -> int | None:
    """Spark's default parallelism where it is known before Spark starts."""
    if "spark.default.parallelism" in settings:
        return int(settings["spark.default.parallelism"])
    cores = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master or "")
    if not cores:
        return None
    if cores.group(1) == "*":
        return os.cpu_count() or 1
    return int(cores.group(1) or 1)
