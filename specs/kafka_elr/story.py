"""Counterexamples told as the KIP tells its examples: a few sentences,
generated from the trace (what each step did to ISR, ELR, logs and HWM).
What a sentence says the protocol decided (a registration taken as clean,
a proposal rejected, the leader a follower fetches from) is asked of the
spec's own predicates (`facts`), never guessed from what changed."""

from __future__ import annotations

from typing import Any, cast

from modelcheck.ops import replace_at
from modelcheck.result import Step

from .types import describe

MAX_SENTENCES = 3  # plus the closing sentence that names what broke


def _records(log: list) -> str:
    return "[" + " ".join(f"r{r}" for _e, r in log) + "]" if log else "nothing"


def _set(xs: list) -> str:
    return "{" + ",".join(map(str, xs)) + "}"


def _acting(args: dict[str, Any], a: dict[str, Any], judges_min_isr: bool) -> str:
    """The leader that acts, and, under propagated metadata, how its view
    is stale (its min ISR where the step judges the ISR against it)."""
    at = args.get("at")
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


def phrase(action: str, args: dict[str, Any], a: dict[str, Any], b: dict[str, Any], facts: dict[str, Any]) -> str:
    """What one step did, from the states before (`a`) and after (`b`) and
    the spec's verdicts on it (`facts`, KafkaStory.facts)."""
    who = args.get("broker")
    leader = _acting(args, a, action == "AdvanceHwm" or args.get("acks") == "all")
    elected = (
        f" and broker {b['leader']} is elected (epoch {b['leader_epoch']})"
        if b["leader"] != a["leader"] and b["leader"] != -1
        else (" and the partition is left leaderless" if b["leader"] != a["leader"] else "")
    )
    if action == "Produce":
        return f"{leader} appends r{b['produced']} (acks={args['acks']})"
    if action == "Fetch":
        source = facts["source"]
        deposed = f" from deposed leader {source}" if source != a["leader"] else ""
        return f"broker {who} fetches{deposed} and holds {_records(b['log'][who])}"
    if action == "AdvanceHwm":
        newly = [r for r in b["acked"] if r not in a["acked"]]
        acked = f", acknowledging {', '.join(f'r{r}' for r in newly)}" if newly else ""
        at = args.get("at", a["leader"])
        return f"{leader} raises the HWM to {b['hwm'][at]}{acked}"
    if action in ("ShrinkIsr", "ExpandIsr"):
        verb = "drop" if action == "ShrinkIsr" else "add"
        return f"{leader} proposes to {verb} {_set(args['brokers'])}"
    if action == "CommitAlterPartition":
        if not facts["accepted"]:
            return "the controller rejects the ISR proposal"
        return f"the controller commits ISR {_set(b['isr'])} with ELR {_set(b['elr'])}"
    if action in ("FenceBroker", "CleanShutdown"):
        how = "fences broker" if action == "FenceBroker" else "shuts down broker"
        return f"the controller {how} {who} (ISR {_set(b['isr'])}, ELR {_set(b['elr'])}){elected}"
    if action == "StopBroker":
        return f"broker {who} stops in order, unanswered by the controller, and writes its CleanShutdownFile"
    if action == "UncleanShutdown":
        return f"broker {who} crashes and keeps {_records(b['log'][who])} of {_records(a['log'][who])}"
    if action == "StartBroker":
        return (
            f"broker {who} restarts and registers "
            + ("cleanly" if facts["clean"] else "uncleanly")
            + f" (ISR {_set(b['isr'])}, ELR {_set(b['elr'])}){elected}"
        )
    if action == "UnfenceBroker":
        return f"broker {who} is unfenced{elected}"
    if action in ("ElectLeader", "UncleanRecovery", "AdminElectLeaders"):
        how = {
            "ElectLeader": "the controller elects",
            "UncleanRecovery": "the unclean recovery elects",
            "AdminElectLeaders": f"an admin {args.get('type', '')} election makes",
        }[action]
        return (
            f"{how} {b['leader']} leader ({b['leader_recovery']}, ISR {_set(b['isr'])}, "
            f"log {_records(b['log'][b['leader']])})"
            if b["leader"] != -1
            else f"{how} no leader"
        )
    if action == "CompleteRecovery":
        return f"leader {b['leader']} completes its recovery"
    if action == "MetadataUpdate":
        return f"broker {who} receives the latest metadata (leader {b['leader']}, epoch {b['leader_epoch']})"
    if action == "ReassignPartition":
        return (
            f"an operator reassigns the partition to {_set(args['replicas'])} (adding {_set(b['adding'])}, "
            f"removing {_set(b['removing'])})"
        )
    if action in ("CompleteReassignment", "CancelReassignment"):
        how = "the controller completes" if action == "CompleteReassignment" else "an operator cancels"
        return (
            f"{how} the reassignment: replicas {_set(b['replicas'])}, ISR {_set(b['isr'])}, "
            f"ELR {_set(b['elr'])}{elected}"
        )
    if action == "AlterMinIsr":
        return f"min.insync.replicas becomes {args['min_isr']} (ELR {_set(b['elr'])})"
    if action in ("UpgradeMetadataVersion", "DowngradeMetadataVersion"):
        return f"the operator sets the {b['metadata_version']} metadata.version"
    if action in ("UpgradeElrVersion", "DowngradeElrVersion"):
        kept = f", ELR {_set(b['elr'])} as the partition last recorded it" if b["elr_version"] else ""
        return f"the operator sets eligible.leader.replicas.version to {b['elr_version']}{kept}"
    if action in ("UpgradeSoftware", "DowngradeSoftware"):
        return (
            f"broker {who} restarts on the {b['software'][who]} software and registers "
            + ("cleanly" if facts["clean"] else "uncleanly")
            + f" (ISR {_set(b['isr'])}, ELR {_set(b['elr'])}){elected}"
        )
    return action


def _initial(state) -> str:
    """The initial leader and ISR; spare brokers are named, since "ISR all"
    would otherwise count them."""
    replicas = [b for b in range(len(state.status)) if state.replicas >> b & 1]
    spare = [b for b in range(len(state.status)) if b not in replicas]
    return "leader 0, ISR all" + (f" of replicas {_set(replicas)}, spare {_set(spare)}" if spare else "")


class KafkaStory:
    def facts(self, action: str, args: dict[str, Any], s: Any) -> dict[str, Any]:
        """What the protocol decides in a step from state `s`, by the spec's
        own predicates: whether the controller takes a registration as
        clean, whether it accepts the AlterPartition, whom a follower fetches from."""
        who = args.get("broker")
        if action == "StartBroker":
            return {"clean": self.registration_is_clean(s, who)}
        if action in ("UpgradeSoftware", "DowngradeSoftware"):  # a start on the other software
            b = cast(int, who)
            on = s._replace(software=replace_at(s.software, b, 1 if action == "UpgradeSoftware" else 0))
            return {"clean": self.registration_is_clean(on, b)}
        if action == "CommitAlterPartition":
            return {"accepted": self.alter_partition_valid(s)}
        if action == "Fetch":
            return {"source": self.leader_seen_by(s, who)}
        return {}

    def story(self, trace: list[Step], invariant: str, loop: int | None = None) -> str:
        """Three sentences or fewer of steps, then why the last state breaks
        `invariant`."""
        states = [describe(s.state) for s in trace]
        phrases = [
            phrase(cast(str, s.action), s.args, a, b, self.facts(cast(str, s.action), s.args, p.state))
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
