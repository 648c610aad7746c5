"""A trace as one self-contained HTML page: a timeline to step through.

Steps are rows and the spec's lanes (brokers) are columns, as in the KIP's
figure. Everything is rendered in Python by render.py (the explorer's state
rendering too), so the page needs no network and its timeline reads without
JavaScript; the inline script only moves the current step (slider, arrow
keys, clicks) and records it in `<body data-step>`, which the browser test
reads.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..result import Step
from ..spec import Spec
from .render import CSS, config_line, detail, timeline
from .terminal import loop_marks, rows

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

LOOP_SCRIPT = """
(function () {
  var rows = document.querySelectorAll('tr.step'), loop = +document.body.dataset.loop;
  rows[loop].classList.add('loop-start');
  rows[rows.length - 1].classList.add('loop-back');
})();
"""
LOOP_CSS = """
tr.step.loop-start td:first-child::after { content: " \\27F2"; color: #b35900; }
tr.step.loop-back td:first-child::after { content: " \\21A9"; color: #b35900; }
p.loop { color: #b35900; }
"""


def render(
    spec: Spec, trace: list[Step], config: dict[str, Any], invariant: str | None, loop: int | None = None
) -> str:
    """The page; a lasso (a temporal property's counterexample) has its
    loop said in the header and marked on its rows."""
    views = rows(spec, trace)
    last = len(views) - 1
    explanation = spec.explain(invariant, trace[-1].state) if invariant else ""
    title = f"{invariant} violated after {last} steps" if invariant else f"a trace of {last} steps"
    _marks, looped = loop_marks(trace, loop)
    loop_line = f'<p class="loop">{escape(looped)}</p>' if loop is not None else ""
    details = "\n".join(
        detail(spec, views[r.index - 1] if r.index else None, r, trace[r.index], hidden=r.index > 0) for r in views
    )
    verdict = f'<p class="verdict"><b>{escape(invariant)}</b>: {escape(explanation)}</p>' if invariant else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>modelcheck: {escape(title)}</title>
<style>{CSS}{LOOP_CSS if loop is not None else ""}</style>
</head>
<body data-step="0"{"" if loop is None else f' data-loop="{loop}"'}>
<header>
<h1>{escape(title)}</h1>
<p class="config">{escape(config_line(config))}</p>
{verdict}
{loop_line}
</header>
<nav>
<button id="prev" title="previous step (left arrow)">&#9664;</button>
<input id="slider" type="range" min="0" max="{last}" value="0" aria-label="step">
<button id="next" title="next step (right arrow)">&#9654;</button>
<span id="pos">step 0 / {last}</span>
<span class="hint">&larr; &rarr; step &middot; Home / End &middot; click a row</span>
</nav>
<main>
{timeline(spec, views, trace)}
{details}
</main>
<footer>{escape("; ".join(filter(None, (spec.trace_legend, "a highlighted cell changed in that step"))))}</footer>
<script>{SCRIPT}{LOOP_SCRIPT if loop is not None else ""}</script>
</body>
</html>
"""
