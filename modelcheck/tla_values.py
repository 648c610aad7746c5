"""TLC's printed states and values read back into Python: a state is a
conjunction of `var = value`, a value TLA+'s text of sets, sequences,
records, functions and model values (what tlc.py's runs print)."""

from __future__ import annotations

import functools
import re
from typing import Any


class TLCError(RuntimeError):
    """TLC could not run, or stopped without a verdict (parse error, bad
    config, an evaluation error in the spec, a time-out)."""


STATE_LINE = re.compile(r"^State (\d+):.*$", re.M)


def parse_states(text: str) -> list[dict[str, Any]]:
    """States in TLC's trace or `-dump` format ("State N: ..." then
    "/\\ var = value" lines), as {variable: parsed value}."""
    heads = list(STATE_LINE.finditer(text))
    states = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end() : end]
        # the block ends at the first blank line (TLC prints a summary after)
        body = body.strip("\n").split("\n\n")[0]
        states.append(parse_conjunction(body))
    return states


def parse_conjunction(body: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for part in re.split(r"^/\\ ", body.strip(), flags=re.M):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition(" = ")
        if not eq:
            raise TLCError(f"cannot read a TLC state line: {part[:200]!r}")
        state[name.strip()] = parse_value(value)
    return state


class ModelValue(str):
    """A TLC model value (printed bare, e.g. NoProposal)."""

    def __repr__(self) -> str:
        return f"ModelValue({str(self)!r})"


class Function(dict):
    """A TLC function printed as (k1 :> v1 @@ k2 :> v2) or a record
    [f |-> v]. A dict that is hashable, so it can sit in sets."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


# a dump's states repeat most of their values (57,000 states of 39
# variables are some 2 million values, of a few thousand texts): each text
# is parsed once (the values are immutable, Function is never changed)
@functools.lru_cache(maxsize=1 << 16)
def parse_value(text: str) -> Any:
    """A TLA+ value as TLC prints it: integers, strings, booleans, model
    values, sets (frozenset), intervals a..b (frozenset), sequences and
    tuples <<...>> (tuple), functions (k :> v @@ ...) and records [f |-> v]
    (Function, a hashable dict)."""
    p = _Parser(text)
    value = p.value()
    p.skip()
    if p.i != len(p.s):
        raise TLCError(f"cannot read TLC value {text!r} (stopped at {p.i})")
    return value


class _Parser:
    def __init__(self, s: str):
        self.s, self.i = s, 0

    def skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def eat(self, tok: str) -> bool:
        self.skip()
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def expect(self, tok: str) -> None:
        if not self.eat(tok):
            raise TLCError(f"expected {tok!r} at {self.i} in {self.s!r}")

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        if self.eat(close):
            return out
        while True:
            out.append(self.value())
            if self.eat(close):
                return out
            self.expect(",")

    def value(self) -> Any:
        self.skip()
        s, i = self.s, self.i
        if s.startswith("<<", i):
            self.i += 2
            return tuple(self.items(">>"))
        if s.startswith("{", i):
            self.i += 1
            return frozenset(self.items("}"))
        if s.startswith("[", i):
            self.i += 1
            rec = Function()
            if self.eat("]"):
                return rec
            while True:
                m = re.compile(r"\s*(\w+)\s*\|->").match(s, self.i)
                if not m:
                    raise TLCError(f"bad record at {self.i} in {s!r}")
                self.i = m.end()
                rec[m.group(1)] = self.value()
                if self.eat("]"):
                    return rec
                self.expect(",")
        if s.startswith("(", i):
            self.i += 1
            fn = Function()
            while True:
                key = self.value()
                self.expect(":>")
                fn[key] = self.value()
                if self.eat(")"):
                    return fn
                self.expect("@@")
        if s.startswith('"', i):
            j = i + 1
            buf = []
            while s[j] != '"':
                if s[j] == "\\":
                    j += 1
                buf.append(s[j])
                j += 1
            self.i = j + 1
            return "".join(buf)
        m = re.compile(r"-?\d+").match(s, i)
        if m:
            self.i = m.end()
            lo = int(m.group())
            if s.startswith("..", self.i):
                self.i += 2
                m2 = re.compile(r"-?\d+").match(s, self.i)
                if not m2:
                    raise TLCError(f"bad interval in {s!r}")
                self.i = m2.end()
                return frozenset(range(lo, int(m2.group()) + 1))
            return lo
        m = re.compile(r"[A-Za-z_]\w*").match(s, i)
        if m:
            self.i = m.end()
            word = m.group()
            if word == "TRUE":
                return True
            if word == "FALSE":
                return False
            return ModelValue(word)
        raise TLCError(f"cannot read TLC value at {i} in {s!r}")
