"""Configs: TOML (or JSON) files and KEY=VALUE overrides, validated against a
spec's schema before anything is explored.

Every problem is one line naming the key, the value and what is allowed, so
that the CLI can print it and exit 2 without writing anything else.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


class ConfigError(ValueError):
    """Bad user input: its message is the one line the user sees."""


@dataclass(frozen=True)
class Key:
    """A config key: its default, how to check a value, and, for messages,
    what is allowed."""
    name: str
    default: Any
    check: Callable[[Any], bool]
    allowed: str
    help: str = ""


def int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def one_of(*choices: Any) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, type(choices[0])) and v in choices


def is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def subset_of(*choices: str, nonempty: bool = True) -> Callable[[Any], bool]:
    return lambda v: (isinstance(v, list) and all(isinstance(x, str) and x in choices for x in v)
                      and len(set(v)) == len(v) and (bool(v) or not nonempty))


def read_file(path: str | Path) -> dict[str, Any]:
    """A TOML or JSON file as a dict (JSON when the name ends in .json)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        text = p.read_text(encoding="utf-8")
        if p.suffix.lower() == ".json":
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: a JSON object is required at the top level")
            return data
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: malformed {'JSON' if p.suffix.lower() == '.json' else 'TOML'}: {e}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None


def parse_override(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` with VALUE read as a TOML value; a bare word is a string
    (so `variant=legacy` and `acks=["all"]` both work)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE")
    try:
        return key, tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return key, raw.strip()


def resolve(schema: list[Key], given: dict[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with `given`, every key and value checked."""
    keys = {k.name: k for k in schema}
    for name in given:
        if name not in keys:
            raise ConfigError(f"config key {name!r} does not exist "
                              f"(known keys: {', '.join(sorted(keys))})")
    config = {k.name: k.default for k in schema}
    for name, value in given.items():
        key = keys[name]
        if not key.check(value):
            raise ConfigError(f"config key {name!r}: {json.dumps(value)} is not allowed "
                              f"(allowed: {key.allowed})")
        config[name] = value
    return config
