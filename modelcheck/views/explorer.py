"""`modelcheck explore`: a state explorer in the browser.

A page is a state and the path that led to it. The URL is the path: the
number of the action taken at each step, in the order the spec lists a
state's enabled actions (`/3/0/5`: from the initial state, the fourth
action, then the first, then the sixth), so a link reproduces a state;
`?then=2/1` carries the steps walked beyond it, which back and forward
move along. The server renders every page from the URL alone (the pages
are the same whoever asks, in whatever order), with render.py's state
rendering, all CSS and script inline: nothing is fetched from a network.

For each enabled action the page shows its arguments, the successor's diff,
the invariants the successor breaks, and whether the checker has seen it:
the depth at which a breadth-first check of this config first reaches it
(engine/reach.py indexes the first states a check visits), or that it is
not among them; and whether it is a state on the path already. A path that
does not exist (an action number a state does not have, a segment that is
not a number) is a 404 page naming the step, never a traceback.

`/PATH/scenario.toml` is the path as a scenario `modelcheck replay` runs,
each step expecting the variables it changed and the invariants it breaks;
`/PATH/trace.json` is the path as the trace file `check --trace-out`
writes (a counterexample when only its last state breaks an invariant).
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from collections import OrderedDict
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from ..config import ConfigError, shown
from ..engine.reach import Reach
from ..formats.scenario import ScenarioStep, to_toml
from ..formats.tracefile import TraceFile
from ..path import path_of
from ..result import Step
from ..spec import Spec
from .render import CSS, config_line, detail, diff_html, timeline
from .terminal import format_action, rows

MAX_STEPS = 1000  # a longer path is refused (414): each step of it is replayed
CACHED_STEPS = 1 << 15  # path prefixes whose last step is kept

EXTRA_CSS = """
nav a { text-decoration:none; padding:2px 10px; border:1px solid var(--line); border-radius:4px; background:#fff;
        color:var(--ink); }
nav span.off { padding:2px 10px; color:var(--line); border:1px solid var(--line); border-radius:4px; }
.timeline td.act a { color:inherit; }
ol.actions { list-style:none; margin:0; padding:0; display:grid; gap:8px; }
li.action { background:#fff; border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
li.action.bad { border-color:var(--bad); background:#fff5f5; }
li.action > a { font-weight:600; font:13px ui-monospace,Menlo,Consolas,monospace; }
li.action table.diff { margin-top:4px; }
li.action table.diff th, li.action table.diff td { padding:1px 10px 1px 0; text-align:left;
  font:12px ui-monospace,Menlo,Consolas,monospace; }
.mark { display:inline-block; margin-left:8px; padding:0 6px; border-radius:3px; font-size:12px; background:#eef1f5; }
.mark.bad { background:var(--bad); color:#fff; font-weight:600; }
.mark.path { background:#e3efff; }
.mark.new { background:#fff1b8; }
.mark.short { background:#e6f4ea; }
h2.actions { margin:16px 0 8px; }
.error { max-width:60em; }
"""

SCRIPT = """
document.addEventListener('keydown', function (e) {
  var link = {ArrowLeft: 'back', ArrowRight: 'forward'}[e.key];
  var a = link && document.getElementById(link);
  if (a && a.href) { e.preventDefault(); location.href = a.href; }
});
"""


class NotFound(Exception):
    """A URL that names no page: the status, one line saying why, and the
    nearest page that exists."""

    def __init__(self, status: int, message: str, back: str = "/"):
        super().__init__(message)
        self.status, self.message, self.back = status, message, back


def url(path: tuple[int, ...], ahead: tuple[int, ...] = ()) -> str:
    return "/" + "/".join(map(str, path)) + (f"?then={'/'.join(map(str, ahead))}" if ahead else "")


def indices(where: str, segments: list[str]) -> tuple[int, ...]:
    for s in segments:
        if not re.fullmatch(r"[0-9]{1,6}", s):
            raise NotFound(
                404,
                f"{where}: {shown(s)} is not an action number (a path is the numbers of the "
                f"actions taken, as the page's links give them)",
            )
    return tuple(int(s) for s in segments)


class Explorer:
    """The pages of one spec instance, rendered from URLs."""

    def __init__(self, spec: Spec, reach: Reach | None = None):
        inits = spec.init_states()
        if len(inits) != 1:
            raise ConfigError(f"explore needs a spec with exactly one initial state, not {len(inits)}")
        self.spec, self.reach = spec, reach
        self.root = Step(None, {}, inits[0])
        self.cache: OrderedDict[tuple[int, ...], Step] = OrderedDict()
        self.lock = threading.Lock()

    # ---- paths ------------------------------------------------------------------------
    def steps(self, path: tuple[int, ...]) -> list[Step]:
        """The steps a path takes from the initial state; NotFound where it
        names an action the state there does not have."""
        if len(path) > MAX_STEPS:
            raise NotFound(414, f"a path of {len(path)} steps; the explorer follows at most {MAX_STEPS}")
        out = [self.root]
        for i in range(len(path)):
            with self.lock:
                step = self.cache.get(path[: i + 1])
            if step is None:
                successors = self.spec.successors(out[-1].state)
                if path[i] >= len(successors):
                    enabled = (
                        f"has {len(successors)} enabled action(s), numbered 0 to {len(successors) - 1}"
                        if successors
                        else "has no enabled action (a deadlock)"
                    )
                    raise NotFound(
                        404,
                        f"step {i + 1}: the state after step {i} {enabled}; there is no action {path[i]}",
                        back=url(path[:i]),
                    )
                step = Step(*successors[path[i]])
                with self.lock:
                    self.cache[path[: i + 1]] = step
                    while len(self.cache) > CACHED_STEPS:
                        self.cache.popitem(last=False)
            out.append(step)
        return out

    def path_of(self, trace: list[Step]) -> tuple[int, ...]:
        """The URL path of a trace that starts at the initial state."""
        return path_of(self.spec, trace).steps

    def get(self, target: str) -> tuple[int, str, str]:
        """(status, content type, body) of a request target."""
        parts = urlsplit(target)
        segments = parts.path.split("/")[1:]
        if segments and segments[-1] == "":
            segments.pop()
        export = segments.pop() if segments and segments[-1] in ("scenario.toml", "trace.json") else None
        path = indices("path", segments)
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"then"})
        if unknown or len(query.get("then", [])) > 1:
            raise NotFound(
                400,
                f"query: {shown(unknown[0] if unknown else 'then')} is not understood (the only "
                f"query is then=N/N/..., the steps ahead)",
                back=url(path),
            )
        then = query.get("then", [""])[0]
        ahead = indices("then", then.split("/") if then else [])
        if export == "scenario.toml":
            return 200, "text/plain; charset=utf-8", self.scenario(path)
        if export == "trace.json":
            return 200, "application/json", self.trace_file(path)
        return 200, "text/html; charset=utf-8", self.page(path, ahead)

    # ---- the page -----------------------------------------------------------------------
    def page(self, path: tuple[int, ...], ahead: tuple[int, ...]) -> str:
        spec = self.spec
        walked = self.steps(path + ahead)
        whole = path + ahead
        k = len(path)
        views = rows(spec, walked)
        current = walked[k]
        back = url(path[:-1], whole[k - 1 :]) if k else None
        forward = url(whole[: k + 1], whole[k + 1 :]) if ahead else None

        def link(href: str | None, id_: str, text: str) -> str:
            return (
                f'<a id="{id_}" href="{escape(href)}">{text}</a>'
                if href
                else f'<span id="{id_}" class="off">{text}</span>'
            )

        exports = (
            (
                f'<a id="export-scenario" href="{escape(url(path) + "/scenario.toml")}" '
                f'download="scenario.toml">scenario.toml</a> '
                f'<a id="export-trace" href="{escape(url(path) + "/trace.json")}" download="trace.json">'
                f"trace.json</a>"
            )
            if k
            else ""
        )
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>modelcheck explore: step {k}</title>
<link rel="icon" href="data:,">
<style>{CSS}{EXTRA_CSS}</style>
</head>
<body data-step="{k}" data-path="{"/".join(map(str, path))}">
<header>
<h1>Step {k}{f" of {len(whole)}" if ahead else ""}: {escape(views[k].action)}</h1>
<p class="config">{escape(config_line(spec.config))}</p>
<p class="config">{escape(self.seen_note())}</p>
</header>
<nav>
{link(back, "back", "&#9664; back")}
{link(forward, "forward", "forward &#9654;")}
<a id="restart" href="/">initial state</a>
<span class="hint">&larr; &rarr; back and forward &middot; export the path:</span> {exports}
</nav>
<main>
{timeline(spec, views, walked, lambda j: url(whole[:j], whole[j:]), current=k)}
<h2 class="actions">Enabled actions ({len(spec.successors(current.state))})</h2>
{self.choices(path, ahead, walked[: k + 1])}
{detail(spec, views[k - 1] if k else None, views[k], current)}
</main>
<footer>{escape("; ".join(filter(None, (spec.trace_legend, "a highlighted cell changed in that step"))))}</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""

    def choices(self, path: tuple[int, ...], ahead: tuple[int, ...], walked: list[Step]) -> str:
        """Each enabled action of the last state walked: a link taking it,
        the successor's diff, the invariants it breaks, where it was seen."""
        spec = self.spec
        current = walked[-1]
        on_path = {spec.canonical(s.state): j for j, s in enumerate(walked)}
        items = []
        for i, (name, args, nxt) in enumerate(spec.successors(current.state)):
            step = Step(name, args, nxt)
            before, after = rows(spec, [current, step])
            violated = spec.violated(nxt)
            href = url(path + (i,), ahead[1:] if ahead[:1] == (i,) else ())
            marks = [f'<span class="mark bad">breaks {escape(", ".join(violated))}</span>'] if violated else []
            again = on_path.get(spec.canonical(nxt))
            if again is not None:
                marks.append(f'<span class="mark path">on the path: the state of step {again}</span>')
            depth = self.reach.depth(nxt) if self.reach else None
            if self.reach and depth is None:
                marks.append('<span class="mark new">not seen by the checker</span>')
            elif self.reach and depth is not None:
                shorter = depth < len(walked)
                marks.append(
                    f'<span class="mark{" short" if shorter else ""}">seen by the checker at depth {depth}'
                    f"{': a shorter path leads there' if shorter else ''}</span>"
                )
            attrs = (
                f' data-index="{i}" data-action="{escape(name)}" data-violates="{escape(",".join(violated))}"'
                f' data-seen="{"" if depth is None else depth}"'
                f' data-on-path="{"" if again is None else again}"'
            )
            items.append(
                f'<li class="action{" bad" if violated else ""}"{attrs}><a href="{escape(href)}">'
                f"{escape(format_action(name, args))}</a>{''.join(marks)}{diff_html(before, after)}</li>"
            )
        return f'<ol class="actions">{"".join(items)}</ol>' if items else "<p>none: a deadlock</p>"

    def seen_note(self) -> str:
        r = self.reach
        if r is None:
            return "seen by the checker: not indexed (--seen-states 0)"
        scope = (
            f"all {r.states:,} reachable states"
            if r.complete
            else f"the first {r.states:,} states a breadth-first check visits (to depth {r.deepest}); "
            f"a state not among them is marked not seen"
        )
        return f"seen by the checker: the depth at which a breadth-first check first reaches a state; indexed {scope}"

    # ---- exports ------------------------------------------------------------------------
    def scenario(self, path: tuple[int, ...]) -> str:
        """The path as a scenario: each step with the variables it changed
        (TOML has no null: those that became null are left out) and the
        invariants it breaks."""
        if not path:
            raise NotFound(404, "the initial state: take a step before exporting a scenario")
        spec, walked = self.spec, self.steps(path)
        steps = []
        for before, step in zip(walked, walked[1:]):
            old, new = spec.describe(before.state), spec.describe(step.state)
            expect = {k: v for k, v in new.items() if v != old[k] and v is not None}
            steps.append(ScenarioStep(cast(str, step.action), step.args, expect, spec.violated(step.state)))
        return to_toml(spec.config, steps, f"a path walked in modelcheck explore: {url(path)}")

    def trace_file(self, path: tuple[int, ...]) -> str:
        """The path as `check --trace-out` writes a trace; its invariant is
        the first one the last state breaks if no earlier state breaks one."""
        spec, walked = self.spec, self.steps(path)
        bad = [spec.violated(s.state) for s in walked]
        invariant = bad[-1][0] if bad[-1] and not any(bad[:-1]) else None
        return TraceFile.of(spec, walked, invariant).text()


def error_page(e: NotFound) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>modelcheck explore: '
        f'{e.status}</title><link rel="icon" href="data:,"><style>{CSS}</style></head><body>'
        f'<main class="error"><h1>{e.status}: '
        f'{escape(e.message)}</h1><p><a id="nearest" href="{escape(e.back)}">the nearest state that exists'
        f'</a> &middot; <a href="/">the initial state</a></p></main></body></html>\n'
    )


class Handler(BaseHTTPRequestHandler):
    explorer: Explorer
    server_version = "modelcheck-explore"

    def do_GET(self) -> None:
        self.answer(body=True)

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def refuse(self) -> None:
        self.send(
            405,
            "text/html; charset=utf-8",
            error_page(NotFound(405, f"{self.command}: the explorer only serves GET and HEAD")),
            True,
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = refuse

    def answer(self, body: bool) -> None:
        try:
            status, kind, text = self.explorer.get(self.path)
        except NotFound as e:
            status, kind, text = e.status, "text/html; charset=utf-8", error_page(e)
        except Exception:  # a bug: said on the page and the terminal, and the server goes on
            traceback.print_exc()
            status, kind, text = (
                500,
                "text/html; charset=utf-8",
                error_page(
                    NotFound(500, "internal error (the traceback is on the explorer's terminal: a bug to report)")
                ),
            )
        self.send(status, kind, text, body)

    def send(self, status: int, kind: str, text: str, body: bool) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # no access log on the terminal
        pass


class Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that leaves before its answer is written (a click on,
        the explorer stopping) is no error to print; anything else is."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def server(explorer: Explorer, host: str, port: int) -> ThreadingHTTPServer:
    """A server bound to host:port (0: any free port), not yet serving;
    ConfigError when the address cannot be had."""
    handler = type("ExplorerHandler", (Handler,), {"explorer": explorer})
    try:
        return Server((host, port), handler)
    except OSError as e:
        raise ConfigError(f"--host {host} --port {port}: cannot serve there: {e.strerror or e}") from None


def address(httpd: ThreadingHTTPServer) -> str:
    host, port = httpd.server_address[:2]
    name = host.decode() if isinstance(host, bytes) else host
    return f"http://{f'[{name}]' if ':' in name else name}:{port}/"
