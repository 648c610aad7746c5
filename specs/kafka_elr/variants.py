"""Protocol variants and design mutants: each redefines only the rules that
differ from KIP-966, and registers itself by its `variant` (catalog.py)."""

from __future__ import annotations

from modelcheck.ops import popcount

from . import rules
from .arguments import PREFERRED, UNCLEAN
from .protocol import Kip966
from .types import ELR, ELR_VERSION, NEW, NO_LEADER, RECOVERY_MANAGER, State, bit, size


class Legacy(Kip966):
    """Pre-KIP-966 KRaft: the ISR never empties (the last member stays), the
    HWM ignores min ISR, no ELR and no clean-shutdown detection. KIP-966's
    motivation ("last replica standing") is a counterexample here."""

    variant = "legacy"
    protocol = True
    admin_types = (PREFERRED, UNCLEAN)  # KIP-460 only
    lacks = frozenset({ELR, RECOVERY_MANAGER, ELR_VERSION})

    has_versions = False  # no eligible.leader.replicas.version to turn on

    def elr_enabled(self, s: State) -> bool:
        """Never: the ISR never empties, and elections take an ISR member or,
        with unclean.leader.election.enable, any unfenced replica
        (`candidates_without_elr`), as KIP-966's controller with the feature off."""
        return False

    def hwm_may_advance(self, s: State, ld: int) -> bool:
        return True

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True  # nothing is detected, so nothing is removed

    def may_end_reassignment(self, s: State, isr: int) -> bool:
        return isr != 0  # before KIP-966 4a/4b: any non-empty ISR


class ElrOnly(Kip966):
    """KIP-966 delivery phase 1 ("Delivery plan"): ELR and LastKnownLeader,
    no unclean recovery manager. When neither ISR nor ELR offers a live
    candidate, unclean.leader.election.enable=true elects a random unfenced
    replica; false waits for a fenced ELR member, or, with no ELR, for the
    LastKnownLeader to be unfenced."""

    variant = "kip966-elr-only"
    protocol = True
    admin_types = (PREFERRED, UNCLEAN)  # no LONGEST_LOG_* or DESIGNATION without the recovery manager
    lacks = frozenset({RECOVERY_MANAGER})

    def candidates(self, s: State) -> tuple[int, bool]:
        if not self.elr_enabled(s):
            return self.candidates_without_elr(s)
        clean = rules.clean_candidates(s.isr, s.elr, s.fenced)
        if clean or s.isr:
            return clean, False
        if s.unclean_election:
            # "The unclean leader election will be randomly choosing an unfenced replica as it is today."
            return s.replicas & ~s.fenced, True
        lkl = s.last_known_leader
        if not s.elr and lkl != NO_LEADER and self.last_known_leader_electable(s, lkl):
            # "elect the LastKnownLeader once it is unfenced": outside ISR and ELR, so unclean (KIP-704)
            return bit(lkl), True
        return 0, False

    def last_known_leader_electable(self, s: State, lkl: int) -> bool:
        """KIP-966: the LastKnownLeader is elected "once it is unfenced"."""
        return self.unfenced(s, lkl)


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


class NoUncleanDetection(Kip966):
    """Mutant: ELR without clean-shutdown detection: every registration is
    taken as clean, so a broker that lost its unflushed suffix stays in the
    ELR."""

    variant = "no-unclean-detection"

    def registration_is_clean(self, s: State, b: int) -> bool:
        return True


class ReassignmentIgnoresMinIsr(Kip966):
    """KIP-966 with the reassignment rule it replaces (4a: "when completing
    the reassignment, all the adding replicas should be in ISR. This
    behavior can result in 1 replica in ISR"): a reassignment completes, or
    is cancelled, with any non-empty ISR."""

    variant = "reassignment-ignores-min-isr"

    def may_end_reassignment(self, s: State, isr: int) -> bool:
        return isr != 0


class ElrKeptOnDowngrade(Kip966):
    """Mutant of the migration plan: after eligible.leader.replicas.version
    goes to 0, the partition's changes (and a metadata version downgrade)
    keep the ELR fields instead of removing them ("all the ELR related fields
    will be removed on the next partition change"); the controller still
    ignores them until the feature is on again."""

    variant = "elr-kept-on-downgrade"

    def written_without_elr(self, t: State) -> State:
        return t

    def metadata_downgraded(self, s: State) -> State:
        return s


class ElrPopulatedOnUpgrade(Kip966):
    """Mutant of the migration plan: when the feature goes on, the controller
    loads a partition whose ISR is below min ISR with every other replica in
    the ELR (as if each had left the ISR while it was too small), instead of
    an empty ELR ("it will populate the ELR as empty if the
    PartitionChangeRecord uses an old version")."""

    variant = "elr-populated-on-upgrade"

    def elr_upgraded(self, s: State) -> State:
        if size(s.isr) >= self.eff_min_isr(s):
            return s
        return s._replace(elr=s.replicas & ~s.isr)


class DetectionBeforeMetadataVersion(Kip966):
    """Mutant of the migration plan: the controller trusts a registration's
    clean-shutdown epoch before the new metadata version, where KIP-966
    says "the controller will treat all the registrations with unclean
    shutdowns"."""

    variant = "detection-before-metadata-version"

    def registration_is_clean(self, s: State, b: int) -> bool:
        return s.software[b] == NEW and rules.registration_is_clean(s.clean_shutdown_epoch[b], s.broker_epoch[b])


class ElrBeforeSoftware(Kip966):
    """Mutant of the migration plan: the operator finalizes the new metadata
    version and turns the ELR on while brokers still run the old software
    (no HWM min ISR rule, no clean-shutdown epoch), and old brokers keep
    registering: the order KIP-966 rules out ("So it is not enabled during
    the rolling upgrade"), which Kafka's controller enforces."""

    variant = "elr-before-software"
    upgrade_needs_software = False
