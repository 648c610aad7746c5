"""Brute force for the symmetry tests: every reachable state, and the class
of a state under renaming the brokers (what --symmetry must identify).
`rename` is the oracle: written here from MODEL.md's meaning of each
variable, sharing nothing with the spec's `permute` or its VARIABLES table."""

from __future__ import annotations

from itertools import permutations

from specs.kafka_elr.types import State

# how each variable holds brokers (MODEL.md; pending_epochs: each proposed
# member's broker epoch, a per-broker tuple); every field is listed once
BROKER_ID = {"leader", "last_known_leader", "pending_from"}
BROKER_SET = {
    "isr",
    "elr",
    "last_known_elr",
    "fenced",
    "replicas",
    "adding",
    "removing",
    "listed_last",
    "in_controlled_shutdown",
}
PER_BROKER = {
    "broker_epoch",
    "status",
    "clean_shutdown_epoch",
    "log",
    "hwm",
    "pending_epochs",
    "seen_epoch",
    "seen_min_isr",
    "software",
}
PER_BROKER_ID = {"seen_leader"}
PER_BROKER_SET = {"seen_isr"}
OPTIONAL_SET = {"pending_isr"}  # -1: no proposal
NO_BROKER = {
    "leader_epoch",
    "leader_recovery",
    "min_isr",
    "pending_stale",
    "acked",
    "acks_all",
    "exposed",
    "produced",
    "unclean_shutdowns",
    "clean_shutdowns",
    "fences",
    "isr_shrinks",
    "min_isr_changes",
    "admin_elections",
    "unclean_election",
    "unclean_switches",
    "reassignments",
    "below_min_isr_reassigned",
    "metadata_version",
    "elr_version",
    "version_changes",
    "software_changes",
    "crashed_without_elr",
}
KINDS = (BROKER_ID, BROKER_SET, PER_BROKER, PER_BROKER_ID, PER_BROKER_SET, OPTIONAL_SET, NO_BROKER)


def rename(state: State, to: tuple[int, ...]) -> State:
    """`state` with broker b called to[b], variable by variable."""
    assert sorted(f for kind in KINDS for f in kind) == sorted(State._fields), "a variable the oracle does not know"

    def broker(b: int) -> int:
        return -1 if b == -1 else to[b]

    def brokers(mask: int) -> int:
        return sum(1 << to[b] for b in range(len(to)) if mask >> b & 1)

    def reindexed(values: tuple, rename=lambda v: v) -> tuple:
        out = [None] * len(values)
        for b, v in enumerate(values):
            out[to[b]] = rename(v)
        return tuple(out)

    fields = state._asdict()
    for name, value in fields.items():
        if name in BROKER_ID:
            fields[name] = broker(value)
        elif name in BROKER_SET:
            fields[name] = brokers(value)
        elif name in OPTIONAL_SET:
            fields[name] = value if value == -1 else brokers(value)
        elif name in PER_BROKER:
            fields[name] = reindexed(value)
        elif name in PER_BROKER_ID:
            fields[name] = reindexed(value, broker)
        elif name in PER_BROKER_SET:
            fields[name] = reindexed(value, brokers)
    return State(**fields)


def reachable(spec, renamed: bool = False) -> dict[bytes, object]:
    """Every reachable state of `spec` by its encoding (a plain search that
    shares nothing with the engines but the spec's successors); with
    `renamed`, from every renaming of the initial states too."""
    starts = list(spec.init_states())
    if renamed:
        starts = [rename(s, p) for s in starts for p in permutations(range(spec.n))]
    seen = {spec.encode(s): s for s in starts}
    todo = list(seen.values())
    while todo:
        for _name, _args, nxt in spec.successors(todo.pop()):
            key = spec.encode(nxt)
            if key not in seen:
                seen[key] = nxt
                todo.append(nxt)
    return seen


def class_of(spec, state) -> bytes:
    """The smallest encoding over all N! renamings of the brokers."""
    return min(spec.encode(rename(state, p)) for p in permutations(range(spec.n)))
