"""Stable 64-bit state fingerprints.

Python's hash() is salted per process, so it can never identify a state
across runs or processes; a fixed hash of the state's canonical bytes can.
XXH3-64 (seed 0) is a well-mixed 64-bit hash, five times cheaper than the
stdlib's BLAKE2b on the ~200-byte encodings of the Kafka spec, and the
reference engine computes one for every generated successor. Its output is
fixed by the XXH3 specification, so fingerprints are the same on every
machine and version. (The compiled engines key packed states instead:
engine/kernel_ops.py.)
"""

from xxhash import xxh3_64_intdigest


def fingerprint(canonical: bytes) -> int:
    """The 64-bit fingerprint of a state's canonical encoding."""
    return xxh3_64_intdigest(canonical)
