"""The reference engine's visited set and parent links.

One operation, `put(fp, parent) -> is_new`, as TLC's FPSet. Parent links
are fingerprints only, so a trace is rebuilt by regenerating successors
(see trace.py) rather than by keeping whole states. The compiled engines'
visited set is engine/batch.py's.
"""

from __future__ import annotations

from typing import Protocol


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
