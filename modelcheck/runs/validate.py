"""`modelcheck validate LOG`: is a system's log a behaviour of the spec?

The protocol reads the log into an `Observed` (its `observe`
registration); the search is modelcheck/engine/observed.py. The answer
is "consistent" with a witness behaviour (written as a trace file the
viewers show), or the first record no behaviour allows, the states the
spec could be in just before it and the closest records it allows there.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from ..config import ConfigError
from ..engine.observed import Verdict, validate
from ..formats.tracefile import TraceFile
from ..output import check_file
from ..protocol import Protocol
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail

# a witness longer than this is replayed only when --trace-out asks for it
# (a million steps replay in about a minute; the search answers in seconds)
REPLAY_STEPS = 200_000


def validate_command(
    protocol: Protocol,
    log: str,
    options: dict[str, Any],
    trace_out: str | None,
    as_json: bool,
    quiet: bool,
    start_states: int,
) -> int:
    """Exit 0 consistent, 1 a deviation, 2 bad input."""
    if protocol.observe is None:
        fail(f"validate: the protocol {protocol.name!r} reads no logs")
    if trace_out:
        try:
            check_file(trace_out, "--trace-out")
        except ConfigError as e:
            fail(str(e))
    try:
        with open(log, encoding="utf-8", errors="strict") as f:
            text = f.read()
    except OSError as e:
        fail(f"{log}: cannot read: {e.strerror or e}")
    except UnicodeDecodeError:
        fail(f"{log}: not text (a binary .log segment? dump it with kafka-dump-log.sh --cluster-metadata-decoder)")
    started = time.monotonic()
    try:
        obs = protocol.observe(text, log, options)
    except ConfigError as e:
        fail(str(e))
    say = (lambda i: None) if quiet or as_json else _progress(len(obs.expected), started)
    replay = bool(trace_out) or len(obs.expected) <= REPLAY_STEPS
    verdict = validate(obs, say, replay_witness=replay, start_states=start_states)
    elapsed = time.monotonic() - started
    outputs = Outputs()
    if trace_out and verdict.witness:
        spec = verdict.witness_spec
        assert spec is not None
        outputs.write(trace_out, "--trace-out", TraceFile.of(spec, verdict.witness, None).text())
    if as_json:
        click.echo(json.dumps(_json(obs, verdict, elapsed)))
    else:
        _print(obs, verdict, elapsed, trace_out)
    return outputs.status(EXIT_HOLDS if verdict.consistent else EXIT_VIOLATED)


SHOWN_UNKNOWN = 8  # variables the text output lists of those the log leaves open


def unknown(obs: Any, states: list[Any]) -> list[tuple[str, list[str]]]:
    """The variables whose value the log leaves open just before the
    deviation (they differ among the states the spec could be in), each
    with its values, as the spec describes them (normal form: epochs relative)."""
    values: dict[str, dict[str, None]] = {}
    for s in states:
        for name, value in obs.spec.describe(s).items():
            values.setdefault(name, {})[json.dumps(value, separators=(",", ":"))] = None
    return [(name, list(seen)) for name, seen in values.items() if len(seen) > 1]


def _progress(total: int, started: float) -> Any:
    def say(done: int) -> None:
        if done:
            rate = done / max(time.monotonic() - started, 1e-9)
            print(f"  {done:,} of {total:,} logged steps ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    return say


def _json(obs: Any, v: Verdict, elapsed: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "verdict": "consistent" if v.consistent else "deviation",
        "about": obs.about(),
        "logged_steps": len(obs.expected),
        "checked": v.records,
        "distinct_states": v.states,
        "widest": v.widest,
        "widest_hidden": v.widest_hidden,
        "hidden_steps": v.hidden_steps,
        "prefix_steps": v.prefix,
        "start_states": v.starts,
        "witness_replayed": bool(v.witness),
        "coverage": v.coverage,
        "elapsed_s": round(elapsed, 3),
    }
    if v.unstarted is not None:
        out["deviation"] = {"at": obs.start_where, "step": None, "first_state": obs.start_text(), "why": v.unstarted}
    if v.deviation is not None:
        e = obs.expected[v.deviation]
        out["deviation"] = {
            "at": e.where,
            "step": v.deviation,
            "records": e.text.splitlines(),
            "states_before": len(v.before),
            "unknown": {name: values for name, values in unknown(obs, v.before)},
            "refused": [
                {
                    "action": r.action,
                    "args": r.args,
                    "enabled_in": r.enabled,
                    "states": r.states,
                    "guards": [{"guard": g, "states": n} for g, n in r.guards],
                }
                for r in v.refused
            ],
            "allowed": [
                {"differences": list(a.differences), "moves": [[m, dict(args)] for m, args in a.path]}
                for a in v.allowed
            ],
        }
    return out


def _print(obs: Any, v: Verdict, elapsed: float, trace_out: str | None) -> None:
    n = len(obs.expected)
    if v.unstarted is not None:
        click.echo(f"validate {obs.about()}: DEVIATION at the partition's first state ({obs.start_where})")
        click.echo(f"  {obs.start_text()}: {v.unstarted} (searched from the spec's initial state)")
        return
    if v.consistent:
        click.echo(f"validate {obs.about()}: consistent ({n:,} logged steps, {elapsed:.1f} s)")
    else:
        assert v.deviation is not None
        e = obs.expected[v.deviation]
        click.echo(f"validate {obs.about()}: DEVIATION at {e.where}, logged step {v.deviation + 1:,} of {n:,}")
        click.echo("  the batch's records for this partition:")
        for line in e.text.splitlines():
            click.echo(f"    {line}")
        click.echo(f"  no behaviour of the spec allows it; it could be in {len(v.before)} state(s) just before")
        for name, values in unknown(obs, v.before)[:SHOWN_UNKNOWN]:
            click.echo(f"    {name}: {' or '.join(values[:4])}{' or ...' if len(values) > 4 else ''}")
        for r in v.refused:
            args = f" {r.args}" if r.args else ""
            if r.enabled:
                click.echo(
                    f"  {r.action}{args}: enabled in {r.enabled} of {r.states} states, but writes otherwise (below)"
                )
            for guard, count in r.guards[:3]:
                click.echo(f"  {r.action}{args}: refused in {count} of {r.states} states by {guard}")
        if v.allowed:
            click.echo("  the closest steps it allows there (fewest differences first):")
            for a in v.allowed:
                moves = " ; ".join(f"{m} {dict(args)}" if args else m for m, args in a.path)
                click.echo(f"    {moves}")
                for d in a.differences:
                    click.echo(f"      {d}")
    click.echo(
        f"  states: {v.states:,} distinct (normal); at most {v.widest} after one record, "
        f"{v.widest_hidden} before one (with hidden steps)"
    )
    if v.coverage:
        click.echo("  witness: " + ", ".join(f"{a} {k:,}" for a, k in v.coverage.items()))
    if v.witness:
        where = f", written to {trace_out}" if trace_out else ""
        click.echo(
            f"  witness replayed through the spec: {len(v.witness) - 1:,} steps, {v.hidden_steps:,} hidden{where}"
        )
    else:
        click.echo(f"  witness not replayed (over {REPLAY_STEPS:,} steps: --trace-out replays and writes it)")
    if v.prefix:
        click.echo(
            f"  note: the log begins after the partition's creation (a snapshot?): its first state was taken "
            f"as the {v.starts} the spec reaches first with that view ({v.prefix} steps) and hidden steps make "
            "of them; one reached only by a longer history is not among them"
        )
    for note in obs.notes():
        click.echo(f"  note: {note}")
