"""Primitives a spec's rules may call, with one meaning in both executions.

The interpreted engines run these definitions as they are; the kernel
(engine/kernel/) swaps each for a compiled twin with the same result
(numba has no int.bit_count, and rebuilds a fixed-length tuple with one
element changed in place). Everything else a rule needs is plain integer
arithmetic and tuple indexing, which both executions share.
"""

from __future__ import annotations


def replace_at(t: tuple, i: int, v: int) -> tuple:
    """`t` with element i set to v (a state's per-process tuples are immutable).
    An index outside the tuple is an error, as TLA+'s EXCEPT outside a
    function's domain is (a slice would quietly make a longer tuple)."""
    if not 0 <= i < len(t):
        raise IndexError(f"replace_at: index {i} outside a tuple of {len(t)}")
    return t[:i] + (v,) + t[i + 1 :]


def popcount(mask: int) -> int:
    """Members of a set held as a bitmask."""
    return mask.bit_count()


def lowest_bit(mask: int) -> int:
    """Index of the lowest set bit (the smallest member); -1 for the empty set."""
    return (mask & -mask).bit_length() - 1
