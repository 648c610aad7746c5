"""The protocol the command line checks, registered by name: the engine
never imports a protocol's package, so the package registers what the
commands need of it (its loaders, its default suite, its mutants), and
`cli.py` picks one. A second protocol is a second registration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError


@dataclass(frozen=True)
class Protocol:
    name: str
    package: str  # its module, e.g. "specs.kafka_elr": `gate --against` imports it at another revision
    load: Callable[[dict[str, Any]], Any]  # config -> spec (raises ConfigError)
    load_as: Callable[..., Any]  # (variant, config) -> spec
    specs_dir: Path  # the directory of the protocol's package's parent: its matrix, gate and scenarios
    default_suite: Path | None = None  # what `check` checks without a config
    mutants: Mapping[str, str] = field(default_factory=dict)  # mutant -> the variant it changes
    schemata: Callable[[str], Any] | None = None  # variant -> its generated mutants
    variants: tuple[str, ...] = ()  # the names the `variant` config key takes, for help
    config_keys: tuple[str, ...] = ()  # the config keys, in the schema's order, for help
    # (log text, its name, validate's options) -> what `validate` checks (engine/observed.py's Observed)
    observe: Callable[[str, str, dict[str, Any]], Any] | None = None

    @property
    def default_matrix(self) -> Path:
        return self.specs_dir / "matrix.toml"


_REGISTRY: dict[str, Protocol] = {}


def register(protocol: Protocol) -> Protocol:
    _REGISTRY[protocol.name] = protocol
    return protocol


def registered(name: str | None = None) -> Protocol:
    """The protocol named `name`; without a name, the only one registered."""
    if name is None and len(_REGISTRY) == 1:
        return next(iter(_REGISTRY.values()))
    if name in _REGISTRY:
        return _REGISTRY[name]
    raise ConfigError(f"protocol {name!r}: none registered by that name (registered: {', '.join(_REGISTRY) or 'none'})")
