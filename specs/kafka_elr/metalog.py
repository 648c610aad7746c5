"""Kafka's metadata log (`__cluster_metadata`) read as batches of records.

Two inputs (docs/validate.md; docs/research/metadata-log.md has the
sources): the text `kafka-dump-log.sh --cluster-metadata-decoder` prints
(Kafka 4.0: a `baseOffset:` line a batch, a `| offset:` line a record
ending in ` payload: {"type","version","data"}`), and JSON Lines of the
same payloads, one record a line, or a JSON array of records a line for a
batch (a record may carry `"batch"`: consecutive records with one value
are one batch). A batch is what one controller event appended at once.

Anything that is not such a log is bad input with its line number: a
line the dump never prints, a payload that does not parse (a truncated
file), a record kind Kafka 4.0.0 does not have, a field of the wrong type.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from modelcheck.config import ConfigError

# Kafka 4.0.0's metadata record types (metadata/src/main/resources/common/metadata/*.json):
# type -> the versions it has
RECORD_VERSIONS = {
    "REGISTER_BROKER_RECORD": 3,
    "UNREGISTER_BROKER_RECORD": 0,
    "TOPIC_RECORD": 0,
    "PARTITION_RECORD": 2,
    "CONFIG_RECORD": 0,
    "PARTITION_CHANGE_RECORD": 2,
    "FENCE_BROKER_RECORD": 0,
    "UNFENCE_BROKER_RECORD": 0,
    "REMOVE_TOPIC_RECORD": 0,
    "DELEGATION_TOKEN_RECORD": 0,
    "USER_SCRAM_CREDENTIAL_RECORD": 0,
    "FEATURE_LEVEL_RECORD": 0,
    "CLIENT_QUOTA_RECORD": 0,
    "PRODUCER_IDS_RECORD": 0,
    "BROKER_REGISTRATION_CHANGE_RECORD": 2,
    "ACCESS_CONTROL_ENTRY_RECORD": 0,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": 0,
    "NO_OP_RECORD": 0,
    "ZK_MIGRATION_STATE_RECORD": 0,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": 0,
    "BEGIN_TRANSACTION_RECORD": 0,
    "END_TRANSACTION_RECORD": 0,
    "ABORT_TRANSACTION_RECORD": 0,
    "REMOVE_DELEGATION_TOKEN_RECORD": 0,
    "REGISTER_CONTROLLER_RECORD": 0,
    "CLEAR_ELR_RECORD": 0,
}

# lines of the dump that carry no record
DUMP_NOTES = ("Dumping ", "Log starting offset:", "Snapshot end offset:", "KRaft bootstrap snapshot", "Found ")


@dataclass(frozen=True)
class Record:
    kind: str  # the payload's "type"
    version: int
    data: dict[str, Any]
    line: int  # 1-based, in the input
    offset: int | None  # the log offset the dump prints (None in JSON Lines without one)
    raw: str  # the payload as the input has it

    @property
    def where(self) -> str:
        at = f" (offset {self.offset})" if self.offset is not None else ""
        return f"line {self.line}{at}"


def read_log(text: str, where: str) -> list[list[Record]]:
    """The batches of a dump or a JSON Lines file; ConfigError (one line,
    naming `where` and the line) if it is neither."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first:
        raise ConfigError(f"{where}: empty: not a metadata log")
    batches = _json_lines(text, where) if first[0] in "{[" else _dump(text, where)
    return [b for b in batches if b]


def _dump(text: str, where: str) -> list[list[Record]]:
    batches: list[list[Record]] = []
    control = False
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(DUMP_NOTES):
            continue
        if stripped.startswith("baseOffset:"):
            control = " isControl: true" in stripped
            batches.append([])
        elif stripped.startswith("|"):
            if not batches:
                raise ConfigError(f"{where}: line {n}: a record before any batch line (baseOffset: ...)")
            head, sep, payload = stripped.partition(" payload: ")
            if control or not sep:
                if not control:
                    raise ConfigError(f"{where}: line {n}: a data record without a payload")
                continue
            batches[-1].append(_record(_parse(payload, where, n), where, n, _offset(head), payload))
        else:
            raise ConfigError(
                f"{where}: line {n}: not a line kafka-dump-log --cluster-metadata-decoder prints: {stripped[:60]!r}"
            )
    return batches


def _offset(head: str) -> int | None:
    words = head.split()
    if "offset:" in words:
        at = words.index("offset:") + 1
        if at < len(words) and words[at].isdigit():
            return int(words[at])
    return None


def _json_lines(text: str, where: str) -> list[list[Record]]:
    batches: list[list[Record]] = []
    last_mark: object = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        value = _parse(line, where, n)
        if isinstance(value, list):
            batches.append([_record(v, where, n, None, json.dumps(v, separators=(",", ":"))) for v in value])
            last_mark = None
            continue
        mark = value.get("batch") if isinstance(value, dict) else None
        if mark is None or mark != last_mark or not batches:
            batches.append([])
        batches[-1].append(_record(value, where, n, None, line.strip()))
        last_mark = mark
    return batches


def _parse(text: str, where: str, n: int) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{where}: line {n}: the record does not parse as JSON (a truncated line?): {e}") from None


def _record(value: Any, where: str, n: int, offset: int | None, raw: str) -> Record:
    if not isinstance(value, dict) or not {"type", "version", "data"} <= value.keys():
        raise ConfigError(f'{where}: line {n}: a record is an object with "type", "version" and "data"')
    kind, version, data = value["type"], value["version"], value["data"]
    if kind not in RECORD_VERSIONS:
        raise ConfigError(f"{where}: line {n}: {kind!r} is not a metadata record type of Kafka 4.0.0")
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= RECORD_VERSIONS[kind]:
        raise ConfigError(f"{where}: line {n}: {kind} has versions 0 to {RECORD_VERSIONS[kind]}, not {version!r}")
    if not isinstance(data, dict):
        raise ConfigError(f'{where}: line {n}: {kind}\'s "data" must be an object')
    if "offset" in value:
        offset = value["offset"] if isinstance(value["offset"], int) else offset
    return Record(kind, version, data, n, offset, raw)


# ---- fields, checked as they are read ---------------------------------------------------------
def field(r: Record, name: str, kind: type, default: Any = ...) -> Any:
    """`r`'s field `name`, of JSON type `kind` (int: not a bool), or its
    default when absent (no default: it is required)."""
    if name not in r.data:
        if default is ...:
            raise ConfigError(f"line {r.line}: {r.kind} version {r.version} needs the field {name!r}")
        return default
    value = r.data[name]
    good = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if value is None and default is None:
        return None
    if not good:
        raise ConfigError(f"line {r.line}: {r.kind}'s {name!r} must be {_kind_name(kind)}, not {value!r}")
    return value


def int_list(r: Record, name: str) -> list[int] | None:
    """A list of broker ids, or None when absent or null (unchanged)."""
    value = field(r, name, list, None)
    if value is not None and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ConfigError(f"line {r.line}: {r.kind}'s {name!r} must be a list of integers, not {value!r}")
    return value


def _kind_name(kind: type) -> str:
    return {int: "an integer", str: "a string", bool: "true or false", list: "a list"}.get(kind, kind.__name__)


def records(batches: list[list[Record]]) -> Iterator[Record]:
    for batch in batches:
        yield from batch


def partition_of(name: str | None, batches: list[list[Record]]) -> tuple[str, int]:
    """The (topic id, partition) `name` picks ("TOPIC:N", by name or id), or
    the log's only partition; ConfigError naming the log's partitions if
    it picks none."""
    names: dict[str, str] = {}
    found: list[tuple[str, int]] = []
    for r in records(batches):
        if r.kind == "TOPIC_RECORD":
            names[field(r, "topicId", str)] = field(r, "name", str)
        elif r.kind == "PARTITION_RECORD":
            found.append((field(r, "topicId", str), field(r, "partitionId", int)))
    shown = ", ".join(f"{names.get(t, t)}:{p}" for t, p in found[:8]) + (" ..." if len(found) > 8 else "")
    if name is None:
        if len(found) == 1:
            return found[0]
        raise ConfigError(
            f"--partition: the log has {len(found)} partitions; name one as TOPIC:N ({shown or 'none'})"
            if found
            else "the log creates no partition (no PARTITION_RECORD): nothing to validate"
        )
    topic, _, number = name.rpartition(":")
    if not topic or not number.isdigit():
        raise ConfigError(f"--partition {name!r}: expected TOPIC:N (a topic name or id, a partition number)")
    for t, p in found:
        if p == int(number) and topic in (t, names.get(t)):
            return t, p
    raise ConfigError(f"--partition {name!r}: the log has no such partition (it has: {shown or 'none'})")
