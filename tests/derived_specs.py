"""Specs derived from the Kafka spec for tests only. They live in one
module so that each is compiled once a test session (a kernel is named by
its flattened text, which includes the class's module)."""

from __future__ import annotations

from modelcheck.declare import invariant
from specs.kafka_elr import Kip966
from specs.kafka_elr.types import NO_LEADER
from specs.kafka_elr.variants import ReassignmentIgnoresMinIsr


class LeaderlessKip966(Kip966):
    """KIP-966 with an invariant its initial state breaks (it has a leader).
    Spark executors never import this module: the kernel travels as its
    source."""

    @invariant("Leaderless")
    def leaderless(self, s):
        return s.leader == NO_LEADER


class BalancedIgnoringLastKnownElr(Kip966):
    """A Balanced recovery that forgets LastKnownELR: it elects the best of
    whoever answered, without waiting for the LastKnownELR members (what
    RecoveryKeepsLastKnownElrData must catch)."""

    def balanced_winners(self, s, answered):
        return answered if s.last_known_elr & ~answered else Kip966.balanced_winners(self, s, answered)


class ReassignmentKeepingDroppedElr(ReassignmentIgnoresMinIsr):
    """The pre-KIP-966 rule without KIP-966 4's filter: an ELR member that
    the reassignment drops stays in the ELR (what ElrWithinReplicas must
    catch; under kip966's own rule the ELR is empty when one ends)."""

    def reassigned(self, s, dropped, leader):
        t = ReassignmentIgnoresMinIsr.reassigned(self, s, dropped, leader)
        return t if t is None else t._replace(elr=t.elr | s.elr & dropped)
