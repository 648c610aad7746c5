"""The Kernel engines call: a spec's flattened methods and glue, loaded
from the cache or compiled here (kernel_for); job.py compiles one in a
child while the interpreted engine runs."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import statistics
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import product
from pathlib import Path
from typing import Any

from ...durable import write_text
from ...spec import Spec
from ..storage.batch import Candidates
from .cache import cache_dir, load_module, module_name
from .errors import FieldOutOfRange, KernelError, KernelUnavailable
from .flatten import Flattener
from .glue import KEY_FMIX, KEY_HASH, KEY_HASH128, KEY_MIX128, LAYOUT, Flags, Rules, Tables, glue_source
from .layout import plan_layout

MAX_SUCCESSORS = 1 << 16  # a successor's index under its parent is a uint16
# a first compile's estimate before this cache has timed any: seconds a KB of
# generated source (measured: kip966's family kernel for 3 processes, 147 KB,
# 176 s on one core of a 2-core Xeon, numba 0.68.1)
SECONDS_PER_KB = 1.2
COMPILE_TIMES = "compile-seconds.json"  # in the cache: each compile's seconds and source size


def flattened(spec: Spec, family: tuple[type, ...]) -> Flattener:
    """The flattened rules of `spec`'s kernel, made once a process for its
    class and family (the text depends on no instance; the parameters,
    read from this one, do): a run of many checks, such as a mutation
    hunt, does not flatten the spec again for each."""
    key = (type(spec), family)
    if key not in _FLATTENED:
        _FLATTENED[key] = _flatten(spec, family)
    flat = copy.copy(_FLATTENED[key])
    flat.spec = spec
    return flat


_FLATTENED: dict[tuple[type, tuple[type, ...]], Flattener] = {}


def _flatten(spec: Spec, family: tuple[type, ...]) -> Flattener:
    rules = Rules.of(family)
    flat = Flattener(spec, family)
    flat.run(
        [
            (fn.__name__, None)
            for fn in [
                *rules.actions.values(),
                *rules.invariants.values(),
                *rules.goals.values(),
                *rules.properties.values(),
            ]
        ]
        + [("representative", None), ("class_size", None)],
        called=[fn.__name__ for g, fn in rules.goals.items() if len(rules.actions_of(g)) > 1],
    )
    return flat


class Kernel:
    """A spec compiled: `expand` a frontier's rows into successor rows,
    keys and links; `check` rows against the checked invariants; `pack` and
    `unpack` single states (Python's State and a row of words)."""

    def __init__(self, spec: Spec, cache_dir: Path, fingerprint_bits: int = 64):
        import numpy as np

        cls = type(spec)
        self.fields = spec.layout()
        self.action_count = len(spec.coverage_labels)  # what the kernel's action codes count
        self.goal_count = len(cls.goals)
        self.property_count = len(cls.properties)
        if self.property_count > 32:
            raise KernelError(
                f"{cls.__name__} declares {self.property_count} temporal properties; a state's labels hold 32"
            )
        self.spec_name = cls.__name__
        slots, self.words, self.bits = plan_layout(spec)
        self.exact = self.bits <= 128  # the visited set holds the packed states themselves
        self.fingerprint_bits = None if self.exact else fingerprint_bits
        if self.exact:
            mode = KEY_MIX128 if self.words == 2 else KEY_FMIX
        else:
            mode = KEY_HASH128 if fingerprint_bits == 128 else KEY_HASH
        self.key_words = 2 if mode in (KEY_MIX128, KEY_HASH128) else 1
        most = sum(len(list(product(*spec.domains(a)))) for a in spec.actions)
        if most > MAX_SUCCESSORS:
            raise KernelError(
                f"a state may have {most:,} successors, more than the {MAX_SUCCESSORS:,} a parent link numbers"
            )
        # every rule of every class that shares the kernel, whatever this config
        # checks or enables, so that the flattened module (and its cached machine
        # code) serves every config of each; numba compiles only what is called
        family = kernel_family(spec)
        rules = Rules.of(family)
        flat = flattened(spec, tuple(family))
        self.params = tuple(flat.param(a) for a in flat.attrs)
        self.source = {"spec": flat.source()}
        self.source["glue"] = glue_source(spec, flat, rules, module_name("spec", self.source["spec"]))
        # an action this class omits has no instance: its arguments range over nothing
        domains = [
            d for a in rules.actions for d in (spec.domains(a) if a in cls.actions else [[]] * len(rules.params[a]))
        ]
        width = max([1, *map(len, domains)])
        dormant = spec.never_enabled()
        invariants, goals, properties = list(rules.invariants), list(cls.goals), list(cls.properties)
        self.tables = tuple(
            Tables(
                layout=np.array([(s.word, s.shift, (1 << s.width) - 1, s.lo) for s in slots], dtype=np.int64),
                domains=np.array([d + [0] * (width - len(d)) for d in domains] or [[0]], dtype=np.int64),
                domain_sizes=np.array([len(d) for d in domains] or [0], dtype=np.int64),
                live=np.array([a in cls.actions and a not in dormant for a in rules.actions], dtype=np.uint8),
                checked=np.array([invariants.index(n) for n in spec.to_check()], dtype=np.int64),
                flags=np.array(Flags(self.words, mode, spec.symmetric), dtype=np.int64),
                label=np.array(
                    [spec.first_label(a) if a in cls.actions else 0 for a in rules.actions] or [0], dtype=np.int64
                ),
                base=np.array([spec.instance_base.get(a, 0) for a in rules.actions] or [0], dtype=np.int64),
                goal=np.array([goals.index(g) if g in goals else -1 for g in rules.goals] or [0], dtype=np.int64),
                properties=np.array(
                    [properties.index(p) if p in properties else -1 for p in rules.properties] or [0], np.int64
                ),
            )
        )
        self.cache_dir = cache_dir
        self.module = self._load()

    def _load(self) -> types.ModuleType:
        load_module(self.cache_dir, "spec", self.source["spec"])
        return load_module(self.cache_dir, "glue", self.source["glue"])

    # A kernel travels to Spark executors as its source and tables, not as
    # the spec object; each loads it from its own cache (compiling once a
    # machine).
    def __getstate__(self) -> dict:
        return {k: v for k, v in vars(self).items() if k not in ("module", "cache_dir")}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.cache_dir = cache_dir()
        self.module = self._load()

    # ---- what engines call --------------------------------------------------------
    def field_error(self, bad: int) -> KernelError:
        f = self.fields[bad - 1]
        return FieldOutOfRange(
            f"a state's {f.name} left the range {f.lo}..{f.hi} that {self.spec_name}.layout() declares for this config"
        )

    def pack(self, state: Any) -> Any:
        import numpy as np

        row = np.zeros(self.words, dtype=np.uint64)
        bad = self.module.pack(self.tables[LAYOUT], state, row)
        if bad:
            raise self.field_error(bad)
        return row

    def unpack(self, row: Any) -> Any:
        return self.module.unpack(self.tables[LAYOUT], row)

    def keys(self, rows: Any) -> Any:
        """The visited-set keys of packed states."""
        import numpy as np

        out = np.zeros((len(rows), self.key_words), dtype=np.uint64)
        bad = self.module.keys_of_rows(self.params, self.tables, rows, out)
        if bad:
            raise self.field_error(bad)
        return out

    def labels(self, rows: Any) -> Any:
        """Each row's temporal-property predicates, as bits: property i of
        the class's (in order) holds P at bit 2i and Q (leads-to) at 2i+1."""
        import numpy as np

        out = np.zeros(len(rows), dtype=np.uint64)
        self.module.labels(self.params, self.tables, rows, out)
        return out

    def check(self, rows: Any, lo: int, hi: int) -> tuple[int, int]:
        """(row, place in to_check()) of the first violation in lo..hi-1, or (-1, -1)."""
        row, which = self.module.check(self.params, self.tables, rows, lo, hi)
        return int(row), int(which)

    def class_sizes(self, rows: Any, lo: int, hi: int) -> int:
        """The states the classes of rows lo..hi-1 hold, summed (their count without symmetry)."""
        return int(self.module.class_sizes(self.params, self.tables, rows, lo, hi))

    def compiled(self) -> bool:
        """Whether numba has machine code for this kernel on disk (a run then loads, not compiles)."""
        return any(self.cache_dir.glob(f"__pycache__/{module_name('glue', self.source['glue'])}.expand-*.nbi"))

    def size_kb(self) -> float:
        return sum(len(text) for text in self.source.values()) / 1024

    def record_compile(self, seconds: float) -> None:
        """Note how long this kernel took to compile, so that later first
        compiles on this machine are estimated from it (`estimate`)."""
        times = _compile_times(self.cache_dir)
        times[module_name("glue", self.source["glue"])] = {"seconds": round(seconds, 1), "kb": round(self.size_kb())}
        write_text(self.cache_dir / COMPILE_TIMES, json.dumps(times, indent=1, sort_keys=True), sync=False)

    def estimate_s(self) -> float:
        """About how long this kernel takes to compile on this machine: its
        source's size at the median rate of the compiles this cache timed
        (SECONDS_PER_KB before any)."""
        rates = [t["seconds"] / t["kb"] for t in _compile_times(self.cache_dir).values() if t.get("kb")]
        return self.size_kb() * (statistics.median(rates) if rates else SECONDS_PER_KB)

    def estimate(self) -> str:
        return f"about {_duration(self.estimate_s())}"

    @contextmanager
    def compiling(self) -> Iterator[None]:
        """Hold the cache's lock on this kernel: of processes that need it
        at once (test workers, checks started together), one compiles and
        the others wait for it, then load what it wrote."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.cache_dir / f"{module_name('glue', self.source['glue'])}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def warm(self, inits: list) -> None:
        """Compile (or load) everything engines call, on the initial states."""
        import numpy as np

        rows = np.array([self.pack(s) for s in inits], dtype=np.uint64)
        self.keys(rows)
        self.check(rows, 0, len(rows))
        self.class_sizes(rows, 0, len(rows))
        buffers = Candidates.empty(self.words, self.key_words, 1 << 12).arrays()
        self.module.expand(
            self.params, self.tables, rows, 0, 1, *buffers, 0, np.zeros(max(1, self.goal_count), np.uint8)
        )
        if self.property_count:
            self.labels(rows)


def _compile_times(cache: Path) -> dict[str, dict[str, float]]:
    try:
        times = json.loads((cache / COMPILE_TIMES).read_text())
        return times if isinstance(times, dict) else {}
    except (OSError, ValueError):  # none yet, or damaged: estimate without
        return {}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 100 else f"{seconds / 60:.0f} min"


def kernel_family(spec: Spec) -> list[type[Spec]]:
    """The classes that share `spec`'s kernel: `spec.kernel_family()` (and
    its own class) parted, in order, into groups whose classes have one
    state type and agree on every rule they both have (Rules.signature);
    the group of its class, the same for each of them."""
    groups: list[tuple[list[type[Spec]], dict[str, dict[str, tuple]]]] = []
    declared = list(spec.kernel_family())
    for c in [*declared, *([] if type(spec) in declared else [type(spec)])]:
        sig = Rules.signature(c)
        for members, merged in groups:
            if members[0].state_type is c.state_type and all(
                merged[kind].get(name, value) == value for kind in sig for name, value in sig[kind].items()
            ):
                members.append(c)
                for kind in sig:
                    merged[kind].update(sig[kind])
                break
        else:
            groups.append(([c], {kind: dict(v) for kind, v in sig.items()}))
    return next(members for members, _ in groups if type(spec) in members)


def kernel_key(spec: Spec) -> tuple:
    """What decides which kernel a spec runs: its family and process count."""
    return (tuple(kernel_family(spec)), spec.n)


def kernel_for(
    spec: Spec, note: Callable[[str], None] = lambda text: None, compile: bool = True, fingerprint_bits: int = 64
) -> Kernel | None:
    """The compiled kernel of `spec`, loaded from the cache or (with
    `compile`) compiled now, `note` hearing that a compile will take a
    while; None if it is not in the cache and `compile` is false. States
    too large to store whole are keyed by fingerprints of
    `fingerprint_bits` (64 or 128). KernelUnavailable says why there is
    none at all."""
    if os.environ.get("MODELCHECK_KERNEL") == "interpreted":
        raise KernelUnavailable("MODELCHECK_KERNEL=interpreted")
    try:
        import numba
        from numba.core.errors import NumbaError
    except Exception as e:  # an import that fails in any way: say so, run interpreted
        raise KernelUnavailable(f"numba cannot be imported ({type(e).__name__}: {e})") from None
    try:
        kernel = Kernel(spec, cache_dir(), fingerprint_bits)
        if kernel.compiled():
            kernel.warm(spec.init_states())
        elif not compile:
            return None
        else:
            with kernel.compiling():
                if kernel.compiled():
                    kernel.warm(spec.init_states())
                else:
                    note(
                        f"compiling the kernel of {type(spec).__name__} for {spec.n} processes with numba "
                        f"{numba.__version__} ({kernel.estimate()}; once: later runs load it)"
                    )
                    started = time.monotonic()
                    kernel.warm(spec.init_states())
                    kernel.record_compile(time.monotonic() - started)
    except KernelError as e:
        raise KernelUnavailable(str(e)) from None
    except (NumbaError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise KernelUnavailable(f"numba cannot compile {type(spec).__name__}: {first}") from None
    return kernel
