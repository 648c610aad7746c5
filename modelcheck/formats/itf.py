"""The Informal Trace Format (ITF, Apalache ADR-015), written and read.

ITF is the JSON trace format of Apalache and Quint: `{"#meta", "vars",
"states"}`, each state `{"#meta": {"index": i}, var: value, ...}`, with
`{"#set": [...]}`, `{"#tup": [...]}`, `{"#map": [[k, v], ...]}` and
`{"#bigint": "..."}` for what JSON lacks. Our described states are plain
JSON (a set is a sorted list), so writing needs each variable's type: a
spec declares them in `itf_types` with the constructors below, whose str()
is the Apalache type written to `#meta.varTypes`. Reading needs no types:
ITF is self-describing, and each form maps back to the JSON we write.

The action and arguments of each step go in its state's `#meta`, and the
config and violated invariant in the trace's `#meta`, so a trace read back
is the same list of steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config import shown

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


@dataclass(frozen=True)
class Type:
    """An Apalache type: `kind` is Int, Str, Bool, Set, Seq, Tup, Fun or Option."""

    kind: str
    args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        a = [str(t) for t in self.args]
        if self.kind in ("Set", "Seq"):
            return f"{self.kind}({a[0]})"
        if self.kind == "Tup":
            return f"<<{', '.join(a)}>>"
        if self.kind == "Fun":
            return f"Int -> {a[0]}"
        if self.kind == "Option":
            return f"Some({a[0]}) | None(UNIT)"
        return self.kind


INT, STR, BOOL = Type("Int"), Type("Str"), Type("Bool")


def Set(t: Type) -> Type:
    """A set (described as a sorted list)."""
    return Type("Set", (t,))


def Seq(t: Type) -> Type:
    """A TLA+ sequence (a JSON list)."""
    return Type("Seq", (t,))


def Tup(*ts: Type) -> Type:
    """A tuple (a JSON list of fixed length)."""
    return Type("Tup", ts)


def Fun(t: Type) -> Type:
    """A function from process ids 0..n-1 (a JSON list indexed by id), as a
    TLA+ spec would declare a per-broker variable."""
    return Type("Fun", (t,))


def Option(t: Type) -> Type:
    """A value or JSON null, as Apalache's variant Some(t) | None(UNIT)."""
    return Type("Option", (t,))


def conforms(value: Any, t: Type) -> bool:
    """Whether a described (JSON) value is of type `t`."""
    if t.kind == "Option":
        return value is None or conforms(value, t.args[0])
    if t.kind in ("Int", "Str", "Bool"):
        return type(value) is {"Int": int, "Str": str, "Bool": bool}[t.kind]
    if not isinstance(value, list):
        return False
    if t.kind == "Tup":
        return len(value) == len(t.args) and all(conforms(v, s) for v, s in zip(value, t.args))
    return all(conforms(v, t.args[0]) for v in value)  # Set, Seq, Fun


def encode(value: Any, t: Type | None = None) -> Any:
    """A described (JSON) value as an ITF expression of type `t` (None: by
    its JSON shape, lists as sequences)."""
    kind: str | None = t.kind if t else None
    args: tuple[Type, ...] = t.args if t else ()
    if kind == "Option":
        return (
            {"tag": "None", "value": {"#tup": []}}
            if value is None
            else {"tag": "Some", "value": encode(value, args[0])}
        )
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list):
        if kind == "Set":
            return {"#set": [encode(v, args[0]) for v in value]}
        if kind == "Tup":
            return {"#tup": [encode(v, s) for v, s in zip(value, args, strict=True)]}
        if kind == "Fun":
            return {"#map": [[encode(i), encode(v, args[0])] for i, v in enumerate(value)]}
        return [encode(v, args[0] if kind == "Seq" else None) for v in value]
    raise ValueError(f"no ITF form for {value!r} (declare its type in the spec's itf_types)")


class ItfError(ValueError):
    """A document that is not well-formed ITF (the message says where)."""


BIGINT = re.compile(r"-?[0-9]+")


def decode(x: Any) -> Any:
    """An ITF expression as the JSON value `encode` takes: sets as sorted
    lists, tuples as lists, maps over 0..n-1 as lists, None(UNIT) as null.
    ItfError if a form is malformed."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "#bigint" in x:
        digits = x["#bigint"]
        try:
            if isinstance(digits, str) and BIGINT.fullmatch(digits):
                return int(digits)
        except ValueError:  # past Python's digit limit
            pass
        raise ItfError(f"#bigint {shown(digits)} is not a decimal integer")
    for form in ("#set", "#tup", "#map"):
        if form in x and not isinstance(x[form], list):
            raise ItfError(f"{form} {shown(x[form])} is not a list")
    if "#set" in x:
        return sorted((decode(v) for v in x["#set"]), key=_order)
    if "#tup" in x:
        return [decode(v) for v in x["#tup"]]
    if "#map" in x:
        if not all(isinstance(p, list) and len(p) == 2 for p in x["#map"]):
            raise ItfError(f"#map {shown(x['#map'])} is not a list of [key, value] pairs")
        pairs = sorted(((decode(k), decode(v)) for k, v in x["#map"]), key=lambda p: _order(p[0]))
        if [k for k, _ in pairs] == list(range(len(pairs))):
            return [v for _, v in pairs]
        return [[k, v] for k, v in pairs]
    if set(x) == {"tag", "value"} and x["tag"] in ("None", "Some"):
        return None if x["tag"] == "None" else decode(x["value"])
    return {k: decode(v) for k, v in x.items()}


def _order(v: Any) -> tuple:
    """Sort key of decoded set elements: numbers by value, the rest by JSON text."""
    return (0, v, "") if isinstance(v, int) else (1, 0, repr(v))


def to_itf(
    config: dict[str, Any],
    invariant: str | None,
    steps: list[dict[str, Any]],
    types: dict[str, Type],
    loop: int | None = None,
    refines: dict[str, str] | None = None,
    path: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Steps `{"action", "args", "state"}` (described states) as an ITF
    trace. A lasso (the last step returns to step `loop`) uses ITF's `loop`:
    the states up to the last but one, `loop` the index the last returns
    to, and the closing step's action in `#meta.loopAction`; a lasso that
    stutters at its last state loops to that state itself. A refinement
    failure's abstract variant and mapping go in `#meta.refines`, the
    trace's path (modelcheck/path.py) in `#meta.path`."""
    names = list(steps[0]["state"])
    closing = loop is not None and loop < len(steps) - 1
    doc: dict[str, Any] = {
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": "modelcheck",
            "description": f"counterexample to {invariant}" if invariant else "a trace",
            "varTypes": {n: str(types[n]) for n in names if n in types},
            "config": config,
            "invariant": invariant,
        },
        "vars": names,
        "states": [
            {
                "#meta": {"index": i, "action": s["action"], "args": s["args"]},
                **{n: encode(s["state"][n], types.get(n)) for n in names},
            }
            for i, s in enumerate(steps[:-1] if closing else steps)
        ],
    }
    if loop is not None:
        doc["loop"] = loop
    if refines is not None:
        doc["#meta"]["refines"] = refines
    if path is not None:
        doc["#meta"]["path"] = path
    if closing:
        doc["#meta"]["loopAction"] = {"action": steps[-1]["action"], "args": steps[-1]["args"]}
    return doc


def is_itf(data: Any) -> bool:
    """Whether `data` means to be an ITF trace (from_itf then says what is wrong with it)."""
    return isinstance(data, dict) and ("states" in data or "vars" in data)


def from_itf(data: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None, list[dict[str, Any]], int | None]:
    """(config, invariant, steps, loop) of an ITF trace; config is None when
    the trace was not written by modelcheck (no `#meta.config`); a lasso's
    closing step is added back (the state `loop` names, reached by
    `#meta.loopAction`). ItfError for a malformed document."""
    meta = _meta(data, "")
    names, states = data.get("vars"), data.get("states")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ItfError(f"vars is {shown(names) if 'vars' in data else 'missing'}, not a list of variable names")
    if not isinstance(states, list):
        raise ItfError(f"states is {shown(states) if 'states' in data else 'missing'}, not a list")
    steps = []
    for i, s in enumerate(states):
        if not isinstance(s, dict):
            raise ItfError(f"state {i} is {shown(s)}, not an object")
        m = _meta(s, f"state {i}: ")
        steps.append(
            {
                "action": m.get("action"),
                "args": m.get("args") or {},
                "state": {n: decode(s[n]) for n in names if n in s},
            }
        )
    loop = data.get("loop")
    if loop is not None and not (type(loop) is int and 0 <= loop < len(steps)):
        raise ItfError(f"loop is {shown(loop)}, not the index of a state (0..{len(steps) - 1})")
    closing = meta.get("loopAction")
    if closing is not None:
        if loop is None or not isinstance(closing, dict) or not isinstance(closing.get("args", {}), dict):
            raise ItfError(f"#meta.loopAction is {shown(closing)}, not the {{action, args}} of a loop's closing step")
        steps.append(
            {"action": closing.get("action"), "args": closing.get("args") or {}, "state": steps[loop]["state"]}
        )
    return meta.get("config"), meta.get("invariant"), steps, loop


def _meta(obj: dict[str, Any], where: str) -> dict[str, Any]:
    meta = obj.get("#meta") or {}
    if not isinstance(meta, dict):
        raise ItfError(f"{where}#meta is {shown(meta)}, not an object")
    return meta
