"""What a checkpoint's manifest may hold, checked before anything in it is
used: a manifest damaged or edited by hand is refused in one line naming
the key, never read into a search (a wrong answer) or a traceback.

A schema is a `Leaf` (a predicate and what it expects), a one-element
list (a list of that), a `MapOf` (a JSON object of any keys), or a dict
(exactly these keys; one ending in "?" may be absent)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MANIFEST = "manifest.json"
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # a plain name in the directory: no "/", no "..", no ".x"


@dataclass(frozen=True)
class Leaf:
    expects: str
    holds: Any  # Callable[[Any], bool]


@dataclass(frozen=True)
class MapOf:
    values: Any


class Invalid(Exception):
    """A place in the manifest that is not what the schema expects."""


def _bad(path: str, value: Any, expects: str) -> Invalid:
    shown = type(value).__name__ if isinstance(value, dict | list) else json.dumps(value)[:60]
    return Invalid(f"{path or 'the manifest'} is {shown}: expected {expects}")


def _at(path: str, key: str) -> str:
    """The path of `key` in the object at `path`, on one line whatever the key holds."""
    shown = key if re.fullmatch(r"[\w()-]{1,60}", key) else json.dumps(key)[:60]
    return f"{path}.{shown}" if path else shown


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


COUNT = Leaf("a non-negative integer", lambda v: _is_int(v) and v >= 0)
POSITIVE = Leaf("a positive integer", lambda v: _is_int(v) and v > 0)
SECONDS = Leaf(
    "a finite non-negative number", lambda v: (_is_int(v) or isinstance(v, float)) and math.isfinite(v) and v >= 0
)
TEXT = Leaf("a string", lambda v: isinstance(v, str))
FLAG = Leaf("true or false", lambda v: isinstance(v, bool))
DIGEST = Leaf("a sha256 digest (64 hex digits)", lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v))
NAME = Leaf(
    "a plain file name in the directory (not the manifest)",
    lambda v: isinstance(v, str) and FILE_NAME.fullmatch(v) and v != MANIFEST,
)
ANY = Leaf("anything", lambda v: True)
SCALAR = re.compile(r"[<>|=]?[biuf][1248]")  # the dtypes of plain numbers; never objects
FIELD = Leaf(
    "a [name, dtype] pair",
    lambda v: isinstance(v, list) and len(v) == 2 and re.fullmatch(r"\w+", v[0]) and SCALAR.fullmatch(v[1]),
)
DTYPE = Leaf(
    'a dtype of plain numbers (such as "<u8", or a list of [name, dtype] pairs)',
    lambda v: (isinstance(v, str) and SCALAR.fullmatch(v)) or (isinstance(v, list) and v and all(map(FIELD.holds, v))),
)

FILE = {"file": NAME, "dtype": DTYPE, "shape": [COUNT], "digest": DIGEST, "fixed?": FLAG}
IDENTITY = {
    "engine": Leaf('"fast" or "bfs"', lambda v: v in ("fast", "bfs")),
    "spec": TEXT,
    "config": MapOf(ANY),  # checked as any config is, by the spec's loader
    "symmetry": FLAG,
    "source": DIGEST,
}
COMMON = {
    "identity": IDENTITY,
    "depth": COUNT,
    "generated": COUNT,
    "represented": COUNT,
    "elapsed_s": SECONDS,
}
STATES = {  # what each engine's state holds (bfs.py, fast/saved.py: checkpoint)
    "bfs": {**COMMON, "coverage": MapOf(COUNT), "reached": MapOf(FLAG)},
    "fast": {
        **COMMON,
        "done": COUNT,
        "first": COUNT,
        "levels": COUNT,
        "distinct": COUNT,
        "coverage": [COUNT],
        "reached": [Leaf("0 or 1", lambda v: v in (0, 1) and not isinstance(v, bool))],
        "workers": POSITIVE,
        "bucket_sizes": [COUNT],
        "per_row": Leaf("a positive finite number", lambda v: SECONDS.holds(v) and v > 0),
        "fingerprint_bits": Leaf("64, 128 or null (states stored whole)", lambda v: v is None or v in (64, 128)),
        "recorded?": MapOf(COUNT),
    },
}
ENVELOPE = {
    "format": ANY,  # compared with FORMAT first: another format is "not a checkpoint of this modelcheck"
    "saved": TEXT,
    "serial": COUNT,
    "state": ANY,  # null (no checkpoint yet) or one of STATES, by its identity's engine
    "files": MapOf(FILE),
    "pending": [NAME],
    "digest": DIGEST,
}


def validate(value: Any, schema: Any, path: str = "") -> None:
    """Raise Invalid at the first place `value` departs from `schema`."""
    if isinstance(schema, Leaf):
        if not schema.holds(value):
            raise _bad(path, value, schema.expects)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise _bad(path, value, "a list")
        for i, item in enumerate(value):
            validate(item, schema[0], f"{path}[{i}]")
    elif isinstance(schema, MapOf):
        if not isinstance(value, dict):
            raise _bad(path, value, "an object")
        for key, item in value.items():
            validate(item, schema.values, _at(path, key))
    else:
        if not isinstance(value, dict):
            raise _bad(path, value, "an object")
        keys = {k.rstrip("?"): k.endswith("?") for k in schema}
        missing = [k for k, optional in keys.items() if not optional and k not in value]
        if missing:
            raise Invalid(f"{_at(path, missing[0])} is missing")
        extra = [k for k in value if k not in keys]
        if extra:
            raise Invalid(f"{_at(path, extra[0])} is not a key it holds")
        for key, item in value.items():
            validate(item, schema[key] if key in schema else schema[key + "?"], _at(path, key))


def validate_manifest(manifest: Any) -> None:
    """The whole manifest: its envelope, then its state as its engine writes it."""
    validate(manifest, ENVELOPE)
    state = manifest["state"]
    if state is not None:
        validate(state, MapOf(ANY), "state")
        validate(state.get("identity"), IDENTITY, "state.identity")
        validate(state, STATES[state["identity"]["engine"]], "state")
