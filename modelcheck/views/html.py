"""A trace as one self-contained HTML page: a timeline to step through.

Steps are rows and the spec's lanes (brokers) are columns, as in the KIP's
figure. Everything is rendered here from the same rows as the terminal view
(terminal.rows), so the page needs no network and its timeline reads without
JavaScript; the inline script only moves the current step (slider, arrow
keys, clicks) and records it in `<body data-step>`, which the browser test
reads.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from rich.style import Style

from ..result import Step
from ..spec import Cell, Spec
from .terminal import Row, changes, rows

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

SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr.step'));
  var details = Array.prototype.slice.call(document.querySelectorAll('.detail'));
  var slider = document.getElementById('slider'), pos = document.getElementById('pos');
  var last = rows.length - 1, current = 0;
  function show(i) {
    current = Math.max(0, Math.min(last, i));
    rows.forEach(function (r, k) {
      r.classList.toggle('current', k === current);
      r.classList.toggle('future', k > current);
    });
    details.forEach(function (d, k) { d.hidden = k !== current; });
    slider.value = current;
    pos.textContent = 'step ' + current + ' / ' + last;
    document.body.dataset.step = current;
    rows[current].scrollIntoView({block: 'nearest'});
  }
  var keys = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1};
  document.addEventListener('keydown', function (e) {
    if (e.key in keys) show(current + keys[e.key]);
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(last);
    else return;
    e.preventDefault();
  });
  slider.addEventListener('input', function () { show(+slider.value); });
  document.getElementById('prev').addEventListener('click', function () { show(current - 1); });
  document.getElementById('next').addEventListener('click', function () { show(current + 1); });
  rows.forEach(function (r, k) { r.addEventListener('click', function () { show(k); }); });
  var m = /^#step=(\\d+)$/.exec(location.hash);
  show(m ? +m[1] : 0);
})();
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


def render(spec: Spec, trace: list[Step], config: dict[str, Any], invariant: str | None) -> str:
    views = rows(spec, trace)
    last = len(views) - 1
    explanation = spec.explain(invariant, trace[-1].state) if invariant else ""
    title = (f"{invariant} violated after {last} steps" if invariant else f"a trace of {last} steps")
    cfg = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in config.items() if v is not None)
    head = "".join(f"<th{classes('lane' if k in views[0].lanes else '')}>{escape(k)}</th>" for k in views[0].cells)
    body = "\n".join(timeline_row(spec, r, trace[r.index]) for r in views)
    details = "\n".join(detail(spec, views, r, trace[r.index]) for r in views)
    verdict = f'<p class="verdict"><b>{escape(invariant)}</b>: {escape(explanation)}</p>' if invariant else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>modelcheck: {escape(title)}</title>
<style>{CSS}</style>
</head>
<body data-step="0">
<header>
<h1>{escape(title)}</h1>
<p class="config">{escape(cfg)}</p>
{verdict}
</header>
<nav>
<button id="prev" title="previous step (left arrow)">&#9664;</button>
<input id="slider" type="range" min="0" max="{last}" value="0" aria-label="step">
<button id="next" title="next step (right arrow)">&#9654;</button>
<span id="pos">step 0 / {last}</span>
<span class="hint">&larr; &rarr; step &middot; Home / End &middot; click a row</span>
</nav>
<main>
<table class="timeline">
<thead><tr><th>#</th><th>action</th>{head}</tr></thead>
<tbody>
{body}
</tbody>
</table>
{details}
</main>
<footer>{escape("; ".join(filter(None, (spec.trace_legend, "a highlighted cell changed in that step"))))}</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""


def classes(*names: str) -> str:
    used = " ".join(n for n in names if n)
    return f' class="{used}"' if used else ""


def timeline_row(spec: Spec, r: Row, step: Step) -> str:
    cells = "".join(f"<td{classes('lane' if k in r.lanes else '', 'chg' if k in r.changed else '')}>"
                    f"{cell_html(cell)}</td>" for k, cell in r.cells.items())
    return (f'<tr{classes("step", "bad" if spec.violated(step.state) else "")} id="step-{r.index}">'
            f'<td>{r.index}</td><td class="act">{escape(r.action)}</td>{cells}</tr>')


def detail(spec: Spec, views: list[Row], r: Row, step: Step) -> str:
    """The panel of one step: its diff, and the whole state after it."""
    prev = views[r.index - 1] if r.index else None
    if prev is None:
        diff = "<p>the initial state</p>"
    else:
        lines = []
        for name, before, after in r.diff:
            if name in r.cells:
                before, after = cell_html(prev.cells[name]), cell_html(r.cells[name])
            else:
                before, after = escape(before), escape(after)
            lines.append(f'<tr><th>{escape(name)}</th><td class="before">{before}</td><td>&rarr;</td>'
                         f"<td>{after}</td></tr>")
        diff = f"<table>{''.join(lines)}</table>" if lines else "<p>no visible change</p>"
    changed = changes(prev.state, r.state) if prev else []
    state = "".join(f"<tr{classes('chg' if k in changed else '')}><th>{escape(k)}</th>"
                    f"<td>{escape(spec.format_value(k, v))}</td></tr>" for k, v in r.state.items())
    violated = spec.violated(step.state)
    bad = (f'<p class="violated">violates {escape(", ".join(violated))}</p>' if violated
           else "<p>every checked invariant holds here</p>")
    return (f'<section class="detail" id="detail-{r.index}"{" hidden" if r.index else ""}>'
            f'<div class="panel"><h2>Step {r.index}: {escape(r.action)}</h2><h3>What changed</h3>{diff}{bad}</div>'
            f'<div class="panel"><h3>State after step {r.index}</h3>'
            f'<table class="state">{state}</table></div></section>')
