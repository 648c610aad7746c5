"""The batch layer every compiled engine shares (TLC's queues, a level at
a time): candidate batches of packed states, expanded by the kernel, and
the accounting that makes an engine report what the reference engine
reports. The visited set they are tested against is visited.py's.

A state is a row of uint64 words (the kernel's packing) and a key: the
packed representative itself (one or two words, mixed by a bijection:
exact) or its 64- or 128-bit fingerprint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...result import CheckResult, collision_probability, symmetry_info

LINK_DTYPE = np.dtype([("parent", np.uint32), ("index", np.uint16)])  # 6 bytes a state


@dataclass
class Candidates:
    """Successors in the order the reference engine generates them: packed
    rows, keys, the frontier row of each one's parent, its index among the
    parent's successors, the action that made it (its coverage label) and
    the action instance (Spec.instance numbers them)."""

    words: np.ndarray  # uint64 [m, W]
    keys: np.ndarray  # uint64 [m, K]
    parents: np.ndarray  # int64 [m]
    index: np.ndarray  # uint16 [m]
    action: np.ndarray  # uint8 [m]
    instance: np.ndarray  # uint16 [m]

    FIELDS = ("words", "keys", "parents", "index", "action", "instance")

    @staticmethod
    def empty(words: int, key_words: int, m: int = 0) -> Candidates:
        return Candidates(
            np.empty((m, words), np.uint64),
            np.empty((m, key_words), np.uint64),
            np.empty(m, np.int64),
            np.empty(m, np.uint16),
            np.empty(m, np.uint8),
            np.empty(m, np.uint16),
        )

    def __len__(self) -> int:
        return len(self.parents)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The fields in the kernel's `expand` argument order (its output buffers)."""
        return tuple(getattr(self, f) for f in self.FIELDS)

    def take(self, sel: np.ndarray | slice) -> Candidates:
        return Candidates(*(getattr(self, f)[sel] for f in self.FIELDS))

    def grown(self, size: int, used: int) -> Candidates:
        """A larger buffer holding the first `used` rows of this one."""
        bigger = Candidates.empty(self.words.shape[1], self.keys.shape[1], size)
        for f in self.FIELDS:
            getattr(bigger, f)[:used] = getattr(self, f)[:used]
        return bigger

    @staticmethod
    def concat(parts: list[Candidates], words: int, key_words: int) -> Candidates:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Candidates.empty(words, key_words)
        return Candidates(*(np.concatenate([getattr(p, f) for p in parts]) for f in Candidates.FIELDS))


class Parts:
    """A segment's candidates as the workers made them: one Candidates a
    worker, in order, and the count of each action among them. A segment
    is settled from its parts (each shard gathers its keys, the new states
    are gathered from where they are) rather than copied into one batch
    first: that copy, on one thread, was a sixth of a large search's wall
    time on two cores. `whole` is the copy, for the rare uses that need it
    (a violation, the liveness recorder)."""

    def __init__(self, parts: list[Candidates], action_counts: np.ndarray):
        self.parts, self.action_counts = parts, action_counts
        self.starts = np.cumsum([0] + [len(p) for p in parts])
        self._whole: Candidates | None = None

    def __len__(self) -> int:
        return int(self.starts[-1])

    def gather(self, field: str, at: np.ndarray) -> np.ndarray:
        """Field `field` of the candidates at positions `at` (ascending)."""
        cuts = np.searchsorted(at, self.starts).tolist()
        pieces = [getattr(p, field)[at[a:b] - start] for p, a, b, start in zip(self.parts, cuts, cuts[1:], self.starts)]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    @property
    def whole(self) -> Candidates:
        if self._whole is None:
            first = self.parts[0]
            self._whole = Candidates.concat(self.parts, first.words.shape[1], first.keys.shape[1])
        return self._whole


class Abandoned(Exception):
    """An expansion stopped before its end (`stop()` became true): nothing
    it made is kept, and nothing outside it has changed."""


def expand(
    kernel,
    frontier: np.ndarray,
    lo: int,
    hi: int,
    stop: Callable[[], bool] = lambda: False,
    done: Callable[[int], None] = lambda n: None,
    chunk: int = 1 << 14,
    reached: np.ndarray | None = None,
    per_row: float = 4.0,
) -> Candidates:
    """The successors of frontier rows lo..hi-1, in order, in one buffer
    the kernel fills a chunk of rows at a time (sized for `per_row`
    successors a row, doubled when full: the rows not yet expanded are
    resumed); the goals their steps reach are marked in `reached` (uint8,
    one a goal of the spec). Raises Abandoned once `stop()` is true."""
    if reached is None:
        reached = np.zeros(kernel.goal_count, np.uint8)
    out = Candidates.empty(kernel.words, kernel.key_words, max(1024, int(per_row * (hi - lo))))
    k = 0
    row = lo
    while row < hi:
        if stop():
            raise Abandoned
        rows, k, status = kernel.module.expand(
            kernel.params,
            kernel.tables,
            frontier,
            row,
            min(hi, row + chunk),
            out.words,
            out.keys,
            out.parents,
            out.index,
            out.action,
            out.instance,
            k,
            reached,
        )
        if status < -1:
            raise kernel.field_error(-2 - status)
        if status == -1:
            out = out.grown(2 * len(out), k)
        row += rows
        done(rows)
    return out.take(slice(0, k))


def run_info(kernel, distinct: int, generated: int) -> dict[str, Any]:
    """What a compiled check says about how it identified states."""
    info: dict[str, Any] = {
        "kernel": "compiled",
        "state_bits": kernel.bits,
        "state_keys": "exact" if kernel.exact else "fingerprint",
    }
    if not kernel.exact:
        info["fingerprint_bits"] = kernel.fingerprint_bits
        info["collision_probability"] = collision_probability(distinct, generated, kernel.fingerprint_bits)
    return info


def compiled_result(
    search: Any, verdict: str, invariant: str | None, depth: int, trace: list, goals: dict, **info: Any
) -> CheckResult:
    """A compiled search's result, fast's and Spark's alike: `search` has
    the spec, kernel, counts (distinct, generated, represented), start time
    and coverage array; `info` is what the engine adds to run_info
    (memory: its bytes, as CheckResult.memory)."""
    memory = info.pop("memory", {})
    run = run_info(search.kernel, search.distinct, search.generated)
    if search.spec.symmetric:
        run["symmetry"] = symmetry_info(search.distinct, search.represented)
    return CheckResult(
        verdict,
        invariant,
        search.distinct,
        search.generated,
        depth,
        time.perf_counter() - search.started,
        dict(zip(search.spec.coverage_labels, search.coverage.tolist())),
        trace,
        goals,
        memory,
        {**run, **info},
    )
