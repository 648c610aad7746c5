"""Protocol variants: each redefines only the rules that differ from KIP-966."""

from __future__ import annotations

from .kafka4 import Kafka4
from .protocol import Kip966
from .rules import clean_candidates, recovery_rank
from .types import NO_LEADER, State, members, pending_mask, size


class Legacy(Kip966):
    """Pre-KIP-966 KRaft: the ISR never empties (the last member stays), the
    HWM ignores min ISR, no ELR and no clean-shutdown detection. KIP-966's
    motivation ("last replica standing") is a counterexample here."""

    variant = "legacy"
    admin_types = ("PREFERRED", "UNCLEAN")      # KIP-460 only
    omit = frozenset({"UncleanRecovery", "ElrDisjointIsr", "ElrOnlyUnderMinIsr",
                      "ElrHasDataToHwm", "ElectableAtLeastMinIsr"})

    def change_isr(self, s: State, proposed: int) -> State:
        return s._replace(isr=proposed or s.isr)

    def hwm_may_advance(self, s: State) -> bool:
        return True

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True     # nothing is detected, so nothing is removed

    def elections(self, s: State) -> list[tuple[int, State]]:
        """An unfenced ISR member; else, with unclean.leader.election.enable,
        any unfenced replica (RECOVERING)."""
        clean = members(clean_candidates(s.isr, 0, s.fenced))
        if clean:
            return [(c, self.elect(s, c)) for c in clean]
        if not self.config["unclean_leader_election"]:
            return []
        return [(c, self.elect(s, c, unclean=True)) for c in range(self.n) if self.unfenced(s, c)]


class ElrOnly(Kip966):
    """KIP-966 delivery phase 1 ("Delivery plan"): ELR and LastKnownLeader,
    no unclean recovery manager. When neither ISR nor ELR offers a live
    candidate, unclean.leader.election.enable=true elects a random unfenced
    replica; false waits for a fenced ELR member, or, with no ELR, for the
    LastKnownLeader to be unfenced."""

    variant = "kip966-elr-only"
    admin_types = ("PREFERRED", "UNCLEAN")      # no LONGEST_LOG_* or DESIGNATION without the recovery manager
    omit = frozenset({"UncleanRecovery"})

    def elections(self, s: State) -> list[tuple[int, State]]:
        clean = super().elections(s)
        if clean or s.isr:
            return clean
        if self.config["unclean_leader_election"]:
            # "The unclean leader election will be randomly choosing an unfenced replica as it is today."
            return [(c, self.elect(s, c, unclean=True)) for c in range(self.n) if self.unfenced(s, c)]
        lkl = s.last_known_leader
        if not s.elr and lkl != NO_LEADER and self.unfenced(s, lkl):
            # "elect the LastKnownLeader once it is unfenced": outside ISR and ELR, so unclean (KIP-704)
            return [(lkl, self.elect(s, lkl, unclean=True))]
        return []


class HwmIgnoresMinIsr(Kip966):
    """Mutant: KIP-966 without its high-watermark rule (the HWM advances
    whatever the ISR size, as before KIP-966)."""

    variant = "hwm-ignores-min-isr"

    def hwm_may_advance(self, s: State) -> bool:
        return True


class HwmOnMaximalIsr(Kip966):
    """Mutant: the HWM rule counts the maximal ISR (committed plus pending)
    instead of the ISR the controller committed, which KIP-966 argues
    against with its 3-replica example."""

    variant = "hwm-on-maximal-isr"

    def hwm_may_advance(self, s: State) -> bool:
        return size(s.isr | pending_mask(s)) >= self.eff_min_isr(s)


class BalancedFixedResponses(Kip966):
    """Rejected alternative (KIP-966 "Rejected Alternatives"): in Balanced
    mode, elect once a fixed number of replicas (min ISR) have answered,
    instead of waiting for every LastKnownELR member."""

    variant = "balanced-fixed-responses"

    def balanced_winners(self, s: State, answered: list[int]) -> list[int]:
        """Any responder that ranks highest among some min-ISR-sized set of
        responders can win (any such set may have answered first)."""
        k = self.eff_min_isr(s)
        if len(answered) < k:
            return []
        rank = {b: recovery_rank(s.log[b]) for b in answered}
        return [w for w in answered if sum(rank[x] <= rank[w] for x in answered) >= k]


class NoUncleanDetection(Kip966):
    """Mutant: ELR without clean-shutdown detection: every registration is
    taken as clean, so a broker that lost its unflushed suffix stays in the
    ELR."""

    variant = "no-unclean-detection"

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True


VARIANTS: dict[str, type[Kip966]] = {cls.variant: cls for cls in (
    Kip966, Legacy, ElrOnly, Kafka4, HwmIgnoresMinIsr, HwmOnMaximalIsr, BalancedFixedResponses, NoUncleanDetection)}
