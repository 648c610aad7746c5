"""Configs: TOML (or JSON) files and KEY=VALUE overrides, validated against a
spec's schema before anything is explored.

Every problem is one line naming the key, the value and what is allowed, so
that the CLI can print it and exit 2 without writing anything else.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    return lambda v: (
        isinstance(v, list)
        and all(isinstance(x, str) and x in choices for x in v)
        and len(set(v)) == len(v)
        and (bool(v) or not nonempty)
    )


MAX_DEPTH = 64  # arrays and tables within each other; modelcheck's own files need under 10


class Malformed(ConfigError):
    """The text is not TOML or JSON at all (a reader may say what it expected instead)."""


MAX_INPUT_BYTES = 64 << 20  # far above any file modelcheck reads; /dev/zero or a FIFO never ends


def read_text(path: str | Path, newline: str | None = None) -> str:
    """A file's text (newlines as open()'s `newline` says); what keeps it
    from being read is one line: a file past MAX_INPUT_BYTES is refused
    without reading on, and a UTF-8 byte-order mark, which neither TOML nor
    JSON allows, is named rather than met as a first character no parser
    expects."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{path}: is a directory, not a file")
    try:
        with open(p, encoding="utf-8", newline=newline) as f:
            text = f.read(MAX_INPUT_BYTES + 1)  # characters: at least as many bytes
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except PermissionError:
        raise ConfigError(f"{path}: cannot read it (permission denied)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(text) > MAX_INPUT_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB, more than any input modelcheck reads")
    if text.startswith("\ufeff"):
        raise ConfigError(f"{path}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without one")
    return text


def parse_text(text: str, where: str, fmt: str) -> Any:
    """TOML or JSON (`fmt`) as plain data (check_plain), JSON's duplicate
    keys and NaN/Infinity refused as TOML refuses them."""
    data = _loads(text, where, fmt)
    check_plain(data, where)
    return data


def _loads(text: str, where: str, fmt: str) -> Any:
    def distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise ConfigError(f"{where}: duplicate key {key!r} in a JSON object")
            obj[key] = value
        return obj

    def no_constant(name: str) -> Any:
        raise ConfigError(f"{where}: malformed JSON: {name} is not a JSON number")

    try:
        if fmt == "toml":
            return tomllib.loads(text)
        return json.loads(text, object_pairs_hook=distinct_keys, parse_constant=no_constant)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise Malformed(f"{where}: malformed {fmt.upper()}: {e}") from None
    except RecursionError:  # the parsers recurse a level a nested array or table
        raise ConfigError(f"{where}: nested too deeply (at most {MAX_DEPTH} levels of arrays and tables)") from None
    except ConfigError:
        raise
    except ValueError as e:  # an integer literal past Python's digit limit
        if "integer string conversion" not in str(e):
            raise
        raise ConfigError(f"{where}: a number has more than {sys.get_int_max_str_digits()} digits") from None


def check_plain(data: Any, where: str) -> None:
    """Refuse what no modelcheck file holds, wherever it is, so the code
    reading a file's values meets only JSON's kinds: nesting deeper than
    MAX_DEPTH (readers recurse), TOML dates and times, strings that are not
    text (an unpaired surrogate, which JSON escapes allow)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, at, depth = stack.pop()
        place = f"{where}: {at}: " if at else f"{where}: "
        if depth > MAX_DEPTH:
            raise ConfigError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, at, depth + 1))
                name = key if key.isidentifier() else json.dumps(key)
                stack.append((item, f"{at}.{name}" if at else name, depth + 1))
        elif isinstance(value, list):
            stack += [(item, f"{at}[{i}]", depth + 1) for i, item in enumerate(value)]
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ConfigError(f"{place}a string with an unpaired surrogate ({shown(value)}) is not text") from None
        elif not (value is None or isinstance(value, (bool, int, float))):
            raise ConfigError(
                f"{place}a date or time ({value}) is not a value modelcheck reads "
                "(strings, numbers, booleans, arrays and tables)"
            )


def read_file(path: str | Path, fmt: str | None = None) -> dict[str, Any]:
    """A TOML or JSON file (JSON when the name ends in .json) as a dict of plain data."""
    fmt = fmt or ("json" if Path(path).suffix.lower() == ".json" else "toml")
    data = parse_text(read_text(path), str(path), fmt)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a JSON object is required at the top level")
    return data


def shown(value: Any, limit: int = 80) -> str:
    """A value as JSON on one line, cut to about `limit` characters, for messages."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_override(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` with VALUE read as a TOML value; a bare word is a string
    (so `variant=legacy` and `acks=["all"]` both work)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    where = f"--set {text if len(text) <= 60 else text[:57] + '...'!r}"
    if not sep or not key:
        raise ConfigError(f"{where}: expected KEY=VALUE")
    try:
        value = _loads(f"v = {raw.strip()}", where, "toml")["v"]
    except Malformed:
        return key, raw.strip()
    check_plain(value, where)
    return key, value


def resolve(schema: list[Key], given: dict[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with `given`, every key and value checked."""
    keys = {k.name: k for k in schema}
    for name in given:
        if name not in keys:
            raise ConfigError(f"config key {name!r} does not exist (known keys: {', '.join(sorted(keys))})")
    config = {k.name: k.default for k in schema}
    for name, value in given.items():
        key = keys[name]
        if not key.check(value):
            raise ConfigError(f"config key {name!r}: {shown(value)} is not allowed (allowed: {key.allowed})")
        config[name] = value
    return config
