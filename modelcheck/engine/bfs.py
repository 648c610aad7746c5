"""Breadth-first exploration, level by level.

Invariants are checked on new states only (as TLC); reachability goals
on every step, until each is reached. Because every state of
depth d is found before any of depth d+1, the first violation found has a
shortest trace; the trace is rebuilt from parent fingerprints and
re-validated by replay before it is returned.

Level boundaries are the safe points: a stop (a signal, the memory limit)
met inside a level takes back what the level had added, so a checkpoint
always holds whole levels.
"""

from __future__ import annotations

import time

import numpy as np

from ..fingerprint import fingerprint
from ..path import path_of
from ..result import CheckResult, collision_probability, symmetry_info
from ..spec import Spec
from ..store import DictStore
from ..trace import rebuild, validate
from .control import Control, check_identity, out_of_memory, over_memory, spec_source
from .liveness import Recorder, check_properties
from .options import CheckOptions
from .progress import Progress, progress_counts
from .storage.checkpoint import Checkpoints
from .storage.state_json import dump_states, load_states

PROGRESS_EVERY = 4096  # states between progress reports inside a level
POLL_EVERY = 256  # states between looks at stop requests and memory


def check(
    spec: Spec,
    options: CheckOptions | None = None,
    *,
    checkpoints: Checkpoints | None = None,
    progress: Progress | None = None,
    control: Control | None = None,
) -> CheckResult:
    """Explore every reachable state of `spec`; stop at the first violation
    (or as `control` asks), within `options`' memory limit, checkpointing
    into `checkpoints` (resuming from them with `options.local.resume`)."""
    options = options or CheckOptions(engine="bfs")
    return Reference(spec, options, checkpoints, progress, control or Control()).run()


class Reference:
    def __init__(
        self,
        spec: Spec,
        options: CheckOptions,
        checkpoints: Checkpoints | None,
        progress: Progress | None,
        control: Control,
    ):
        self.spec, self.progress, self.control = spec, progress, control
        self.local, self.checkpoints = options.local, checkpoints
        self.started = time.perf_counter()
        self.store = DictStore()
        self.coverage = dict.fromkeys(spec.coverage_labels, 0)
        self.reached = dict.fromkeys(spec.goals, False)
        self.generated = 0
        self.represented = 0  # with symmetry: the states the classes visited hold
        self.depth = 0
        self.identity = options.identity(spec, "bfs", spec_source(spec)) if checkpoints else {}
        # temporal properties: the behaviour graph (states numbered as found: the store's order)
        self.recorder = Recorder(1, self.local.max_memory, self.local.spill_dir) if spec.checked_properties() else None
        self.numbers: dict[int, int] = {}

    def run(self) -> CheckResult:
        with self.control.stop.polling():
            frontier = self.restore() if self.local.resume else self.initial()
            if isinstance(frontier, CheckResult):
                return frontier
            while frontier:
                level = self.level(frontier)
                if isinstance(level, CheckResult):
                    return level
                frontier = level
                if frontier:
                    self.depth += 1
                self.report(len(frontier))
            return self.result(None) if self.recorder is None else self.properties()

    def initial(self) -> list | CheckResult:
        frontier = []
        for state in self.spec.init_states():
            self.generated += 1
            fp = fingerprint(self.spec.canonical(state))
            if self.store.put(fp, None):
                self.represented += self.spec.class_size(state) if self.spec.symmetric else 0
                bad = self.spec.first_violation(state)
                if bad:
                    return self.result(bad, fp, 1)
                frontier.append((fp, state))
        self.depth = 1 if frontier else 0
        self.record(frontier, [])
        return frontier

    def record(self, new: list, transitions: list) -> None:
        """A level's new states and its transitions (source number, target fingerprint, instance)."""
        if self.recorder is None:
            return
        for fp, _state in new:
            self.numbers[fp] = len(self.numbers)
        if transitions:
            src, dst, inst = zip(*transitions)
            self.recorder.add_transitions(
                np.array(src, np.uint32), np.array(dst, np.uint64).reshape(-1, 1), np.array(inst, np.uint16)
            )
        self.recorder.add_states(
            np.array([fp for fp, _s in new], np.uint64).reshape(-1, 1),
            np.array([self.spec.property_labels(s) for _fp, s in new], np.uint64),
        )

    def level(self, frontier: list) -> list | CheckResult:
        """The new states of the next level, or the result of a violation."""
        spec, labels, coverage, reached = self.spec, self.spec.coverage_labels, self.coverage, self.reached
        before = (self.generated, dict(coverage), dict(reached))
        open_goals = {a: [(g, fn) for g, fn in goals if not reached[g]] for a, goals in spec.goals_of.items()}
        level: list = []
        transitions: list = []
        recording = self.recorder is not None
        for done, (parent_fp, state) in enumerate(frontier):
            if done % POLL_EVERY == 0:
                self.safe_point(frontier, level, before)
            source = self.numbers[parent_fp] if recording else 0
            for name, _args, nxt, label, instance in spec.labelled_successors(state):
                self.generated += 1
                coverage[labels[label]] += 1
                if open_goals[name] and spec.reached_goals(name, state, nxt, reached):
                    open_goals = {a: [(g, fn) for g, fn in goals if not reached[g]] for a, goals in open_goals.items()}
                fp = fingerprint(spec.canonical(nxt))
                if recording:
                    transitions.append((source, fp, instance))
                if self.store.put(fp, parent_fp):
                    self.represented += spec.class_size(nxt) if spec.symmetric else 0
                    bad = spec.first_violation(nxt)
                    if bad:
                        return self.result(bad, fp, self.depth + 1)
                    level.append((fp, nxt))
            if done % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                self.report(len(frontier) - done + len(level))
        self.record(level, transitions)
        return level

    def report(self, queue: int) -> None:
        if self.progress:
            self.progress(progress_counts(len(self.store), self.generated, self.depth, queue, self.started))

    # ---- safe points ----------------------------------------------------------------
    def safe_point(self, frontier: list, level: list, before: tuple) -> None:
        """Inside a level: on a stop request or past the memory limit, take
        the level back to its start, checkpoint, and stop; at its start,
        checkpoint when one is due."""
        c, checkpoints, limit = self.control, self.checkpoints, self.local.max_memory
        if not (c.stop.asked or over_memory(limit)):
            if not level and checkpoints and checkpoints.due():
                self.checkpoint(frontier)
            return
        self.store.forget(fp for fp, _state in level)
        self.generated, coverage, reached = before
        self.coverage.update(coverage)
        self.reached.update(reached)
        if checkpoints:
            self.checkpoint(frontier)
        counts = {
            "distinct": len(self.store),
            "generated": self.generated,
            "depth": self.depth,
            "elapsed_s": time.perf_counter() - self.started,
            "checkpoint": str(checkpoints.dir) if checkpoints else None,
        }
        raise (
            c.stop.stopped(**counts)
            if c.stop.asked
            else out_of_memory(limit, checkpoints, "the reference engine's states", **counts)
        )

    def checkpoint(self, frontier: list) -> None:
        fps, parents = self.store.arrays()
        state = {
            "identity": self.identity,
            "depth": self.depth,
            "generated": self.generated,
            "represented": self.represented,
            "coverage": self.coverage,
            "reached": self.reached,
            "elapsed_s": time.perf_counter() - self.started,
        }
        arrays: dict[str, np.ndarray | list[np.ndarray]] = {
            "fps": fps,
            "parents": parents,
            "frontier": np.frombuffer(dump_states(self.spec, frontier), np.uint8),
        }
        if self.recorder is not None:
            arrays.update(
                {
                    f"graph-{name}": parts or [np.empty((0, 1) if name in ("keys", "targets") else 0, np.uint64)]
                    for name, parts in self.recorder.arrays().items()
                }
            )
        assert self.checkpoints is not None, "saved only where checkpoints are written"
        self.checkpoints.save(state, arrays)

    def restore(self) -> list:
        checkpoints = self.checkpoints
        assert checkpoints is not None, "restored only from a checkpoint"
        state, arrays = checkpoints.load()
        check_identity(state["identity"], self.identity, str(checkpoints.dir))
        self.store = DictStore.from_arrays(arrays["fps"], arrays["parents"])
        if self.recorder is not None:
            self.recorder.load({name: [arrays[f"graph-{name}"]] for name in self.recorder.arrays()})
            self.numbers = {fp: i for i, fp in enumerate(arrays["fps"].tolist())}
        self.depth, self.generated, self.represented = state["depth"], state["generated"], state["represented"]
        self.coverage.update(state["coverage"])
        self.reached.update(state["reached"])
        self.started = time.perf_counter() - state["elapsed_s"]
        where = f"{arrays.where}: {arrays.info('frontier')['file']}"
        return load_states(self.spec, arrays["frontier"].tobytes(), where)

    # ---- the result -----------------------------------------------------------------
    def properties(self) -> CheckResult:
        """Every invariant holds: now the temporal properties, on the graph recorded."""
        initial: list = []
        for state in self.spec.init_states():
            if not any(self.spec.canonical(s) == self.spec.canonical(state) for s in initial):
                initial.append(state)
        assert self.recorder is not None, "properties are checked on the graph recorded"
        info: dict = {}
        found, counts = check_properties(
            self.spec,
            self.recorder,
            initial,
            lambda s: np.array([fingerprint(self.spec.canonical(s))], np.uint64),
            info,
        )
        result = self.result(None)
        result.run_info.update(info)
        if found is not None:
            result.verdict, result.invariant, result.trace, result.goals = "violated", found[0], found[1], {}
            result.loop = found[2]
        result.triggers = counts
        return result

    def result(self, invariant: str | None, fp: int | None = None, depth: int | None = None) -> CheckResult:
        trace, path = [], None
        if invariant is not None:
            assert fp is not None, "a violation names its state"
            trace = rebuild(self.spec, self.store, fp)
            validate(self.spec, trace, invariant)
            path = path_of(self.spec, trace)
        # the store keys states by 64-bit fingerprints: TLC's collision estimate
        info = {
            "state_keys": "fingerprint",
            "fingerprint_bits": 64,
            "collision_probability": collision_probability(len(self.store), self.generated),
        }
        if self.spec.symmetric:
            info["symmetry"] = symmetry_info(len(self.store), self.represented)
        info.update(kernel="interpreted", state_bits=None)  # the keys the compiled engine gives, as this one has them
        if self.local.max_memory is not None:  # it holds whole levels in memory: each a segment, never spilled
            info.update(memory_limit=self.local.max_memory, spilled=False, segments=self.depth, visited_flushes=0)
        return CheckResult(
            "holds" if invariant is None else "violated",
            invariant,
            len(self.store),
            self.generated,
            self.depth if depth is None else depth,
            time.perf_counter() - self.started,
            self.coverage,
            trace,
            goals=self.reached if invariant is None else {},
            run_info=info,
            path=path,
        )
