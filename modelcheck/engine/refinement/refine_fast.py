"""The refinement check on the compiled kernels of both specs: what
refine.py does state by state, a BFS level at a time.

Each level's frontier is expanded by the implementation's kernel (its
steps) and its images by the abstract spec's kernel (the steps the
abstract spec allows from each image). A step is allowed when its
target's image is its source's (a stutter) or is among the abstract
successors of the source's image: the pairs (source, key of the image)
are compared as rows, sorted, never one by one. Where the mapping is the
identity and both specs pack states alike, images are the packed rows
themselves; otherwise each distinct state is unpacked, mapped by the
mapping (Python) and packed for the abstract kernel.

Frontier rows are in the reference engine's order, and so are their
successors, so the first step that fails, the first in that order on the
shallowest level, is the one refine.py finds. Its trace is rebuilt from
successor indices through the interpreted specs and replayed (refine.replay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...refinement import Image
from ...result import Step
from ..control import Control
from ..progress import Progress, progress_counts
from ..storage import batch
from ..storage.visited import Visited
from .refine import RefinementResult, Refines
from .refine import check as interpreted


def _pairs(parents: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(parent, key words) rows as one comparable value a row."""
    rows = np.ascontiguousarray(np.column_stack([parents.astype(np.uint64), keys]))
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


class CompiledRefines(Refines):
    """refine.Refines on kernels: the same result, the same first failure."""

    def __init__(self, image: Image, kernels: tuple[Any, Any], progress: Progress | None, control: Control):
        super().__init__(image, progress, control)
        self.k, self.ka = kernels
        mapping = image.mapping
        self.same_rows = (
            not mapping.constant and not mapping.computed and image.impl.layout() == image.abstract.layout()
        )
        self.seen = Visited(self.k.key_words)
        self.links: list[tuple[np.ndarray, np.ndarray]] = []  # per level: each state's parent row and successor index
        self.distinct = 0

    def images(self, rows: np.ndarray) -> np.ndarray:
        """The abstract spec's packed image of each packed implementation row."""
        if self.same_rows:
            return rows
        out = np.empty((len(rows), self.ka.words), np.uint64)
        make = self.impl.state_type
        for i, row in enumerate(rows):
            out[i] = self.ka.pack(self.image.of(make(*self.k.unpack(row))))
        return out

    def run(self) -> RefinementResult:
        impl, abstract = self.impl, self.abstract
        inits = impl.init_states()
        rows = np.array([self.k.pack(s) for s in inits], np.uint64).reshape(-1, self.k.words)
        new = np.flatnonzero(self.seen.insert_new(self.k.keys(rows)))
        rows, self.inits = rows[new], [inits[i] for i in new]
        initial = self.ka.keys(np.array([self.ka.pack(s) for s in abstract.init_states()], np.uint64))
        mine = self.ka.keys(self.images(rows))
        for i, key in enumerate(mine):
            if not (initial == key).all(axis=1).any():
                self.distinct = i + 1  # as refine.py counts: the initial states up to this one
                return self.failed([Step(None, {}, self.inits[i])])
        self.distinct, self.depth = len(rows), 1 if len(rows) else 0
        with self.control.stop.polling():
            while len(rows):
                self.poll()
                found = self.expand_level(rows)
                if isinstance(found, RefinementResult):
                    return found
                rows = found
                self.depth += bool(len(rows))
                if self.progress:
                    self.progress(progress_counts(self.distinct, self.transitions, self.depth, len(rows), self.started))
        result = self.result("holds")
        result.states = self.distinct
        return result

    def poll(self) -> None:
        stop = self.control.stop
        if stop.asked:
            raise stop.stopped(
                distinct=self.distinct,
                generated=self.transitions,
                depth=self.depth,
                elapsed_s=time.perf_counter() - self.started,
                checkpoint=None,
            )

    def expand_level(self, rows: np.ndarray) -> np.ndarray | RefinementResult:
        steps = batch.expand(self.k, rows, 0, len(rows))
        source_images = self.images(rows)
        allowed = batch.expand(self.ka, source_images, 0, len(rows))
        keys = self.k.keys(steps.words)
        _unique, first, back = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        target_keys = self.ka.keys(self.images(steps.words[first]))[back.ravel()]
        source_keys = self.ka.keys(source_images)
        stutter = (target_keys == source_keys[steps.parents]).all(axis=1)
        ok = stutter | np.isin(_pairs(steps.parents, target_keys), _pairs(allowed.parents, self.ka.keys(allowed.words)))
        bad = np.flatnonzero(~ok)
        if len(bad):  # counted as refine.py counts: the steps up to the failing one, the states they reached
            at = int(bad[0])
            self.transitions += at + 1
            self.stutters += int(stutter[:at].sum())
            self.distinct += int(self.seen.insert_new(keys[:at]).sum())
            return self.failed_at(int(steps.parents[at]), int(steps.index[at]))
        self.transitions += len(steps)
        self.stutters += int(stutter.sum())
        new = np.flatnonzero(self.seen.insert_new(keys))
        self.links.append((steps.parents[new], steps.index[new]))
        self.distinct += len(new)
        return steps.words[new]

    def failed_at(self, parent: int, index: int) -> RefinementResult:
        """The failure of the `index`-th step from frontier row `parent`: the
        path to that row from the parent links, replayed interpreted."""
        path = [index]
        at = parent
        for parents, indices in reversed(self.links):
            path.append(int(indices[at]))
            at = int(parents[at])
        state = self.inits[at]
        trace = [Step(None, {}, state)]
        for i in reversed(path):
            name, args, state = self.impl.successors(state)[i]
            trace.append(Step(name, args, state))
        return self.failed(trace)

    def result(self, verdict: str) -> RefinementResult:
        result = super().result(verdict)
        result.states = self.distinct
        result.run_info = batch.run_info(self.k, self.distinct, self.transitions)
        return result


def check(
    image: Image, kernels: tuple[Any, Any], progress: Progress | None = None, control: Control | None = None
) -> RefinementResult:
    """refine.check on the specs' compiled kernels (impl's, abstract's)."""
    return CompiledRefines(image, kernels, progress, control or Control()).run()


def run(
    image: Image,
    engine: str = "fast",
    progress: Progress | None = None,
    control: Control | None = None,
    note: Callable[[str], None] = lambda text: None,
) -> RefinementResult:
    """The refinement check on the engine named: `fast`, on both specs'
    compiled kernels (compiled now if need be), or the interpreted one
    where a kernel cannot be had (run_info["kernel"] says why); `bfs`,
    interpreted (the reference)."""
    if engine == "bfs":
        return interpreted(image, progress, control)
    from ..kernel import KernelUnavailable, kernel_for

    try:
        kernels = (kernel_for(image.impl, note), kernel_for(image.abstract, note))
    except (KernelUnavailable, NotImplementedError) as e:  # NotImplementedError: a spec without a layout
        result = interpreted(image, progress, control)
        result.run_info["kernel"] = f"interpreted: {e}"
        return result
    return check(image, kernels, progress, control)
