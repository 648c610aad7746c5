"""Arrays moved out of memory: written to a file that has no name (Linux's
O_TMPFILE, so nothing is left behind however the process ends) and mapped
back. The values stay the same and the kernel reads them as before, but
their pages are file pages the OS may drop and read again, not anonymous
memory counted against the run's limit."""

from __future__ import annotations

import mmap
import tempfile
from typing import Any

import numpy as np


def raw(a: np.ndarray) -> np.ndarray:
    """An array's bytes, in order, as a flat uint8 array (no copy if contiguous)."""
    return np.ascontiguousarray(a).view(np.uint8).reshape(-1)


def on_disk(a: Any) -> bool:
    """Whether an array's memory is a mapped file (through any views of it)."""
    while isinstance(a, (np.ndarray, memoryview)):
        a = a.base if isinstance(a, np.ndarray) else a.obj
    return isinstance(a, mmap.mmap)


def to_disk(parts: list[np.ndarray] | np.ndarray, directory: str | None, empty: np.ndarray | None = None) -> np.ndarray:
    """One array of `parts` (one after the other) backed by a nameless file
    in `directory` (default: the temp dir); `empty` gives the dtype and row
    shape when there are no rows."""
    parts = parts if isinstance(parts, list) else [parts]
    like = parts[0] if parts else empty
    assert like is not None, "no parts, and no empty array to say their shape"
    rows = sum(len(p) for p in parts)
    if len(parts) == 1 and on_disk(parts[0]):
        return parts[0]
    size = rows * like.dtype.itemsize * int(np.prod(like.shape[1:], dtype=np.int64))
    if size == 0:
        return np.empty((0, *like.shape[1:]), like.dtype)
    with tempfile.TemporaryFile(dir=directory) as f:
        for p in parts:
            if len(p):
                f.write(raw(p).data)
        f.flush()
        buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_WRITE)
    return np.frombuffer(buf, like.dtype).reshape((rows, *like.shape[1:]))


def blank_on_disk(shape: tuple[int, ...], dtype: np.dtype, directory: str | None) -> np.ndarray:
    """A writable array of `shape`, zeros, backed by a nameless file in
    `directory`: for workers to fill in place, each its own slice."""
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size == 0:
        return np.empty(shape, dtype)
    with tempfile.TemporaryFile(dir=directory) as f:
        f.truncate(size)
        buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_WRITE)
    return np.frombuffer(buf, dtype).reshape(shape)
