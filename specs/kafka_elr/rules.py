"""Pure operators of the protocol, each traceable to a KIP sentence.

They take and return plain values (bitmasks of broker ids, logs), so they can
be unit-tested against the KIP text without building whole states.
"""

from __future__ import annotations

from .types import NO_EPOCH, Log, size


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


def common_prefix_len(a: Log, b: Log) -> int:
    """Length of the longest common prefix: where Kafka's leader-epoch based
    truncation leaves a follower whose log diverged from its leader's."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n                # one is a prefix of the other: the usual case
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


def logs_match(logs: tuple[Log, ...]) -> bool:
    """Log matching: two logs with the same entry at an offset agree below it."""
    longest = max(logs, key=len)
    if all(longest[:len(a)] == a for a in logs):
        return True             # every log is a prefix of the longest: the usual case
    for i, a in enumerate(logs):
        for b in logs[i + 1:]:
            k = common_prefix_len(a, b)
            if any(a[x] == b[x] for x in range(k, min(len(a), len(b)))):
                return False
    return True


def last_written_epoch(log: Log) -> int:
    return log[-1][0] if log else NO_EPOCH


def recovery_rank(log: Log) -> tuple[int, int]:
    """KIP-966 unclean recovery: "The one with the highest leader epoch plus
    the longest log end offset will be the new leader" (GetReplicaLogInfo)."""
    return last_written_epoch(log), len(log)


def epoch_start_offset(log: Log, leader_epoch: int) -> int:
    """Offset at which the leader's current epoch starts in its log (its log
    end when it has written nothing in this epoch yet)."""
    for i, (epoch, _record) in enumerate(log):
        if epoch == leader_epoch:
            return i
    return len(log)
