"""Breadth-first exploration, level by level.

Invariants are checked on new states only (as TLC); reachability goals
on every step, until each is reached. Because every state of
depth d is found before any of depth d+1, the first violation found has a
shortest trace; the trace is rebuilt from parent fingerprints and
re-validated by replay before it is returned.
"""

from __future__ import annotations

import time
from ..fingerprint import fingerprint
from ..result import CheckResult, collision_probability
from ..spec import Spec
from ..store import DictStore, VisitedStore
from ..trace import rebuild, validate
from .progress import Progress, progress_counts

PROGRESS_EVERY = 4096  # states between progress reports inside a level


def check(spec: Spec, *, store: VisitedStore | None = None,
          progress: Progress | None = None) -> CheckResult:
    """Explore every reachable state of `spec`; stop at the first violation."""
    started = time.perf_counter()
    store = DictStore() if store is None else store
    coverage = dict.fromkeys(spec.coverage_labels, 0)
    labels = spec.coverage_labels
    reached = dict.fromkeys(spec.goals, False)
    open_goals = dict(spec.goals_of)        # action -> its goals not reached yet
    generated = 0
    frontier: list[tuple[int, object]] = []

    def result(invariant: str | None, depth: int, fp: int | None = None) -> CheckResult:
        trace = []
        if invariant is not None:
            trace = rebuild(spec, store, fp)
            validate(spec, trace, invariant)
        # the store keys states by 64-bit fingerprints: TLC's collision estimate
        info = {"state_keys": "fingerprint", "fingerprint_bits": 64,
                "collision_probability": collision_probability(len(store), generated)}
        return CheckResult("holds" if invariant is None else "violated", invariant,
                           len(store), generated, depth, time.perf_counter() - started, coverage, trace,
                           goals=reached if invariant is None else {}, run_info=info)

    for state in spec.init_states():
        generated += 1
        fp = fingerprint(spec.canonical(state))
        if store.put(fp, None):
            bad = spec.first_violation(state)
            if bad:
                return result(bad, 1, fp)
            frontier.append((fp, state))

    depth = 1 if frontier else 0
    while frontier:
        level: list[tuple[int, object]] = []
        for done, (parent_fp, state) in enumerate(frontier):
            for name, _args, nxt, label in spec.labelled_successors(state):
                generated += 1
                coverage[labels[label]] += 1
                if open_goals[name] and spec.reached_goals(name, state, nxt, reached):
                    open_goals = {a: [(g, fn) for g, fn in goals if not reached[g]] for a, goals in open_goals.items()}
                fp = fingerprint(spec.canonical(nxt))
                if store.put(fp, parent_fp):
                    bad = spec.first_violation(nxt)
                    if bad:
                        return result(bad, depth + 1, fp)
                    level.append((fp, nxt))
            if progress and done % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                progress(progress_counts(len(store), generated, depth, len(frontier) - done + len(level), started))
        frontier = level
        if frontier:
            depth += 1
        if progress:
            progress(progress_counts(len(store), generated, depth, len(frontier), started))
    return result(None, depth)
