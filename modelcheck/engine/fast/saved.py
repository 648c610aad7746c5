"""Saving and restoring the fast search: at a safe point, each structure
gives what a checkpoint holds of it (the cursor, the visited shards, the
parent links, the behaviour graph) and the checkpoint writes them as one
transaction (storage/checkpoint.py); a resume gives each back its own."""

from __future__ import annotations

import time
from functools import cached_property

import numpy as np

from ...lifetime import Stopped
from ..control import check_identity, out_of_memory
from ..storage.visited import restored_shards, saved_shards
from .memory import MemoryPolicy
from .state import Cursor


class Saved(MemoryPolicy):
    """Safe points: a checkpoint when due, a stop when asked or out of memory, a resume."""

    def safe_point(self, cur: Cursor) -> None:
        """Between segments: checkpoint when one is due, stop when asked."""
        stop, checkpoints = self.control.stop, self.checkpoints
        if stop.asked:
            if checkpoints and self.progress:  # on a large level this takes a while: say why it has not ended
                self.progress({"note": "stopping: writing a checkpoint (a second signal exits at once, without it)"})
            self.resolve(cur)
            if checkpoints:
                self.checkpoint(cur)
            raise stop.stopped(**self.counts(cur))
        if checkpoints and checkpoints.due():
            self.resolve(cur)
            self.checkpoint(cur)

    def memory_stop(self, cur: Cursor, what: str) -> Stopped:
        self.resolve(cur)
        if self.checkpoints:
            self.checkpoint(cur)
        return out_of_memory(self.local.max_memory, self.checkpoints, what, **self.counts(cur))

    def counts(self, cur: Cursor) -> dict:
        return {
            "distinct": self.distinct,
            "generated": self.generated,
            "depth": cur.depth,
            "elapsed_s": time.perf_counter() - self.started,
            "checkpoint": str(self.checkpoints.dir) if self.checkpoints else None,
        }

    @cached_property
    def identity(self) -> dict:
        k = self.kernel
        return self.options.identity(
            self.spec, "fast", k.source["spec"] + k.source["glue"] + f"\nkeys {k.key_words} {k.fingerprint_bits}"
        )

    def checkpoint(self, cur: Cursor) -> None:
        buckets, sizes = saved_shards(self.shards)
        place, arrays = cur.saved(self.kernel.words)
        state = {
            "identity": self.identity,
            **place,
            "levels": len(self.links),
            "distinct": self.distinct,
            "generated": self.generated,
            "represented": self.represented,
            "coverage": self.coverage.tolist(),
            "reached": self.reached.tolist(),
            "elapsed_s": time.perf_counter() - self.started,
            "workers": self.workers,
            "bucket_sizes": sizes,
            "per_row": self.per_row,
            "fingerprint_bits": self.kernel.fingerprint_bits,
        }
        fixed = {f"links-{d}": x for d, x in enumerate(self.links)}
        if self.recorder is not None:  # its arrays never change once made: each is written once
            state["recorded"], graph = self.recorder.saved()
            fixed.update(graph)
        assert self.checkpoints is not None, "saved only where checkpoints are written"
        self.checkpoints.save(
            state,
            {"visited": buckets or [np.empty((0, self.kernel.key_words), np.uint64)], **arrays},
            fixed=fixed,
        )

    def restore(self) -> Cursor:
        checkpoints = self.checkpoints
        assert checkpoints is not None, "restored only from a checkpoint"
        state, arrays = checkpoints.load()
        check_identity(state["identity"], self.identity, str(checkpoints.dir))
        keys = arrays["visited"]
        # a visited set that would take much of the memory limit is resumed on disk, as it was left
        big = self.visited_on_disk(keys.nbytes)
        self.shards = restored_shards(
            keys, state["bucket_sizes"], state["workers"], self.workers, self.local.spill_dir, on_disk=big
        )
        self.deferred = big and self.recorder is None
        self.links = [arrays[f"links-{d}"] for d in range(state["levels"])]
        if self.recorder is not None:
            self.recorder.restore(state["recorded"], arrays)
        self.distinct, self.generated, self.represented = state["distinct"], state["generated"], state["represented"]
        self.coverage = np.array(state["coverage"], dtype=np.int64)
        self.reached = np.array(state["reached"], dtype=np.uint8)
        self.per_row = state["per_row"]
        self.started = time.perf_counter() - state["elapsed_s"]
        return Cursor.restored(state, arrays)
