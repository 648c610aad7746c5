"""The reference engine's visited set and parent links.

One operation, `put(fp, parent) -> is_new`, as TLC's FPSet. Parent links
are fingerprints only, so a trace is rebuilt by regenerating successors
(see trace.py) rather than by keeping whole states. The compiled engines'
visited set is engine/storage/batch.py's.
"""

from __future__ import annotations

from collections.abc import Iterable
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

    def forget(self, fps: Iterable[int]) -> None:
        """Take back states put since a safe point (a level stopped half-way)."""
        for fp in fps:
            del self._parent[fp]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(fingerprints, parents) for a checkpoint; an initial state is its own parent."""
        fps = np.fromiter(self._parent, np.uint64, len(self._parent))
        parents = np.fromiter(
            (fp if up is None else up for fp, up in self._parent.items()), np.uint64, len(self._parent)
        )
        return fps, parents

    @staticmethod
    def from_arrays(fps: np.ndarray, parents: np.ndarray) -> DictStore:
        store = DictStore()
        store._parent = {fp: (None if fp == up else up) for fp, up in zip(fps.tolist(), parents.tolist())}
        return store
