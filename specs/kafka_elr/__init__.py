"""Kafka's partition replication protocol: KIP-966 ELR, KIP-704, KIP-460.

`load(config)` validates a config dict (file contents plus overrides) and
returns the spec instance of its variant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelcheck.config import ConfigError, resolve

from .protocol import Kip966
from .schema import MAX_BROKERS, schema
from .variants import VARIANTS

__all__ = ["load", "load_as", "schema", "VARIANTS", "Kip966"]


def load(given: dict[str, Any]) -> Kip966:
    config = resolve(schema(), given)
    cls = VARIANTS[config["variant"]]
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
    return cls(config)


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
