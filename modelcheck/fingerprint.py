"""Stable 64-bit state fingerprints.

Python's hash() is salted per process, so it can never identify a state
across runs or processes; a fixed hash of the state's canonical bytes can.
XXH3-64 (seed 0) is a well-mixed 64-bit hash, five times cheaper than the
stdlib's BLAKE2b on the ~200-byte encodings of the Kafka spec, and one is
computed for every generated successor. Its output is fixed by the XXH3
specification, so fingerprints are the same on every machine and version.
"""

import numpy as np
from xxhash import xxh3_64_intdigest



def fingerprint(canonical: bytes) -> int:
    """The 64-bit fingerprint of a state's canonical encoding."""
    return xxh3_64_intdigest(canonical)


def fingerprints(canonicals: list[bytes]) -> np.ndarray:
    """fingerprint() of each, as one uint64 array: the loop runs in C (map
    over a builtin), which matters on the fast engine's hot path."""
    return np.fromiter(map(xxh3_64_intdigest, canonicals), dtype=np.uint64, count=len(canonicals))


def shard_of(fp, shards: int):
    """Owner shard of a fingerprint (an int, or elementwise a uint64 array):
    its top bits, as TLC's MultiFPSet."""
    return (fp >> 32) * shards >> 32
