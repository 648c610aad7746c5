"""What a check is asked besides its spec, in one frozen value: the
search (engine, symmetry, fingerprint width), the local engines' part
(threads, memory, checkpoints) and Spark's. The command line, the matrix's
cells and the gate's entries all build one; `validate` holds every rule
between options, and `identity` is what a checkpoint must match to be
resumed (and what, with the spec, picks the kernel)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Any

from ..config import ConfigError
from ..memory import default_limit, parse_size
from ..spec import Spec

ENGINES = ("fast", "bfs", "spark")


@dataclass(frozen=True)
class Flag:
    """How a field of the options is given on the command line, declared in
    the field's metadata (`flag(...)`), so the option, its flag and its help
    sit together; modelcheck/cli builds check's click options from these, in
    the fields' order. `kind` says how the text reads: text, count (an int
    >= 1), switch (present or not), choice, seconds, size (as --max-memory),
    pairs (repeatable KEY=VALUE). `dest` names the flag's value where it
    is not the field's (checkpoint_dir's --resume sets resume too)."""

    name: str
    help: str
    kind: str = "text"
    short: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    default: Any = None
    show_default: bool | str = False
    dest: str | None = None


def flag(name: str, help: str, value: Callable[[dict[str, Any]], Any] | None = None, **how: Any) -> dict[str, Any]:
    """A field's metadata: the flag that sets it, and (`value`) how the
    field reads the flags' values where it is not its flag's value as given."""
    return {"flags": (Flag(name, help, **how),), **({"value": value} if value else {})}


def _part(f: Any) -> type | None:
    """The options class a field holds whole (LocalOptions, SparkOptions), or None."""
    part = f.default_factory
    return part if part is not MISSING and isinstance(part, type) and is_dataclass(part) else None


def _flags(f: Any) -> list[Flag]:
    """The flags that set field `f`, each with its dest (the field's name unless declared)."""
    return [replace(fl, dest=fl.dest or f.name) for fl in f.metadata.get("flags", ())]


def flags_of(options: type | None = None) -> list[Flag]:
    """Every flag the options declare, in their fields' order (parts included)."""
    out: list[Flag] = []
    for f in fields(options or CheckOptions):
        part = _part(f)
        out += flags_of(part) if part else _flags(f)
    return out


# master URLs spark-submit accepts (local[N] needs N >= 1; local[N,F] retries failed tasks)
SPARK_MASTER = re.compile(r"local(\[([1-9]\d*|\*)(,[1-9]\d*)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


@dataclass(frozen=True)
class LocalOptions:
    """The engines on this machine (fast, bfs)."""

    workers: int = field(  # threads sharing the state space (fast)
        default=1,
        metadata=flag(
            "--workers",
            "Threads that share the state space (fast engine; bfs is one thread, spark uses --partitions).",
            kind="count",
            short="-w",
            default=os.cpu_count() or 1,
            show_default="all cores",
        ),
    )
    max_memory: int | None = field(  # bytes of anonymous memory the process may hold
        default=None,
        metadata=flag(
            "--max-memory",
            "Bound this check's memory (anonymous resident memory, e.g. 4G, 512M): past it, the fast "
            "engine splits levels into segments and moves frontiers, parent links and then the visited "
            "set's keys to disk (sorted runs, merged as levels settle), and stops with one line (exit 2, "
            "with a checkpoint if --checkpoint is given) only when a segment of the frontier no longer "
            "fits beside what must stay in memory. Default: 80% of RAM (or of a cgroup's limit). Engines "
            "fast and bfs.",
            kind="size",
            metavar="SIZE",
            value=lambda v: (
                parse_size(v["max_memory"]) if v["max_memory"] else None if v["engine"] == "spark" else default_limit()
            ),
        ),
    )
    spill_dir: str | None = None  # where levels spill under memory pressure (default: the temp dir)
    checkpoint_dir: str | None = field(  # where checkpoints go (with resume: where the run continues from)
        default=None,
        metadata={
            "flags": (
                Flag(
                    "--checkpoint",
                    "Save the search in DIR (created if missing; else it must be empty or hold no checkpoint "
                    "yet: DIR is modelcheck's alone, locked while a run writes there) every --checkpoint-every "
                    "seconds and when it stops (Ctrl-C, SIGTERM, --max-memory), so that --resume DIR continues "
                    "it after a stop, a kill or a crash. Engines fast and bfs.",
                    metavar="DIR",
                ),
                Flag(
                    "--resume",
                    "Continue the check checkpointed in DIR (verified whole first: a damaged one is refused), "
                    "with its config, engine and symmetry (a CONFIG.toml or --set given too is read over its "
                    "config and must agree); it ends with exactly the counts, verdict and counterexample "
                    "of an uninterrupted run, and keeps checkpointing into DIR. --workers may differ.",
                    metavar="DIR",
                    dest="resume_dir",
                ),
            ),
            "value": lambda v: v["resume_dir"] or v["checkpoint_dir"],
        },
    )
    checkpoint_every: float = field(  # seconds between checkpoints
        default=180.0,
        metadata=flag(
            "--checkpoint-every",
            "Seconds between checkpoints (at the next safe point: a level, or a "
            "segment of one); each costs what changed since the last, plus the "
            "visited set (8-16 bytes a state) and the frontier.",
            kind="seconds",
            metavar="SECONDS",
            default=180.0,
            show_default=True,
        ),
    )
    resume: bool = field(default=False, metadata={"value": lambda v: bool(v["resume_dir"])})  # --resume DIR


@dataclass(frozen=True)
class SparkOptions:
    """The Spark engine's cluster."""

    master: str | None = field(
        default=None,
        metadata=flag(
            "--master",
            "Spark master for --engine spark: local, local[N], local[*], "
            "spark://HOST:PORT, yarn, k8s://https://HOST:PORT (default local[*], or spark-submit's when run "
            "under it; see docs/spark.md).",
            metavar="URL",
        ),
    )
    partitions: int | None = field(
        default=None,
        metadata=flag(
            "--partitions",
            "Shards of the state space for --engine spark (default: Spark's default parallelism, "
            "i.e. the cores of a local master or all executors' cores of a cluster).",
            kind="count",
            metavar="P",
        ),
    )
    settings: tuple[tuple[str, str], ...] = field(  # --spark-conf KEY=VALUE, in the order given
        default=(),
        metadata=flag(
            "--spark-conf",
            "A Spark setting for --engine spark, as spark-submit's --conf; overrides modelcheck's "
            "defaults (e.g. spark.driver.memory=8g; spark.modelcheck.stateDir=DIR on storage every "
            "executor sees, needed on a cluster of several hosts). Repeatable.",
            kind="pairs",
            metavar="KEY=VALUE",
            dest="spark_conf",
            value=lambda v: parse_spark_settings(v["spark_conf"]),
        ),
    )


@dataclass(frozen=True)
class CheckOptions:
    engine: str = field(
        default="fast",
        metadata=flag(
            "--engine",
            "fast: the spec compiled (numba; the first run of a variant compiles for about 30 s, later "
            "runs load it) over packed states, sharded over --workers threads; bfs: the interpreted "
            "one-thread reference; spark: the compiled search on Spark executors (pip install "
            "'.[spark]', Java 17+). All give the same counts and traces. Without a working numba, "
            "fast runs bfs and says so.",
            kind="choice",
            choices=ENGINES,
            default="fast",
            show_default=True,
        ),
    )
    symmetry: bool = field(  # explore one state of each class under renaming the processes
        default=False,
        metadata=flag(
            "--symmetry",
            "Explore one state of each class of states that differ only by "
            "renaming the brokers (up to N! fewer states, same verdict and shortest counterexample; the output "
            "says how many states the classes hold; temporal properties too, their lassos lifted to states). "
            "Refused where the rules tell brokers apart (kafka-4, admin elections).",
            kind="switch",
        ),
    )
    fingerprint_bits: int = field(  # where a packed state is too large to store whole
        default=64,
        metadata=flag(
            "--fingerprint-bits",
            "Where a packed state is too large to store whole (over 128 bits), the visited set keeps a "
            "fingerprint of it: 64 bits (8 bytes a state, as TLC), or 128 (16 bytes a state; the "
            "collision probability becomes negligible). The output reports which, with the estimate.",
            kind="choice",
            choices=("64", "128"),
            default="64",
            show_default=True,
            value=lambda v: int(v["fingerprint_bits"]),
        ),
    )
    max_violations: int = field(
        default=1,
        metadata=flag(
            "--max-violations",
            "Report up to K violations, one an invariant: after the shortest counterexample the search "
            "goes on without the invariants already violated (again from the initial states: each "
            "further one costs a search to its depth), so each is the shortest of its invariant and "
            "replayed. The exit status, the counts and --trace-out are the first's.",
            kind="count",
            metavar="K",
            default=1,
            show_default=True,
        ),
    )
    local: LocalOptions = field(default_factory=LocalOptions)
    spark: SparkOptions = field(default_factory=SparkOptions)

    @classmethod
    def of(
        cls,
        engine: str = "fast",
        *,
        symmetry: bool = False,
        fingerprint_bits: int = 64,
        max_violations: int = 1,
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
            engine=engine,
            symmetry=symmetry,
            fingerprint_bits=fingerprint_bits,
            max_violations=max_violations,
            local=LocalOptions(workers, max_memory, spill_dir, checkpoint_dir, checkpoint_every, resume),
            spark=SparkOptions(master, partitions, tuple((spark_settings or {}).items())),
        )

    @classmethod
    def from_flags(cls, values: dict[str, Any], options: type | None = None) -> Any:
        """The options check's flags give (`values`, by each flag's dest):
        each field its flag's value, or what its declared `value` reads of
        them; a field without either keeps its default."""
        given = {}
        for f in fields(options or cls):
            part = _part(f)
            if part:
                given[f.name] = cls.from_flags(values, part)
            elif "value" in f.metadata:
                given[f.name] = f.metadata["value"](values)
            elif _flags(f):
                given[f.name] = values[_flags(f)[0].dest or f.name]
        return (options or cls)(**given)

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
        if self.max_violations < 1:
            raise ConfigError(f"--max-violations {self.max_violations}: expected 1 or more")
        if self.max_violations > 1 and local.checkpoint_dir:
            raise ConfigError(
                f"--max-violations {self.max_violations} with --{'resume' if local.resume else 'checkpoint'}: "
                "a checkpoint saves one search, and each further violation is a search of its own; "
                "leave out one of them"
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
            "symmetry": self.symmetry or spec.symmetric,  # asked for, or enabled on the spec itself
            "source": hashlib.sha256(source.encode()).hexdigest(),
        }


def parse_spark_settings(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """--spark-conf KEY=VALUE items as pairs; a malformed one is refused."""
    bad = [kv for kv in pairs if "=" not in kv or not kv.split("=", 1)[0].strip()]
    if bad:
        raise ConfigError(f"--spark-conf {bad[0]!r}: expected KEY=VALUE, e.g. spark.executor.memory=8g")
    return tuple((k, v) for k, v in (kv.split("=", 1) for kv in pairs))
