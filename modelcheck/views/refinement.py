"""What `modelcheck refines` prints: the verdict and counts, and for a
failure the implementation's trace, its image in the abstract spec beside
it (step by step: a stutter, the abstract step that makes it, or none) and
the abstract steps that came closest to the one that fails."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text

from ..engine.refinement.refine import RefinementResult
from ..result import Step
from ..spec import Spec
from ..trace import described
from .terminal import format_action, stdout_console, trace_table


def step_reading(stutter: bool, steps: list[tuple[str, dict[str, Any]]]) -> str:
    """How one step's image reads in the abstract spec."""
    if stutter:
        return "stutter"
    return " or ".join(format_action(n, a) for n, a in steps) or "NOT ALLOWED"


def shown(spec: Spec, state: Any, names: tuple[str, ...]) -> str:
    """The named variables of `state` as the spec's traces show them."""
    named, raw = spec.describe(state), state._asdict()
    return ", ".join(f"{v}={spec.format_value(v, named[v]) if v in named else json.dumps(raw[v])}" for v in names)


def refinement_json(
    impl: Spec, abstract: Spec, names: tuple[str, str], result: RefinementResult, mapping: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "verdict": result.verdict,
        "implementation": names[0],
        "abstract": names[1],
        "mapping": mapping,
        "states": result.states,
        "transitions": result.transitions,
        "stutters": result.stutters,
        "depth": result.depth,
        "elapsed_s": round(result.elapsed_s, 3),
        "config": impl.config,
        **result.run_info,
        "trace": [],
        "closest": [],
    }
    if not result.holds:
        images = described(abstract, [Step(s.action, s.args, m) for s, m in zip(result.trace, result.images)])
        readings = [None, *(step_reading(*m) for m in result.matched)]
        out["trace"] = [
            {**step, "image": image["state"], "abstract_step": reading}
            for step, image, reading in zip(described(impl, result.trace), images, readings)
        ]
        out["closest"] = [
            {"action": n.action, "args": n.args, "state": abstract.describe(n.state), "differs": list(n.differs)}
            for n in result.closest
        ]
    return out


def print_refinement(
    impl: Spec, abstract: Spec, names: tuple[str, str], result: RefinementResult, mapping: dict[str, Any]
) -> None:
    out = stdout_console()
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in impl.config.items() if v is not None)
    out.print(Text(f"config: {cfg}"))
    how = "; ".join(f"{v} {rule}" for v, rule in mapping["variables"].items()) or "every variable as it is"
    out.print(Text(f"mapping {mapping['name']!r} from {names[0]} to {names[1]}: {how}"))
    if result.holds:
        out.print(
            f"[bold green]holds[/]: {names[0]} refines {names[1]}: the image of every initial state is initial, "
            f"and each of {result.transitions:,} transitions is a {names[1]} step or a stutter "
            f"({result.stutters:,} stutters)"
        )
    else:
        print_failure(impl, abstract, names, result)
    out.print(
        f"distinct states: {result.states:,}  transitions: {result.transitions:,}  stutters: {result.stutters:,}  "
        f"depth: {result.depth}  time: {result.elapsed_s:.1f} s  kernel: {result.run_info.get('kernel')}"
    )


def print_failure(impl: Spec, abstract: Spec, names: tuple[str, str], result: RefinementResult) -> None:
    """A failed refinement: the step that fails, the implementation's trace,
    its image step by step, and the abstract steps closest to the image."""
    out = stdout_console()
    if len(result.trace) == 1:
        out.print(f"[bold red]violated[/]: the image of an initial state is no initial state of {names[1]}")
    else:
        last = len(result.trace) - 1
        step = result.trace[-1]
        out.print(
            Text.assemble(
                ("violated", "bold red"),
                f": the image of step {last}, {format_action(step.action, step.args)}, is no {names[1]} step "
                f"(a shortest trace, re-validated by replay)",
            )
        )
    out.print(trace_table(impl, result.trace, title=f"{names[0]}: the trace"))
    readings = [None, *(step_reading(*m) for m in result.matched)]
    image = [Step(reading, {}, m) for reading, m in zip(readings, result.images)]
    out.print(trace_table(abstract, image, title=f"its image in {names[1]}: each step as {names[1]} reads it"))
    target = result.images[-1]
    out.print(
        Text(
            f"the {names[1]} initial states closest to its image:"
            if len(result.trace) == 1
            else f"the {names[1]} steps from the image of step {len(result.trace) - 2} closest to it:"
        )
    )
    for near in result.closest:
        what = format_action(near.action, near.args)
        out.print(
            Text(
                f"  {what}: differs in {len(near.differs)} variable(s): "
                f"{shown(abstract, near.state, near.differs)} where the image has "
                f"{shown(abstract, target, near.differs)}"
            )
        )
    if not result.closest:
        out.print(Text(f"  none: {names[1]} has no step from there"))


def failure_line(abstract_name: str, result: RefinementResult) -> str:
    """A failed refinement in one line: which step, and the trace to it."""
    if len(result.trace) == 1:
        return f"the image of an initial state is no initial state of {abstract_name}"
    steps = ", ".join(f"{i}. {format_action(s.action, s.args)}" for i, s in enumerate(result.trace[1:], 1))
    return f"the image of step {len(result.trace) - 1} is no {abstract_name} step: {steps}"
