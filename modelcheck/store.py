"""Visited sets and parent links.

The reference engine's store has one operation, `put(fp, parent) -> is_new`,
as TLC's FPSet; the fast engine's are array-backed and work a batch at a
time. Parent links are fingerprints only, so a trace is rebuilt by
regenerating successors (see trace.py) rather than by keeping whole states.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class VisitedStore(Protocol):
    def put(self, fp: int, parent: int | None) -> bool: ...
    def parent(self, fp: int) -> int | None: ...
    def __len__(self) -> int: ...


class DictStore:
    """Reference store: a dict from fingerprint to parent fingerprint."""

    def __init__(self) -> None:
        self._parent: dict[int, int | None] = {}

    def put(self, fp: int, parent: int | None) -> bool:
        if fp in self._parent:
            return False
        self._parent[fp] = parent
        return True

    def parent(self, fp: int) -> int | None:
        return self._parent[fp]

    def __len__(self) -> int:
        return len(self._parent)


class SortedFingerprints:
    """A visited set of 8 bytes a state: one sorted uint64 array, queried and
    grown a batch at a time (a BFS level), never a Python object a state.
    Growing merges two sorted runs, so it briefly holds the set twice."""

    def __init__(self) -> None:
        self.fps = np.empty(0, dtype=np.uint64)

    @classmethod
    def of(cls, fps: np.ndarray) -> "SortedFingerprints":
        """The set whose sorted array is `fps` (as another process sent it)."""
        visited = cls()
        visited.fps = fps
        return visited

    def contains(self, fps: np.ndarray) -> np.ndarray:
        """Which of `fps` are in the set (a bool array)."""
        if not len(self.fps) or not len(fps):
            return np.zeros(len(fps), dtype=bool)
        pos = np.minimum(np.searchsorted(self.fps, fps), len(self.fps) - 1)
        return self.fps[pos] == fps

    def add(self, fps: np.ndarray) -> None:
        """Add fingerprints not yet in the set."""
        merged = np.concatenate((self.fps, np.sort(fps)))
        merged.sort(kind="stable")          # two sorted runs: timsort merges them in linear time
        self.fps = merged

    @property
    def nbytes(self) -> int:
        return self.fps.nbytes

    def __len__(self) -> int:
        return len(self.fps)


class LevelLinks:
    """Parent links of a BFS, 16 bytes a state: per level, the states'
    fingerprints sorted and their parents' alongside. A trace is rebuilt
    from these by regenerating successors (trace.rebuild), never from
    stored states."""

    def __init__(self) -> None:
        self.levels: list[tuple[np.ndarray, np.ndarray]] = []

    def add_level(self, fps: np.ndarray, parents: np.ndarray) -> None:
        order = np.argsort(fps)
        self.levels.append((fps[order], parents[order]))

    def parent(self, fp: int) -> int | None:
        """The parent fingerprint of `fp` (None: not here)."""
        for fps, parents in self.levels:
            i = int(np.searchsorted(fps, np.uint64(fp)))
            if i < len(fps) and int(fps[i]) == fp:
                return int(parents[i])
        return None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes + b.nbytes for a, b in self.levels)
