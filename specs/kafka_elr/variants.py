"""Protocol variants: each redefines only the rules that differ from KIP-966."""

from __future__ import annotations

from .protocol import Kip966
from .rules import clean_candidates
from .types import State, members


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


VARIANTS: dict[str, type[Kip966]] = {cls.variant: cls for cls in (Kip966, Legacy)}
