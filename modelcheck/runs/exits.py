"""What every command's exit status means, and the one-line failures
that end a command without a verdict: 0 holds, 1 violated, 2 bad input
(or a resource the machine ran out of), 3 an internal error, 4 the result
was printed but an output file written after the run was not (a full
disk): a run of hours keeps its answer when its trace file cannot."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn

import click

from ..config import ConfigError
from ..formats import tracefile
from ..output import append_text, make_dir, write_text

EXIT_HOLDS, EXIT_VIOLATED, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT_FAILED = 0, 1, 2, 3, 4


class BadInput(Exception):
    """A run ends without a verdict on bad input: the command line says
    its one line on stderr and exits EXIT_BAD_INPUT, nothing else written."""


def fail(message: str) -> NoReturn:
    """Bad input: end the run (BadInput)."""
    raise BadInput(message)


def write_output(path: str, option: str, text: str) -> None:
    """write_text (modelcheck/output.py); a failure is one line, exit 2."""
    try:
        write_text(path, option, text)
    except ConfigError as e:
        fail(str(e))


class Outputs:
    """The files a command writes once its run is over. A write that fails
    is remembered, not raised: the command prints its result, then
    `status` says each failure in one line and gives EXIT_OUTPUT_FAILED."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def write(self, path: str, option: str, text: str) -> bool:
        """write_text (modelcheck/output.py); whether it was written."""
        return self._attempt(write_text, path, option, text)

    def append(self, path: str, option: str, text: str) -> bool:
        """append_text (modelcheck/output.py); whether it was written."""
        return self._attempt(append_text, path, option, text)

    def make_dir(self, path: str, option: str) -> bool:
        return self._attempt(make_dir, path, option)

    def _attempt(self, write: Callable[..., None], *args: str) -> bool:
        try:
            write(*args)
        except ConfigError as e:
            self.failures.append(str(e))
            return False
        return True

    def clear_trace(self, path: str, option: str) -> None:
        """A run with no counterexample: remove the one an earlier run left
        at `path`, so that a file there never tells of a violation this run
        did not find. Only a regular file that reads as a trace this tool
        writes is removed (and said); anything else there is left as it
        was. A removal that fails is a failed output."""
        target = os.path.realpath(path)
        if not os.path.isfile(target):
            return
        try:
            tracefile.read(target)
            os.unlink(target)
        except (ConfigError, FileNotFoundError):  # not a trace of ours, or already gone
            return
        except OSError as e:
            self.failures.append(
                f"{option} {path}: cannot remove the counterexample an earlier run left there: {e.strerror or e}"
            )
            return
        click.echo(
            f"{option} {path}: removed the counterexample an earlier run left there (this run found none)", err=True
        )

    def status(self, status: int) -> int:
        """`status`, or, after a line for each failed write, EXIT_OUTPUT_FAILED."""
        for message in self.failures:
            click.echo(f"error: {message}", err=True)
        return EXIT_OUTPUT_FAILED if self.failures else status
