"""durable.replacing: the one way a file is replaced (modelcheck/durable.py)."""

import errno
import os

import pytest

from modelcheck import durable


def test_the_content_is_replaced_whole_and_synced(tmp_path, monkeypatch):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    synced: list[str] = []
    fsync = os.fsync

    def noted(fd: int) -> None:
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        fsync(fd)

    monkeypatch.setattr(durable.os, "fsync", noted)
    with durable.replacing(path) as f:
        f.write(b"new ")
        assert path.read_bytes() == b"old"  # a reader sees the old file until the block ends
        f.write(b"content")
    assert path.read_bytes() == b"new content"
    assert synced == ["file", "dir"]  # the file before the rename, the directory after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_scratch_is_renamed_but_not_synced(tmp_path, monkeypatch):
    monkeypatch.setattr(durable.os, "fsync", lambda fd: pytest.fail("synced"))
    durable.write_text(tmp_path / "cache.py", "x = 1\n", sync=False)
    assert (tmp_path / "cache.py").read_text() == "x = 1\n"


@pytest.mark.parametrize("failing", ["write", "fsync", "rename"])
def test_a_failure_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, failing):
    path = tmp_path / "out.txt"
    path.write_text("old")

    def full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing != "write":
        monkeypatch.setattr(durable.os, "fsync" if failing == "fsync" else "replace", full)
    with pytest.raises(OSError, match="No space left"), durable.replacing(path, text=True) as f:
        f.write("new")
        if failing == "write":
            full()
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_named_temporary_and_a_new_files_mode(tmp_path):
    path = tmp_path / "manifest.json"
    old = os.umask(0o022)
    try:
        with durable.replacing(path, tmp=tmp_path / ".manifest.json.tmp", mode=0o644) as f:
            f.write(b"{}")
            assert (tmp_path / ".manifest.json.tmp").exists()
    finally:
        os.umask(old)
    assert path.read_bytes() == b"{}" and path.stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / ".manifest.json.tmp").exists()


def test_a_directory_that_cannot_be_synced_is_no_failure(tmp_path, monkeypatch):
    def refused(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(durable.os, "fsync", refused)
    durable.write_bytes(tmp_path / "f", b"x")
    assert (tmp_path / "f").read_bytes() == b"x"
