"""`modelcheck validate`: a system's log checked against the spec."""

from __future__ import annotations

from typing import Any

import click

from ..engine.observed import START_STATES
from ..runs.validate import validate_command
from .app import main, protocol
from .flags import json_option, quiet_option, trace_out_option


@main.command()
@click.argument("log", metavar="LOG")
@click.option(
    "--variant",
    default="kafka-4",
    show_default=True,
    help="The variant the log must be a behaviour of: kafka-4 (the controller as shipped) or kip966 "
    "(did the controller do what the KIP says?), or any other variant.",
)
@click.option(
    "--partition",
    metavar="TOPIC:N",
    help="The partition to check (a topic name or id); needed when the log has more than one.",
)
@click.option(
    "--min-isr",
    "min_isr",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="The controller's static min.insync.replicas (server.properties), which the log does not hold; "
    "a topic or cluster ConfigRecord overrides it.",
)
@click.option(
    "--unclean-leader-election/--no-unclean-leader-election",
    "unclean_leader_election",
    default=False,
    show_default=True,
    help="The controller's static unclean.leader.election.enable; ConfigRecords override it.",
)
@trace_out_option(
    "Write the witness behaviour (consistent: the whole log; a deviation: up to it) as a "
    "trace file for `trace show` and `trace html`."
)
@click.option(
    "--start-states",
    type=click.IntRange(1),
    default=START_STATES,
    show_default=True,
    help="A log that begins at a snapshot begins where the spec has gone some way: how many states the "
    "search for its first state may expand before it says none has it.",
)
@json_option()
@quiet_option()
def validate(log: str, trace_out: str | None, as_json: bool, quiet: bool, start_states: int, **options: Any) -> int:
    """Is this KRaft metadata log a behaviour of the protocol?

    LOG is the text `kafka-dump-log.sh --cluster-metadata-decoder --files
    <segment>.log` prints, or JSON Lines of its payloads ({"type",
    "version", "data"} a line; a JSON array a line is one batch). Each
    batch that changes the partition's leader, ISR, ELR, LastKnownElr,
    recovery state, its replicas' fencing or controlled shutdown, min ISR,
    the unclean flag or the ELR's versions, bumps the leader epoch or
    registers a new incarnation of a replica must be one step of the spec,
    after any number of steps the log cannot show (produces, fetches,
    crashes, AlterPartition proposals). docs/validate.md says how records
    map to actions and what the log cannot see.

    \b
    kafka-dump-log.sh --cluster-metadata-decoder --files 00000000000000000000.log > meta.txt
    modelcheck validate meta.txt --partition orders:0
    modelcheck validate meta.txt --partition orders:0 --variant kip966 --trace-out w.json

    Output: consistent, with the states met and the witness's actions; or
    the first batch no behaviour allows, its records, how many states the
    spec could be in just before it and the closest steps it allows there
    (fewest differing fields first). Exit status: 0 consistent, 1 a
    deviation, 2 bad input (not a metadata log, a truncated line, a record
    validate cannot model that touches the partition), 4 --trace-out could
    not be written.
    """
    return validate_command(protocol(), log, options, trace_out, as_json, quiet, start_states)
