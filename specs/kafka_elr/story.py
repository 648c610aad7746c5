"""Counterexamples told as the KIP tells its examples: a few sentences,
generated from the trace (what each step did to ISR, ELR, logs and HWM),
each step in the words its action declares beside its rule (`told`).
What a sentence says the protocol decided (a registration taken as clean,
a proposal rejected, the leader a follower fetches from) is asked of the
spec's own predicates (the action's `decides`), never guessed from what
changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from modelcheck.result import Step

from .parts import Parts
from .types import describe

MAX_SENTENCES = 3  # plus the closing sentence that names what broke


def records(log: list) -> str:
    """A described log's records, as a story names them."""
    return "[" + " ".join(f"r{r}" for _e, r in log) + "]" if log else "nothing"


def brokers(xs: list) -> str:
    """A described set, as a story names it."""
    return "{" + ",".join(map(str, xs)) + "}"


@dataclass(frozen=True)
class Told:
    """One step as an action's `told` words it: its arguments, the described
    states before (`a`) and after (`b`), and what the spec decided in it
    (`facts`, from the action's `decides`)."""

    args: dict[str, Any]
    a: dict[str, Any]
    b: dict[str, Any]
    facts: dict[str, Any]

    @property
    def who(self) -> Any:
        return self.args.get("broker")

    def leader(self, judges_min_isr: bool = False) -> str:
        """The leader that acts, and, under propagated metadata, how its view
        is stale (its min ISR where the step judges the ISR against it)."""
        a, at = self.a, self.args.get("at")
        if at is None:
            return f"leader {a['leader']}"
        stale = (
            [f"deposed: the controller's leader is {a['leader'] if a['leader'] != -1 else 'none'}"]
            if at != a["leader"]
            else []
        )
        if judges_min_isr and a["seen_min_isr"][at] != a["min_isr"]:
            stale.append(f"still seeing min.insync.replicas {a['seen_min_isr'][at]}")
        return f"leader {at}" + (f" ({', '.join(stale)})" if stale else "")

    @property
    def elected(self) -> str:
        """The leader change the step made, if any, as a clause."""
        a, b = self.a, self.b
        if b["leader"] != a["leader"] and b["leader"] != -1:
            return f" and broker {b['leader']} is elected (epoch {b['leader_epoch']})"
        return " and the partition is left leaderless" if b["leader"] != a["leader"] else ""

    def elects(self, how: str) -> str:
        """An election step: whom `how` elects."""
        b = self.b
        if b["leader"] == -1:
            return f"{how} no leader"
        return (
            f"{how} {b['leader']} leader ({b['leader_recovery']}, ISR {brokers(b['isr'])}, "
            f"log {records(b['log'][b['leader']])})"
        )

    def registers(self) -> str:
        """How the controller took the broker's registration, and what it changed."""
        b = self.b
        return (
            "cleanly" if self.facts["clean"] else "uncleanly"
        ) + f" (ISR {brokers(b['isr'])}, ELR {brokers(b['elr'])}){self.elected}"


def _initial(state) -> str:
    """The initial leader and ISR; spare brokers are named, since "ISR all"
    would otherwise count them."""
    replicas = [b for b in range(len(state.status)) if state.replicas >> b & 1]
    spare = [b for b in range(len(state.status)) if b not in replicas]
    return "leader 0, ISR all" + (f" of replicas {brokers(replicas)}, spare {brokers(spare)}" if spare else "")


class KafkaStory(Parts):
    def facts(self, action: str, args: dict[str, Any], s: Any) -> dict[str, Any]:
        """What the protocol decides in a step from state `s`, by the spec's
        own predicates (the action's `decides`): whether the controller takes
        a registration as clean, whether it accepts the AlterPartition, whom
        a follower fetches from."""
        decides = self.decides.get(action)
        return decides(self, args, s) if decides is not None else {}

    def phrase(self, action: str, args: dict[str, Any], a: dict[str, Any], b: dict[str, Any], s: Any) -> str:
        """What one step from state `s` did, in the words its action declares."""
        told = self.told.get(action)
        return told(Told(args, a, b, self.facts(action, args, s))) if told is not None else action

    def story(self, trace: list[Step], invariant: str, loop: int | None = None) -> str:
        """Three sentences or fewer of steps, then why the last state breaks
        `invariant`."""
        states = [describe(s.state) for s in trace]
        phrases = [
            self.phrase(cast(str, s.action), s.args, a, b, p.state)
            for p, s, a, b in zip(trace, trace[1:], states, states[1:])
        ]
        per = -(-len(phrases) // MAX_SENTENCES) if phrases else 1
        sentences = []
        for i in range(0, len(phrases), per):
            chunk = phrases[i : i + per]
            text = ", ".join(chunk[:-1]) + (" and " if len(chunk) > 1 else "") + chunk[-1]
            lead = "Then " if i else f"From the initial state ({_initial(trace[0].state)}), "
            sentences.append(lead + text + ".")
        if loop is not None and sentences:
            sentences[-1] = sentences[-1][:-1] + self.loop_sentence(trace, loop) + "."
        return " ".join(sentences + [f"{invariant} breaks: {self.explain(invariant, trace[-1].state)}."])
