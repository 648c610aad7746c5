"""The markdown a pull request reads (`--summary FILE.md`): a gate run,
its comparison with a base revision (`--against`) or a mutation hunt,
each a section appended to the file, where CI systems show it (GitHub
Actions: $GITHUB_STEP_SUMMARY, which every step of a job appends to).
Each finding carries the command that shows its trace."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any


def toml_value(v: Any) -> str:
    """A config value as --set reads it (TOML; a bare word is a string)."""
    if isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", v):
        return v
    return json.dumps(v, separators=(",", ":"))


def check_command(config: dict[str, Any], symmetry: bool = False) -> str:
    """The `modelcheck check` of one config: it prints the verdict and, where
    there is one, the shortest counterexample."""
    sets = " ".join(f"--set {shlex.quote(f'{k}={toml_value(v)}')}" for k, v in config.items())
    return f"modelcheck check {sets}" + (" --symmetry" if symmetry else "")


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def gate_markdown(gate_file: str, outcomes: Sequence[Any], stopped: str | None) -> str:
    """A gate run: the counts of each status, then every entry whose verdict,
    count or time moved (with the command that shows it), in a table."""
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}
    lines = [
        f"## modelcheck gate `{gate_file}`: "
        + ("**FAILED**" if counts["failed"] else "stopped" if stopped else "passed"),
        "",
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        + (f" (the gate was {stopped})" if stopped else "")
        + ".",
        "",
    ]
    moved = [o for o in outcomes if o.failures or o.warnings]
    if not moved:
        return "\n".join([*lines, "Every verdict and every pinned count is as pinned.", ""])
    lines += ["| entry | status | verdict | states (pinned) | why | shows it |", "|---|---|---|--:|---|---|"]
    for o in moved:
        row = o.row
        states = "" if row is None else f"{row.distinct:,}" + (f" ({o.entry.states:,})" if o.entry.states else "")
        shows = check_command(o.entry.cell.config, o.entry.cell.symmetry) if o.failures else ""
        why = "; ".join([*map(str, o.failures), *(f"warning: {w}" for w in o.warnings)])
        verdict = (row.verdict + "".join(f", then violated: {n}" for n in row.further)) if row else ""
        lines.append(
            f"| {cell(o.entry.cell.name)} | {o.status} | {cell(verdict)} | {states} | {cell(why)} | "
            + (f"`{shows}` |" if shows else " |")
        )
    return "\n".join([*lines, ""])


def against_markdown(gate_file: str, ref: str, reports: Sequence[tuple[str, bool, str]]) -> str:
    """`--against REF`: each entry's (name, whether it has no new behaviour,
    the first new behaviour's line)."""
    new = [r for r in reports if not r[1]]
    lines = [
        f"## modelcheck gate `{gate_file}` against `{ref}`: "
        + (f"**{len(new)} entries with new behaviour**" if new else "no new behaviour"),
        "",
        f"{len(reports) - len(new)} of {len(reports)} entries reach only what the spec at `{ref}` allows.",
        "",
    ]
    if new:
        lines += ["| entry | the first new behaviour |", "| --- | --- |"]
        lines += [f"| {cell(name)} | {cell(why)} |" for name, _same, why in new]
        lines += ["", f"The traces: `modelcheck gate {shlex.quote(gate_file)} --against {shlex.quote(ref)}`", ""]
    return "\n".join(lines)


def mutate_markdown(
    gate_file: str,
    verdicts: Sequence[Any],
    unexpected: dict[str, str],
    generated: Sequence[Any] = (),
    low: str = "",
) -> str:
    """A mutation hunt: the score, then each named mutant's fate and how to
    see its kill, then the generated mutants' score and their survivors by
    rule."""
    killed = sum(v.status == "killed" for v in verdicts)
    telling = killed + sum(v.status == "survived" for v in verdicts)
    lines = [
        f"## modelcheck mutate `{gate_file}`: {killed} killed of {telling} the gate can tell apart"
        + (" (**unexpected**)" if unexpected or low else ""),
        "",
    ]
    if verdicts:
        lines += ["| mutant | base | fate | why | shows it |", "| --- | --- | --- | --- | --- |"]
    for v in verdicts:
        fate = v.status + (f" (**unexpected**: {unexpected[v.mutant]})" if v.mutant in unexpected else "")
        shows = f"`{v.command()}`" if v.command() else ""
        lines.append(f"| {v.mutant} | {v.base} | {cell(fate)} | {cell(v.reason())} | {shows} |")
    if generated:
        g_killed = sum(v.status == "killed" for v in generated)
        g_telling = g_killed + sum(v.status in ("survived", "unreached") for v in generated)
        lines += [
            "",
            f"Generated mutants: {g_killed} killed of {g_telling} not shown equivalent "
            f"({len(generated)} mutants)." + (f" **{low}**" if low else ""),
            "",
            "| mutant | rule | where | change | fate | why |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for v in generated:
            if v.status != "killed":
                p = v.point
                lines.append(
                    f"| {v.mutant} | {p.rule} | {p.where} | {cell(p.kind + ': ' + p.change)} | {v.status} "
                    f"| {cell(v.reason())} |"
                )
    return "\n".join([*lines, ""])
