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


@dataclass(frozen=True)
class Placement:
    """A partition of the rendered cluster: its topic and its replicas (Kafka ids; spec broker b is replicas[b])."""

    topic: str
    topic_id: str
    number: int
    replicas: tuple[int, ...]


class Renderer:
    """Oracle records as the lines of a kafka-dump-log dump: the cluster's
    bootstrap (features, configs, every broker registered and unfenced),
    its partitions created with every replica in the ISR, then the batches."""

    def __init__(
        self,
        n: int,
        min_isr: int,
        unclean: bool = False,
        elr: bool = True,
        metadata_level: int = 25,
        placements: list[Placement] | None = None,
    ):
        self.placements = placements or [Placement(TOPIC, TOPIC_ID, 0, KAFKA_IDS[:n])]
        brokers = sorted({b for p in self.placements for b in p.replicas})
        self.offset, self.lines = 0, [f"Dumping /var/lib/kraft/__cluster_metadata-0/{0:020d}.log"]
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
        for b in brokers:
            self.batch([self.register(b)])
        for b in brokers:
            self.batch([self.change(b, fenced=-1)])
        topics = {p.topic_id: p.topic for p in self.placements}
        for topic_id, topic in topics.items():
            self.batch([self.payload("TOPIC_RECORD", {"name": topic, "topicId": topic_id})])
            for p in self.placements:
                if p.topic_id == topic_id:
                    self.batch([self.payload("PARTITION_RECORD", self.created(p), 2)])

    @staticmethod
    def created(p: Placement) -> dict:
        ids = list(p.replicas)
        return {
            "partitionId": p.number,
            "topicId": p.topic_id,
            "replicas": ids,
            "isr": ids,
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": ids[0],
            "leaderEpoch": 0,
            "partitionEpoch": 0,
        }

    @staticmethod
    def payload(kind: str, data: dict, version: int = 0) -> dict:
        return {"type": kind, "version": version, "data": data}

    def config(self, topic_level: bool, name: str, value: str) -> dict:
        data = {"resourceType": 2 if topic_level else 4, "resourceName": TOPIC if topic_level else ""}
        return self.payload("CONFIG_RECORD", {**data, "name": name, "value": value})

    def register(self, kafka_id: int) -> dict:
        self.epochs[kafka_id] = self.offset  # the epoch is the offset of the write's first record
        self.incarnations += 1
        data = {
            "brokerId": kafka_id,
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

    def change(self, kafka_id: int, fenced: int = 0, in_controlled_shutdown: int = 0) -> dict:
        data: dict[str, Any] = {"brokerId": kafka_id, "brokerEpoch": self.epochs[kafka_id]}
        if fenced:
            data["fenced"] = fenced
        if in_controlled_shutdown:
            data["inControlledShutdown"] = in_controlled_shutdown
        return self.payload("BROKER_REGISTRATION_CHANGE_RECORD", data, 1 if in_controlled_shutdown else 0)

    def record(self, r, where: Placement) -> dict:
        kafka = where.replicas
        ids = lambda xs: [kafka[x] if x >= 0 else x for x in xs]  # noqa: E731
        if isinstance(r, PartitionChangeRecord):
            data: dict[str, Any] = {"partitionId": where.number, "topicId": where.topic_id}
            if r.isr is not None:
                data["isr"] = ids(r.isr)
            if r.leader != NO_LEADER_CHANGE:
                data["leader"] = kafka[r.leader] if r.leader >= 0 else r.leader
            if r.leader_recovery_state != NO_CHANGE:
                data["leaderRecoveryState"] = r.leader_recovery_state
            if r.eligible_leader_replicas is not None:
                data["eligibleLeaderReplicas"] = ids(r.eligible_leader_replicas)
            if r.last_known_elr is not None:
                data["lastKnownElr"] = ids(r.last_known_elr)
            return self.payload("PARTITION_CHANGE_RECORD", data, 2)
        if isinstance(r, BrokerRegistrationChangeRecord):
            fenced = 0 if r.fenced is None else 1 if r.fenced else -1
            return self.change(kafka[r.broker_id], fenced, 1 if r.in_controlled_shutdown else 0)
        if isinstance(r, RegisterBrokerRecord):
            return self.register(kafka[r.broker_id])
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

    def oracle(self, records: list, where: Placement | None = None) -> None:
        """One batch of the oracle's records (of one partition, or each with its own)."""
        self.placed([(r, where or self.placements[0]) for r in records])

    def placed(self, records: list[tuple[Any, Placement]]) -> None:
        """One batch; a registration's epoch is the offset of its write's
        first record (the cleanup records come first)."""
        first = self.offset
        payloads: list[dict] = []
        for r, where in records:
            if isinstance(r, RegisterBrokerRecord):
                self.offset = first  # the epoch names the batch's first offset
                p = self.register(where.replicas[r.broker_id])
                self.offset = first + len(payloads)
                payloads.append(p)
            else:
                payloads.append(self.record(r, where))
        self.offset = first
        self.batch(payloads)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def renderer_for(spec, placements: list[Placement] | None = None) -> Renderer:
    """A dump that begins as the spec's initial state: its versions and configs, every replica in the ISR."""
    c = spec.config
    level = 25 if c["metadata_version"] == "new" else 22
    return Renderer(spec.rf, c["min_isr"], c["unclean_leader_election"], bool(c["elr_version"]), level, placements)


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


BROKER_EVENTS = ("FenceBroker", "UnfenceBroker", "StartBroker", "BeginControlledShutdown", "CleanShutdown")
HIDDEN_BROKER_EVENTS = ("UncleanShutdown", "StopBroker")
PARTITION_EVENTS = ("ShrinkIsr", "ExpandIsr", "CommitAlterPartition", "ElectLeader")


def cluster_log(spec, placements: list[Placement], events: int, seed: int) -> str:
    """A many-partition log: each partition is the spec (its replicas the
    spec's brokers, in order), a broker's event (a fence, a restart, a
    controlled shutdown, a crash) happens to every partition it holds at
    once, in one batch, as Kafka's controller writes it (every partition's
    PartitionChangeRecords and one broker record), and a partition's own
    events (AlterPartition, elections) to it alone."""
    rng = random.Random(seed)
    states = [spec.init_states()[0] for _ in placements]
    brokers = sorted({b for p in placements for b in p.replicas})
    r = renderer_for(spec, placements)
    for _ in range(events):
        if rng.random() < 0.5:
            k = rng.randrange(len(placements))
            options = [step for step in spec.successors(states[k]) if step[0] in PARTITION_EVENTS]
            steps = [(k, rng.choice(options))] if options else []
        else:
            broker = rng.choice(brokers)
            holding = [k for k, p in enumerate(placements) if broker in p.replicas]
            first = placements[holding[0]].replicas.index(broker)
            actions = sorted(
                {
                    a
                    for a, g, _ in spec.successors(states[holding[0]])
                    if a in BROKER_EVENTS + HIDDEN_BROKER_EVENTS and g.get("broker") == first
                }
            )
            if not actions:
                continue
            action = rng.choice(actions)
            steps = []
            for k in holding:
                found = enabled(spec, states[k], action, {"broker": placements[k].replicas.index(broker)})
                if not found:
                    break
                steps.append((k, found[0]))
            if len(steps) != len(holding):
                continue
        batches = [(k, oracle_batches(spec, states[k], action, args, t)) for k, (action, args, t) in steps]
        if not steps or any(b is None for _, b in batches):
            continue
        merge(r, [(placements[k], b or []) for k, b in batches])
        for k, (_, _, t) in steps:
            states[k] = t
    return r.text()


def enabled(spec, s, action: str, want: dict) -> list:
    return [(a, g, t) for a, g, t in spec.successors(s) if a == action and all(g.get(k) == v for k, v in want.items())]


def merge(r: Renderer, per_partition: list[tuple[Placement, list[list]]]) -> None:
    """One event's batches over its partitions, written as Kafka's
    controller writes them: batch i of every partition in one batch, its
    PartitionChangeRecords together and the broker record once, first or
    last as each partition's batch has it."""
    for i in range(max((len(b) for _, b in per_partition), default=0)):
        before: list = []
        changes: list = []
        after: list = []
        for where, batches in per_partition:
            if i >= len(batches):
                continue
            seen_change = False
            for rec in batches[i]:
                if isinstance(rec, PartitionChangeRecord):
                    changes.append((rec, where))
                    seen_change = True
                elif not any(type(rec) is type(x) for x, _ in before + after):
                    (after if seen_change else before).append((rec, where))
        r.placed(before + changes + after)


def from_snapshot(text: str, batch: int) -> str:
    """`text` as an operator finds it months later: the segments before
    batch `batch` deleted, a snapshot (`<offset>-<epoch>.checkpoint`,
    dumped first) holding the image there: the features, configs, brokers'
    registrations and the partition as records with their current values
    (MetadataImage.write), then the rest of the log."""
    from specs.kafka_elr.metalog import read_log
    from specs.kafka_elr.observer import _Replay

    batches = read_log(text, "log")
    c = _Replay(TOPIC_ID, 0, 1, False).run(batches[:batch]).cluster
    image = [
        {"type": "FEATURE_LEVEL_RECORD", "version": 0, "data": {"name": k, "featureLevel": v}}
        for k, v in c.features.items()
    ]
    for name, value in c.cluster_configs.items():
        data = {"resourceType": 4, "resourceName": "", "name": name, "value": value}
        image.append({"type": "CONFIG_RECORD", "version": 0, "data": data})
    for b, reg in sorted(c.brokers.items()):
        data = {
            "brokerId": b,
            "isMigratingZkBroker": False,
            "incarnationId": reg.incarnation,
            "brokerEpoch": reg.epoch,
            "endPoints": [],
            "features": [],
            "rack": None,
            "fenced": reg.fenced,
            "inControlledShutdown": reg.in_controlled_shutdown,
        }
        image.append({"type": "REGISTER_BROKER_RECORD", "version": 3, "data": data})
    image.append({"type": "TOPIC_RECORD", "version": 0, "data": {"name": TOPIC, "topicId": TOPIC_ID}})
    partition = {
        "partitionId": 0,
        "topicId": TOPIC_ID,
        "replicas": c.replicas,
        "isr": c.isr,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": c.leader,
        "leaderEpoch": 40,
        "partitionEpoch": 90,
        **({"leaderRecoveryState": c.recovery} if c.recovery else {}),
        **({"eligibleLeaderReplicas": c.elr} if c.elr else {}),
        **({"lastKnownElr": c.last_known_elr} if c.last_known_elr else {}),
    }
    image.append({"type": "PARTITION_RECORD", "version": 2, "data": partition})
    end = batches[batch][0].offset
    lines = [
        f"Dumping /var/lib/kraft/__cluster_metadata-0/{end:020d}-{1:010d}.checkpoint",
        f"Snapshot end offset: {end}, epoch: 1",
        batch_line(0, 1, control=True),
        record_line(0, 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1740000000000}'),
        batch_line(1, len(image)),
        *(record_line(i, "payload: " + json.dumps(p, separators=(",", ":"))) for i, p in enumerate(image, 1)),
        batch_line(len(image) + 1, 1, control=True),
        record_line(len(image) + 1, 'SnapshotFooter {"version":0}'),
    ]
    # the log from batch `batch` on
    kept, seen = [], -1
    for line in text.splitlines()[2:]:
        if line.startswith("baseOffset:"):
            seen += 1
        if seen >= batch:
            kept.append(line)
    lines += [f"Dumping /var/lib/kraft/__cluster_metadata-0/{end:020d}.log", f"Log starting offset: {end}", *kept]
    return "\n".join(lines) + "\n"


def batch_line(first: int, count: int, control: bool = False) -> str:
    return (
        f"baseOffset: {first} lastOffset: {first + count - 1} count: {count} baseSequence: -1 lastSequence: -1 "
        f"producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: "
        f"{str(control).lower()} deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1740000000000 size: 83 "
        "magic: 2 compresscodec: none crc: 1 isvalid: true"
    )


def record_line(offset: int, rest: str) -> str:
    return f"| offset: {offset} CreateTime: 1740000000000 keySize: -1 valueSize: 10 sequence: -1 headerKeys: [] {rest}"
