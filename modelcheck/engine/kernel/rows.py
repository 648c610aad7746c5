"""The static part of every kernel's glue: reading and writing a field of
a packed row, and turning a row into its visited-set key. Nothing here
depends on a spec, so it is a real module (linted, unit-tested) that the
generated glue imports; cache.py hashes its text into every kernel's
module name, so changing it recompiles the kernels that inline it."""

from __future__ import annotations

from numba import int64, njit, uint64

from ..kernel_ops import fmix64, hash_words, mix128
from .glue import KEY_FMIX, KEY_HASH128, KEY_MIX128

jit = njit(cache=True, nogil=True)
inlined = njit(cache=True, nogil=True, inline="always")

# A layout table L has a row per slot (an element of a field):
# (word, shift, mask, lo): the slot holds value - lo in bits shift.. of word.


@inlined
def get(L, w, i):
    """Slot i's value in row w."""
    return int64((w[L[i, 0]] >> uint64(L[i, 1])) & uint64(L[i, 2])) + L[i, 3]


@inlined
def put(L, out, i, v):
    """Or value v into slot i of row out (whose slot must be 0); False,
    writing nothing, when v is outside the slot's range."""
    x = v - L[i, 3]
    if x < 0 or x > L[i, 2]:
        return False
    out[L[i, 0]] |= uint64(x) << uint64(L[i, 1])
    return True


@jit
def key(mode, row, out):
    """Row's key into out[0] (and out[1] for the two-word modes)."""
    if mode == KEY_FMIX:
        out[0] = fmix64(row[0])
    elif mode == KEY_MIX128:
        out[0], out[1] = mix128(row[0], row[1])
    else:
        out[0] = hash_words(row, uint64(0))
        if mode == KEY_HASH128:
            out[1] = hash_words(row, uint64(0x452821E638D01377))
