"""Pure operators of the protocol, each traceable to a KIP sentence.

They take and return plain values (bitmasks of broker ids, packed logs), so
they can be unit-tested against the KIP text without building whole states.
"""

from __future__ import annotations

from . import logs
from .types import NO_EPOCH, size


def update_elr(isr: int, elr: int, proposed: int, min_isr: int) -> tuple[int, int, bool]:
    """KIP-966 "ELR update will take a proposed ISR": returns (new ISR, new
    ELR, whether LastKnownELR is cleaned).

    1. proposed ISR >= min ISR: take it and empty the ELR (LastKnownELR "will
       be cleaned when ISR reaches the min ISR").
    2. otherwise retain the ELR, add (current ISR - proposed ISR), and drop
       members that are in both ISR and ELR.
    """
    if size(proposed) >= min_isr:
        return proposed, 0, True
    return proposed, (elr | (isr & ~proposed)) & ~proposed, False


def registration_is_clean(previous_broker_epoch: int, registered_epoch: int) -> bool:
    """KIP-966 "Detection of an unclean shutdown": the broker sends the epoch
    from its CleanShutdownFile (-1 if none); it is a clean shutdown iff that
    equals the epoch of its registration record."""
    return previous_broker_epoch != NO_EPOCH and previous_broker_epoch == registered_epoch


def clean_candidates(isr: int, elr: int, fenced: int) -> int:
    """KIP-966 election order, clean part: "If there are other ISR members,
    choose an ISR member. If there are unfenced ELR members, choose an ELR
    member." Returns the candidates of the first non-empty tier."""
    live_isr = isr & ~fenced
    return live_isr if live_isr else elr & ~fenced


def logs_match(all_logs: tuple[int, ...]) -> bool:
    """Log matching: two logs with the same entry at an offset agree below it."""
    n = len(all_logs)
    for i in range(n):
        for j in range(i + 1, n):
            a, b = all_logs[i], all_logs[j]
            for x in range(logs.common_prefix_len(a, b), min(logs.length(a), logs.length(b))):
                if logs.at(a, x) == logs.at(b, x):
                    return False
    return True


def recovery_rank(log: int) -> tuple[int, int]:
    """KIP-966 unclean recovery: "The one with the highest leader epoch plus
    the longest log end offset will be the new leader" (GetReplicaLogInfo)."""
    return logs.last_epoch(log, NO_EPOCH), logs.length(log)


def epoch_start_offset(log: int, leader_epoch: int) -> int:
    """Offset at which the leader's current epoch starts in its log (its log
    end when it has written nothing in this epoch yet)."""
    n = logs.length(log)
    for i in range(n):
        if logs.epoch_of(logs.at(log, i)) == leader_epoch:
            return i
    return n
