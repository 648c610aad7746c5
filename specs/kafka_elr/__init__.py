"""Kafka's partition replication protocol: KIP-966 ELR, KIP-704, KIP-460.

`load(config)` validates a config dict (file contents plus overrides) and
returns the spec instance of its variant.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from modelcheck.config import ConfigError, resolve
from modelcheck.protocol import Protocol
from modelcheck.schemata import Schema
from modelcheck.schemata import schema as mutant_schema

from .catalog import ALL_VARIANTS, BUGS, MUTANTS, VARIANTS
from .protocol import Kip966
from .schema import MAX_BROKERS, schema

__all__ = [
    "load",
    "load_as",
    "schema",
    "schemata",
    "VARIANTS",
    "BUGS",
    "ALL_VARIANTS",
    "MUTANTS",
    "Kip966",
    "DEFAULT_SUITE",
    "PROTOCOL",
]

# what `modelcheck check` checks without a config: the few configurations
# that together fire every action and reach every goal
DEFAULT_SUITE = Path(__file__).with_name("default.toml")

# the modules whose functions hold the rules that generated mutants change
# (not the invariants, the presentation, or the state's representation)
RULE_MODULES = tuple(
    f"{__name__}.{m}"
    for m in ("broker", "controller", "kafka4", "metadata", "operators", "rules", "variants", "versions")
)


def schemata(variant: str) -> Schema:
    """The generated mutants of a variant's rules (config key `mutation`)."""
    return mutant_schema(ALL_VARIANTS[variant], RULE_MODULES)


def load(given: dict[str, Any]) -> Kip966:
    config = resolve(schema(), given)
    cls = ALL_VARIANTS[config["variant"]]
    if config["brokers"] + config["spare_brokers"] > MAX_BROKERS:
        raise ConfigError(
            f"config key 'spare_brokers': {config['spare_brokers']} with {config['brokers']} brokers "
            f"makes {config['brokers'] + config['spare_brokers']} (allowed: brokers + spare_brokers "
            f"<= {MAX_BROKERS})"
        )
    # the propagated views were not written for brokers outside the replica set
    for key in ("max_reassignments", "spare_brokers"):
        if config[key] and config["metadata"] == "propagated":
            raise ConfigError(
                f'config key {key!r}: {config[key]} with metadata = "propagated" is not modelled (allowed: 0; '
                f"reassignment runs with atomic metadata)"
            )
    if config["controlled_shutdown"] == "staged" and config["variant"] != "kafka-4":
        raise ConfigError(
            f"config key 'controlled_shutdown': \"staged\" with variant {config['variant']!r} is not modelled "
            f'(allowed: "atomic"; "staged" with variant \'kafka-4\', whose isAcceptableLeader reads it)'
        )
    _check_versions(config, cls)
    names = config["invariants"]
    if names is not None:
        unknown = [x for x in names if x not in cls.invariants]
        if unknown:
            raise ConfigError(
                f"config key 'invariants': {unknown[0]!r} is not an invariant of variant "
                f"{config['variant']!r} (allowed: {', '.join(cls.invariants)})"
            )
    unknown = [x for x in config["properties"] or [] if x not in cls.properties]
    if unknown:
        raise ConfigError(
            f"config key 'properties': {unknown[0]!r} is not a temporal property of variant "
            f"{config['variant']!r} (allowed: {', '.join(cls.properties) or 'none'})"
        )
    if not config["mutation"]:
        return cls(config)
    points = schemata(config["variant"]).points
    if config["mutation"] > len(points):
        raise ConfigError(
            f"config key 'mutation': {config['mutation']} (allowed: 0 to {len(points)}, the generated mutants "
            f"of variant {config['variant']!r})"
        )
    return schemata(config["variant"]).cls(config, mutation=config["mutation"])


VERSION_KEYS = (
    "max_version_changes",
    "max_software_changes",
    "metadata_version",
    "elr_version",
    "software",
    "elr_switch_when",
)


def _check_versions(config: dict[str, Any], cls: type[Kip966]) -> None:
    """The starting versions must be a cluster Kafka can be in: ELR needs the
    new metadata version (ELRV_1 depends on metadata.version 4.0-IV1), and a
    finalized metadata version needs every broker's software to support it
    (FeatureControlManager refuses the upgrade, and an unsupporting broker's
    registration, otherwise)."""
    n = config["brokers"] + config["spare_brokers"]
    software = config["software"]
    if isinstance(software, list) and len(software) != n:
        raise ConfigError(
            f'config key \'software\': {len(software)} entries for {n} brokers (allowed: "old", "new", or a list '
            f"of them, one for each of the {n} brokers)"
        )
    if not cls.has_versions:
        changed = [k for k in VERSION_KEYS if config[k] != resolve(schema(), {})[k]]
        if changed:
            raise ConfigError(
                f"config key {changed[0]!r}: variant {config['variant']!r} has no eligible.leader.replicas.version "
                f"to change (allowed: the default; kip966 or kafka-4 with elr_version = 0 is a cluster with ELR off)"
            )
    if config["elr_version"] and config["metadata_version"] != "new":
        raise ConfigError(
            "config key 'elr_version': 1 with metadata_version = \"old\" (allowed: 0; ELRV_1 depends on the new "
            "metadata.version, Kafka's 4.0-IV1)"
        )
    old = software == "old" or isinstance(software, list) and "old" in software
    if config["metadata_version"] == "new" and old and cls.upgrade_needs_software:
        raise ConfigError(
            'config key \'software\': a broker runs "old" software with metadata_version = "new" (allowed: every '
            'broker "new"; the controller refuses a metadata.version that a registered broker does not support)'
        )


def load_as(
    variant: str, given: dict[str, Any], named_where: str, load: Callable[[dict[str, Any]], Kip966] = load
) -> Kip966:
    """The spec of `variant` for the config `given`, for a refinement check
    (`modelcheck refines`, the gate's `refines` and `--against`), which checks
    steps, not invariants or properties: those keys are left out. A
    `variant` key in `given` is refused: the variant is named elsewhere
    (`named_where`). `load` may be another revision's (the gate's `--against`)."""
    if "variant" in given:
        raise ConfigError(f"config key 'variant': the variants are named {named_where}; leave it out")
    return load({k: v for k, v in given.items() if k not in ("invariants", "properties")} | {"variant": variant})


# what the command line needs of this protocol (modelcheck/protocol.py; cli.py registers it)
def observe(text: str, where: str, options: dict[str, Any]) -> Any:
    """A metadata log as `modelcheck validate` checks it (observer.py):
    options `variant`, `partition`, `min_isr` and `unclean_leader_election`
    (the controller's static config, which the log does not hold)."""
    from .observation import LogObserved
    from .observer import read

    reading = read(text, where, options.get("partition"), options["min_isr"], options["unclean_leader_election"])
    try:
        return LogObserved(reading, load, options["variant"])
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


PROTOCOL = Protocol(
    name="kafka_elr",
    package=__name__,
    load=load,
    load_as=load_as,
    specs_dir=Path(__file__).resolve().parent.parent,
    default_suite=DEFAULT_SUITE,
    mutants=MUTANTS,
    schemata=schemata,
    variants=tuple(VARIANTS),
    config_keys=tuple(key.name for key in schema()),
    observe=observe,
)
