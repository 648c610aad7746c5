"""Compiled twins of modelcheck.ops, and the integer mixing the fast engine
keys states with. Imported by the generated kernel modules (kernel/), so
only where numba is."""

from __future__ import annotations

from numba import njit, uint64
from numba.cpython.unsafe.tuple import tuple_setitem

jit = njit(cache=True, nogil=True)


@jit
def replace_at(t, i, v):
    return tuple_setitem(t, i, v)


@jit
def popcount(mask):
    x = -mask if mask < 0 else mask  # int.bit_count counts |x|
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@jit
def lowest_bit(mask):
    if mask == 0:
        return -1
    i = 0
    while not mask >> i & 1:
        i += 1
    return i


# ---- keys ---------------------------------------------------------------------------
# A state's key in the visited set is its packed representative, mixed by a
# bijection when it fits in one or two words (exact: distinct states, distinct
# keys) or hashed to 64 or 128 bits (a fingerprint) when it does not. Mixing spreads
# the keys, whose top bits say which shard and bucket a key lives in.


@jit
def fmix64(k):
    """MurmurHash3's finaliser: a bijection on 64-bit words that mixes well."""
    k ^= k >> uint64(33)
    k *= uint64(0xFF51AFD7ED558CCD)
    k ^= k >> uint64(33)
    k *= uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> uint64(33)
    return k


@jit
def mix128(a, b):
    """A bijection on pairs of words (three Feistel rounds of fmix64)."""
    a ^= fmix64(b ^ uint64(0x9E3779B97F4A7C15))
    b ^= fmix64(a ^ uint64(0xBF58476D1CE4E5B9))
    a ^= fmix64(b ^ uint64(0x94D049BB133111EB))
    return a, b


@jit
def hash_words(words, seed):
    """A 64-bit fingerprint of a row of words (each word mixed in, then the
    length): deterministic on every machine; two seeds give two
    independent halves of a 128-bit fingerprint."""
    h = uint64(0x243F6A8885A308D3) ^ seed
    for w in words:
        h = fmix64(h ^ fmix64(w ^ uint64(0x13198A2E03707344)))
    return fmix64(h ^ uint64(len(words)))
