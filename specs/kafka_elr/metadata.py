"""What a broker acts on: the metadata last delivered to it (metadata =
"propagated") or the controller's state itself ("atomic"), and the action
that delivers it. Kafka: KRaft brokers replay the metadata log; a broker
acts on the partition as its last replayed record describes it.
"""

from __future__ import annotations

from modelcheck.declare import action
from modelcheck.ops import replace_at

from . import story
from .arguments import RECEIVER
from .parts import Parts
from .types import NO_LEADER, State, proposed


class Metadata(Parts):
    """The brokers' views of the partition (mixed into Kip966, protocol.py)."""

    # ---- what a broker acts on: the controller's state under "atomic", its view under "propagated"
    def acting_leader(self, s: State, at: int) -> int:
        """The broker acting as leader in an instance with argument `at`:
        the controller's leader ("atomic"), or `at` if it believes it leads."""
        if not self.propagated:
            return s.leader
        return at if s.seen_leader[at] == at else NO_LEADER

    def leader_seen_by(self, s: State, b: int) -> int:
        return s.seen_leader[b] if self.propagated else s.leader

    def epoch_seen_by(self, s: State, b: int) -> int:
        return s.seen_epoch[b] if self.propagated else s.leader_epoch

    def isr_seen_by(self, s: State, ld: int) -> int:
        """The ISR leader `ld` acts on (its committed ISR)."""
        return s.seen_isr[ld] if self.propagated else s.isr

    def min_isr_seen_by(self, s: State, ld: int) -> int:
        """The effective min ISR leader `ld` acts on."""
        return min(s.seen_min_isr[ld], self.rf) if self.propagated else self.eff_min_isr(s)

    def proposed_by(self, s: State, ld: int) -> int:
        """The members of `ld`'s own AlterPartition in flight (0 if none)."""
        return proposed(s) if not self.propagated or s.pending_from == ld else 0

    def follows(self, s: State, b: int, ld: int) -> bool:
        """Follower b fetches from leader `ld` in `ld`'s epoch, so `ld` knows
        its log end (Partition.makeLeader resets what a new leader knows of
        each follower: only a fetch in its epoch tells it)."""
        return not self.propagated or (s.seen_leader[b] == ld and s.seen_epoch[b] == s.seen_epoch[ld])

    def view_is_current(self, s: State, ld: int) -> bool:
        """`ld` has seen the partition as the controller has it now (so an
        AlterPartition it makes carries the current partition epoch; the
        fields it does not see cannot change what it proposes)."""
        return not self.propagated or (
            s.seen_leader[ld] == s.leader and s.seen_epoch[ld] == s.leader_epoch and s.seen_isr[ld] == s.isr
        )

    def delivered(self, s: State, b: int, with_min_isr: bool) -> State:
        """`s` once broker b has the controller's latest partition metadata
        (and, `with_min_isr`, the latest min.insync.replicas: an
        AlterPartition response carries only the partition)."""
        leads = s.leader == b
        min_isr = (s.min_isr if with_min_isr else s.seen_min_isr[b]) if leads else 0
        return s._replace(
            seen_leader=replace_at(s.seen_leader, b, s.leader),
            seen_epoch=replace_at(s.seen_epoch, b, s.leader_epoch),
            seen_isr=replace_at(s.seen_isr, b, s.isr if leads else 0),
            seen_min_isr=replace_at(s.seen_min_isr, b, min_isr),
        )

    def forgotten(self, s: State, b: int) -> State:
        """`s` with broker b's view dropped (it stopped; it catches up when it starts)."""
        if not self.propagated:
            return s
        return s._replace(
            seen_leader=replace_at(s.seen_leader, b, NO_LEADER),
            seen_epoch=replace_at(s.seen_epoch, b, 0),
            seen_isr=replace_at(s.seen_isr, b, 0),
            seen_min_isr=replace_at(s.seen_min_isr, b, 0),
        )

    # ---- the metadata log reaches a broker ------------------------------------------------
    @staticmethod
    def _metadata_update_told(t: story.Told) -> str:
        return f"broker {t.who} receives the latest metadata (leader {t.b['leader']}, epoch {t.b['leader_epoch']})"

    @action("MetadataUpdate", broker=RECEIVER, told=_metadata_update_told)
    def metadata_update(self, s: State, b: int) -> State | None:
        """Metadata = "propagated": a running broker catches up with the
        metadata log (the partition's latest record and min.insync.replicas),
        fenced or not; a no-op if nothing it acts on changed."""
        if not self.running(s, b):
            return None
        t = self.delivered(s, b, True)
        if (
            t.seen_leader[b] == s.seen_leader[b]
            and t.seen_epoch[b] == s.seen_epoch[b]
            and t.seen_isr[b] == s.seen_isr[b]
            and t.seen_min_isr[b] == s.seen_min_isr[b]
        ):
            return None
        return t
