"""Protocol variants: each redefines only the rules that differ from KIP-966."""

from __future__ import annotations

from modelcheck.ops import popcount

from . import rules
from .arguments import PREFERRED, UNCLEAN
from .kafka4 import Kafka4
from .protocol import Kip966
from .types import NO_LEADER, State, bit, size


class Legacy(Kip966):
    """Pre-KIP-966 KRaft: the ISR never empties (the last member stays), the
    HWM ignores min ISR, no ELR and no clean-shutdown detection. KIP-966's
    motivation ("last replica standing") is a counterexample here."""

    variant = "legacy"
    admin_types = (PREFERRED, UNCLEAN)  # KIP-460 only
    omit = frozenset(
        {
            "UncleanRecovery",
            "ElrDisjointIsr",
            "ElrOnlyUnderMinIsr",
            "ElrWithinReplicas",
            "ElrHasDataToHwm",
            "ElectableAtLeastMinIsr",
            *Kip966.RECOVERY_MANAGER,
            "ElrMemberElected",
        }
    )

    def change_isr(self, s: State, proposal: int) -> State:
        return self.recorded(s, s._replace(isr=proposal if proposal else s.isr))

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        return True

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True  # nothing is detected, so nothing is removed

    def may_end_reassignment(self, s: State, isr: int) -> bool:
        return isr != 0  # before KIP-966 4a/4b: any non-empty ISR

    def candidates(self, s: State) -> tuple[int, bool]:
        """An unfenced ISR member; else, with unclean.leader.election.enable,
        any unfenced replica (RECOVERING)."""
        clean = rules.clean_candidates(s.isr, 0, s.fenced)
        if clean or not s.unclean_election:
            return clean, False
        return s.replicas & ~s.fenced, True


class ElrOnly(Kip966):
    """KIP-966 delivery phase 1 ("Delivery plan"): ELR and LastKnownLeader,
    no unclean recovery manager. When neither ISR nor ELR offers a live
    candidate, unclean.leader.election.enable=true elects a random unfenced
    replica; false waits for a fenced ELR member, or, with no ELR, for the
    LastKnownLeader to be unfenced."""

    variant = "kip966-elr-only"
    admin_types = (PREFERRED, UNCLEAN)  # no LONGEST_LOG_* or DESIGNATION without the recovery manager
    omit = frozenset({"UncleanRecovery", *Kip966.RECOVERY_MANAGER})

    def candidates(self, s: State) -> tuple[int, bool]:
        clean = rules.clean_candidates(s.isr, s.elr, s.fenced)
        if clean or s.isr:
            return clean, False
        if s.unclean_election:
            # "The unclean leader election will be randomly choosing an unfenced replica as it is today."
            return s.replicas & ~s.fenced, True
        lkl = s.last_known_leader
        if not s.elr and lkl != NO_LEADER and self.unfenced(s, lkl):
            # "elect the LastKnownLeader once it is unfenced": outside ISR and ELR, so unclean (KIP-704)
            return bit(lkl), True
        return 0, False


class HwmIgnoresMinIsr(Kip966):
    """Mutant: KIP-966 without its high-watermark rule (the HWM advances
    whatever the ISR size, as before KIP-966)."""

    variant = "hwm-ignores-min-isr"

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        return True


class HwmOnMaximalIsr(Kip966):
    """Mutant: the HWM rule counts the maximal ISR (committed plus pending)
    instead of the ISR the controller committed, which KIP-966 argues
    against with its 3-replica example."""

    variant = "hwm-on-maximal-isr"

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        return size(self.isr_seen_by(s, ld) | self.proposed_by(s, ld)) >= self.min_isr_seen_by(s, ld)


class BalancedFixedResponses(Kip966):
    """Rejected alternative (KIP-966 "Rejected Alternatives"): in Balanced
    mode, elect once a fixed number of replicas (min ISR) have answered,
    instead of waiting for every LastKnownELR member."""

    variant = "balanced-fixed-responses"

    def balanced_winners(self, s: State, answered: int) -> int:
        """Any responder that ranks highest among some min-ISR-sized set of
        responders can win (any such set may have answered first)."""
        k = self.eff_min_isr(s)
        if popcount(answered) < k:
            return 0
        winners = 0
        for w in range(self.n):
            if answered >> w & 1:
                outranked = 0  # responders ranking at most as high as w, w included
                for x in range(self.n):
                    if answered >> x & 1 and rules.recovery_rank(s.log[x]) <= rules.recovery_rank(s.log[w]):
                        outranked += 1
                if outranked >= k:
                    winners |= bit(w)
        return winners


class ReassignmentIgnoresMinIsr(Kip966):
    """KIP-966 with the reassignment rule it replaces (4a: "when completing
    the reassignment, all the adding replicas should be in ISR. This
    behavior can result in 1 replica in ISR"): a reassignment completes, or
    is cancelled, with any non-empty ISR."""

    variant = "reassignment-ignores-min-isr"

    def may_end_reassignment(self, s: State, isr: int) -> bool:
        return isr != 0


class NoUncleanDetection(Kip966):
    """Mutant: ELR without clean-shutdown detection: every registration is
    taken as clean, so a broker that lost its unflushed suffix stays in the
    ELR."""

    variant = "no-unclean-detection"

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True


VARIANTS: dict[str, type[Kip966]] = {
    cls.variant: cls
    for cls in (
        Kip966,
        Legacy,
        ElrOnly,
        Kafka4,
        HwmIgnoresMinIsr,
        HwmOnMaximalIsr,
        BalancedFixedResponses,
        NoUncleanDetection,
        ReassignmentIgnoresMinIsr,
    )
}
