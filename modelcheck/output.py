"""Writing what a command produces, respecting what is already there.

A regular file is replaced atomically (a reader, or a crash, sees the old
file or the new one, never half of one) and keeps its mode; a symlink is
followed, so the file it names is replaced and the link stays; a device, a
FIFO or `-` (stdout) is written to directly, never replaced. Paths are
checked before a command does any work (a check can run for hours), and a
failure is a ConfigError naming the option and the path: one line, exit 2.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

from .config import ConfigError
from .durable import replacing

TERMINATING = (signal.SIGTERM, signal.SIGHUP)  # signals whose default ends the process without a `finally`


def _stat(path: str, option: str, shown: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"{option} {shown}: {e.strerror}") from None


def _writable_dir(directory: str, option: str, shown: str) -> None:
    st = _stat(directory, option, shown)
    if st is None:
        raise ConfigError(f"{option} {shown}: no such directory {directory!r}")
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{option} {shown}: {directory!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {shown}: cannot write in directory {directory!r}")


def check_file(path: str, option: str, stdout: bool = False) -> None:
    """Refuse, before any work, a file output that cannot be written: a
    missing or unwritable directory, a directory, a file without write
    permission for its owner (read-only on purpose: refused even as root,
    whom the permission bits do not stop); `-` unless the command writes
    to `stdout`."""
    if path == "-":
        if stdout:
            return
        raise ConfigError(f"{option} -: this output cannot go to stdout; name a file (./- for one called -)")
    target = os.path.realpath(path)
    st = _stat(target, option, path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{option} {path}: is a directory")
    if st is None or stat.S_ISREG(st.st_mode):  # replaced: a temporary file goes beside it
        _writable_dir(os.path.dirname(target), option, path)
        _replaceable(os.path.dirname(target), st, option, path)
    if st is None:
        return
    if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise ConfigError(f"{option} {path}: is read-only")


def _replaceable(directory: str, st: os.stat_result | None, option: str, shown: str) -> None:
    """What the permission bits do not tell: a file system that takes no
    new file (/proc, /sys: tried, with a temporary file removed at once),
    and another user's file in a sticky directory such as /tmp, which only
    its owner, the directory's or root may replace."""
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".modelcheck-", suffix=".tmp")
    except OSError as e:
        raise ConfigError(f"{option} {shown}: cannot write in directory {directory!r} ({e.strerror})") from None
    os.close(fd)
    os.unlink(probe)
    if st is None or os.geteuid() in (0, st.st_uid):
        return
    parent = os.stat(directory)
    if parent.st_mode & stat.S_ISVTX and parent.st_uid != os.geteuid():
        raise ConfigError(
            f"{option} {shown}: another user's file in a sticky directory "
            f"({directory!r}): only its owner may replace it"
        )


def check_dir(path: str, option: str) -> None:
    """Refuse, before any work, an output directory that is not one or
    cannot be created or written in."""
    target = os.path.realpath(path)
    existing = target
    while (st := _stat(existing, option, path)) is None:  # the nearest ancestor that exists
        existing = os.path.dirname(existing)
    if existing == target and not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{option} {path}: is not a directory")
    _writable_dir(existing, option, path)
    _replaceable(existing, None, option, path)


def make_dir(path: str, option: str) -> None:
    """Create an output directory (what a symlink to none names, too)."""
    try:
        os.makedirs(os.path.realpath(path), exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{option} {path}: cannot create: {e.strerror}") from None


@contextmanager
def writing(path: str, option: str, binary: bool = False) -> Iterator[IO]:
    """A file object for `path` ("-": stdout); see the module docstring.
    An OSError while writing becomes a ConfigError and leaves an existing
    file as it was."""
    mode, encoding = ("wb", None) if binary else ("w", "utf-8")
    try:
        if path == "-":
            out = sys.stdout.buffer if binary else sys.stdout
            yield out
            out.flush()
            return
        target = os.path.realpath(path)  # a symlink, even a dangling one: what it names
        st = _stat(target, option, path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, mode, encoding=encoding) as f:  # a device or a FIFO
                yield f
            return
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".modelcheck-", suffix=".tmp")
        os.close(fd)
        try:
            with _removed_if_terminated(tmp), replacing(target, text=not binary, tmp=tmp) as f:
                _take_mode(f.fileno(), st)
                yield f
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
    except OSError as e:
        raise ConfigError(f"{option} {path}: cannot write: {e.strerror or e}") from None


@contextmanager
def _removed_if_terminated(tmp: str) -> Iterator[None]:
    """Within the block, a SIGTERM or SIGHUP that ends the process (their
    default) removes `tmp` first; the process then ends by the signal as
    before. (A handler that raises, and Ctrl-C's KeyboardInterrupt, reach
    the caller's `finally`, which removes it.) Only the main thread can
    set handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum: int, _frame: object) -> None:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    previous = {sig: signal.signal(sig, end) for sig in TERMINATING if signal.getsignal(sig) == signal.SIG_DFL}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _take_mode(fd: int, st: os.stat_result | None) -> None:
    """The replaced file's mode and owner; a new file gets what open()
    would give (mkstemp's is 0600)."""
    if st is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    with suppress(PermissionError):  # only root may keep another's ownership
        os.fchown(fd, st.st_uid, st.st_gid)


def write_text(path: str, option: str, text: str) -> None:
    with writing(path, option) as f:
        f.write(text)


def append_text(path: str, option: str, text: str) -> None:
    """Add `text` at the end of `path` (made if missing): a report that
    several steps write in turn, such as GitHub Actions' step summary.
    One write of the whole text; an OSError becomes a ConfigError."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ConfigError(f"{option} {path}: cannot write: {e.strerror or e}") from None
