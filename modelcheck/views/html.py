"""A trace as one self-contained HTML page: a timeline to step through
(a refinement failure's with its image in the abstract spec beside it).

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

from ..engine.refinement.refine import RefinementResult
from ..result import Step
from ..spec import Spec
from .refinement import shown, step_reading
from .render import CSS, config_line, detail, diff_html, timeline
from .terminal import format_action, loop_marks, rows

SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr.step'));
  var details = Array.prototype.slice.call(document.querySelectorAll('.detail'));
  var images = Array.prototype.slice.call(document.querySelectorAll('tr.img'));
  var slider = document.getElementById('slider'), pos = document.getElementById('pos');
  var last = rows.length - 1, current = 0;
  function show(i) {
    current = Math.max(0, Math.min(last, i));
    rows.concat(images).forEach(function (r) {
      var k = +r.id.split('-')[1];
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
IMAGE_CSS = """
h2.image { margin:22px 0 8px; }
.detail { grid-template-columns:repeat(3, minmax(300px,1fr)); }
.detail > .panel.image { order:1; }
.detail > .panel:nth-child(2) { order:2; }
.panel.image h2 span.reading { color:#2b8a3e; }
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
    header = f'<p class="verdict"><b>{escape(invariant)}</b>: {escape(explanation)}</p>' if invariant else ""
    if loop is not None:
        header += f'\n<p class="loop">{escape(looped)}</p>'
    details = "\n".join(
        detail(spec, views[r.index - 1] if r.index else None, r, trace[r.index], hidden=r.index > 0) for r in views
    )
    return page(
        spec,
        title,
        config,
        header,
        f"{timeline(spec, views, trace)}\n{details}",
        last,
        loop,
    )


def render_refinement(
    impl: Spec, abstract: Spec, names: tuple[str, str], result: RefinementResult, config: dict[str, Any]
) -> str:
    """A refinement failure's page: the implementation's trace to step
    through, each step's panels with a third, the step's image in the
    abstract spec (how the abstract spec reads it, what it changed; at the
    last step the abstract steps closest to it), and the image's timeline
    below, following the current step."""
    trace, last = result.trace, len(result.trace) - 1
    views = rows(impl, trace)
    readings = ["initial state", *(step_reading(*m) for m in result.matched)]
    image = [Step(reading, {}, m) for reading, m in zip(readings, result.images)]
    image_views = rows(abstract, image)
    if last == 0:
        title = f"{names[0]} does not refine {names[1]}: its initial state's image is not initial"
        failing = f"the image of an initial state is no initial state of {names[1]}"
    else:
        title = f"{names[0]} does not refine {names[1]}: step {last} is no {names[1]} step"
        failing = f"the image of step {last}, {format_action(trace[-1].action, trace[-1].args)}, is no {names[1]} step"
    header = (
        f'<p class="verdict"><b>refinement</b>: {escape(failing)} '
        f"(mapping {escape(repr(result.mapping))}; a shortest trace, re-validated by replay)</p>"
    )
    details = []
    for r in views:
        before = image_views[r.index - 1] if r.index else None
        reading = escape(readings[r.index])
        changed = diff_html(before, image_views[r.index]) if before else "<p>the image of the initial state</p>"
        near = closest_html(abstract, names[1], result) if r.index == last else ""
        panel = (
            f'<div class="panel image"><h2>Its image in {escape(names[1])}: '
            f'<span class="{"violated" if r.index == last else "reading"}">{reading}</span></h2>'
            f"<h3>What changed</h3>{changed}{near}</div>"
        )
        shown_detail = detail(impl, views[r.index - 1] if r.index else None, r, trace[r.index], hidden=r.index > 0)
        details.append(shown_detail.replace("</section>", f"{panel}</section>"))
    main = (
        f"{timeline(impl, views, trace)}\n" + "\n".join(details) + f'\n<h2 class="image">Its image in '
        f"{escape(names[1])}: each step as {escape(names[1])} reads it</h2>\n"
        f"{timeline(abstract, image_views, image, row_class='img')}"
    )
    return page(impl, title, config, header, main, last, css=IMAGE_CSS)


def closest_html(abstract: Spec, name: str, result: RefinementResult) -> str:
    """The abstract steps (or initial states) closest to the failing image."""
    target = result.images[-1]
    items = "".join(
        f"<li><b>{escape(format_action(n.action, n.args))}</b>: differs in {len(n.differs)} variable(s): "
        f"{escape(shown(abstract, n.state, n.differs))} where the image has "
        f"{escape(shown(abstract, target, n.differs))}</li>"
        for n in result.closest
    )
    what = f"the {name} initial states" if len(result.trace) == 1 else f"the {name} steps from the previous image"
    return f"<h3>Closest: {escape(what)}</h3>" + (
        f"<ul>{items}</ul>" if items else f"<p>none: {escape(name)} has no step from there</p>"
    )


def page(
    spec: Spec,
    title: str,
    config: dict[str, Any],
    header: str,
    main: str,
    last: int,
    loop: int | None = None,
    css: str = "",
) -> str:
    """The page around a timeline and its details: the header, the step
    navigation, the legend and the script that moves the current step."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>modelcheck: {escape(title)}</title>
<style>{CSS}{LOOP_CSS if loop is not None else ""}{css}</style>
</head>
<body data-step="0"{"" if loop is None else f' data-loop="{loop}"'}>
<header>
<h1>{escape(title)}</h1>
<p class="config">{escape(config_line(config))}</p>
{header}
</header>
<nav>
<button id="prev" title="previous step (left arrow)">&#9664;</button>
<input id="slider" type="range" min="0" max="{last}" value="0" aria-label="step">
<button id="next" title="next step (right arrow)">&#9654;</button>
<span id="pos">step 0 / {last}</span>
<span class="hint">&larr; &rarr; step &middot; Home / End &middot; click a row</span>
</nav>
<main>
{main}
</main>
<footer>{escape("; ".join(filter(None, (spec.trace_legend, "a highlighted cell changed in that step"))))}</footer>
<script>{SCRIPT}{LOOP_SCRIPT if loop is not None else ""}</script>
</body>
</html>
"""
