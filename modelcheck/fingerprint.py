"""Stable 64-bit state fingerprints.

Python's hash() is salted per process, so it can never identify a state
across runs or processes; BLAKE2b of the state's canonical bytes can.
"""

from functools import partial
from hashlib import blake2b
from operator import methodcaller

import numpy as np

_hasher = partial(blake2b, digest_size=8)
_digest = methodcaller("digest")


def fingerprint(canonical: bytes) -> int:
    """The 64-bit fingerprint of a state's canonical encoding."""
    return int.from_bytes(blake2b(canonical, digest_size=8).digest(), "little")


def fingerprints(canonicals: list[bytes]) -> np.ndarray:
    """fingerprint() of each, as one uint64 array: the loop runs in C
    (map over builtins), which matters on the fast engine's hot path."""
    return np.frombuffer(b"".join(map(_digest, map(_hasher, canonicals))), dtype="<u8").astype(np.uint64)


def shard_of(fp, shards: int):
    """Owner shard of a fingerprint (an int, or elementwise a uint64 array):
    its top bits, as TLC's MultiFPSet."""
    return (fp >> 32) * shards >> 32
