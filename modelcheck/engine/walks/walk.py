"""The walks themselves, shared by the search here and on processes
(simulate.py) and by Spark tasks (simulate_spark.py): chunks of walks on the interpreted spec or
the compiled kernel, and their fold in walk order. simulate.py's
docstring says how a walk picks its steps and why the result depends on
neither workers nor engine."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fingerprint import fingerprint
from ...spec import Spec
from ..storage.batch import Candidates
from .plan import CHUNK, GOLDEN, MASK, SWARM_KEEP, Plan, Stream, pick, swarm_weights

# ---- walks ---------------------------------------------------------------------------


@dataclass
class Chunk:
    """What a run of consecutive walks did, up to its first violation."""

    first: int  # the first walk's number
    walks: int = 0  # walks run (the violating one included)
    visited: int = 0
    coverage: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # sorted distinct keys
    violation: tuple[int, int, list[int], str] | None = None  # (walk, initial state, indices, invariant)
    elapsed_s: float = 0.0


def walk_chunk(
    steps: SpecSteps | KernelSteps, p: Plan, first: int, last: int, stop: Callable[[], bool] = lambda: False
) -> Chunk:
    """Walks first..last-1, in order, up to the first that violates an
    invariant (or until `stop()` says so between walks)."""
    started = time.perf_counter()
    if isinstance(steps, KernelSteps):
        out = steps.walk(p, first, last, stop)
    else:
        out = _interpreted_walks(steps, p, first, last, stop)
    out.elapsed_s = time.perf_counter() - started
    return out


def _interpreted_walks(steps: SpecSteps, p: Plan, first: int, last: int, stop: Callable[[], bool]) -> Chunk:
    spec = steps.spec
    out = Chunk(first, coverage=np.zeros(len(p.label_weight), np.int64))
    seen: list[int] = []
    for w in range(first, last):
        if stop():
            break
        rng = Stream(p.seed, w)
        init = int(rng.uniform() * len(steps.inits))
        weight = swarm_weights(rng, p) if p.by == "swarm" else p.label_weight
        state = steps.inits[init]
        out.walks += 1
        out.visited += 1
        seen.append(steps.key(state))
        bad = spec.first_violation(state)
        path: list[int] = []
        while bad is None and len(path) < p.depth:
            succ = spec.labelled_successors(state)  # (name, args, state, label, ...)
            if not succ:
                break
            i = pick(rng.uniform(), [t[3] for t in succ], p, weight)
            if i < 0:
                break
            state = succ[i][2]
            path.append(i)
            out.coverage[succ[i][3]] += 1
            out.visited += 1
            seen.append(steps.key(state))
            bad = spec.first_violation(state)
        if bad is not None:
            out.violation = (w, init, path, bad)
            break
    out.seen = np.unique(np.array(seen, np.uint64))
    return out


class SpecSteps:
    """Walks on the interpreted spec."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.inits = spec.init_states()

    def key(self, state: Any) -> int:
        """A state's fingerprint (64 bits, as the compiled walks' keys)."""
        return fingerprint(self.spec.canonical(state)) & MASK


class KernelSteps:
    """Walks on the compiled kernel: a chunk of walks is one call of a
    compiled loop (WALK_SOURCE) over the kernel's own successors and
    invariant checks."""

    def __init__(self, kernel: Any, spec: Spec):
        from ..kernel.cache import load_module

        self.kernel = k = kernel
        self.checked = spec.checked_invariants()
        self.inits = np.array([kernel.pack(s) for s in spec.init_states()], np.uint64).reshape(-1, k.words)
        self.module = load_module(k.cache_dir, "walk", WALK_SOURCE.replace("GLUE", k.module.__name__))
        most = max(1, sum(len(spec._instances[a]) for a in spec.actions))
        self.buffers = (
            *Candidates.empty(k.words, k.key_words, most).arrays(),
            np.zeros(max(1, k.goal_count), np.uint8),
        )

    def walk(self, p: Plan, first: int, last: int, stop: Callable[[], bool]) -> Chunk:
        k = self.kernel
        labels = len(p.label_weight)
        out = Chunk(first, coverage=np.zeros(labels, np.int64))
        seen_parts = []
        path = np.zeros(p.depth, np.int64)
        weight = np.array(p.label_weight or (0.0,), np.float64)
        action = np.array(p.label_action or (0,), np.int64)
        drawn = np.array(p.drawn or (False,), np.bool_)
        seen = np.zeros((p.depth + 1, k.key_words), np.uint64)  # a walk's keys, copied out after it
        for w in range(first, last):  # one walk a call: a stop request is seen between walks
            if stop():
                break
            res = self.module.walk(
                k.params,
                k.tables,
                self.inits,
                np.uint64(p.seed),
                w,
                p.depth,
                p.uniform,
                p.by != "instance",
                p.by == "swarm",
                SWARM_KEEP,
                drawn,
                weight,
                action,
                *self.buffers,
                seen,
                out.coverage,
                path,
            )
            status, visited, length, which, init = (int(x) for x in res)
            if status < -1:
                raise k.field_error(-2 - status)
            out.walks += 1
            out.visited += visited
            seen_parts.append(seen[:visited].copy())
            if which >= 0:
                out.violation = (w, init, [int(x) for x in path[:length]], self.checked[which])
                break
        keys = np.concatenate(seen_parts) if seen_parts else np.zeros((0, k.key_words), np.uint64)
        # a key of two words counts by both (exact keys of 65..128 bits)
        folded = keys[:, 0] if k.key_words == 1 else keys[:, 0] ^ (keys[:, 1] * np.uint64(GOLDEN))
        out.seen = np.unique(folded)
        return out


# (its first line still names simulate.py, where this code was first written: the
# text names the cached module, and a new text would compile every variant again)
WALK_SOURCE = """# generated by modelcheck.engine.simulate: random walks over a kernel; do not edit
import numpy as np
from numba import njit, uint64, int64
from GLUE import expand, check, keys_of_rows

jit = njit(cache=True, nogil=True)


@jit
def draw(s):
    s = s + uint64(0x9E3779B97F4A7C15)
    z = s
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return s, float(z >> uint64(11)) * (1.0 / 9007199254740992.0)


@jit
def pick(u, n, labels, uniform, by_action, weight, action_of, swarm, base):
    if uniform:
        return int64(u * n)
    w = np.empty(n, np.float64)
    some = False
    for i in range(n):
        w[i] = weight[labels[i]]
        some = some or w[i] > 0
    if swarm and not some:
        for i in range(n):
            w[i] = base[labels[i]]
    if by_action:
        for i in range(n):
            c = 0
            for j in range(n):
                if action_of[labels[j]] == action_of[labels[i]]:
                    c += 1
            w[i] = w[i] / c
    total = 0.0
    for i in range(n):
        total += w[i]
    if total <= 0:
        return -1
    target = u * total
    acc = 0.0
    last = -1
    for i in range(n):
        acc += w[i]
        if w[i] > 0:
            last = i
            if acc > target:
                return i
    return last


@jit
def swarm_weights(s, keep, drawn, base, action_of):
    actions = len(drawn)
    live = np.zeros(actions, np.bool_)
    for label in range(len(base)):
        if base[label] > 0 and drawn[action_of[label]]:
            live[action_of[label]] = True
    any_live = False
    for a in range(actions):
        any_live = any_live or live[a]
    factor = np.zeros(actions, np.float64)
    while True:
        kept = False
        for a in range(actions):
            if not drawn[a]:
                continue
            s, u = draw(s)
            s, v = draw(s)
            factor[a] = v if u < keep else 0.0
            kept = kept or (factor[a] > 0 and live[a])
        if kept or not any_live:
            break
    out = np.empty(len(base), np.float64)
    for label in range(len(base)):
        out[label] = base[label] * factor[action_of[label]]
    return s, out


@jit
def walk(P, C, inits, seed, w, depth, uniform, by_action, swarm, keep, drawn, base, action_of,
         words, keys, parents, index, action, instance, reached, seen, coverage, path):
    \"\"\"One walk: (status, states visited, steps, violated invariant's place or -1, initial state).\"\"\"
    # typed int64, not Literal[int]: the kernel's machine code is cached for int64
    # (the engines' calls); a literal argument would compile the kernel once more
    zero, one = int64(0), int64(1)
    s = seed * uint64(0x9E3779B97F4A7C15) + uint64(w) * uint64(0xD1B54A32D192ED03)
    s, u = draw(s)
    init = int64(u * len(inits))
    weight = base
    if swarm:
        s, weight = swarm_weights(s, keep, drawn, base, action_of)
    row = np.empty((1, inits.shape[1]), np.uint64)
    row[0] = inits[init]
    bad = keys_of_rows(P, C, row, seen[0:1])
    if bad:
        return -2 - bad, 0, 0, -1, init
    visited = 1
    _i, which = check(P, C, row, zero, one)
    steps = 0
    labels = np.empty(len(action), np.int64)
    while which < 0 and steps < depth:
        _rows, n, status = expand(P, C, row, zero, one, words, keys, parents, index, action, instance, zero, reached)
        if status != 0:
            return status, visited, steps, -1, init
        if n == 0:
            break
        for i in range(n):
            labels[i] = action[i]
        s, u = draw(s)
        i = pick(u, n, labels, uniform, by_action, weight, action_of, swarm, base)
        if i < 0:
            break
        row[0] = words[i]
        path[steps] = i
        steps += 1
        coverage[labels[i]] += 1
        seen[visited] = keys[i]
        visited += 1
        _i, which = check(P, C, row, zero, one)
    return 0, visited, steps, which, init
"""


# ---- folding chunks in walk order ------------------------------------------------------


class Fold:
    """Chunks folded in walk order, up to the first with a violation;
    `on_fold`, called after each chunk folded, may raise to end the run
    (simulate.py's memory limit: the distinct keys grow with the walks)."""

    def __init__(self, p: Plan, labels: int, on_fold: Callable[[], None] = lambda: None):
        self.p = p
        self.walks = self.visited = 0
        self.coverage = np.zeros(labels, np.int64)
        self._seen = np.zeros(0, np.uint64)  # distinct keys, sorted
        self._parts: list[np.ndarray] = []  # keys of chunks folded since
        self._unmerged = 0  # keys in _parts
        self.violation: tuple | None = None
        self.pending: dict[int, Chunk] = {}
        self.next = 0  # the first walk of the next chunk to fold
        self.on_fold = on_fold

    def add(self, chunk: Chunk) -> None:
        self.pending[chunk.first] = chunk
        while self.violation is None and self.next in self.pending:
            c = self.pending.pop(self.next)
            self.walks += c.walks
            self.visited += c.visited
            self.coverage += c.coverage
            self._parts.append(c.seen)
            self._unmerged += len(c.seen)
            if self._unmerged > max(1 << 20, len(self._seen)):
                self.distinct()
            self.violation = c.violation
            self.next += CHUNK
            self.on_fold()

    def distinct(self) -> int:
        if self._parts:
            self._seen = np.unique(np.concatenate([self._seen, *self._parts]))
            self._parts, self._unmerged = [], 0
        return len(self._seen)

    @property
    def merge_bytes(self) -> int:
        """What distinct() would allocate now: the keys concatenated, sorted
        and made unique (about three copies)."""
        return 3 * 8 * (len(self._seen) + self._unmerged)

    @property
    def done(self) -> bool:
        return self.violation is not None or self.next >= self.p.walks


def chunks(p: Plan) -> Iterator[tuple[int, int]]:
    """The chunks' (first, last + 1) walks, made as they are taken: --walks
    may be 10^20, and nothing may be held in proportion to it."""
    return ((a, min(a + CHUNK, p.walks)) for a in range(0, p.walks, CHUNK))
