"""Config keys (MODEL.md's table, plus two bounds of our own, see docs/model.md)."""

from __future__ import annotations

from modelcheck.config import Key, int_at_least, is_bool, one_of, subset_of

from .catalog import ALL_VARIANTS
from .types import BOUNDS, Bound

MAX_BROKERS = 8


def bound_key(b: Bound) -> Key:
    """The config key of a bound (types.BOUNDS)."""
    if b.most is None:
        return Key(b.key, b.default, int_at_least(0), "an integer >= 0", b.bounds)
    most = b.most
    return Key(b.key, b.default, lambda v: int_at_least(0)(v) and v <= most, f"an integer from 0 to {most}", b.bounds)


def schema() -> list[Key]:
    bound = "an integer >= 0"
    bounds = [bound_key(b) for b in BOUNDS]
    reassignments = [b.key for b in BOUNDS].index("max_reassignments") + 1  # spare_brokers follows it
    return [
        Key(
            "brokers",
            3,
            lambda v: int_at_least(1)(v) and v <= MAX_BROKERS,
            f"an integer from 1 to {MAX_BROKERS}",
            "N, the replicas of the partition",
        ),
        Key(
            "min_isr",
            2,
            int_at_least(1),
            "an integer >= 1",
            "min.insync.replicas; the effective value is min(min_isr, brokers)",
        ),
        *bounds[:reassignments],
        Key(
            "spare_brokers",
            0,
            int_at_least(0),
            bound,
            "brokers beyond the partition's replicas, which a reassignment may move it to "
            f"(brokers + spare_brokers <= {MAX_BROKERS})",
        ),
        *bounds[reassignments:],
        Key(
            "elr_switch_when",
            "any",
            one_of("any", "at-min-isr"),
            "any | at-min-isr",
            "when the operator turns the ELR on or off: at any time, or only while the partition's ISR has min "
            "ISR members (kafka-topics.sh --describe --under-min-isr-partitions lists none)",
        ),
        Key(
            "metadata_version",
            "new",
            one_of("old", "new"),
            "old | new",
            "metadata.version at the start: before KIP-966's (old) or from it on (new; Kafka 4.0-IV1)",
        ),
        Key(
            "elr_version",
            1,
            lambda v: v in (0, 1) and not isinstance(v, bool),
            "0 or 1",
            "eligible.leader.replicas.version at the start (1: the ELR is on; needs metadata_version = new)",
        ),
        Key(
            "software",
            "new",
            lambda v: (
                v in ("old", "new")
                or isinstance(v, list)
                and 0 < len(v) <= MAX_BROKERS
                and all(x in ("old", "new") for x in v)
            ),
            '"old", "new", or a list of them, one a broker',
            "the brokers' software at the start: before KIP-966's broker changes (old: no HWM min ISR rule, "
            "no clean-shutdown epoch in the registration) or with them (new)",
        ),
        Key("variant", "kip966", one_of(*ALL_VARIANTS), " | ".join(ALL_VARIANTS), "protocol variant"),
        Key(
            "mutation",
            0,
            int_at_least(0),
            "an integer >= 0",
            "0, or the number of one generated mutant of the variant's rules (modelcheck mutate --list-points)",
        ),
        Key("unclean_leader_election", False, is_bool, "true or false", "unclean.leader.election.enable"),
        Key(
            "unclean_recovery_strategy",
            "balanced",
            one_of("none", "balanced", "aggressive"),
            "none | balanced | aggressive",
            "unclean.recovery.strategy",
        ),
        Key(
            "fence_cuts_data_plane",
            True,
            is_bool,
            "true or false",
            "a fenced broker stops fetching from the leader (false: only the controller lost it)",
        ),
        Key(
            "metadata",
            "atomic",
            one_of("atomic", "propagated"),
            "atomic | propagated",
            "atomic: brokers see each controller decision at once; propagated: each acts on the metadata "
            "last delivered to it (MetadataUpdate)",
        ),
        Key(
            "controlled_shutdown",
            "atomic",
            one_of("atomic", "staged"),
            "atomic | staged",
            "atomic: CleanShutdown fences at once; staged (kafka-4 only): BeginControlledShutdown first "
            "leaves a registered, unfenced broker in controlled shutdown",
        ),
        Key(
            "acks",
            ["1", "all"],
            subset_of("1", "all"),
            'a non-empty subset of ["1", "all"]',
            "produce modes clients use",
        ),
        Key(
            "invariants",
            None,
            lambda v: isinstance(v, list) and bool(v) and all(isinstance(x, str) for x in v) and len(set(v)) == len(v),
            "a non-empty list of distinct invariant names of the variant",
            "invariants to check (default: all of the variant's)",
        ),
        Key(
            "properties",
            None,
            lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v) and len(set(v)) == len(v),
            "a list of distinct temporal property names of the variant",
            "temporal properties to check, each under the fairness the spec states beside it (default: none)",
        ),
    ]
