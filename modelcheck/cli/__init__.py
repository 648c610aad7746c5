"""The `modelcheck` command line: one module a family of commands, all on
one click group (app.main); `cli.py` registers the protocol and runs it.
Each command hands a run in modelcheck/runs/ its options and gets its exit
status back."""

from __future__ import annotations

from . import check, ci, logs, traces, walks
from .app import main

__all__ = ["main", "check", "ci", "logs", "traces", "walks"]
