"""numba's njit where numba is; without it the same loops run as Python:
slowly, with the same answers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

jit: Callable[[Callable], Callable]
try:
    from numba import njit, uint64

    jit = njit(cache=True, nogil=True)
except ImportError:  # without numba the same loops run as Python: slowly, with the same answers
    uint64 = np.uint64  # type: ignore[assignment]

    def jit(fn: Callable) -> Callable:
        return fn


__all__ = ["jit", "uint64"]
