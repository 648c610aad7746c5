"""KIP-966 (Eligible Leader Replicas) with KIP-704 and KIP-460, one partition.

`Kip966` is the full design (variant `kip966`). Other variants subclass it
and redefine only what differs (variants.py). Actions are grouped by actor;
each says who performs it. docs/model.md gives the KIP source of every rule.
"""

from __future__ import annotations

import marshal
from itertools import combinations, product
from operator import le
from typing import Any, Iterator

from modelcheck.spec import Spec, SymmetryError, action, invariant

from . import rules
from .presentation import KafkaPresentation
from .story import KafkaStory
from .types import (MEMBERS, NO_EPOCH, Log, NO_LEADER, OFFLINE_CLEAN, OFFLINE_DIRTY, RECOVERED, RECOVERING,
                    RUNNING, State, bit, describe, lost_unregistered, mask_of, members, pending_mask,
                    replace_at, running_mask, size, symmetric_form)

Step = Iterator[tuple[dict[str, Any], State]]
ADMIN_TYPES = ("PREFERRED", "UNCLEAN", "LONGEST_LOG_AGGRESSIVE", "LONGEST_LOG_BALANCED", "DESIGNATION")
PREFERRED_REPLICA = 0   # the first replica of the assignment


class Kip966(KafkaStory, KafkaPresentation, Spec):
    """The full KIP-966 design: ELR, LastKnownELR/LastKnownLeader, the HWM
    rule, clean-shutdown detection and the unclean recovery manager."""

    abstract = False
    variant = "kip966"
    admin_types = ADMIN_TYPES

    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.n = config["brokers"]
        self.acks = sorted(config["acks"])
        # KIP-966 compatibility: unclean.leader.election.enable=true maps to
        # the Aggressive recovery strategy.
        self.strategy = ("aggressive" if config["unclean_leader_election"]
                         else config["unclean_recovery_strategy"])
        self._checked = config["invariants"] if config["invariants"] is not None else list(self.invariants)
        # TypeOK's domain of `status`, enumerated once (3^N tuples)
        self.statuses = frozenset(product((RUNNING, OFFLINE_CLEAN, OFFLINE_DIRTY), repeat=self.n))
        self._logs_match: dict[tuple[Log, ...], bool] = {}

    # ---- engine interface ---------------------------------------------------
    def init_states(self) -> list[State]:
        n, everyone = self.n, (1 << self.n) - 1
        return [State(
            leader=PREFERRED_REPLICA, leader_epoch=0, isr=everyone, elr=0, last_known_elr=0,
            last_known_leader=NO_LEADER, leader_recovery=RECOVERED, fenced=0,
            broker_epoch=(1,) * n, min_isr=self.config["min_isr"],
            status=(RUNNING,) * n, clean_shutdown_epoch=(NO_EPOCH,) * n,
            log=((),) * n, hwm=(0,) * n, pending_isr=None,
            acked=0, acks_all=0, exposed=(), produced=0, unclean_shutdowns=0,
            clean_shutdowns=0, fences=0, isr_shrinks=0, min_isr_changes=0, admin_elections=0)]

    def checked_invariants(self) -> list[str]:
        return self._checked

    def describe(self, state: State) -> dict[str, Any]:
        return describe(state)

    # actions whose first guard is `counter >= config[bound]`, the counter
    # starting at 0 and never decreasing: never enabled when the bound is 0
    BOUNDED = {"UncleanShutdown": "max_unclean_shutdowns", "CleanShutdown": "max_clean_shutdowns",
               "ShrinkIsr": "max_isr_shrinks", "AlterMinIsr": "max_min_isr_changes",
               "AdminElectLeaders": "max_admin_elections"}

    def never_enabled(self) -> frozenset[str]:
        return frozenset(a for a, bound in self.BOUNDED.items() if not self.config[bound])

    # States are tuples of ints, tuples and None: marshal (format 2, which has
    # no back-references, so equal states give equal bytes) encodes them
    # deterministically, four times faster than repr, and decodes them back.
    def encode(self, state: State) -> bytes:
        return marshal.dumps(tuple(state), 2)

    def decode(self, data: bytes) -> State:
        return State._make(marshal.loads(data))

    symmetric = False       # set by enable_symmetry

    def canonical_is_encoding(self) -> bool:
        return not self.symmetric

    def canonical(self, state: State) -> bytes:
        return marshal.dumps(symmetric_form(state) if self.symmetric else tuple(state), 2)

    def enable_symmetry(self) -> None:
        """Brokers 1..N-1 are interchangeable: every rule that picks a broker
        offers each candidate as its own choice. Broker 0 is not: it is the
        preferred replica and the first leader. Admin UNCLEAN elections pick
        the *first* live replica (KIP-460), so they forbid it."""
        if self.config["max_admin_elections"]:
            raise SymmetryError("--symmetry: admin UNCLEAN elections pick the first live replica (KIP-460), "
                                "so brokers are not interchangeable with max_admin_elections > 0")
        self.symmetric = True

    # ---- derived values -------------------------------------------------------
    def eff_min_isr(self, s: State) -> int:
        """KIP-966: "the effective min.insync.replicas will be
        min(min.insync.replicas, replication factor)"."""
        return min(s.min_isr, self.n)

    def running(self, s: State, b: int) -> bool:
        return s.status[b] == RUNNING

    def unfenced(self, s: State, b: int) -> bool:
        return not s.fenced >> b & 1

    # ---- policy hooks that variants redefine --------------------------------
    def change_isr(self, s: State, proposed: int) -> State:
        """Apply a proposed ISR with the KIP-966 ELR update rule."""
        isr, elr, clean_lkelr = rules.update_elr(s.isr, s.elr, proposed, self.eff_min_isr(s))
        return s._replace(isr=isr, elr=elr,
                          last_known_elr=0 if clean_lkelr else s.last_known_elr)

    def hwm_may_advance(self, s: State) -> bool:
        """KIP-966: the HWM advances only while the committed ISR (not the
        maximal ISR) has at least min ISR members."""
        return size(s.isr) >= self.eff_min_isr(s)

    def hwm_quorum(self, s: State) -> int:
        """Replicas whose logs bound the HWM: the maximal ISR."""
        return s.isr | pending_mask(s)

    def registration_is_clean(self, s: State, b: int) -> bool:
        return rules.registration_is_clean(s.clean_shutdown_epoch[b], s.broker_epoch[b])

    def unclean_registration(self, s: State, b: int) -> State:
        """The controller has detected that `b` shut down uncleanly: KIP-966
        removes it from ISR and ELR; an ELR member goes to LastKnownELR."""
        return s._replace(isr=s.isr & ~bit(b), elr=s.elr & ~bit(b),
                          last_known_elr=s.last_known_elr | (s.elr & bit(b)))

    def min_isr_changed(self, s: State) -> State:
        """KIP-966: "When updating the config min.insync.replicas, if the new
        min ISR <= current ISR, the ELR will be removed" (LastKnownELR too: the
        ISR has reached min ISR)."""
        return s._replace(elr=0, last_known_elr=0) if self.eff_min_isr(s) <= size(s.isr) else s

    def elections(self, s: State) -> list[tuple[int, State]]:
        """Elections the controller makes on its own in leaderless state `s`:
        ISR members, then unfenced ELR members (clean). The unclean recovery
        is the separate UncleanRecovery action."""
        return [(c, self.elect(s, c)) for c in MEMBERS[rules.clean_candidates(s.isr, s.elr, s.fenced)]]

    def recovery_choices(self, s: State, strategy: str) -> list[tuple[int, State]]:
        """KIP-966 unclean recovery (GetReplicaLogInfo). Returns one choice per
        replica that can win: it answered (running, unfenced) and, in
        Balanced mode, ranks at least as high as every LastKnownELR member,
        all of which must have answered."""
        if s.leader != NO_LEADER or strategy == "none" or rules.clean_candidates(s.isr, s.elr, s.fenced):
            return []
        if s.isr or (s.elr and strategy != "aggressive"):
            return []   # wait for the fenced ISR/ELR members to come back
        answered = list(MEMBERS[running_mask(s) & ~s.fenced])
        if strategy == "balanced":
            answered = self.balanced_winners(s, answered)
        return [(w, self.elect(s, w, unclean=True)) for w in answered]

    def balanced_winners(self, s: State, answered: list[int]) -> list[int]:
        """Balanced: "all the LastKnownELR members have replied, plus the
        replicas replied within the timeout"; the winner ranks at least as
        high as every LastKnownELR member."""
        must = members(s.last_known_elr)
        if any(m not in answered for m in must):
            return []
        ranks = [rules.recovery_rank(s.log[m]) for m in must]
        return [w for w in answered if all(rules.recovery_rank(s.log[w]) >= r for r in ranks)]

    # ---- shared effects -----------------------------------------------------------
    def set_leader(self, s: State, leader: int, recovery: int = RECOVERED) -> State:
        """A leader change: one PartitionChangeRecord, one epoch bump; the old
        leader's in-flight AlterPartition is fenced by the epoch."""
        if leader == s.leader:
            return s
        return s._replace(leader=leader, leader_epoch=s.leader_epoch + 1, pending_isr=None,
                          leader_recovery=recovery,
                          last_known_leader=NO_LEADER if leader != NO_LEADER else s.last_known_leader)

    def elect(self, s: State, c: int, unclean: bool = False) -> State:
        """Make `c` leader. Outside the ISR (an ELR or unclean choice) the ISR
        becomes {c}; an unclean choice also empties the ELR and is RECOVERING
        (KIP-704)."""
        if unclean:
            s = s._replace(isr=bit(c), elr=0)
        elif not s.isr & bit(c):
            s = self.change_isr(s._replace(elr=s.elr & ~bit(c)), bit(c))
        return self.set_leader(s, c, RECOVERING if unclean else RECOVERED)

    def remove_broker(self, s: State, b: int, args: dict[str, Any]) -> Step:
        """The controller fences `b` (FenceBroker, CleanShutdown): it leaves
        the ISR through the ELR update; if the ISR empties, it is the
        LastKnownLeader; if it led, elect in the same record."""
        s = s._replace(fenced=s.fenced | bit(b))
        if s.isr & bit(b):
            s = self.change_isr(s, s.isr & ~bit(b))
            if not s.isr:
                s = s._replace(last_known_leader=b)
        if s.leader != b:
            yield args, s
            return
        choices = self.elections(s)
        if not choices:
            yield args, self.set_leader(s, NO_LEADER)
        for c, t in choices:
            yield {**args, "leader": c}, t

    # ---- clients and the leader: data plane -----------------------------------
    @action("Produce")
    def produce(self, s: State) -> Step:
        """A client produces to the leader (running, unfenced)."""
        ld = s.leader
        if ld == NO_LEADER or not self.running(s, ld) or s.produced >= self.config["max_records"]:
            return
        record = s.produced + 1
        log = replace_at(s.log, ld, s.log[ld] + ((s.leader_epoch, record),))
        for acks in self.acks:
            if acks == "all" and size(s.isr) < self.eff_min_isr(s):
                continue    # NOT_ENOUGH_REPLICAS
            yield {"acks": acks}, s._replace(
                log=log, produced=record,
                acks_all=s.acks_all | bit(record) if acks == "all" else s.acks_all)

    @action("Fetch")
    def fetch(self, s: State) -> Step:
        """A running, unfenced follower fetches: truncate a divergent suffix,
        else copy the next entry; hwm := min(leader hwm, own log end)."""
        ld = s.leader
        if ld == NO_LEADER or not self.running(s, ld):
            return
        lead_log = s.log[ld]
        for b in MEMBERS[running_mask(s) & ~s.fenced & ~bit(ld)]:
            own = s.log[b]
            k = rules.common_prefix_len(own, lead_log)
            new = own[:k] if k < len(own) else lead_log[:len(own) + 1]
            hwm = min(s.hwm[ld], len(new))
            if new != own or hwm != s.hwm[b]:
                yield {"broker": b}, s._replace(log=replace_at(s.log, b, new),
                                                hwm=replace_at(s.hwm, b, hwm))

    @action("AdvanceHwm")
    def advance_hwm(self, s: State) -> Step:
        """The leader raises its HWM to the smallest matching log end over the
        maximal ISR; acks=all records below it become acked."""
        ld = s.leader
        if ld == NO_LEADER or not self.running(s, ld) or not self.hwm_may_advance(s):
            return
        lead_log = s.log[ld]
        new = len(lead_log)
        for b in MEMBERS[self.hwm_quorum(s)]:
            if b != ld:
                new = min(new, rules.common_prefix_len(s.log[b], lead_log))
        if new <= s.hwm[ld]:
            return
        yield {}, s._replace(hwm=replace_at(s.hwm, ld, new), acked=s.acked | self.newly_acked(s, new),
                             exposed=lead_log[:new] if new > len(s.exposed) else s.exposed)

    def newly_acked(self, s: State, new_hwm: int) -> int:
        """acks=all records this leader appended that the HWM now passes, if
        the ISR has min ISR members then (KIP-966: respond "when the message
        is persisted in all the ISR members' local log and the size of the ISR
        member is larger than min ISR"). Otherwise, and for records of older
        epochs, the producer gets an error instead of an ack."""
        if size(s.isr) < self.eff_min_isr(s):
            return 0
        ld = s.leader
        covered = 0
        for epoch, record in s.log[ld][s.hwm[ld]:new_hwm]:
            if epoch == s.leader_epoch:
                covered |= bit(record)
        return covered & s.acks_all

    # ---- the leader: AlterPartition -------------------------------------------
    def _proposal_ok(self, s: State) -> bool:
        ld = s.leader
        return ld != NO_LEADER and self.running(s, ld) and s.pending_isr is None

    def proposal(self, s: State, isr: int) -> tuple[tuple[int, int], ...]:
        """An AlterPartition request: each member with its broker epoch
        (KIP-903), so that the controller can refuse a replica that has
        restarted since."""
        return tuple([(b, s.broker_epoch[b]) for b in MEMBERS[isr]])

    @action("ShrinkIsr")
    def shrink_isr(self, s: State) -> Step:
        """The leader proposes to drop slow followers (any may be slow)."""
        if not self._proposal_ok(s) or s.isr_shrinks >= self.config["max_isr_shrinks"]:
            return
        for group in _subsets(MEMBERS[s.isr & ~bit(s.leader)]):
            yield {"brokers": group}, s._replace(pending_isr=self.proposal(s, s.isr & ~mask_of(group)),
                                                 isr_shrinks=s.isr_shrinks + 1)

    @action("ExpandIsr")
    def expand_isr(self, s: State) -> Step:
        """The leader proposes to add caught-up followers: their log matches
        its own up to at least its HWM and its epoch start offset. A
        RECOVERING leader does not grow the ISR (KIP-704)."""
        if not self._proposal_ok(s) or s.leader_recovery == RECOVERING:
            return
        lead_log = s.log[s.leader]
        floor = max(s.hwm[s.leader], rules.epoch_start_offset(lead_log, s.leader_epoch))
        caught_up = [b for b in MEMBERS[running_mask(s) & ~s.fenced & ~s.isr]
                     if len(s.log[b]) >= floor and lead_log[:len(s.log[b])] == s.log[b]]
        for group in _subsets(caught_up):
            yield {"brokers": group}, s._replace(pending_isr=self.proposal(s, s.isr | mask_of(group)))

    @action("CommitAlterPartition")
    def commit_alter_partition(self, s: State) -> Step:
        """The controller validates the proposal (members unfenced and
        registered with the epoch the leader saw, leader in it, not
        RECOVERING with more than one member) and applies it with the ELR
        update, or rejects it."""
        if s.pending_isr is None or s.leader == NO_LEADER:
            return
        p = pending_mask(s)
        t = s._replace(pending_isr=None)
        valid = (p & bit(s.leader) and not p & s.fenced
                 and all(s.broker_epoch[b] == epoch for b, epoch in s.pending_isr)
                 and not (s.leader_recovery == RECOVERING and size(p) > 1))
        yield {}, self.change_isr(t, p) if valid else t

    # ---- controller and broker lifecycle ----------------------------------------
    @action("FenceBroker")
    def fence_broker(self, s: State) -> Step:
        """The controller fences a broker that missed heartbeats: crashed
        (free) or cut off while running (bounded by max_fences)."""
        running = running_mask(s)
        for b in MEMBERS[~s.fenced & (1 << self.n) - 1]:
            if running >> b & 1:
                if s.fences >= self.config["max_fences"]:
                    continue
                yield from self.remove_broker(s._replace(fences=s.fences + 1), b, {"broker": b})
            else:
                yield from self.remove_broker(s, b, {"broker": b})

    @action("UnfenceBroker")
    def unfence_broker(self, s: State) -> Step:
        """A running, registered broker is unfenced; with no leader, elect
        (an ELR member when the ISR is empty)."""
        for b in MEMBERS[s.fenced & running_mask(s)]:
            t = s._replace(fenced=s.fenced & ~bit(b))
            choices = self.elections(t) if t.leader == NO_LEADER else []
            if not choices:
                yield {"broker": b}, t
            for c, u in choices:
                yield {"broker": b, "leader": c}, u

    @action("UncleanShutdown")
    def unclean_shutdown(self, s: State) -> Step:
        """A broker's process dies; its unflushed suffix is lost (any `keep`
        entries survive). No CleanShutdownFile is written."""
        if s.unclean_shutdowns >= self.config["max_unclean_shutdowns"]:
            return
        for b in MEMBERS[running_mask(s)]:
            for keep in range(len(s.log[b]) + 1):
                yield {"broker": b, "keep": keep}, s._replace(
                    status=replace_at(s.status, b, OFFLINE_DIRTY),
                    log=replace_at(s.log, b, s.log[b][:keep]),
                    hwm=replace_at(s.hwm, b, min(s.hwm[b], keep)),
                    clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH),
                    unclean_shutdowns=s.unclean_shutdowns + 1)

    @action("CleanShutdown")
    def clean_shutdown(self, s: State) -> Step:
        """Controlled shutdown: the broker writes its epoch to its
        CleanShutdownFile, leadership moves, it leaves the ISR."""
        if s.clean_shutdowns >= self.config["max_clean_shutdowns"]:
            return
        for b in MEMBERS[running_mask(s) & ~s.fenced]:
            t = s._replace(status=replace_at(s.status, b, OFFLINE_CLEAN),
                           clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, s.broker_epoch[b]),
                           clean_shutdowns=s.clean_shutdowns + 1)
            yield from self.remove_broker(t, b, {"broker": b})

    @action("StartBroker")
    def start_broker(self, s: State) -> Step:
        """A stopped broker restarts and registers with the epoch from its
        CleanShutdownFile; a mismatch is an unclean shutdown: the controller
        removes it from ISR and ELR (an ELR member goes to LastKnownELR). It
        gets a new broker epoch and stays fenced."""
        for b in MEMBERS[s.fenced & ~running_mask(s)]:
            t = s._replace(status=replace_at(s.status, b, RUNNING),
                           broker_epoch=replace_at(s.broker_epoch, b, s.broker_epoch[b] + 1),
                           clean_shutdown_epoch=replace_at(s.clean_shutdown_epoch, b, NO_EPOCH))
            yield {"broker": b}, t if self.registration_is_clean(s, b) else self.unclean_registration(t, b)

    @action("ElectLeader")
    def elect_leader(self, s: State) -> Step:
        """The controller elects a leader that no other change triggered."""
        if s.leader != NO_LEADER:
            return
        for c, t in self.elections(s):
            yield {"leader": c}, t

    @action("UncleanRecovery")
    def unclean_recovery(self, s: State) -> Step:
        """The KIP-966 unclean recovery manager elects by GetReplicaLogInfo."""
        for c, t in self.recovery_choices(s, self.strategy):
            yield {"leader": c}, t

    @action("CompleteRecovery")
    def complete_recovery(self, s: State) -> Step:
        """A RECOVERING leader finishes recovery (KIP-704: aborts open
        transactions, then tells the controller it is RECOVERED)."""
        if s.leader != NO_LEADER and s.leader_recovery == RECOVERING and self.running(s, s.leader):
            yield {}, s._replace(leader_recovery=RECOVERED)

    # ---- operators --------------------------------------------------------------
    @action("AdminElectLeaders")
    def admin_elect_leaders(self, s: State) -> Step:
        """KIP-460 / KIP-966 admin elections (bounded by max_admin_elections):
        PREFERRED only if the leader is not the preferred replica, the others
        only when there is no leader."""
        if s.admin_elections >= self.config["max_admin_elections"]:
            return
        s = s._replace(admin_elections=s.admin_elections + 1)
        for kind in self.admin_types:
            for args, t in self.admin_choices(s, kind):
                yield {"type": kind, **args}, t

    def admin_choices(self, s: State, kind: str) -> Step:
        p = PREFERRED_REPLICA
        if kind == "PREFERRED":
            if s.leader != p and s.isr & bit(p) and self.unfenced(s, p):
                yield {}, self.elect(s, p)
            return
        if s.leader != NO_LEADER:
            return
        if kind == "UNCLEAN":
            # KIP-460: "elects the first live replica if there are no in-sync replica"
            clean = members(rules.clean_candidates(s.isr, s.elr, s.fenced))
            live = [b for b in range(self.n) if self.unfenced(s, b)]
            if clean:
                yield {"leader": clean[0]}, self.elect(s, clean[0])
            elif live:
                yield {"leader": live[0]}, self.elect(s, live[0], unclean=True)
        elif kind.startswith("LONGEST_LOG_"):
            for c, t in self.recovery_choices(s, kind.removeprefix("LONGEST_LOG_").lower()):
                yield {"leader": c}, t
        elif kind == "DESIGNATION":
            for d in range(self.n):
                if self.unfenced(s, d):
                    yield {"desired": d}, self.elect(s, d, unclean=not (s.isr | s.elr) & bit(d))

    @action("AlterMinIsr")
    def alter_min_isr(self, s: State) -> Step:
        """min.insync.replicas changes (bounded by max_min_isr_changes)."""
        if s.min_isr_changes >= self.config["max_min_isr_changes"]:
            return
        for v in range(1, self.n + 1):
            if v == s.min_isr:
                continue
            yield {"min_isr": v}, self.min_isr_changed(s._replace(min_isr=v, min_isr_changes=s.min_isr_changes + 1))

    # ---- invariants --------------------------------------------------------------
    @invariant("TypeOK")
    def type_ok(self, s: State) -> bool:
        """Every variable is in its domain."""
        n = self.n
        # sets are bitmasks: their union is in 0..2^N-1 iff each is (a negative one makes it negative)
        sets = s.isr | s.elr | s.last_known_elr | s.fenced | pending_mask(s)
        return (-1 <= s.leader < n and -1 <= s.last_known_leader < n and s.leader_epoch >= 0
                and 0 <= sets < 1 << n and s.leader_recovery in (RECOVERED, RECOVERING) and s.min_isr >= 1
                and s.status in self.statuses
                and len(s.broker_epoch) == len(s.clean_shutdown_epoch) == len(s.log) == len(s.hwm) == n
                and min(s.hwm) >= 0 and all(map(le, s.hwm, map(len, s.log))))

    @invariant("ElrDisjointIsr")
    def elr_disjoint_isr(self, s: State) -> bool:
        """KIP-966: "The member of ELR should not be in ISR"."""
        return not s.isr & s.elr

    @invariant("ElrOnlyUnderMinIsr")
    def elr_only_under_min_isr(self, s: State) -> bool:
        """KIP-966: "If ELR is not empty, the ISR is under min ISR"."""
        return not s.elr or size(s.isr) < self.eff_min_isr(s)

    @invariant("ElrHasDataToHwm")
    def elr_has_data_to_hwm(self, s: State) -> bool:
        """KIP-966: "The member of ELR should have the data at least to HWM"
        (brokers that crashed dirty and have not re-registered excepted)."""
        if not s.elr:
            return True
        k = len(s.exposed)
        return all(s.log[b][:k] == s.exposed for b in MEMBERS[s.elr & ~lost_unregistered(s)])

    @invariant("LeaderInIsr")
    def leader_in_isr(self, s: State) -> bool:
        """The leader is a member of the ISR."""
        return s.leader == NO_LEADER or bool(s.isr & bit(s.leader))

    @invariant("LeaderUnfenced")
    def leader_unfenced(self, s: State) -> bool:
        """The leader is registered and unfenced: the controller elected a
        live broker."""
        return s.leader == NO_LEADER or self.unfenced(s, s.leader)

    @invariant("ElectableAtLeastMinIsr")
    def electable_at_least_min_isr(self, s: State) -> bool:
        """KIP-966: "ELR + ISR size will not be dropped below the min ISR
        unless the controller discovers an ELR member has an unclean
        shutdown"."""
        if size(s.isr | s.elr) >= self.eff_min_isr(s):
            return True
        return s.unclean_shutdowns - size(lost_unregistered(s)) > 0   # some unclean shutdown was detected

    @invariant("LogMatching")
    def log_matching(self, s: State) -> bool:
        """Two logs with the same entry at an offset agree below it."""
        ok = self._logs_match.get(s.log)
        if ok is None:          # memoised: far fewer combinations of logs than states
            ok = self._logs_match[s.log] = rules.logs_match(s.log)
        return ok

    @invariant("RecoveringIsrSingleton")
    def recovering_isr_singleton(self, s: State) -> bool:
        """KIP-704: "if the 'is unclean' field is true then the ISR is
        guaranteed to have a size of 1"."""
        return s.leader_recovery == RECOVERED or (s.leader != NO_LEADER and s.isr == bit(s.leader))

    @invariant("NoAckedLoss")
    def no_acked_loss(self, s: State) -> bool:
        """Every acked record is on the leader or on a replica the protocol may
        still elect cleanly (ISR, ELR): KIP-966's headline claim."""
        if not s.acked:
            return True
        holders = s.isr | s.elr | (bit(s.leader) if s.leader != NO_LEADER else 0)
        held = 0
        for b in MEMBERS[holders]:
            for _epoch, record in s.log[b]:
                held |= bit(record)
        return not s.acked & ~held

    @invariant("ConsistentRead")
    def consistent_read(self, s: State) -> bool:
        """A serving leader's log holds everything consumers may have read."""
        ld = s.leader
        return (ld == NO_LEADER or not self.running(s, ld)
                or s.log[ld][:len(s.exposed)] == s.exposed)


def _subsets(items: list[int]) -> Iterator[list[int]]:
    """Non-empty subsets, smallest first, in lexicographic order."""
    for k in range(1, len(items) + 1):
        for group in combinations(items, k):
            yield list(group)

