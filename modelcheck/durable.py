"""Files replaced whole or not at all: the one way modelcheck writes a file
that a reader, a later run or a resume may open.

The policy: the bytes go to a temporary file beside the target, which is
renamed over it (a reader sees the old file or the new one, never a part).
Where durability matters (`sync=True`: checkpoints, the user's output
files) the temporary is fsynced before the rename and the directory after
it, so that a power cut leaves the old file or the whole new one. Scratch
whose loss costs only a recompute (the kernel cache, a Spark task's
output in a directory the run removes) passes `sync=False`: renamed, not
synced. If anything fails before the rename (a full disk, Ctrl-C), the
temporary is removed and the target is left as it was.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

# a directory that cannot be opened or synced (permissions, a file system
# without directory fsync): the file is already in place, so no failure
_NO_DIR_SYNC = {errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EISDIR}


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make the renames in `directory` durable (see the module docstring)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in _NO_DIR_SYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


@contextmanager
def replacing(
    path: str | os.PathLike[str],
    *,
    sync: bool = True,
    text: bool = False,
    tmp: str | os.PathLike[str] | None = None,
    mode: int = 0o666,
) -> Iterator[IO[Any]]:
    """A file (opened for reading and writing) that replaces `path` when the
    block ends without an exception. `tmp` names the temporary (default
    `<path>.<pid>.tmp`: two processes writing one path write apart); a new
    temporary gets `mode` less the umask, one that exists keeps its own."""
    target = os.fspath(path)
    part = os.fspath(tmp) if tmp is not None else f"{target}.{os.getpid()}.tmp"
    fd = os.open(part, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with open(fd, "w+" if text else "w+b", encoding="utf-8" if text else None) as f:
            yield f
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(part, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(part)
        raise
    if sync:
        fsync_dir(os.path.dirname(target) or ".")


def write_bytes(path: str | os.PathLike[str], data: bytes, *, sync: bool = True) -> None:
    with replacing(path, sync=sync) as f:
        f.write(data)


def write_text(path: str | os.PathLike[str], data: str, *, sync: bool = True) -> None:
    with replacing(path, sync=sync, text=True) as f:
        f.write(data)
