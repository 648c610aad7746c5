"""Upgrades and downgrades (KIP-966 "Compatibility, Deprecation, and
Migration Plan"): the operator changes the finalized metadata version and
eligible.leader.replicas.version while the cluster runs, and moves brokers
between software versions one stopped broker at a time. What the versions
change is read where the rule is: the controller keeps the ELR only while
the feature is on (controller.py), a broker applies the HWM rule and sends
its clean-shutdown epoch only on the new software (broker.py).
docs/model.md "Upgrades and downgrades" gives the sources.
"""

from __future__ import annotations

from typing import Any

from modelcheck.declare import action
from modelcheck.ops import replace_at
from modelcheck.spec import Args

from . import story
from .arguments import BROKER
from .parts import Parts
from .types import ELR_VERSION, NEW, NO_LEADER, OLD, RUNNING, State, size


class Versions(Parts):
    """The versions' rules and the operator's steps (mixed into Kip966, protocol.py)."""

    # ---- what the versions enable --------------------------------------------------------
    def elr_enabled(self, s: State) -> bool:
        """eligible.leader.replicas.version >= 1 (FeatureControlManager.isElrFeatureEnabled):
        the controller records the ELR and lets the ISR empty."""
        return s.elr_version == 1

    def elr_in_force(self, s: State) -> int:
        """The ELR the controller elects from: KIP-966's controller ignores the
        fields while the feature is off ("The controller will also ignore the
        ELR fields")."""
        return s.elr if self.elr_enabled(s) else 0

    def without_elr_fields(self, t: State) -> State:
        """`t` written as a PartitionChangeRecord while the feature is off:
        "all the ELR related fields will be removed on the next partition
        change" (ELR, LastKnownELR and LastKnownLeader)."""
        return t._replace(elr=0, last_known_elr=0, last_known_leader=NO_LEADER)

    def every_broker_runs(self, s: State, software: int) -> bool:
        for b in range(self.n):
            if s.software[b] != software:
                return False
        return True

    def supported_by_brokers(self, s: State) -> bool:
        """Every registered broker supports the new versions: FeatureControlManager
        refuses a finalized level that one does not (reasonNotSupported); KIP-966:
        the feature "is not enabled during the rolling upgrade" (a variant
        that lets the operator skip it sets `upgrade_needs_software` False)."""
        return not self.upgrade_needs_software or self.every_broker_runs(s, NEW)

    def operator_may_switch(self, s: State) -> bool:
        """elr_switch_when = "at-min-isr": the operator turns the ELR on or off
        only while the ISR has min ISR members, as
        `kafka-topics.sh --describe --under-min-isr-partitions` lists none
        (then the ELR is empty, and an empty one is the right one)."""
        return not self.switch_at_min_isr or size(s.isr) >= self.eff_min_isr(s)

    def may_change_versions(self, s: State) -> bool:
        return s.version_changes < self.max_version_changes

    def versions_changed(self, s: State) -> State:
        return s._replace(version_changes=s.version_changes + 1)

    # ---- the operator: kafka-features.sh upgrade / downgrade -----------------------------
    @staticmethod
    def _metadata_version_told(t: story.Told) -> str:
        return f"the operator sets the {t.b['metadata_version']} metadata.version"

    @action("UpgradeMetadataVersion", bound="max_version_changes", needs=ELR_VERSION, told=_metadata_version_told)
    def upgrade_metadata_version(self, s: State) -> State | None:
        """The operator finalizes the new metadata version once every broker
        runs the new software (the rolling upgrade comes first)."""
        if not self.may_change_versions(s) or s.metadata_version == NEW or not self.supported_by_brokers(s):
            return None
        return self.versions_changed(s)._replace(metadata_version=NEW)

    @action("DowngradeMetadataVersion", bound="max_version_changes", needs=ELR_VERSION, told=_metadata_version_told)
    def downgrade_metadata_version(self, s: State) -> State | None:
        """The operator goes back to the old metadata version, the ELR feature
        off first (it depends on the version). KIP-966: "a metadata delta will
        be generated to capture the current status": written at the old
        version, it has no ELR fields."""
        if not self.may_change_versions(s) or s.metadata_version == OLD or self.elr_enabled(s):
            return None
        return self.metadata_downgraded(self.versions_changed(s)._replace(metadata_version=OLD))

    def metadata_downgraded(self, s: State) -> State:
        """The partition once the metadata version is old: its ELR fields gone."""
        return self.without_elr_fields(s)

    @staticmethod
    def _elr_version_told(t: story.Told) -> str:
        kept = f", ELR {story.brokers(t.b['elr'])} as the partition last recorded it" if t.b["elr_version"] else ""
        return f"the operator sets eligible.leader.replicas.version to {t.b['elr_version']}{kept}"

    @action("UpgradeElrVersion", bound="max_version_changes", needs=ELR_VERSION, told=_elr_version_told)
    def upgrade_elr_version(self, s: State) -> State | None:
        """eligible.leader.replicas.version goes to 1 (needs the new metadata
        version). No partition record is written: KIP-966 loads a partition
        whose record predates it with an empty ELR, and records the real one
        on its next change."""
        if (
            not self.may_change_versions(s)
            or self.elr_enabled(s)
            or s.metadata_version != NEW
            or not self.supported_by_brokers(s)
            or not self.operator_may_switch(s)
        ):
            return None
        return self.elr_upgraded(self.versions_changed(s)._replace(elr_version=1))

    def elr_upgraded(self, s: State) -> State:
        """The partition as the controller loads it with the feature on: as
        its last record has it (a record written while the feature was off
        has no ELR fields: empty)."""
        return s

    @action("DowngradeElrVersion", bound="max_version_changes", needs=ELR_VERSION, told=_elr_version_told)
    def downgrade_elr_version(self, s: State) -> State | None:
        """eligible.leader.replicas.version goes to 0. No partition record: the
        controller ignores the ELR fields from now on, and the next change of
        the partition removes them."""
        if not self.may_change_versions(s) or not self.elr_enabled(s) or not self.operator_may_switch(s):
            return None
        return self.versions_changed(s)._replace(elr_version=0)

    # ---- the operator: a rolling upgrade or downgrade of the brokers' software -----------
    # A broker's software is the one it registered with: the controller checks a
    # version against the registrations (a stopped broker's registration stays),
    # so the new software counts from the broker's start on it.
    def may_restart_on(self, s: State, b: int, software: int) -> bool:
        """`b` is stopped and registered fenced, runs the other software, and
        the config allows one more change."""
        return (
            s.software_changes < self.max_software_changes
            and s.status[b] != RUNNING
            and s.fenced >> b & 1 == 1
            and s.software[b] != software
        )

    def on_software(self, s: State, b: int, software: int) -> State:
        return s._replace(software=replace_at(s.software, b, software), software_changes=s.software_changes + 1)

    @staticmethod
    def _software_told(t: story.Told) -> str:
        return f"broker {t.who} restarts on the {t.b['software'][t.who]} software and registers {t.registers()}"

    def _upgrade_software_decides(self, args: Args, s: State) -> dict[str, Any]:
        """A start on the new software."""
        b = args["broker"]
        return {"clean": self.registration_is_clean(s._replace(software=replace_at(s.software, b, NEW)), b)}

    @action(
        "UpgradeSoftware",
        bound="max_software_changes",
        needs=ELR_VERSION,
        broker=BROKER,
        told=_software_told,
        decides=_upgrade_software_decides,
    )
    def upgrade_software(self, s: State, b: int) -> State | None:
        """A stopped broker starts on the new software and registers (as
        StartBroker: its CleanShutdownFile is as the old software left it): a
        rolling upgrade is CleanShutdown, UpgradeSoftware, UnfenceBroker for
        one broker after another."""
        if not self.may_restart_on(s, b, NEW):
            return None
        return self.started(self.on_software(s, b, NEW), b)

    def _downgrade_software_decides(self, args: Args, s: State) -> dict[str, Any]:
        """A start on the old software."""
        b = args["broker"]
        return {"clean": self.registration_is_clean(s._replace(software=replace_at(s.software, b, OLD)), b)}

    @action(
        "DowngradeSoftware",
        bound="max_software_changes",
        needs=ELR_VERSION,
        broker=BROKER,
        told=_software_told,
        decides=_downgrade_software_decides,
    )
    def downgrade_software(self, s: State, b: int) -> State | None:
        """A stopped broker starts on the old software, once the metadata
        version is old (KIP-966: "After the MV version is downgraded ... the
        user can start the software downgrade"; an old broker cannot register
        with a finalized version it does not support)."""
        if not self.may_restart_on(s, b, OLD) or self.upgrade_needs_software and s.metadata_version != OLD:
            return None
        return self.started(self.on_software(s, b, OLD), b)
