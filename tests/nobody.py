"""A command run in-process as an ordinary user, for tests of permissions
(tests/test_inputs.py, tests/test_checkpoint_safety.py): root passes every
permission check, so as root the command runs in a forked child that drops
root's privileges (its modules imported beforehand: that user may not be
able to read the interpreter's files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from cli import main

NOBODY = 65534


def as_nobody(*args: str | Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the command run by an ordinary user."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            r = CliRunner().invoke(main, [str(a) for a in args])
            os.write(write, json.dumps([r.exit_code, r.stdout, r.stderr]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return tuple(json.loads(data))
