"""The reference engine's frontier in a checkpoint: its states as JSON,
never a pickle, so that resuming cannot run code from the file (a pickle
names any callable to call; the checksums say a file is the one written,
not that whoever wrote it meant well).

A state is written as the list of its fields' values: ints, bools,
strings, None and floats as themselves, tuples as lists, frozensets as
{"frozenset": [members]} (in a fixed order), and read back into the
spec's `state_type`. The document names its format, version and the
state type's fields, and each state comes with the fingerprint it had
when written: a state read back must have that fingerprint again, so a
value that did not survive the trip (a nested NamedTuple, read back as a
plain tuple) is refused, never resumed as another state.
"""

from __future__ import annotations

import json
from typing import Any

from ...config import ConfigError
from ...fingerprint import fingerprint
from ...spec import Spec, State

FORMAT = "modelcheck states"
VERSION = 1


def _tagged(value: Any) -> Any:
    """What json cannot write itself: a frozenset (its members in the order of their text)."""
    if isinstance(value, frozenset):
        return {"frozenset": sorted(value, key=lambda v: json.dumps(v, default=_tagged, sort_keys=True))}
    raise TypeError(
        f"a state holds a {type(value).__name__}: a checkpoint of the reference engine holds ints, bools, "
        "strings, None, floats, tuples and frozensets"
    )


def _fields(spec: Spec) -> list[str] | None:
    return list(spec.state_type._fields) if hasattr(spec.state_type, "_fields") else None


def dump_states(spec: Spec, pairs: list[tuple[int, State]]) -> bytes:
    """The (fingerprint, state) pairs of a frontier as a JSON document."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "state_type": spec.state_type.__name__,
        "fields": _fields(spec),
        "states": [[fp, list(state)] for fp, state in pairs],
    }
    return json.dumps(document, default=_tagged, separators=(",", ":"), allow_nan=False).encode()


def _value(x: Any) -> Any:
    if isinstance(x, list):
        return tuple(_value(v) for v in x)
    if isinstance(x, dict):
        if x.keys() == {"frozenset"} and isinstance(x["frozenset"], list):
            return frozenset(_value(v) for v in x["frozenset"])
        raise ValueError(f"an object that is not a frozenset: {json.dumps(x)[:60]}")
    return x


def load_states(spec: Spec, data: bytes, name: str) -> list[tuple[int, State]]:
    """The pairs `dump_states` wrote (`name`: the file, for the message);
    anything else is refused with ConfigError."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ConfigError(f"{name} is not a frontier this modelcheck wrote (not JSON: {str(e)[:80]})") from None
    if not isinstance(document, dict) or (document.get("format"), document.get("version")) != (FORMAT, VERSION):
        shown = {k: document.get(k) for k in ("format", "version")} if isinstance(document, dict) else None
        raise ConfigError(
            f"{name} is not a frontier this modelcheck wrote ({json.dumps(shown)[:80]}; "
            f"expected format {FORMAT!r}, version {VERSION})"
        )
    expected = [spec.state_type.__name__, _fields(spec)]
    if [document.get("state_type"), document.get("fields")] != expected:
        raise ConfigError(f"{name} holds states of another type than {spec.state_type.__name__}")
    make = (lambda values: spec.state_type(*values)) if expected[1] is not None else spec.state_type
    states = document.get("states")
    pairs: list[tuple[int, State]] = []
    for i, item in enumerate(states if isinstance(states, list) else [None]):
        try:
            fp, values = item
            state = make(_value(values))
            if type(fp) is not int or fingerprint(spec.canonical(state)) != fp:
                raise ValueError("not the state its fingerprint says")
        except Exception as e:  # whatever a state of the wrong shape makes the spec's code raise
            raise ConfigError(f"{name}: state {i} cannot be read back ({str(e)[:80]})") from None
        pairs.append((fp, state))
    return pairs
