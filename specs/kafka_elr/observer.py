"""A metadata log as what the spec's controller must be seen to do, for
`modelcheck validate` (the search: modelcheck/engine/observed.py).

The log's records are replayed as Kafka's controller replays them
(docs/research/metadata-log.md, section 3): the partition's registration,
the brokers' registrations, configs and features. The partition's
replicas, in the order of its PartitionRecord, are the spec's brokers 0,
1, ...; records about other brokers cannot touch it and are passed over.
After each batch that changed what the spec holds of the controller (its
`view`: leader, ISR, ELR, LastKnownElr, recovery state, fenced brokers,
those in controlled shutdown, min ISR, the unclean flag, the versions)
or bumped the leader epoch (a `leader` field) or registered a new
incarnation, the spec must take one step with that observation, after
any number of hidden ones (the data plane, crashes, AlterPartition
proposals: nothing the log shows).

Epochs are relative: Kafka's broker epochs are log offsets and its leader
epoch is implied by the records, the spec counts from 1 and 0. `normal`
forgets their values where only their equality matters, and the bound
counters (a log's own bounds are its records), so a long log meets few
states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from modelcheck.config import ConfigError
from modelcheck.engine.observed import Expected

from .metalog import Record, int_list, partition_of, read_log
from .metalog import field as get
from .types import NEW, NO_LEADER, OLD

ELR_FEATURE = "eligible.leader.replicas.version"
ELR_METADATA_LEVEL = 23  # metadata.version 4.0-IV1: the first with the ELR's records
MIN_ISR, UNCLEAN = "min.insync.replicas", "unclean.leader.election.enable"
TOPIC, BROKER = 2, 4  # ConfigRecord resource types
# the actions that write a config's or a feature's records
CONFIG_ACTIONS = {MIN_ISR: ("AlterMinIsr",), UNCLEAN: ("AlterUncleanLeaderElection",)}
VERSION_ACTIONS = ("UpgradeMetadataVersion", "UpgradeElrVersion", "DowngradeElrVersion")
# record kinds that never touch a partition's leadership: passed over, counted by name
UNRELATED = frozenset(
    {
        "DELEGATION_TOKEN_RECORD",
        "USER_SCRAM_CREDENTIAL_RECORD",
        "CLIENT_QUOTA_RECORD",
        "PRODUCER_IDS_RECORD",
        "ACCESS_CONTROL_ENTRY_RECORD",
        "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        "NO_OP_RECORD",
        "ZK_MIGRATION_STATE_RECORD",
        "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        "REMOVE_DELEGATION_TOKEN_RECORD",
        "REGISTER_CONTROLLER_RECORD",
        "END_TRANSACTION_RECORD",
    }
)


@dataclass
class Registration:
    epoch: int
    incarnation: str
    fenced: bool
    in_controlled_shutdown: bool


@dataclass
class Cluster:
    """The controller's state as the log replays it, for one partition."""

    topic: str | None = None  # the partition's topic, by name
    topic_id: str | None = None
    replicas: list[int] = field(default_factory=list)  # Kafka's ids, the spec's brokers in this order
    leader: int = NO_LEADER
    isr: list[int] = field(default_factory=list)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    recovery: int = 0
    brokers: dict[int, Registration] = field(default_factory=dict)
    topic_configs: dict[str, str] = field(default_factory=dict)
    cluster_configs: dict[str, str] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    bumps: int = 0  # leader-epoch bumps in the batch so far
    registered: set[int] = field(default_factory=set)  # replicas re-registered in the batch

    def mask(self, ids: list[int]) -> int:
        """Kafka ids as the spec's bitmask; -1 (Kafka's lastKnownElr [-1]) is kept as -1."""
        if NO_LEADER in ids:
            return NO_LEADER
        bit = self.bit
        out = 0
        for i in ids:
            out |= bit[i]
        return out

    @cached_property
    def bit(self) -> dict[int, int]:
        """Each replica's bit in the spec's masks (set once the partition exists)."""
        return {b: 1 << i for i, b in enumerate(self.replicas)}

    def spec_id(self, kafka_id: int) -> int:
        return kafka_id if kafka_id == NO_LEADER else self.replicas.index(kafka_id)

    def view(self, min_isr: int, unclean: bool) -> tuple[int, ...]:
        fenced = [b for b in self.replicas if self.brokers[b].fenced]
        shutting = [b for b in self.replicas if self.brokers[b].in_controlled_shutdown and not self.brokers[b].fenced]
        level = self.features.get("metadata.version", ELR_METADATA_LEVEL)
        configured = int(self.topic_configs.get(MIN_ISR, self.cluster_configs.get(MIN_ISR, min_isr)))
        flag = self.topic_configs.get(UNCLEAN, self.cluster_configs.get(UNCLEAN, str(unclean).lower()))
        return (
            self.spec_id(self.leader),
            self.mask(self.isr),
            self.mask(self.elr),
            self.mask(self.last_known_elr),
            self.recovery,
            self.mask(fenced),
            self.mask(shutting),
            min(configured, len(self.replicas)),
            int(flag == "true"),
            NEW if level >= ELR_METADATA_LEVEL else OLD,
            int(self.features.get(ELR_FEATURE, 0) >= 1),
        )


@dataclass
class Reading:
    """The log of one partition, as expected observations."""

    cluster: Cluster
    start: tuple[int, ...]
    expected: list[Expected]
    config: dict[str, Any]  # the spec's config the log implies (before bounds)
    number: int  # the partition's number
    start_where: str  # where its first state is (its PARTITION_RECORD)
    skipped: dict[str, int]  # record kinds passed over, how many
    notes: list[str]


def read(text: str, where: str, partition: str | None, min_isr: int, unclean: bool) -> Reading:
    """The expected observations of `partition` in the log `text`."""
    batches = read_log(text, where)
    try:
        topic_id, number = partition_of(partition, batches)
        return _Replay(topic_id, number, min_isr, unclean).run(batches)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


class _Replay:
    def __init__(self, topic_id: str, number: int, min_isr: int, unclean: bool):
        self.c = Cluster(topic_id=topic_id)
        self.number, self.min_isr, self.unclean = number, min_isr, unclean
        self.created = False
        self.skipped: dict[str, int] = {}
        self.notes: list[str] = []
        self.expected: list[Expected] = []
        self.start: tuple[int, ...] = ()  # the view when the partition is created
        self.last: tuple[int, ...] = ()  # the view after the last batch that showed one
        self.start_where = ""
        self.config: dict[str, Any] = {}
        self.ended = False

    def run(self, batches: list[list[Record]]) -> Reading:
        in_transaction: list[Record] | None = None
        for batch in batches:
            if self.ended:
                break
            before = self.last if self.created else None
            self.c.bumps, self.c.registered = 0, set()
            shown: list[Record] = []
            for r in batch:
                if r.kind == "BEGIN_TRANSACTION_RECORD":
                    in_transaction = []
                elif r.kind == "ABORT_TRANSACTION_RECORD":
                    in_transaction = None
                elif r.kind == "END_TRANSACTION_RECORD" and in_transaction is not None:
                    for held in in_transaction:
                        self.apply(held, shown)
                    in_transaction = None
                elif in_transaction is not None:
                    in_transaction.append(r)
                else:
                    self.apply(r, shown)
            if before is not None and shown:
                after = self.c.view(self.min_isr, self.unclean)
                if after != before or self.c.bumps or self.c.registered:
                    registered = sum(1 << self.c.replicas.index(b) for b in self.c.registered)
                    text = "\n".join(r.raw for r in shown)
                    where = shown[0].where + (f" to {shown[-1].where}" if len(shown) > 1 else "")
                    key = (after, self.c.bumps, registered)
                    self.expected.append(Expected(key, where, text, self.candidates(shown)))
                self.last = after
        if not self.created:
            raise ConfigError("the partition's PARTITION_RECORD is not in the log")
        return Reading(
            self.c, self.start, self.expected, self.config, self.number, self.start_where, self.skipped, self.notes
        )

    def candidates(self, shown: list[Record]) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
        """The actions that write a batch like `shown` (for the guards that refuse them)."""
        out: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
        for r in shown:
            if r.kind == "PARTITION_CHANGE_RECORD":
                continue
            if r.kind in ("CONFIG_RECORD", "FEATURE_LEVEL_RECORD", "CLEAR_ELR_RECORD"):
                names = CONFIG_ACTIONS.get(
                    r.data.get("name", ""), VERSION_ACTIONS if r.kind == "FEATURE_LEVEL_RECORD" else ()
                )
                out += [(name, ()) for name in names]
                continue
            b = (("broker", self.c.spec_id(r.data.get("brokerId", r.data.get("id", -1)))),)
            if r.kind == "REGISTER_BROKER_RECORD":
                out.append(("StartBroker", b))
            elif r.kind == "UNFENCE_BROKER_RECORD" or r.data.get("fenced") == -1:
                out.append(("UnfenceBroker", b))
            elif r.kind == "FENCE_BROKER_RECORD" or r.data.get("fenced") == 1:
                out += [("FenceBroker", b), ("CleanShutdown", b)]
            elif r.data.get("inControlledShutdown") == 1:
                out.append(("BeginControlledShutdown", b))
        if not out:  # partition changes alone: an AlterPartition or an election
            out = [("CommitAlterPartition", ()), ("ElectLeader", ()), ("AdminElectLeaders", ())]
        return tuple(dict.fromkeys(out))

    def apply(self, r: Record, shown: list[Record]) -> None:
        c = self.c
        kind = r.kind
        if kind in UNRELATED:
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
        elif kind == "TOPIC_RECORD":
            if get(r, "topicId", str) == c.topic_id:
                c.topic = get(r, "name", str)
        elif kind == "REMOVE_TOPIC_RECORD":
            if get(r, "topicId", str) == c.topic_id and self.created:
                self.notes.append(f"the topic is deleted at {r.where}: the log is validated up to there")
                self.ended = True
        elif kind == "PARTITION_RECORD":
            if (get(r, "topicId", str), get(r, "partitionId", int)) == (c.topic_id, self.number):
                self.create(r)
        elif kind == "PARTITION_CHANGE_RECORD":
            if self.created and (get(r, "topicId", str), get(r, "partitionId", int)) == (c.topic_id, self.number):
                self.change(r)
                shown.append(r)
        elif kind in ("REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD"):
            self.broker(r, shown)
        elif kind in ("UNFENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD"):
            self.broker(r, shown)
        elif kind == "CONFIG_RECORD":
            self.configure(r, shown)
        elif kind == "FEATURE_LEVEL_RECORD":
            c.features[get(r, "name", str)] = get(r, "featureLevel", int)
            shown.append(r)
        elif kind == "CLEAR_ELR_RECORD":
            if get(r, "topicName", str, "") in ("", c.topic) and (c.elr or c.last_known_elr):
                c.elr, c.last_known_elr = [], []
                shown.append(r)
        elif kind not in ("BEGIN_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD", "END_TRANSACTION_RECORD"):
            raise ConfigError(f"{r.where}: {kind} is not modelled")

    def create(self, r: Record) -> None:
        c = self.c
        if self.created:
            raise ConfigError(f"{r.where}: the partition is created twice")
        c.replicas = int_list(r, "replicas") or []
        if not c.replicas or len(set(c.replicas)) != len(c.replicas):
            raise ConfigError(f"{r.where}: PARTITION_RECORD's replicas must be distinct broker ids, not {c.replicas}")
        if int_list(r, "addingReplicas") or int_list(r, "removingReplicas"):
            raise ConfigError(f"{r.where}: the partition is being reassigned: validate does not model reassignments")
        c.isr = self.known(r, int_list(r, "isr") or [])
        c.leader = get(r, "leader", int, NO_LEADER)
        self.known(r, [c.leader])
        c.recovery = get(r, "leaderRecoveryState", int, 0)
        c.elr = self.known(r, int_list(r, "eligibleLeaderReplicas") or [])
        c.last_known_elr = self.known(r, int_list(r, "lastKnownElr") or [])
        missing = [b for b in c.replicas if b not in c.brokers]
        if missing:
            raise ConfigError(f"{r.where}: replica {missing[0]} has no REGISTER_BROKER_RECORD before the partition")
        self.created = True
        self.start = self.last = c.view(self.min_isr, self.unclean)
        self.start_where = r.where
        versions = self.start[9:]
        self.config = {
            "brokers": len(c.replicas),
            "min_isr": self.start[7],
            "unclean_leader_election": bool(self.start[8]),
            "metadata_version": "new" if versions[0] == NEW else "old",
            "elr_version": versions[1],
        }

    def known(self, r: Record, ids: list[int]) -> list[int]:
        """`ids`, each a replica of the partition (or -1)."""
        bad = [i for i in ids if i != NO_LEADER and i not in self.c.replicas]
        if bad:
            raise ConfigError(f"{r.where}: broker {bad[0]} is not a replica of the partition {self.c.replicas}")
        return ids

    def change(self, r: Record) -> None:
        """PartitionRegistration.merge (PR:241-280): null keeps a field, leader
        -2 keeps the leader and its epoch, any other leader bumps the epoch."""
        c = self.c
        for name in ("replicas", "addingReplicas", "removingReplicas"):
            value = int_list(r, name)
            if value is not None and value != (c.replicas if name == "replicas" else []):
                raise ConfigError(f"{r.where}: {name} changes: validate does not model reassignments")
        isr = int_list(r, "isr")
        if isr is not None:
            c.isr = self.known(r, isr)
        leader = get(r, "leader", int, -2)
        if leader != -2:
            c.leader = self.known(r, [leader])[0]
            c.bumps += 1
        recovery = get(r, "leaderRecoveryState", int, -1)
        if recovery not in (-1, 0, 1):
            raise ConfigError(f"{r.where}: leaderRecoveryState is -1, 0 or 1, not {recovery}")
        if recovery != -1:
            c.recovery = recovery
        for name, attr in (("eligibleLeaderReplicas", "elr"), ("lastKnownElr", "last_known_elr")):
            value = int_list(r, name)
            if value is not None:
                setattr(c, attr, self.known(r, value))

    def broker(self, r: Record, shown: list[Record]) -> None:
        c = self.c
        legacy = r.kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD")
        b = get(r, "id" if legacy else "brokerId", int)
        epoch = get(r, "epoch" if legacy else "brokerEpoch", int)
        if r.kind == "REGISTER_BROKER_RECORD":
            incarnation = get(r, "incarnationId", str)
            old = c.brokers.get(b)
            fenced = get(r, "fenced", bool, True)
            ics = get(r, "inControlledShutdown", bool, False)
            if old is not None and old.incarnation == incarnation:
                c.brokers[b] = Registration(old.epoch, incarnation, old.fenced, old.in_controlled_shutdown)
                return
            c.brokers[b] = Registration(epoch, incarnation, fenced, ics)
            if self.created and b in c.replicas:
                c.registered.add(b)
                shown.append(r)
            return
        reg = c.brokers.get(b)
        if reg is None or reg.epoch != epoch:
            has = "no registration" if reg is None else f"its registration has epoch {reg.epoch}"
            raise ConfigError(
                f"{r.where}: {r.kind} names broker {b} at epoch {epoch}, {has} (Kafka's replay refuses it)"
            )
        if r.kind == "UNREGISTER_BROKER_RECORD":
            if self.created and b in c.replicas:
                raise ConfigError(f"{r.where}: replica {b} is unregistered: validate does not model unregistration")
            del c.brokers[b]
            return
        if legacy:
            reg.fenced = r.kind == "FENCE_BROKER_RECORD"
        else:
            fencing = get(r, "fenced", int, 0)
            if fencing not in (-1, 0, 1):
                raise ConfigError(f"{r.where}: fenced is -1, 0 or 1, not {fencing}")
            if fencing:
                reg.fenced = fencing == 1
            if get(r, "inControlledShutdown", int, 0) == 1:
                reg.in_controlled_shutdown = True
        if b in c.replicas:
            shown.append(r)

    def configure(self, r: Record, shown: list[Record]) -> None:
        c = self.c
        kind, name = get(r, "resourceType", int), get(r, "name", str)
        resource, value = get(r, "resourceName", str), get(r, "value", str, None)
        if name not in (MIN_ISR, UNCLEAN):
            return
        if kind == TOPIC and resource == c.topic:
            table = c.topic_configs
        elif kind == BROKER and resource == "":
            table = c.cluster_configs
        else:
            if kind == BROKER and "node-level" not in " ".join(self.notes):
                self.notes.append(
                    f"{r.where}: a node-level {name} is passed over (it counts only on the active controller's node)"
                )
            return
        if value is None:
            table.pop(name, None)
        else:
            if name == MIN_ISR and not value.isdigit():
                raise ConfigError(f"{r.where}: {MIN_ISR} must be a number, not {value!r}")
            table[name] = value
        shown.append(r)
