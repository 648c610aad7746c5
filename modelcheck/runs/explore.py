"""`modelcheck explore`: the explorer served in the browser, from the
initial state or a step of a saved trace, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import click

from ..config import ConfigError
from ..engine.reach import index
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..views.explorer import Explorer, address, server, url
from ..views.terminal import stderr_console
from ..views.tracefile import open_trace as read_and_replay
from .exits import fail
from .inputs import Loader, load_check_config


def explore_command(
    load: Loader,
    config: str | None,
    overrides: tuple[str, ...],
    trace_path: str | None,
    step_no: int | None,
    host: str,
    port: int,
    seen_states: int | None,
) -> int:
    """Serve the explorer on `host`:`port`, its URL printed, until stopped."""
    try:
        if trace_path and (config or overrides):
            raise ConfigError("--trace: a trace brings its own config; leave out CONFIG.toml and --set")
        if step_no is not None and not trace_path:
            raise ConfigError("--step applies to --trace only")
        if trace_path:
            spec, _tf, steps = read_and_replay(trace_path, load)
            if step_no is not None and step_no >= len(steps):
                raise ConfigError(f"--step {step_no}: the trace's steps are 0 to {len(steps) - 1}")
        else:
            spec, steps = load(load_check_config(config, overrides)[0]), None
        explorer = Explorer(spec)
        httpd = server(explorer, host, port)
    except ConfigError as e:
        fail(str(e))
    console = stderr_console()
    with stop_on_signals():
        try:
            explorer.reach = (
                None
                if seen_states == 0
                else index(spec, seen_states, lambda text: console.print(text, highlight=False, markup=False))
            )
            if explorer.reach:
                r = explorer.reach
                console.print(
                    f"seen: indexed {r.states:,} states to depth {r.deepest} in {r.elapsed_s:.1f} s"
                    + (" (all reachable states)" if r.complete else ""),
                    highlight=False,
                )
            path = explorer.path_of(steps) if steps else ()
            start = url(path[: step_no or 0], path[step_no or 0 :])
            click.echo(f"serving {address(httpd)}{start[1:]}  (Ctrl-C stops it)")
            httpd.serve_forever()
        except Stopped as e:
            click.echo(f"explorer {e.why}", err=True)
            return exit_code(e)
        finally:
            httpd.server_close()
    raise AssertionError("serve_forever returns only when stopped")
