"""Stable 64-bit state fingerprints.

Python's hash() is salted per process, so it can never identify a state
across runs or processes; BLAKE2b of the state's canonical bytes can.
"""

from hashlib import blake2b


def fingerprint(canonical: bytes) -> int:
    """The 64-bit fingerprint of a state's canonical encoding."""
    return int.from_bytes(blake2b(canonical, digest_size=8).digest(), "little")


def shard_of(fp: int, shards: int) -> int:
    """Owner shard of a fingerprint: its top bits, as TLC's MultiFPSet."""
    return (fp >> 32) * shards >> 32
