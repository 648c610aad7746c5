"""What a check is asked besides its spec, in one frozen value: the
search (engine, symmetry, fingerprint width), the local engines' part
(threads, memory, checkpoints) and Spark's. The command line, the matrix's
cells and the gate's entries all build one; `validate` holds every rule
between options, and `identity` is what a checkpoint must match to be
resumed (and what, with the spec, picks the kernel)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError
from ..spec import Spec

ENGINES = ("fast", "bfs", "spark")
# master URLs spark-submit accepts (local[N] needs N >= 1; local[N,F] retries failed tasks)
SPARK_MASTER = re.compile(r"local(\[([1-9]\d*|\*)(,[1-9]\d*)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


@dataclass(frozen=True)
class LocalOptions:
    """The engines on this machine (fast, bfs)."""

    workers: int = 1  # threads sharing the state space (fast)
    max_memory: int | None = None  # bytes of anonymous memory the process may hold
    spill_dir: str | None = None  # where levels spill under memory pressure (default: the temp dir)
    checkpoint_dir: str | None = None  # where checkpoints go (with resume: where the run continues from)
    checkpoint_every: float = 180.0  # seconds between checkpoints
    resume: bool = False


@dataclass(frozen=True)
class SparkOptions:
    """The Spark engine's cluster."""

    master: str | None = None
    partitions: int | None = None
    settings: tuple[tuple[str, str], ...] = ()  # --spark-conf KEY=VALUE, in the order given


@dataclass(frozen=True)
class CheckOptions:
    engine: str = "fast"
    symmetry: bool = False  # explore one state of each class under renaming the processes
    fingerprint_bits: int = 64  # where a packed state is too large to store whole
    local: LocalOptions = field(default_factory=LocalOptions)
    spark: SparkOptions = field(default_factory=SparkOptions)

    @classmethod
    def of(
        cls,
        engine: str = "fast",
        *,
        symmetry: bool = False,
        fingerprint_bits: int = 64,
        workers: int = 1,
        max_memory: int | None = None,
        spill_dir: str | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_every: float = 180.0,
        resume: bool = False,
        master: str | None = None,
        partitions: int | None = None,
        spark_settings: dict[str, str] | None = None,
    ) -> CheckOptions:
        """The options from their flat names (the command line's)."""
        return cls(
            engine,
            symmetry,
            fingerprint_bits,
            LocalOptions(workers, max_memory, spill_dir, checkpoint_dir, checkpoint_every, resume),
            SparkOptions(master, partitions, tuple((spark_settings or {}).items())),
        )

    def validate(self) -> CheckOptions:
        """ConfigError (one line, naming the option) for options that cannot
        go together; self when they can."""
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine {self.engine!r}: expected one of {', '.join(ENGINES)}")
        if self.fingerprint_bits not in (64, 128):
            raise ConfigError(f"--fingerprint-bits {self.fingerprint_bits}: expected 64 or 128")
        if self.engine == "bfs" and self.fingerprint_bits != 64:
            raise ConfigError(
                "--fingerprint-bits applies to the compiled engines (fast, spark); "
                "the reference engine keeps 64-bit fingerprints"
            )
        spark, local = self.spark, self.local
        spark_only = [name for name, given in (("master", spark.master), ("partitions", spark.partitions)) if given]
        spark_only += ["spark-conf"] if spark.settings else []
        if self.engine != "spark" and spark_only:
            raise ConfigError(f"--{spark_only[0]} applies to --engine spark only")
        if spark.master and not SPARK_MASTER.fullmatch(spark.master):
            raise ConfigError(
                f"--master {spark.master!r}: expected local, local[N], local[*], spark://HOST:PORT, "
                "yarn or k8s://https://HOST:PORT"
            )
        if self.engine == "spark":
            from .spark.environment import check_own_settings

            check_own_settings(dict(spark.settings))
        saving = [("checkpoint", local.checkpoint_dir and not local.resume), ("resume", local.resume)]
        local_only = [name for name, given in (*saving, ("max-memory", local.max_memory is not None)) if given]
        if self.engine == "spark" and local_only:
            raise ConfigError(
                f"--{local_only[0]} applies to the local engines (fast, bfs); a Spark check survives a "
                "lost executor by itself (its shards' state is in files), and its memory is Spark's "
                "(spark.driver.memory, spark.executor.memory)"
            )
        return self

    def identity(self, spec: Spec, engine: str, source: str) -> dict[str, Any]:
        """What a checkpoint must match to be resumed: the engine that runs
        (`engine`: the one asked for, or the reference where no kernel can be
        had), the spec and its code (`source`: what that engine runs of it),
        the config, symmetry."""
        cls = type(spec)
        return {
            "engine": engine,
            "spec": f"{cls.__module__}.{cls.__qualname__}",
            "config": getattr(spec, "config", None),
            "symmetry": self.symmetry,
            "source": hashlib.sha256(source.encode()).hexdigest(),
        }


def parse_spark_settings(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """--spark-conf KEY=VALUE items as pairs; a malformed one is refused."""
    bad = [kv for kv in pairs if "=" not in kv or not kv.split("=", 1)[0].strip()]
    if bad:
        raise ConfigError(f"--spark-conf {bad[0]!r}: expected KEY=VALUE, e.g. spark.executor.memory=8g")
    return tuple((k, v) for k, v in (kv.split("=", 1) for kv in pairs))
