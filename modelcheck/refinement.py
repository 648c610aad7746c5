"""Refinement mappings: how an implementation's state reads as an abstract
spec's state (TLA+'s `INSTANCE Abstract WITH var <- expr`).

A mapping is data, so that it can be written as TLA+ too: per abstract
variable, the implementation's variable of the same name (identity, the
default), a constant (the variable is projected away), or a named pure
function of the implementation's state (a method of the implementation
spec, `(self, state) -> value`). A spec declares its mappings in
`refinements`; the identity needs no declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .config import ConfigError

IDENTITY = "identity"


@dataclass(frozen=True)
class Refinement:
    """A mapping from the implementation's states to `abstract`'s (a name
    the implementation's loader knows, e.g. a variant). `constant`:
    abstract variable -> the value it always has in the image; `computed`:
    abstract variable -> the name of the implementation's method that
    computes it; every other abstract variable is the implementation's
    variable of the same name."""

    name: str
    abstract: str
    meaning: str
    constant: dict[str, Any] = field(default_factory=dict)
    computed: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, str]:
        """Per variable that is not the identity, how it is mapped (for reports)."""
        out = {v: f"= {value!r}" for v, value in self.constant.items()}
        out.update({v: f"= {fn}(state)" for v, fn in self.computed.items()})
        return dict(sorted(out.items()))


def identity(abstract: str) -> Refinement:
    return Refinement(IDENTITY, abstract, "every abstract variable is the implementation's of the same name")


def mapping_for(impl: Any, abstract_name: str, name: str | None) -> Refinement:
    """The mapping `name` the implementation declares for `abstract_name`
    (None: the one it declares, else the identity); ConfigError naming
    the declared ones if there is no such mapping."""
    declared = [r for r in getattr(impl, "refinements", ()) if r.abstract == abstract_name]
    if name is None:
        return declared[0] if declared else identity(abstract_name)
    if name == IDENTITY:
        return identity(abstract_name)
    found = next((r for r in declared if r.name == name), None)
    if found is None:
        allowed = ", ".join([IDENTITY, *(r.name for r in declared)])
        raise ConfigError(
            f"--mapping {name!r}: {type(impl).__name__} declares no such mapping to {abstract_name!r} "
            f"(allowed: {allowed})"
        )
    return found


class Image:
    """A mapping applied: `of(state)` is the abstract state an
    implementation state stands for. Checked when made, so that a mapping
    naming a variable or method that does not exist is bad input."""

    def __init__(self, impl: Any, abstract: Any, mapping: Refinement):
        fields = abstract.state_type._fields
        mine = set(impl.state_type._fields)
        where = f"mapping {mapping.name!r} from {type(impl).__name__} to {type(abstract).__name__}"
        unknown = [v for v in (*mapping.constant, *mapping.computed) if v not in fields]
        if unknown:
            raise ConfigError(f"{where}: {unknown[0]!r} is not a variable of the abstract spec")
        missing = [v for v in fields if v not in mapping.constant and v not in mapping.computed and v not in mine]
        if missing:
            raise ConfigError(
                f"{where}: the abstract variable {missing[0]!r} is not the implementation's, and the mapping "
                f"declares no value for it"
            )
        absent = [fn for fn in mapping.computed.values() if not callable(getattr(impl, fn, None))]
        if absent:
            raise ConfigError(f"{where}: the implementation has no method {absent[0]!r}")
        self.impl, self.abstract, self.mapping = impl, abstract, mapping
        self.plan = [
            (
                "constant",
                mapping.constant[v],
            )
            if v in mapping.constant
            else ("computed", getattr(impl, mapping.computed[v]))
            if v in mapping.computed
            else ("identity", v)
            for v in fields
        ]
        self.make = abstract.state_type

    def of(self, state: Any) -> Any:
        values = []
        for how, what in self.plan:
            if how == "constant":
                values.append(what)
            elif how == "computed":
                values.append(what(state))
            else:
                values.append(getattr(state, what))
        return self.make(*values)
