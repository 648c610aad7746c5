"""How Kafka states read in trace tables and violation explanations."""

from __future__ import annotations

from typing import Any

from .types import NO_LEADER, State, bit, describe, lost_unregistered, members


class KafkaPresentation:
    trace_columns = ("leader", "leader_epoch", "isr", "elr", "hwm", "log")

    def format_value(self, name: str, value: Any) -> str:
        if name == "log":
            return " ".join(f"b{b}[{' '.join(f'r{r}@{e}' for e, r in lg)}]" for b, lg in enumerate(value))
        if name == "exposed":
            return "[" + " ".join(f"r{r}@{e}" for e, r in value) + "]"
        if isinstance(value, list) and all(isinstance(x, (int, str)) for x in value):
            return "{" + ",".join(map(str, value)) + "}" if name not in ("hwm", "broker_epoch", "status",
                                                                         "clean_shutdown_epoch") else str(value)
        return str(value)

    def explain(self, invariant: str, s: State) -> str:
        d = describe(s)
        if invariant == "NoAckedLoss":
            electable = s.isr | s.elr | (bit(s.leader) if s.leader != NO_LEADER else 0)
            lost = [r for r in members(s.acked)
                    if not any(any(rec == r for _e, rec in s.log[b]) for b in members(electable))]
            holders = {r: [b for b in range(len(s.log)) if any(rec == r for _e, rec in s.log[b])] for r in lost}
            return ("acked record(s) " + ", ".join(f"r{r}" for r in lost)
                    + f" are on no replica the controller may elect cleanly (leader {s.leader}, "
                    f"ISR {d['isr']}, ELR {d['elr']}); still held by "
                    + "; ".join(f"r{r}: brokers {h or 'none'}" for r, h in holders.items()))
        if invariant == "ConsistentRead":
            return (f"leader {s.leader} does not hold what consumers may already have read "
                    f"({self.format_value('exposed', d['exposed'])}): its log is "
                    f"{self.format_value('exposed', d['log'][s.leader])}")
        if invariant == "ElrHasDataToHwm":
            bad = [b for b in members(s.elr & ~lost_unregistered(s)) if s.log[b][:len(s.exposed)] != s.exposed]
            return (f"ELR member(s) {bad} lack data below the high watermark "
                    f"({self.format_value('exposed', d['exposed'])})")
        return super().explain(invariant, s)
