"""One state rendering for every HTML view: the trace page (html.py) and
the explorer (explorer.py) draw a state, a step's diff and a timeline of
steps with these functions, from the rows the terminal view computes
(terminal.rows), so the views cannot disagree about what a state is or
what a step changed.

A cell is the spec's (text, rich style) segments; a style becomes inline
CSS through rich's own Style.get_html_style, and a segment with a
background is a block (a log entry coloured by its epoch).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from typing import Any

from rich.style import Style

from ..presentation import Cell
from ..result import Step
from ..spec import Spec
from .terminal import Row, changes

CSS = """
:root { --ink:#1d2433; --muted:#5c6577; --line:#d5dae3; --chg:#fff1b8; --cur:#e3efff; --bad:#c92a2a; }
* { box-sizing:border-box; }
body { font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--ink); margin:0; background:#f7f8fa; }
header, main { padding:14px 22px; }
header { background:#fff; border-bottom:1px solid var(--line); }
h1 { font-size:19px; margin:0 0 4px; }
h2 { font-size:16px; margin:0 0 8px; }
h3 { font-size:13px; margin:10px 0 6px; color:var(--muted); text-transform:uppercase; letter-spacing:.04em; }
.config { color:var(--muted); font:12px ui-monospace,Menlo,Consolas,monospace; margin:0; }
.verdict { margin:10px 0 0; padding:8px 12px; border-left:4px solid var(--bad); background:#fff5f5; }
.verdict b { color:var(--bad); }
nav { position:sticky; top:0; z-index:2; display:flex; gap:10px; align-items:center; padding:10px 22px;
      background:#fff; border-bottom:1px solid var(--line); }
nav input[type=range] { flex:1; max-width:520px; }
nav button { font-size:14px; padding:2px 10px; border:1px solid var(--line); border-radius:4px; background:#fff;
             cursor:pointer; }
#pos { font-weight:600; min-width:9em; }
.hint { color:var(--muted); font-size:12px; }
table { border-collapse:collapse; }
.timeline { width:100%; background:#fff; border:1px solid var(--line); }
.timeline th, .timeline td { border-bottom:1px solid var(--line); padding:5px 8px; text-align:left;
                             vertical-align:top; white-space:nowrap; }
.timeline th { background:#eef1f5; font-size:12px; position:sticky; top:49px; }
.timeline th.lane, .timeline td.lane { border-left:2px solid var(--line); min-width:11em; }
.timeline th:not(.lane) { width:1%; }
.timeline td { font:12.5px ui-monospace,Menlo,Consolas,monospace; }
.timeline td.act { font-family:inherit; }
.timeline tr.step { cursor:pointer; }
.timeline tr.future td { opacity:.38; }
.timeline tr.current td { background:var(--cur); }
.timeline tr.current td:first-child { box-shadow:inset 4px 0 #1c7ed6; }
.timeline tr.bad td.act { color:var(--bad); font-weight:600; }
td.chg { background:var(--chg) !important; }
.blk { display:inline-block; padding:0 5px; border-radius:3px; border:1px solid rgba(0,0,0,.18); }
.detail { display:grid; grid-template-columns:minmax(320px,1fr) minmax(320px,1fr); gap:18px; margin-top:16px; }
.detail[hidden] { display:none; }
.panel { background:#fff; border:1px solid var(--line); border-radius:6px; padding:12px 14px; }
.panel table td, .panel table th { padding:3px 10px 3px 0; text-align:left; vertical-align:top;
                                   font:12.5px ui-monospace,Menlo,Consolas,monospace; }
.panel table.state { width:100%; }
.panel table th { font-weight:600; color:var(--muted); width:1%; white-space:nowrap; }
.panel tr.chg td, .panel tr.chg th { background:var(--chg); }
.before { opacity:.5; }
.violated { color:var(--bad); font-weight:600; }
footer { color:var(--muted); font-size:12px; padding:0 22px 22px; }
"""


def cell_html(cell: Cell) -> str:
    """Segments as spans; a segment with a background is a block (a log entry)."""
    out = []
    for text, style in cell:
        if not style:
            out.append(escape(text))
            continue
        parsed = Style.parse(style)
        cls = ' class="blk"' if parsed.bgcolor else ""
        out.append(f'<span{cls} style="{escape(parsed.get_html_style())}">{escape(text)}</span>')
    return "".join(out)


def classes(*names: str) -> str:
    used = " ".join(n for n in names if n)
    return f' class="{used}"' if used else ""


def config_line(config: dict[str, Any]) -> str:
    """A config as `key=value ...` (keys left at null omitted)."""
    return " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in config.items() if v is not None)


def timeline(
    spec: Spec,
    views: list[Row],
    trace: list[Step],
    href: Callable[[int], str] | None = None,
    current: int | None = None,
    row_class: str = "step",
) -> str:
    """The steps as rows and the spec's lanes as columns; with `href`, each
    step's action links to it; with `current`, that step is marked current
    and those after it future (else the page's script marks them). Rows
    are `tr.step`, what the page's script steps through; another
    `row_class` (a refinement's image) follows them."""
    head = "".join(f"<th{classes('lane' if k in views[0].lanes else '')}>{escape(k)}</th>" for k in views[0].cells)
    body = "\n".join(
        timeline_row(spec, r, trace[r.index], href(r.index) if href else None, current, row_class) for r in views
    )
    return (
        f'<table class="timeline">\n<thead><tr><th>#</th><th>action</th>{head}</tr></thead>\n'
        f"<tbody>\n{body}\n</tbody>\n</table>"
    )


def timeline_row(
    spec: Spec, r: Row, step: Step, href: str | None = None, current: int | None = None, row_class: str = "step"
) -> str:
    cells = "".join(
        f"<td{classes('lane' if k in r.lanes else '', 'chg' if k in r.changed else '')}>{cell_html(cell)}</td>"
        for k, cell in r.cells.items()
    )
    action = f'<a href="{escape(href)}">{escape(r.action)}</a>' if href else escape(r.action)
    where = "" if current is None else "current" if r.index == current else "future" if r.index > current else ""
    return (
        f'<tr{classes(row_class, "bad" if spec.violated(step.state) else "", where)} id="{row_class}-{r.index}">'
        f'<td>{r.index}</td><td class="act">{action}</td>{cells}</tr>'
    )


def diff_html(prev: Row, r: Row) -> str:
    """What the step into `r` changed: each changed cell (drawn as the
    timeline draws it) or variable, before and after."""
    lines = []
    for name, before, after in r.diff:
        if name in r.cells:
            before, after = cell_html(prev.cells[name]), cell_html(r.cells[name])
        else:
            before, after = escape(before), escape(after)
        lines.append(f'<tr><th>{escape(name)}</th><td class="before">{before}</td><td>&rarr;</td><td>{after}</td></tr>')
    return f'<table class="diff">{"".join(lines)}</table>' if lines else "<p>no visible change</p>"


def violations_html(violated: list[str]) -> str:
    return (
        f'<p class="violated">violates {escape(", ".join(violated))}</p>'
        if violated
        else '<p class="holds">every checked invariant holds here</p>'
    )


def state_html(spec: Spec, prev: Row | None, r: Row) -> str:
    """Every variable of the state, those the step changed highlighted."""
    changed = changes(prev.state, r.state) if prev else []
    rows = "".join(
        f"<tr{classes('chg' if k in changed else '')}><th>{escape(k)}</th>"
        f"<td>{escape(spec.format_value(k, v))}</td></tr>"
        for k, v in r.state.items()
    )
    return f'<table class="state">{rows}</table>'


def detail(spec: Spec, prev: Row | None, r: Row, step: Step, hidden: bool = False) -> str:
    """The panels of one step: its diff and the invariants it breaks, and
    the whole state after it."""
    diff = diff_html(prev, r) if prev else "<p>the initial state</p>"
    return (
        f'<section class="detail" id="detail-{r.index}"{" hidden" if hidden else ""}>'
        f'<div class="panel"><h2>Step {r.index}: {escape(r.action)}</h2><h3>What changed</h3>{diff}'
        f"{violations_html(spec.violated(step.state))}</div>"
        f'<div class="panel"><h3>State after step {r.index}</h3>{state_html(spec, prev, r)}</div></section>'
    )
