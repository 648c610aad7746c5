"""The behaviour graph of a temporal check: what an engine records while
it explores (Recorder: each state's key and labels, each transition),
numbered into a Graph once the search is complete (see the package
docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...config import ConfigError
from ...lifetime import Stopped
from ...memory import anon_rss, show_size
from ...trace import TraceError
from ..storage.checkpoint import Arrays
from ..storage.spill import blank_on_disk, to_disk
from .jit import jit

# in memory with the graph on disk, a state's: the sort's order and its
# scratch while the graph is numbered; the searches' masks and temporaries
STATE_BYTES_OUT_OF_CORE = 40
CHUNK = 1 << 22  # rows sorted or numbered at a time

# ---- what an engine keeps while it explores ------------------------------------------


class Recorder:
    """The states and transitions an engine found, in the order it found
    them, for the properties it was asked to check. `keep` decides where
    each array lives (memory, or a file under memory pressure)."""

    def __init__(self, key_words: int, max_memory: int | None = None, spill_dir: str | None = None):
        self.key_words = key_words
        self.max_memory = max_memory
        self.spill_dir = spill_dir
        self.keys: list[np.ndarray] = []  # uint64 [m, K], state numbers in order
        self.labels: list[np.ndarray] = []  # uint64 [m]
        self.sources: list[np.ndarray] = []  # uint32 [e]
        self.targets: list[np.ndarray] = []  # uint64 [e, K]
        self.instances: list[np.ndarray] = []  # uint16 [e]
        self.states = 0
        self.transitions = 0

    def add_states(self, keys: np.ndarray, labels: np.ndarray) -> None:
        self.keys.append(keys)
        self.labels.append(labels)
        self.states += len(keys)

    def add_transitions(self, sources: np.ndarray, targets: np.ndarray, instances: np.ndarray) -> None:
        if self.states > np.iinfo(np.uint32).max:
            raise ConfigError(f"temporal properties number states in 32 bits; this check has {self.states:,}")
        self.sources.append(sources.astype(np.uint32))
        self.targets.append(targets)
        self.instances.append(instances)
        self.transitions += len(sources)
        if self.over_limit():
            raise self.too_big()

    def arrays(self) -> dict[str, list[np.ndarray]]:
        return {
            "keys": self.keys,
            "labels": self.labels,
            "sources": self.sources,
            "targets": self.targets,
            "instances": self.instances,
        }

    def load(self, arrays: dict[str, list[np.ndarray]]) -> None:
        """What arrays() gave, back (a checkpoint resumed)."""
        for name, parts in arrays.items():
            setattr(self, name, [p for p in parts if len(p)])
        self.states = sum(len(k) for k in self.keys)
        self.transitions = sum(len(s) for s in self.sources)

    def moved(self, keep: Callable[[np.ndarray], np.ndarray]) -> None:
        """Every array passed through `keep` (to disk, under memory pressure)."""
        for name, parts in self.arrays().items():
            setattr(self, name, [keep(p) for p in parts])

    def bytes_needed(self) -> int:
        """Memory the numbered graph and the search of it take at their
        peak, all in memory: a transition's key, number, source and
        instance while the targets are numbered; two copies of the state
        keys for the sort; labels, offsets and the searches' per-state arrays."""
        return self.transitions * (8 * self.key_words + 14) + self.states * (16 * self.key_words + 72)

    def bytes_out_of_core(self) -> int:
        """What must stay in memory with the graph on disk (its arrays and
        the searches' per-state arrays, Arena): the sort's order while the
        targets are numbered, the searches' masks and temporaries."""
        return self.states * STATE_BYTES_OUT_OF_CORE

    def over_limit(self) -> bool:
        """Whether searching the graph recorded so far would pass
        --max-memory even with its transitions and keys on disk, on top of
        what the process holds now."""
        return self.max_memory is not None and anon_rss() + self.bytes_out_of_core() > self.max_memory

    def too_big(self) -> Stopped:
        """A stop at the memory limit, as the engines' own (its counts are
        the graph's: the states recorded, and a transition a state generated)."""
        return Stopped(
            f"temporal properties: the behaviour graph of {self.states:,} states and {self.transitions:,} "
            f"transitions so far needs about {show_size(self.bytes_out_of_core())} to search for fair cycles "
            f"with its transitions on disk, more than is left of --max-memory {show_size(self.max_memory or 0)}: "
            "stopped before exploring further (check the properties on smaller bounds, with --symmetry, or "
            "raise --max-memory)",
            distinct=self.states,
            generated=self.transitions,
        )

    def saved(self) -> tuple[dict[str, int], dict[str, np.ndarray]]:
        """What a checkpoint holds: the number of parts of each array, and
        the parts, each written once (they never change once made)."""
        recorded = self.arrays()
        counts = {name: len(p) for name, p in recorded.items()}
        return counts, {f"graph-{name}-{i}": x for name, p in recorded.items() for i, x in enumerate(p)}

    def restore(self, counts: dict[str, int], arrays: Arrays) -> None:
        """What saved() gave, back from a checkpoint's arrays."""
        self.load({name: [arrays[f"graph-{name}-{i}"] for i in range(n)] for name, n in counts.items()})

    def graph(self, initial: int) -> Graph:
        """The numbered behaviour graph (one sort of the state keys); on
        disk where, in memory, it would pass --max-memory (the searches then
        read it, and keep their own arrays, through the page cache)."""
        if self.over_limit():
            raise self.too_big()
        in_memory = self.max_memory is None or anon_rss() + self.bytes_needed() <= self.max_memory
        arena = Arena(self.spill_dir, on_disk=not in_memory)
        if arena.on_disk:
            self.moved(lambda a: to_disk(a, self.spill_dir))
        k = self.key_words
        keys = arena.joined(self.keys, np.empty((0, k), np.uint64))
        order = np.lexsort(keys.T[::-1]) if len(keys) else np.empty(0, np.int64)
        sorted_keys = arena.empty(keys.shape, np.uint64)
        targets = arena.joined(self.targets, np.empty((0, k), np.uint64))
        numbers = arena.empty(len(targets), np.int64)
        for i in range(0, len(keys), CHUNK):
            sorted_keys[i : i + CHUNK] = keys[order[i : i + CHUNK]]
        for i in range(0, len(targets), CHUNK):
            numbers[i : i + CHUNK] = _number(sorted_keys, order, np.ascontiguousarray(targets[i : i + CHUNK]))
            if numbers[i : i + CHUNK].min() < 0:
                raise TraceError("a transition leads to a state the search never numbered")
        del order, sorted_keys
        sources = arena.joined(self.sources, np.empty(0, np.uint32))
        offsets = arena.full(self.states + 1, 0, np.int64)
        _count(sources, offsets)
        np.cumsum(offsets, out=offsets)
        labels = arena.joined(self.labels, np.empty(0, np.uint64))
        return Graph(
            initial, labels, offsets, numbers, arena.joined(self.instances, np.empty(0, np.uint16)), keys, arena
        )


@jit
def _count(sources, offsets):
    """offsets[s + 1]: how many transitions state s is the source of."""
    for s in sources:
        offsets[s + 1] += 1


@jit
def _less(a, i, b, j):
    for w in range(a.shape[1]):
        if a[i, w] != b[j, w]:
            return a[i, w] < b[j, w]
    return False


@jit
def _number(sorted_keys, order, targets):
    """Each target key's state number (-1 where there is none)."""
    out = np.empty(len(targets), np.int64)
    for e in range(len(targets)):
        lo, hi = 0, len(sorted_keys)
        while lo < hi:
            mid = (lo + hi) // 2
            if _less(sorted_keys, mid, targets, e):
                lo = mid + 1
            else:
                hi = mid
        out[e] = order[lo] if lo < len(sorted_keys) and not _less(targets, e, sorted_keys, lo) else -1
    return out


@dataclass
class Arena:
    """Where a graph's arrays live, and the searches' arrays of it: memory,
    or nameless files in `directory` (a graph on disk, read through the
    page cache)."""

    directory: str | None = None
    on_disk: bool = False

    def empty(self, shape: int | tuple[int, ...], dtype: type | np.dtype) -> np.ndarray:
        size = (shape,) if isinstance(shape, int) else shape
        return blank_on_disk(size, np.dtype(dtype), self.directory) if self.on_disk else np.empty(size, dtype)

    def joined(self, parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
        """The parts as one array (`empty`'s dtype and row shape if none)."""
        if self.on_disk:
            return to_disk(parts, self.directory, empty)
        return np.concatenate(parts) if parts else empty

    def full(self, shape: int | tuple[int, ...], value: object, dtype: type | np.dtype) -> np.ndarray:
        out = self.empty(shape, dtype)
        out.fill(value)
        return out


@dataclass
class Graph:
    """The behaviour graph: states 0..n-1 (0..initial-1 the initial ones),
    each one's labels and key; transitions grouped by source (those of s
    are offsets[s]..offsets[s+1]), each with its target and instance."""

    initial: int
    labels: np.ndarray  # uint64 [n]
    offsets: np.ndarray  # int64 [n + 1]
    target: np.ndarray  # int64 [e]
    instance: np.ndarray  # uint16 [e]
    keys: np.ndarray  # uint64 [n, K]
    arena: Arena = field(default_factory=Arena)

    @property
    def size(self) -> int:
        return len(self.labels)
