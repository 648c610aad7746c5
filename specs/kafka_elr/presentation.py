"""How Kafka states read in trace tables (each check's explanation is
declared beside its predicate: invariants.py, temporal.py)."""

from __future__ import annotations

from typing import Any, ClassVar

from .parts import Parts
from .types import ITF_TYPES, NO_LEADER, PER_BROKER, State, members

# Log entries are coloured by the leader epoch that wrote them (a
# colour-blind-safe light palette, so black text stays readable).
EPOCH_COLOURS = ("#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99", "#e0e0e0", "#8dd3c7")
DOWN = {"OFFLINE_DIRTY": "down:dirty", "OFFLINE_CLEAN": "down:clean"}


class KafkaPresentation(Parts):
    # what trace_row shows; other variables appear when they change
    trace_columns: ClassVar[tuple[str, ...]] = (
        "leader",
        "leader_epoch",
        "isr",
        "elr",
        "last_known_elr",
        "hwm",
        "log",
        "fenced",
        "status",
        "acked",
    )
    trace_legend = (
        "rN@E: record N written in leader epoch E (coloured by epoch); ✓ acked; | the broker's high watermark"
    )
    itf_types = ITF_TYPES

    def trace_row(self, d: dict[str, Any]) -> tuple[dict[str, list], dict[str, list]]:
        """The KIP's figure as a row: the controller's view, then one lane a
        broker (role, membership, faults, log)."""
        leader = "none" if d["leader"] == NO_LEADER else str(d["leader"])
        columns = {"leader/epoch": [(f"{leader}/{d['leader_epoch']}", "")]}
        for label, var in (("ISR", "isr"), ("ELR", "elr"), ("LastKnownELR", "last_known_elr"), ("HWM", "hwm")):
            columns[label] = [(self.format_value(var, d[var]), "")]
        return columns, {f"b{b}": self.lane(d, b) for b in range(len(d["log"]))}

    def lane(self, d: dict[str, Any], b: int) -> list[tuple[str, str]]:
        tags = [
            ("leader", "bold #1f77b4", d["leader"] == b),
            ("isr", "#2ca02c", b in d["isr"]),
            ("elr", "#9467bd", b in d["elr"]),
            ("lkelr", "#9467bd", b in d["last_known_elr"]),
            ("fenced", "bold #d62728", b in d["fenced"]),
            # a reassignment (the replica set is shown only when one may happen)
            ("adding", "bold #17becf", b in d.get("adding", ())),
            ("removing", "bold #ff7f0e", b in d.get("removing", ())),
            ("no replica", "dim", "replicas" in d and b not in d["replicas"]),
            (DOWN.get(d["status"][b], ""), "bold #d62728", d["status"][b] in DOWN),
        ]
        cell = [part for tag, style, on in tags if on for part in ((tag, style), (" ", ""))]
        log, hwm = d["log"][b], d["hwm"][b]
        if not log:
            return cell + [("-", "dim")]
        for k, (epoch, record) in enumerate(log):
            if k == hwm:
                cell += [("|", "bold"), (" ", "")]
            acked = "✓" if record in d["acked"] else ""
            cell += [
                (f"r{record}@{epoch}{acked}", f"#000000 on {EPOCH_COLOURS[epoch % len(EPOCH_COLOURS)]}"),
                (" ", ""),
            ]
        return cell + [("|", "bold")] if hwm == len(log) else cell[:-1]

    def format_value(self, name: str, value: Any) -> str:
        if name == "log":
            return " ".join(f"b{b}[{' '.join(f'r{r}@{e}' for e, r in lg)}]" for b, lg in enumerate(value))
        if name == "exposed":
            return "[" + " ".join(f"r{r}@{e}" for e, r in value) + "]"
        if isinstance(value, list) and all(isinstance(x, (int, str)) for x in value):
            inner = ", ".join(map(str, value)) if name in PER_BROKER else ",".join(map(str, value))
            return f"[{inner}]" if name in PER_BROKER else "{" + inner + "}"
        return str(value)

    def elr_shown(self, s: State) -> str:
        """The ELR as an explanation names it: with the feature off, kip966's
        controller ignores the fields it still holds."""
        shown = "{" + ",".join(map(str, members(s.elr))) + "}"
        return shown if self.elr_in_force(s) == s.elr else f"{shown} (ignored: eligible.leader.replicas.version is 0)"
