"""Metadata logs for `modelcheck validate`'s tests, written by the oracle
transliterated from Kafka 4.0.0's controller (kafka_oracle.py), not by the
spec: a random walk picks the events (the spec says which can happen and
keeps the brokers' side: who runs, what the clean-shutdown files hold),
and for each controller event the oracle's records are the log's batch,
rendered in the text `kafka-dump-log.sh --cluster-metadata-decoder` prints.
Broker ids are Kafka's (not 0..n-1), broker epochs are log offsets.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from kafka_oracle import (
    NO_CHANGE,
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    Controller,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from oracle_harness import CONTROLLER_ACTIONS, controller_of, events, of_oracle, of_spec, without_proposal

from modelcheck.trace import apply_step

TOPIC, TOPIC_ID = "orders", "xOxBrcYuSRWgtFuZIBiXIA"
KAFKA_IDS = (4, 7, 9, 11, 12)  # spec broker b is Kafka's KAFKA_IDS[b]


class Recording(Controller):
    """The oracle's controller, keeping each replayed list of records (one
    write event's, one batch)."""

    batches: list[list]

    def replay(self, records: list) -> None:
        self.batches.append(list(records))
        super().replay(records)


def recording(spec, s) -> Recording:
    c = controller_of(spec, s)
    r = Recording(c.partition, c.registrations, c.min_isr, c.unclean_leader_election, c.elr_enabled)
    r.batches = []
    return r


def oracle_batches(spec, s, action: str, args: dict, t) -> list[list] | None:
    """The oracle's batches for the spec's step s -(action, args)-> t, from
    the way of Kafka's that ends where the spec does (None: none does)."""
    if action not in CONTROLLER_ACTIONS:
        return []
    want = without_proposal(of_spec(t))
    for name, given, ways in events(spec, s):
        if name != action or any(args.get(k) != v for k, v in given.items()):
            continue
        for way in ways:
            c = recording(spec, s)
            way(c)
            if without_proposal(of_oracle(spec, s, c, action == "CommitAlterPartition")) == want:
                return [b for b in c.batches if b]
    return None


def walk(spec, steps: int, seed: int) -> tuple[list[tuple[str, dict, Any]], list[list]]:
    """A random walk of `steps` steps and the oracle's batches along it."""
    rng = random.Random(seed)
    s = spec.init_states()[0]
    taken, batches = [], []
    for _ in range(steps):
        options = spec.successors(s)
        rng.shuffle(options)
        for action, args, t in options:
            found = oracle_batches(spec, s, action, args, t)
            if found is not None:
                break
        else:
            break
        taken.append((action, args, t))
        batches.extend(found)
        s = t
    return taken, batches


class Renderer:
    """Oracle records as the lines of a kafka-dump-log dump."""

    def __init__(self, n: int, min_isr: int, unclean: bool = False, elr: bool = True, metadata_level: int = 25):
        self.n, self.offset, self.lines = n, 0, [f"Dumping /var/lib/kraft/__cluster_metadata-0/{0:020d}.log"]
        self.lines.append("Log starting offset: 0")
        self.epochs: dict[int, int] = {}
        self.incarnations = 0
        boot = [
            self.payload("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": metadata_level}),
            self.payload(
                "FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version", "featureLevel": int(elr)}
            ),
            self.config(False, "min.insync.replicas", str(min_isr)),
            self.config(False, "unclean.leader.election.enable", str(unclean).lower()),
        ]
        self.batch(boot)
        for b in range(n):
            self.batch([self.register(b)])
        for b in range(n):
            self.batch([self.change(b, fenced=-1)])
        ids = [KAFKA_IDS[b] for b in range(n)]
        partition = {
            "partitionId": 0,
            "topicId": TOPIC_ID,
            "replicas": ids,
            "isr": ids,
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": ids[0],
            "leaderEpoch": 0,
            "partitionEpoch": 0,
        }
        self.batch([self.payload("TOPIC_RECORD", {"name": TOPIC, "topicId": TOPIC_ID})])
        self.batch([self.payload("PARTITION_RECORD", partition, 2)])

    @staticmethod
    def payload(kind: str, data: dict, version: int = 0) -> dict:
        return {"type": kind, "version": version, "data": data}

    def config(self, topic_level: bool, name: str, value: str) -> dict:
        data = {"resourceType": 2 if topic_level else 4, "resourceName": TOPIC if topic_level else ""}
        return self.payload("CONFIG_RECORD", {**data, "name": name, "value": value})

    def register(self, b: int) -> dict:
        self.epochs[b] = self.offset  # the epoch is the offset of the write's first record
        self.incarnations += 1
        data = {
            "brokerId": KAFKA_IDS[b],
            "isMigratingZkBroker": False,
            "incarnationId": f"incarnation-{self.incarnations:014d}",
            "brokerEpoch": self.offset,
            "endPoints": [],
            "features": [],
            "rack": None,
            "fenced": True,
            "inControlledShutdown": False,
        }
        return self.payload("REGISTER_BROKER_RECORD", data, 3)

    def change(self, b: int, fenced: int = 0, in_controlled_shutdown: int = 0) -> dict:
        data: dict[str, Any] = {"brokerId": KAFKA_IDS[b], "brokerEpoch": self.epochs[b]}
        if fenced:
            data["fenced"] = fenced
        if in_controlled_shutdown:
            data["inControlledShutdown"] = in_controlled_shutdown
        return self.payload("BROKER_REGISTRATION_CHANGE_RECORD", data, 1 if in_controlled_shutdown else 0)

    def record(self, r) -> dict:
        ids = lambda xs: [KAFKA_IDS[x] if x >= 0 else x for x in xs]  # noqa: E731
        if isinstance(r, PartitionChangeRecord):
            data: dict[str, Any] = {"partitionId": 0, "topicId": TOPIC_ID}
            if r.isr is not None:
                data["isr"] = ids(r.isr)
            if r.leader != NO_LEADER_CHANGE:
                data["leader"] = KAFKA_IDS[r.leader] if r.leader >= 0 else r.leader
            if r.leader_recovery_state != NO_CHANGE:
                data["leaderRecoveryState"] = r.leader_recovery_state
            if r.eligible_leader_replicas is not None:
                data["eligibleLeaderReplicas"] = ids(r.eligible_leader_replicas)
            if r.last_known_elr is not None:
                data["lastKnownElr"] = ids(r.last_known_elr)
            return self.payload("PARTITION_CHANGE_RECORD", data, 2)
        if isinstance(r, BrokerRegistrationChangeRecord):
            fenced = 0 if r.fenced is None else 1 if r.fenced else -1
            return self.change(r.broker_id, fenced, 1 if r.in_controlled_shutdown else 0)
        if isinstance(r, RegisterBrokerRecord):
            return self.register(r.broker_id)
        if isinstance(r, ConfigRecord):
            value = str(r.value).lower() if isinstance(r.value, bool) else str(r.value)
            return self.config(r.topic_level, r.name, value)
        if isinstance(r, Feature):
            return self.payload("FEATURE_LEVEL_RECORD", {"name": r.name, "featureLevel": r.level})
        if isinstance(r, ClearElrRecord):
            return self.payload("CLEAR_ELR_RECORD", {"topicName": TOPIC})
        raise TypeError(f"no rendering for {r!r}")

    def batch(self, payloads: list[dict]) -> None:
        first = self.offset
        self.lines.append(
            f"baseOffset: {first} lastOffset: {first + len(payloads) - 1} count: {len(payloads)} baseSequence: -1 "
            "lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
            f"isControl: false deleteHorizonMs: OptionalLong.empty position: {first * 100} CreateTime: 1740000000000 "
            "size: 100 magic: 2 compresscodec: none crc: 1 isvalid: true"
        )
        for p in payloads:
            text = json.dumps(p, separators=(",", ":"))
            self.lines.append(
                f"| offset: {self.offset} CreateTime: 1740000000000 keySize: -1 valueSize: {len(text)} "
                f"sequence: -1 headerKeys: [] payload: {text}"
            )
            self.offset += 1

    def oracle(self, records: list) -> None:
        """One batch of the oracle's records; a registration's epoch is the
        offset of its write's first record (the cleanup records come first)."""
        first = self.offset
        payloads: list[dict] = []
        for r in records:
            if isinstance(r, RegisterBrokerRecord):
                self.offset = first  # the epoch names the batch's first offset
                p = self.register(r.broker_id)
                self.offset = first + len(payloads)
                payloads.append(p)
            else:
                payloads.append(self.record(r))
        self.offset = first
        self.batch(payloads)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def renderer_for(spec) -> Renderer:
    """A dump that begins as the spec's initial state: its versions and configs, every replica in the ISR."""
    c = spec.config
    level = 25 if c["metadata_version"] == "new" else 22
    return Renderer(spec.rf, c["min_isr"], c["unclean_leader_election"], bool(c["elr_version"]), level)


def oracle_log(spec, steps: int, seed: int) -> tuple[str, list]:
    """A dump of the oracle's records along a random walk of the spec, and the walk."""
    taken, batches = walk(spec, steps, seed)
    r = renderer_for(spec)
    for b in batches:
        r.oracle(b)
    return r.text(), taken


def planted(text: str, offset: int, change) -> str:
    """`text` with the payload of the record at `offset` rewritten by `change(payload) -> payload`."""
    out = []
    for line in text.splitlines():
        if line.startswith(f"| offset: {offset} "):
            head, _, payload = line.partition(" payload: ")
            line = f"{head} payload: {json.dumps(change(json.loads(payload)), separators=(',', ':'))}"
        out.append(line)
    return "\n".join(out) + "\n"


def scripted(spec, plan: list[tuple[str, dict]]) -> list[list]:
    """The oracle's batches for a plan of spec steps, each the first enabled
    instance of its action whose arguments include the plan's."""
    s = spec.init_states()[0]
    batches: list[list] = []
    for action, want in plan:
        options = [
            (a, g, t) for a, g, t in spec.successors(s) if a == action and all(g.get(k) == v for k, v in want.items())
        ]
        if not options:
            raise ValueError(f"{action} {want} is not enabled in step {plan.index((action, want))} of the plan")
        _, args, t = options[0]
        found = oracle_batches(spec, s, action, args, t)
        if found is None:
            raise ValueError(f"the oracle cannot take {action} {args}")
        batches.extend(found)
        s = t
    return batches


def rolling_restarts(n: int) -> list[tuple[str, dict]]:
    """One rolling restart of every broker: controlled shutdown, stop,
    restart, unfence, catch up into the ISR (the cycle a cluster upgrade
    or a config roll writes), then an ISR shrink and expand of a slow follower."""
    plan: list[tuple[str, dict]] = []
    for b in range(n):
        plan += [
            ("BeginControlledShutdown", {"broker": b}),
            ("CleanShutdown", {"broker": b}),
            ("StartBroker", {"broker": b}),
            ("UnfenceBroker", {"broker": b}),
            ("ExpandIsr", {"brokers": [b]}),
            ("CommitAlterPartition", {}),
        ]
    return plan


def repeated_log(spec, plan: list[tuple[str, dict]], times: int) -> str:
    """The plan's batches `times` over, as one dump (the plan must return to its start)."""
    batches = scripted(spec, plan)
    r = renderer_for(spec)
    for _ in range(times):
        for b in batches:
            r.oracle(b)
    return r.text()


def scenario_log(spec, steps: list) -> str:
    """A replay scenario's steps (modelcheck/formats/scenario.py) as the log
    Kafka's controller writes for them: the oracle's records for each
    controller event, its first way where none ends as the spec's step
    does (Kafka's own answer, where the two differ). Steps the scenario
    says are refused write nothing; the log ends where the spec cannot go on."""
    s = spec.init_states()[0]
    r = renderer_for(spec)
    for step in steps:
        if not step.enabled:
            continue
        found = apply_step(spec, s, step.action, step.args)
        if not found:
            break
        args, t = found[0]
        batches = oracle_batches(spec, s, step.action, args, t)
        if batches is None:
            batches = kafkas_answer(spec, s, step.action, args)
        if step.action in spec.VERSION_STEPS:  # an operator's kafka-features: FeatureLevelRecords
            batches = [features(s, t)]
        for b in batches:
            r.oracle(b)
        s = t
    return r.text()


def features(s, t) -> list:
    """The FeatureLevelRecords of a version step s -> t (rendered as they are)."""
    out: list = []
    if t.metadata_version != s.metadata_version:
        out.append(Feature("metadata.version", 25 if t.metadata_version else 22))
    if t.elr_version != s.elr_version:
        out.append(Feature("eligible.leader.replicas.version", t.elr_version))
    return out


@dataclass(frozen=True)
class Feature:
    name: str
    level: int


def kafkas_answer(spec, s, action: str, args: dict) -> list[list]:
    for name, given, ways in events(spec, s):
        if name == action and all(args.get(k) == v for k, v in given.items()) and ways:
            c = recording(spec, s)
            ways[0](c)
            return [b for b in c.batches if b]
    return []
