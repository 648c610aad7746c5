"""The data plane: clients produce to the leader, followers fetch, the
leader advances its HWM and proposes ISR changes (AlterPartition), and
broker processes stop and start (KIP-966's clean-shutdown detection is
the controller's, controller.py).
"""

from __future__ import annotations

from typing import Any

from modelcheck.declare import action
from modelcheck.ops import replace_at
from modelcheck.spec import Args

from . import logs, rules, story
from .arguments import ACKS, ACKS_ALL, AT, BROKER, BROKER_SET, ELECTED, KEEP
from .parts import Parts
from .types import (
    NEW,
    NO_EPOCH,
    NO_LEADER,
    NO_PROPOSAL,
    OFFLINE_CLEAN,
    OFFLINE_DIRTY,
    OLD,
    RECOVERING,
    RUNNING,
    State,
    bit,
    contains,
    running_mask,
    size,
    with_,
    without,
)


class Broker(Parts):
    """Brokers and clients (mixed into Kip966, protocol.py)."""

    # ---- clients and the leader: produce, fetch, HWM --------------------------------------
    def running(self, s: State, b: int) -> bool:
        return s.status[b] == RUNNING

    @staticmethod
    def _produce_told(t: story.Told) -> str:
        return f"{t.leader(t.args['acks'] == 'all')} appends r{t.b['produced']} (acks={t.args['acks']})"

    @action("Produce", acks=ACKS, at=AT, told=_produce_told)
    def produce(self, s: State, acks: int, at: int) -> State | None:
        """A client produces to the leader (running; under "propagated", any
        broker that believes it leads, in the epoch it knows)."""
        ld = self.acting_leader(s, at)
        if ld == NO_LEADER or not self.running(s, ld) or s.produced >= self.max_records:
            return None
        if acks == ACKS_ALL and size(self.isr_seen_by(s, ld)) < self.min_isr_seen_by(s, ld):
            return None  # NOT_ENOUGH_REPLICAS
        record = s.produced + 1
        entry = logs.entry(self.epoch_seen_by(s, ld), record)
        return s._replace(
            log=replace_at(s.log, ld, logs.append(s.log[ld], entry)),
            produced=record,
            acks_all=with_(s.acks_all, record) if acks == ACKS_ALL else s.acks_all,
        )

    @staticmethod
    def _fetch_told(t: story.Told) -> str:
        source = t.facts["source"]
        deposed = f" from deposed leader {source}" if source != t.a["leader"] else ""
        return f"broker {t.who} fetches{deposed} and holds {story.records(t.b['log'][t.who])}"

    def _fetch_decides(self, args: Args, s: State) -> dict[str, Any]:
        return {"source": self.leader_seen_by(s, args["broker"])}

    @action("Fetch", broker=BROKER, told=_fetch_told, decides=_fetch_decides)
    def fetch(self, s: State, b: int) -> State | None:
        """A running follower (a replica of the partition: one a reassignment
        adds starts with an empty log) fetches (a fenced one too unless fencing cuts
        it off from the leader, fence_cuts_data_plane): truncate a divergent
        suffix, else copy the next entry; hwm := min(leader hwm, own log end).
        Under "propagated" it fetches from the leader it knows, which answers
        only at its own leader epoch (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
        NOT_LEADER_OR_FOLLOWER otherwise)."""
        ld = self.leader_seen_by(s, b)
        if ld == NO_LEADER or b == ld or not self.running(s, ld) or not self.running(s, b):
            return None
        if not contains(s.replicas, b):
            return None
        if self.fence_cuts_data_plane and (contains(s.fenced, b) or contains(s.fenced, ld)):
            return None
        if self.acting_leader(s, ld) != ld or self.epoch_seen_by(s, b) != self.epoch_seen_by(s, ld):
            return None
        own, lead_log = s.log[b], s.log[ld]
        k = logs.common_prefix_len(own, lead_log)
        new = logs.prefix(own, k) if k < logs.length(own) else logs.prefix(lead_log, logs.length(own) + 1)
        hwm = min(s.hwm[ld], logs.length(new))
        if new == own and hwm == s.hwm[b]:
            return None
        return s._replace(log=replace_at(s.log, b, new), hwm=replace_at(s.hwm, b, hwm))

    @staticmethod
    def _advance_hwm_told(t: story.Told) -> str:
        newly = [r for r in t.b["acked"] if r not in t.a["acked"]]
        acked = f", acknowledging {', '.join(f'r{r}' for r in newly)}" if newly else ""
        return f"{t.leader(True)} raises the HWM to {t.b['hwm'][t.args.get('at', t.a['leader'])]}{acked}"

    @action("AdvanceHwm", at=AT, told=_advance_hwm_told)
    def advance_hwm(self, s: State, at: int) -> State | None:
        """The leader raises its HWM to the smallest matching log end over the
        maximal ISR; acks=all records below it become acked."""
        ld = self.acting_leader(s, at)
        if ld == NO_LEADER or not self.running(s, ld) or not self.hwm_may_advance(s, ld):
            return None
        lead_log = s.log[ld]
        quorum = self.hwm_quorum(s, ld)
        new = logs.length(lead_log)
        for b in range(self.n):
            if contains(quorum, b) and b != ld:
                if not self.follows(s, b, ld):
                    return None  # it has not fetched in this epoch: its log end is unknown
                new = min(new, logs.common_prefix_len(s.log[b], lead_log))
        if new <= s.hwm[ld]:
            return None
        return s._replace(
            hwm=replace_at(s.hwm, ld, new),
            acked=s.acked | self.newly_acked(s, ld, new),
            exposed=logs.prefix(lead_log, new) if new > logs.length(s.exposed) else s.exposed,
        )

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        """KIP-966: the HWM advances only while the committed ISR (not the
        maximal ISR) has at least min ISR members: a rule of the broker's
        software, "not guarded by any feature flags/Metadata version" (Kafka
        3.7.0 on, KAFKA-15583; old software advances it regardless)."""
        return s.software[ld] == OLD or size(self.isr_seen_by(s, ld)) >= self.min_isr_seen_by(s, ld)

    def hwm_quorum(self, s: State, ld: int) -> int:
        """Replicas whose logs bound the HWM: the maximal ISR."""
        return self.isr_seen_by(s, ld) | self.proposed_by(s, ld)

    def newly_acked(self, s: State, ld: int, new_hwm: int) -> int:
        """acks=all records this leader appended that the HWM now passes, if
        the ISR has min ISR members then (KIP-966: respond "when the message
        is persisted in all the ISR members' local log and the size of the ISR
        member is larger than min ISR"). Otherwise, and for records of older
        epochs, the producer gets an error instead of an ack."""
        if size(self.isr_seen_by(s, ld)) < self.min_isr_seen_by(s, ld):
            return 0
        covered = 0
        epoch = self.epoch_seen_by(s, ld)
        for i in range(s.hwm[ld], new_hwm):
            e = logs.at(s.log[ld], i)
            if logs.epoch_of(e) == epoch:
                covered |= bit(logs.record_of(e))
        return covered & s.acks_all

    # ---- the leader proposes an ISR change (AlterPartition) -------------------------------
    def may_propose(self, s: State, ld: int) -> bool:
        """`ld` leads (as far as it knows), runs, and no AlterPartition is in
        flight (one at a time: a stale leader's is rejected anyway)."""
        return ld != NO_LEADER and self.running(s, ld) and s.pending_isr == NO_PROPOSAL

    def propose(self, s: State, ld: int, isr: int) -> State:
        """An AlterPartition request from `ld`: each member with its broker
        epoch (KIP-903), so that the controller can refuse a replica that has
        restarted since; made from a stale view, it carries an old partition
        epoch and is rejected."""
        epochs = self.zeros
        for b in range(self.n):
            if contains(isr, b):
                epochs = replace_at(epochs, b, s.broker_epoch[b])
        t = s._replace(pending_isr=isr, pending_epochs=epochs)
        if not self.propagated:
            return t
        return t._replace(pending_from=ld, pending_stale=0 if self.view_is_current(s, ld) else 1)

    @staticmethod
    def _shrink_isr_told(t: story.Told) -> str:
        return f"{t.leader()} proposes to drop {story.brokers(t.args['brokers'])}"

    @action("ShrinkIsr", bound="max_isr_shrinks", brokers=BROKER_SET, at=AT, told=_shrink_isr_told)
    def shrink_isr(self, s: State, group: int, at: int) -> State | None:
        """The leader proposes to drop slow followers (any may be slow)."""
        ld = self.acting_leader(s, at)
        if not self.may_propose(s, ld) or s.isr_shrinks >= self.max_isr_shrinks:
            return None
        isr = self.isr_seen_by(s, ld)
        if group & ~without(isr, ld):
            return None
        return self.propose(s._replace(isr_shrinks=s.isr_shrinks + 1), ld, isr & ~group)

    @staticmethod
    def _expand_isr_told(t: story.Told) -> str:
        return f"{t.leader()} proposes to add {story.brokers(t.args['brokers'])}"

    @action("ExpandIsr", brokers=BROKER_SET, at=AT, told=_expand_isr_told)
    def expand_isr(self, s: State, group: int, at: int) -> State | None:
        """The leader proposes to add caught-up followers. A RECOVERING leader
        does not grow the ISR (KIP-704)."""
        ld = self.acting_leader(s, at)
        if not self.may_propose(s, ld) or self.reported_recovery(s) == RECOVERING or group & ~self.caught_up(s, ld):
            return None
        return self.propose(s, ld, self.isr_seen_by(s, ld) | group)

    def caught_up(self, s: State, ld: int) -> int:
        """Running, unfenced followers outside the ISR whose log matches the
        leader's up to at least its HWM and its epoch start offset (a fenced
        one would be rejected, with no other effect)."""
        lead_log = s.log[ld]
        floor = max(s.hwm[ld], rules.epoch_start_offset(lead_log, self.epoch_seen_by(s, ld)))
        outside = running_mask(s) & ~s.fenced & s.replicas & ~self.isr_seen_by(s, ld)
        found = 0
        for b in range(self.n):
            if (
                contains(outside, b)
                and logs.length(s.log[b]) >= floor
                and logs.is_prefix(s.log[b], lead_log)
                and self.follows(s, b, ld)
            ):
                found |= bit(b)
        return found

    # ---- broker processes stop and start --------------------------------------------------
    @staticmethod
    def _unclean_shutdown_told(t: story.Told) -> str:
        return (
            f"broker {t.who} crashes and keeps {story.records(t.b['log'][t.who])} of {story.records(t.a['log'][t.who])}"
        )

    @action("UncleanShutdown", bound="max_unclean_shutdowns", broker=BROKER, keep=KEEP, told=_unclean_shutdown_told)
    def unclean_shutdown(self, s: State, b: int, keep: int) -> State | None:
        """A broker's process dies; its unflushed suffix is lost (any `keep`
        entries survive). No CleanShutdownFile is written."""
        if s.unclean_shutdowns >= self.max_unclean_shutdowns or not self.running(s, b) or keep > logs.length(s.log[b]):
            return None
        s = self.forgotten(s, b)
        return s._replace(
            status=replace_at(s.status, b, OFFLINE_DIRTY),
            log=replace_at(s.log, b, logs.prefix(s.log[b], keep)),
            hwm=replace_at(s.hwm, b, min(s.hwm[b], keep)),
            clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH),
            unclean_shutdowns=s.unclean_shutdowns + 1,
            # (legacy, which never has the ELR, leaves the ghost alone)
            crashed_without_elr=1 if self.has_versions and not self.elr_enabled(s) else s.crashed_without_elr,
        )

    def may_stop_cleanly(self, s: State, b: int) -> bool:
        """`b` runs and the config allows one more orderly stop (clean
        shutdowns, controlled or not, share max_clean_shutdowns)."""
        return s.clean_shutdowns < self.max_clean_shutdowns and self.running(s, b)

    def stopped_cleanly(self, s: State, b: int) -> State:
        """An orderly stop: Kafka flushes the log and LogManager.shutdown(brokerEpoch)
        writes the epoch of the broker's registration to its CleanShutdownFile,
        whatever became of the controlled shutdown (it succeeded, timed out, or
        the broker was fenced). Old software writes no epoch (KAFKA-15582, 3.7.0)."""
        written = s.broker_epoch[b] if s.software[b] == NEW else NO_EPOCH
        return self.forgotten(s, b)._replace(
            status=replace_at(s.status, b, OFFLINE_CLEAN),
            clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, written),
            clean_shutdowns=s.clean_shutdowns + 1,
        )

    @staticmethod
    def _clean_shutdown_told(t: story.Told) -> str:
        b = t.b
        return (
            f"the controller shuts down broker {t.who} (ISR {story.brokers(b['isr'])}, "
            f"ELR {story.brokers(b['elr'])}){t.elected}"
        )

    @action("CleanShutdown", bound="max_clean_shutdowns", broker=BROKER, leader=ELECTED, told=_clean_shutdown_told)
    def clean_shutdown(self, s: State, b: int, leader: int) -> State | None:
        """Controlled shutdown the controller answers: the broker writes its
        epoch to its CleanShutdownFile, it is fenced, leadership moves, it
        leaves the ISR. A fenced broker that asks is let go at once and
        handled as fenced again (Kafka: SHUTDOWN_NOW, handleBrokerFenced),
        which changes nothing unless it is still in the ISR (kafka-4)."""
        if not self.may_stop_cleanly(s, b):
            return None
        return self.remove_broker(self.stopped_cleanly(s, b), b, leader)

    @staticmethod
    def _stop_broker_told(t: story.Told) -> str:
        return f"broker {t.who} stops in order, unanswered by the controller, and writes its CleanShutdownFile"

    @action("StopBroker", bound="max_clean_shutdowns", broker=BROKER, told=_stop_broker_told)
    def stop_broker(self, s: State, b: int) -> State | None:
        """An orderly stop the controller does not answer (the controlled
        shutdown timed out, or the broker is cut off from the controller):
        the broker still writes its CleanShutdownFile; the controller learns
        only when it fences the broker for missed heartbeats (FenceBroker)."""
        if not self.may_stop_cleanly(s, b):
            return None
        return self.stopped_cleanly(s, b)

    @staticmethod
    def _start_broker_told(t: story.Told) -> str:
        return f"broker {t.who} restarts and registers {t.registers()}"

    def _start_broker_decides(self, args: Args, s: State) -> dict[str, Any]:
        return {"clean": self.registration_is_clean(s, args["broker"])}

    @action("StartBroker", broker=BROKER, told=_start_broker_told, decides=_start_broker_decides)
    def start_broker(self, s: State, b: int) -> State | None:
        """A stopped broker restarts and registers with the epoch from its
        CleanShutdownFile; a mismatch is an unclean shutdown: the controller
        removes it from ISR and ELR (an ELR member goes to LastKnownELR). It
        gets a new broker epoch and stays fenced. A clean registration is
        handled as a fence (clean_registration)."""
        if not contains(s.fenced, b) or self.running(s, b):
            return None
        return self.started(s, b)

    def started(self, s: State, b: int) -> State:
        """Stopped broker `b` runs again and registers (StartBroker, and a
        start on other software: UpgradeSoftware, DowngradeSoftware)."""
        t = s._replace(
            status=replace_at(s.status, b, RUNNING),
            broker_epoch=replace_at(s.broker_epoch, b, s.broker_epoch[b] + 1),
            clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH),
            in_controlled_shutdown=without(s.in_controlled_shutdown, b),
        )
        t = self.clean_registration(t, b) if self.registration_is_clean(s, b) else self.unclean_registration(t, b)
        # it serves only once its metadata has caught up (BrokerServer waits for it)
        return self.delivered(t, b, True) if self.propagated else t
