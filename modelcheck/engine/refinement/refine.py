"""Refinement checking: is every behaviour of an implementation spec,
read through a mapping, a behaviour of an abstract spec (with stuttering)?

The implementation's reachable states are explored breadth-first, as the
reference engine does. Each step s -> t is checked, not each state: its
image image(s) -> image(t) must be a stutter (equal images) or one of the
abstract spec's successors of image(s), which the abstract spec computes
on the image itself (an image need not be reachable in the abstract
spec's own search: its successors are a function of the state). The image
of every initial state must be an initial state of the abstract spec.

Steps are checked in BFS order of their source state, so the first step
that fails ends a shortest trace of the implementation. It is rebuilt from
parent fingerprints and replayed (`replay`) before it is returned: every
step enabled in the implementation, every earlier image allowed, the last
one not.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...fingerprint import fingerprint
from ...refinement import Image
from ...result import Step
from ...spec import Spec
from ...store import DictStore
from ...trace import TraceError, apply_step, rebuild
from ..control import Control
from ..progress import Progress, progress_counts

POLL_EVERY = 256  # states between looks at a stop request
CLOSEST = 3  # abstract steps shown beside a failing one


@dataclass(frozen=True)
class Near:
    """An abstract step from the failing step's source image: its action
    and arguments (None for an initial state), its state, and the
    variables where it differs from the image of the step's target."""

    action: str | None
    args: dict[str, Any]
    state: Any
    differs: tuple[str, ...]


@dataclass
class RefinementResult:
    verdict: str  # "holds" or "violated"
    states: int  # distinct implementation states explored
    transitions: int  # implementation steps checked
    stutters: int  # of which the image did not change
    depth: int  # BFS levels of the implementation, the initial states being level 1
    elapsed_s: float
    mapping: str
    trace: list[Step] = field(default_factory=list)  # the implementation's, ending in the step not allowed
    images: list[Any] = field(default_factory=list)  # each step's abstract image
    closest: list[Near] = field(default_factory=list)
    # per step after the first: (whether its image stutters, the abstract steps that make it)
    matched: list[tuple[bool, list[tuple[str, dict[str, Any]]]]] = field(default_factory=list)
    run_info: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"


def differing(a: Any, b: Any) -> tuple[str, ...]:
    return tuple(v for v, x, y in zip(a._fields, a, b) if x != y)


def closest(steps: Sequence[tuple[str | None, dict[str, Any], Any]], target: Any) -> list[Near]:
    """The CLOSEST steps whose state differs from `target` in the fewest
    variables (ties in the abstract spec's order)."""
    near = [Near(name, args, state, differing(state, target)) for name, args, state in steps]
    return sorted(near, key=lambda n: len(n.differs))[:CLOSEST]


class Refines:
    """One refinement check of `impl` against `abstract` through `image`."""

    def __init__(self, image: Image, progress: Progress | None, control: Control):
        self.impl, self.abstract, self.image = image.impl, image.abstract, image
        self.progress, self.control = progress, control
        self.store = DictStore()
        self.started = time.perf_counter()
        self.transitions = self.stutters = self.depth = 0

    def run(self) -> RefinementResult:
        impl, abstract, canon = self.impl, self.abstract, self.abstract.canonical
        initial = {canon(s) for s in abstract.init_states()}
        frontier = []
        for state in impl.init_states():
            fp = fingerprint(impl.canonical(state))
            if not self.store.put(fp, None):
                continue
            if canon(self.image.of(state)) not in initial:
                return self.failed([Step(None, {}, state)])
            frontier.append((fp, state))
        self.depth = 1 if frontier else 0
        with self.control.stop.polling():
            while frontier:
                level = self.level(frontier)
                if isinstance(level, RefinementResult):
                    return level
                frontier = level
                self.depth += bool(frontier)
                self.report(len(frontier))
        return self.result("holds")

    def level(self, frontier: list) -> list | RefinementResult:
        impl, abstract, canon, of = self.impl, self.abstract, self.abstract.canonical, self.image.of
        new: list = []
        for done, (fp, state) in enumerate(frontier):
            if done % POLL_EVERY == 0:
                self.poll()
            source = of(state)
            here = canon(source)
            allowed = None  # the abstract successors of the image, computed when a step changes it
            for name, args, nxt in impl.successors(state):
                self.transitions += 1
                key = canon(of(nxt))
                if key == here:
                    self.stutters += 1
                else:
                    if allowed is None:
                        allowed = {canon(t) for _n, _a, t in abstract.successors(source)}
                    if key not in allowed:
                        return self.failed([*rebuild(impl, self.store, fp), Step(name, args, nxt)])
                child = fingerprint(impl.canonical(nxt))
                if self.store.put(child, fp):
                    new.append((child, nxt))
        return new

    def poll(self) -> None:
        stop = self.control.stop
        if stop.asked:
            raise stop.stopped(
                distinct=len(self.store),
                generated=self.transitions,
                depth=self.depth,
                elapsed_s=time.perf_counter() - self.started,
                checkpoint=None,
            )

    def report(self, queue: int) -> None:
        if self.progress:
            self.progress(progress_counts(len(self.store), self.transitions, self.depth, queue, self.started))

    def failed(self, trace: list[Step]) -> RefinementResult:
        replay(self.impl, self.abstract, self.image, trace)
        result = self.result("violated")
        explain(self.image, trace, result)
        return result

    def result(self, verdict: str) -> RefinementResult:
        return RefinementResult(
            verdict,
            len(self.store),
            self.transitions,
            self.stutters,
            self.depth,
            time.perf_counter() - self.started,
            self.image.mapping.name,
            run_info={"kernel": "interpreted"},
        )


def explain(image: Image, trace: list[Step], result: RefinementResult) -> None:
    """Fill in `result`'s account of a failing `trace` (one `replay` accepts):
    each step's image, how the abstract spec reads each step, and the
    abstract steps (or initial states) closest to the image that fails."""
    abstract = image.abstract
    result.trace, result.images = trace, [image.of(s.state) for s in trace]
    result.matched = [as_abstract(abstract, a, b) for a, b in zip(result.images, result.images[1:])]
    if len(trace) == 1:
        options: Sequence[tuple[str | None, dict[str, Any], Any]] = [(None, {}, s) for s in abstract.init_states()]
    else:
        options = abstract.successors(result.images[-2])
    result.closest = closest(options, result.images[-1])
    result.depth = len(trace)


def explained(image: Image, trace: list[Step]) -> RefinementResult:
    """A failing trace read back (from a trace file): replayed, then explained;
    TraceError if it is not a behaviour of the implementation whose last
    step, and only that one, the abstract spec does not allow."""
    replay(image.impl, image.abstract, image, trace)
    result = RefinementResult("violated", 0, 0, 0, 0, 0.0, image.mapping.name)
    explain(image, trace, result)
    return result


def check(image: Image, progress: Progress | None = None, control: Control | None = None) -> RefinementResult:
    """Whether `image.impl` refines `image.abstract` under the mapping, with
    a shortest failing trace if not."""
    return Refines(image, progress, control or Control()).run()


def as_abstract(abstract: Spec, before: Any, after: Any) -> tuple[bool, list[tuple[str, dict[str, Any]]]]:
    """Whether the abstract step before -> after is a stutter, and the abstract spec's steps that make it."""
    canon = abstract.canonical
    return canon(before) == canon(after), [
        (n, a) for n, a, t in abstract.successors(before) if canon(t) == canon(after)
    ]


def allowed(abstract: Spec, before: Any, after: Any) -> bool:
    """Whether the abstract step before -> after is a stutter or one of the abstract spec's steps."""
    stutter, steps = as_abstract(abstract, before, after)
    return stutter or bool(steps)


def replay(impl: Spec, abstract: Spec, image: Image, trace: list[Step]) -> None:
    """Raise TraceError unless `trace` is a behaviour of `impl` whose image
    is allowed by `abstract` up to its last step, and not at its last step
    (or, for a trace of one state, whose initial image is not initial)."""
    canon = impl.canonical
    if not any(canon(s) == canon(trace[0].state) for s in impl.init_states()):
        raise TraceError("replay: the first state is not initial")
    initial = [abstract.canonical(s) for s in abstract.init_states()]
    image_is_initial = abstract.canonical(image.of(trace[0].state)) in initial
    if len(trace) == 1:
        if image_is_initial:
            raise TraceError("replay: the initial state's image is an initial state of the abstract spec")
        return
    if not image_is_initial:
        raise TraceError("replay: the initial state's image is not initial, yet the trace goes on")
    for i in range(1, len(trace)):
        before, step = trace[i - 1].state, trace[i]
        assert step.action is not None, "every step after the first has an action"
        if not any(
            a == step.args and canon(t) == canon(step.state)
            for a, t in apply_step(impl, before, step.action, step.args)
        ):
            raise TraceError(f"replay: step {i} {step.action}{step.args} is not enabled")
        ok = allowed(abstract, image.of(before), image.of(step.state))
        if ok != (i < len(trace) - 1):
            raise TraceError(f"replay: the image of step {i} is {'allowed' if ok else 'not allowed'}")
