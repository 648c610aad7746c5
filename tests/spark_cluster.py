"""A real standalone Spark cluster on loopback, for tests and benchmarks of
the cluster path on one machine (not part of the library: a check never
starts a cluster)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from modelcheck.engine.spark.environment import require_spark


@contextmanager
def standalone_cluster(workdir: Path, cores: int = 2, memory: str = "2g", timeout: float = 120) -> Iterator[str]:
    """A real standalone Spark cluster on loopback, a master and one worker
    started from the pyspark installation's spark-class (what `--master
    spark://...` meets on a cluster); yields the master URL, stops both.
    For tests and benchmarks of the cluster path on one machine."""
    require_spark()
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(workdir)}
    port, ui, worker_ui = _free_ports(3)
    url = f"spark://127.0.0.1:{port}"
    spark_class = [str(home / "bin" / "spark-class")]
    commands = {
        "master": [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        "worker": [
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--webui-port",
            str(worker_ui),
            "--work-dir",
            str(workdir / "work"),
            url,
        ],
    }
    procs = []
    for name, args in commands.items():
        with open(workdir / f"{name}.log", "w") as log:
            procs.append(subprocess.Popen(spark_class + args, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        deadline = time.monotonic() + timeout
        while not _worker_alive(ui):  # the master's JSON status lists the worker once it registered
            if time.monotonic() > deadline:
                raise RuntimeError(f"no standalone worker registered in {timeout:.0f} s (logs in {workdir})")
            time.sleep(0.5)
        yield url
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)


def _free_ports(n: int) -> list[int]:
    """n distinct ports free on loopback (held open together, so not the same one twice)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _worker_alive(ui_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
            return any(w["state"] == "ALIVE" for w in json.load(r)["workers"])
    except (OSError, ValueError, KeyError):  # not up yet, or not yet serving its JSON status
        return False
