"""How a spec's traces read: the presentation hooks every Spec has, with
defaults that suit any spec (a protocol overrides them in its own words)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

Cell = list[tuple[str, str]]  # a trace view cell: (text, rich style) segments
State = Any


class Presentation:
    """The columns and lanes of a trace view, the sentence that explains a
    violation, the story of a counterexample."""

    explanations: ClassVar[dict[str, Any]]
    invariants: ClassVar[dict[str, Any]]
    properties: ClassVar[dict[str, Any]]

    # Variables the trace view shows (by default one column each); the others
    # appear in a view only when they change.
    trace_columns: ClassVar[tuple[str, ...]] = ()
    # One line read under a trace view: what its marks and colours mean.
    trace_legend: ClassVar[str] = ""
    # Apalache types of the described variables (modelcheck.formats.itf constructors),
    # so an ITF export writes sets as sets and tuples as tuples; a variable
    # not listed is written by its JSON shape.
    itf_types: ClassVar[dict[str, Any]] = {}

    def format_value(self, name: str, value: Any) -> str:
        """How a variable's value is shown in a trace table."""
        return json.dumps(value, separators=(",", ":"))

    def trace_row(self, state: dict[str, Any]) -> tuple[dict[str, Cell], dict[str, Cell]]:
        """One row of a trace view from described variables: (columns,
        lanes), each label -> [(text, rich style)]. Lanes are per-process
        cells (one a broker), drawn side by side as in a timeline figure."""
        return {c: [(self.format_value(c, state[c]), "")] for c in self.trace_columns}, {}

    def explain(self, invariant: str, state: State) -> str:
        """One sentence on why `state` violates `invariant`: its declared
        explanation, else (and for a temporal property without one) what it
        asks, its docstring's first paragraph."""
        if invariant in self.explanations:
            return self.explanations[invariant](self, state)
        fn = self.invariants[invariant] if invariant in self.invariants else self.properties[invariant]
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split())

    def story(self, trace: list, invariant: str, loop: int | None = None) -> str:
        """A counterexample in a few sentences (default: the actions, then
        the explanation); a spec may tell it in its own domain's words."""
        steps = ", ".join(s.action + (str(s.args) if s.args else "") for s in trace[1:])
        return (
            f"{steps}{self.loop_sentence(trace, loop)}: {invariant} breaks: {self.explain(invariant, trace[-1].state)}."
        )

    def loop_sentence(self, trace: list, loop: int | None) -> str:
        """How a lasso goes on for ever ("" for an invariant's trace)."""
        if loop is None:
            return ""
        if loop == len(trace) - 1:
            return ", then nothing changes for ever (every fair action taken or disabled)"
        return f", then steps {loop + 1}..{len(trace) - 1} repeat for ever (every fair action taken or disabled)"
