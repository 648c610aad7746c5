"""Checkpoints: a search's state at a safe point, on disk, so that a run
stopped by a signal, a kill or a memory limit resumes where it was and
ends with exactly the counts, verdict and counterexample of an
uninterrupted run.

A checkpoint directory holds `manifest.json` (which run it is, where the
search stood, and the files that hold its arrays, each with its size and
sha256) and raw array files. Each file is written whole under a temporary
name, fsync'd and renamed (durable.replacing; the temporary removed if the write fails); the
manifest is replaced the same way only once every file it names is on
disk, and a file the previous manifest named is removed only after the new
one has landed. A kill at any moment therefore leaves the last complete
checkpoint readable. Files that never change once written (a finished
level's parent links) are written once and named by every later manifest,
so a checkpoint costs what changed since the last one, plus the visited
set and the frontier.

The directory is modelcheck's alone, and only what its manifests name is
ever removed: a run claims a new or empty directory by writing a manifest
that holds no checkpoint yet, and before it writes a file it lists the
file's name in the manifest (`pending`), so that a file a kill left
half-way is known to be its own. A lock (flock on `.modelcheck.lock`)
keeps a second run out while one writes there. A resume reads nothing
before the manifest has passed its schema (manifest.py) and its own
checksum, and every file its size and checksum: a damaged checkpoint is
refused in one line, never resumed to a wrong answer.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import mmap
import os
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ...config import ConfigError
from ...durable import replacing
from .manifest import MANIFEST, Invalid, validate_manifest
from .spill import raw

FORMAT = 2  # 2: checksums, the manifest's own, pending names
LOCK = ".modelcheck.lock"
OURS = {MANIFEST, LOCK, f".{MANIFEST}.tmp"}  # what a checkpoint directory holds besides what its manifest names
MANIFEST_MAX = 64 << 20  # bytes: a manifest is a few KB; more is not ours


def _write_whole(path: Path, chunks: Iterable[np.ndarray | bytes]) -> str:
    """Write `path` whole (durable.replacing, synced); its sha256."""
    digest = hashlib.sha256()
    with replacing(path, tmp=path.with_name(f".{path.name}.tmp"), mode=0o644) as f:
        for chunk in chunks:
            data = chunk if isinstance(chunk, bytes) else chunk.data
            digest.update(data)
            f.write(data)
    return digest.hexdigest()


def _sealed(manifest: dict[str, Any]) -> str:
    """The manifest's own checksum: of everything in it but the checksum."""
    rest = {k: v for k, v in manifest.items() if k != "digest"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()).hexdigest()


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a checkpoint holds")


def _open_regular(path: Path) -> int:
    """An fd of `path` for reading, which must be a regular file in the
    directory itself (not a symbolic link, a FIFO or a device)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise ConfigError(f"{path.name} is a symbolic link, not a file of the checkpoint") from None
        if isinstance(e, FileNotFoundError):
            raise ConfigError(f"{path.name} is missing (the manifest names it)") from None
        raise ConfigError(f"{path.name}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{path.name} is not a regular file")
    return fd


class Checkpoints:
    """A directory of checkpoints of one run: `prepare` claims or opens it,
    `due()` says whether one is wanted now (every `every_s` seconds, and
    always when a run stops), `save` writes one, `load` gives the one a
    resume starts from, `release` lets another run in."""

    def __init__(self, directory: str | Path, every_s: float = 180.0):
        self.dir = Path(directory)
        self.every_s = every_s
        self.last = time.monotonic()
        self.serial = 0
        self.manifest: dict[str, Any] = {}  # the last one on disk
        self.pending: set[str] = set()  # names of ours that no checkpoint holds: removed at the next save
        self.lock: BinaryIO | None = None  # a file object: closed (unlocked) with this object, at the latest
        self.loaded: tuple[dict[str, Any], Arrays] | None = None

    # ---- before a run -------------------------------------------------------------
    def prepare(self, resuming: bool) -> None:
        """Claim the directory for a new run (created if missing; it must be
        empty or hold no checkpoint yet: one would be lost), or open the
        checkpoint a resume continues, verified whole. Either way lock it."""
        where = f"{'--resume' if resuming else '--checkpoint'} {str(self.dir)!r}"
        try:
            if resuming:
                self._open(where)
            else:
                self._claim_directory(where)
        except OSError as e:
            self.release()
            raise ConfigError(f"{where}: {e.strerror}") from None
        except ConfigError:
            self.release()
            raise

    def _claim_directory(self, where: str) -> None:
        self._inspect(where)  # before the lock file is made: nothing is written into a directory refused
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock(where)
        manifest = self._inspect(where)  # again, now that no other run can write there
        self._publish(None, {}, set(manifest["pending"]) if manifest else set())

    def _inspect(self, where: str) -> dict[str, Any] | None:
        """The manifest of a directory a new run may take (no checkpoint in
        it yet), None if there is none; refuses any other directory."""
        if not os.path.lexists(self.dir):
            return None
        if not self.dir.is_dir():
            raise ConfigError(f"{where} is not a directory")
        names = sorted(os.listdir(self.dir))
        if MANIFEST not in names:
            foreign = [n for n in names if n not in OURS]
            if foreign:
                raise ConfigError(
                    f"{where} is not empty and holds no checkpoint ({foreign[0]!r}"
                    f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}): a checkpoint directory "
                    "is modelcheck's alone (it removes the files its checkpoints replace); give a new or empty one"
                )
            return None
        manifest = self._read(where)
        if manifest["state"] is not None:
            raise ConfigError(
                f"{where} already holds a checkpoint: continue it with --resume {self.dir}, or remove it to start over"
            )
        return manifest

    def _open(self, where: str) -> None:
        if not (self.dir / MANIFEST).is_file():
            raise ConfigError(f"{where}: no checkpoint there (no {MANIFEST})")
        self._lock(where)
        manifest = self._read(where)
        if manifest["state"] is None:
            raise ConfigError(f"{where}: no checkpoint there yet (the run that made it wrote none before it ended)")
        for info in manifest["files"].values():
            try:
                _verify(self.dir, info)
            except ConfigError as e:
                raise ConfigError(f"{where}: {e}") from None
        self.manifest, self.serial, self.pending = manifest, manifest["serial"], set(manifest["pending"])
        self.loaded = manifest["state"], Arrays(self.dir, manifest["files"], where)

    def _lock(self, where: str) -> None:
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"{where} is in use: another modelcheck run is writing checkpoints there "
                f"(it holds the lock on {LOCK}); wait for it to end, or give another directory"
            ) from None
        self.lock = open(fd, "rb")

    def _read(self, where: str) -> dict[str, Any]:
        """The manifest, checked against its schema and its own checksum."""
        try:
            fd = _open_regular(self.dir / MANIFEST)
        except ConfigError as e:
            raise ConfigError(f"{where}: cannot read {MANIFEST} ({e})") from None
        try:
            with open(fd, "rb") as f:
                text = f.read(MANIFEST_MAX + 1)
            if len(text) > MANIFEST_MAX:
                raise ValueError(f"larger than {MANIFEST_MAX >> 20} MiB")
            manifest = json.loads(text.decode("utf-8"), parse_constant=_no_constant)
        except (OSError, ValueError, RecursionError) as e:
            raise ConfigError(f"{where}: cannot read {MANIFEST} ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            found = manifest.get("format") if isinstance(manifest, dict) else None
            raise ConfigError(
                f"{where}: not a checkpoint of this modelcheck (format {json.dumps(found)[:20]}, expected {FORMAT})"
            )
        try:
            validate_manifest(manifest)
        except Invalid as e:
            raise ConfigError(f"{where}: {MANIFEST} is damaged: {e}") from None
        if _sealed(manifest) != manifest["digest"]:
            raise ConfigError(f"{where}: {MANIFEST} does not match its checksum (it was damaged or edited)")
        return manifest

    def release(self) -> None:
        """Unlock the directory (the run is over)."""
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every_s

    # ---- writing --------------------------------------------------------------------
    def save(
        self,
        state: dict[str, Any],
        arrays: Mapping[str, list[np.ndarray] | np.ndarray],
        fixed: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Write a checkpoint: `state` (JSON), `arrays` (each one array, or
        a list of arrays of one dtype and row width written one after the
        other) rewritten each time, and `fixed` arrays written only the
        first time their name is seen (they never change)."""
        serial = self.serial + 1
        kept = {f["file"]: f for f in self.manifest["files"].values() if f.get("fixed")}
        jobs = [(name, f"{name}.bin", [array], True) for name, array in (fixed or {}).items()]
        jobs += [(n, f"{n}.{serial}.bin", v if isinstance(v, list) else [v], False) for n, v in arrays.items()]
        self._intend([filename for _n, filename, _p, once in jobs if not (once and filename in kept)])
        files: dict[str, dict[str, Any]] = {}
        for name, filename, parts, once in jobs:
            files[name] = kept[filename] if once and filename in kept else self._write(filename, parts, once)
        stale = self._owned() - {f["file"] for f in files.values()}
        self.serial = serial
        self._publish(state, files, stale)
        for name in sorted(stale):
            (self.dir / name).unlink(missing_ok=True)
            (self.dir / f".{name}.tmp").unlink(missing_ok=True)
        self.last = time.monotonic()

    def _owned(self) -> set[str]:
        return {f["file"] for f in self.manifest["files"].values()} | self.pending

    def _intend(self, names: list[str]) -> None:
        """Name the files about to be written in the manifest (as pending), so
        that one a kill leaves is known to be ours; never write over a file
        that is not."""
        owned = self._owned()
        for name in names:
            for entry in (name, f".{name}.tmp"):
                if name not in owned and os.path.lexists(self.dir / entry):
                    raise ConfigError(
                        f"checkpoint directory {str(self.dir)!r}: {entry} appeared there during the run and is "
                        "not modelcheck's; it is left as it is, and the check stops without this checkpoint"
                    )
        present = {p for p in self.pending if os.path.lexists(self.dir / p) or os.path.lexists(self.dir / f".{p}.tmp")}
        self._publish(self.manifest["state"], self.manifest["files"], present | set(names))

    def _publish(self, state: dict[str, Any] | None, files: dict[str, dict[str, Any]], pending: set[str]) -> None:
        manifest = {
            "format": FORMAT,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "serial": self.serial,
            "state": state,
            "files": files,
            "pending": sorted(pending),
        }
        manifest["digest"] = _sealed(manifest)
        text = json.dumps(manifest, indent=1, allow_nan=False)
        _write_whole(self.dir / MANIFEST, [text.encode()])  # synced, with the directory (durable.py)
        # as written, not the engine's live objects (its coverage changes as the search goes on)
        self.manifest, self.pending = json.loads(text), pending

    def _write(self, filename: str, parts: list[np.ndarray], fixed: bool) -> dict[str, Any]:
        first = parts[0] if parts else np.empty(0, np.uint8)
        digest = _write_whole(self.dir / filename, (raw(p) for p in parts if len(p)))
        return {
            "file": filename,
            "dtype": first.dtype.str if not first.dtype.names else first.dtype.descr,
            "shape": [sum(len(p) for p in parts), *first.shape[1:]],
            "digest": digest,
            **({"fixed": True} if fixed else {}),
        }

    # ---- reading --------------------------------------------------------------------
    def load(self) -> tuple[dict[str, Any], Arrays]:
        """The state and arrays of the checkpoint `prepare(resuming=True)` verified."""
        assert self.loaded is not None, "a checkpoint is loaded by prepare(resuming=True)"
        return self.loaded


def _dtype(info: dict[str, Any]) -> np.dtype:
    """A file's dtype as its manifest gives it (plain numbers: manifest.DTYPE)."""
    spec = info["dtype"]
    try:
        return np.dtype(spec if isinstance(spec, str) else [tuple(f) for f in spec])
    except (TypeError, ValueError):  # a field named twice
        raise ConfigError(
            f"{info['file']}: its manifest gives a dtype numpy refuses ({json.dumps(spec)[:40]})"
        ) from None


def _verify(directory: Path, info: dict[str, Any]) -> None:
    """A file the manifest names: a regular file in the directory, of the
    size and sha256 the manifest gives."""
    size = math.prod(info["shape"]) * _dtype(info).itemsize
    fd = _open_regular(directory / info["file"])
    with open(fd, "rb") as f:
        if os.fstat(fd).st_size != size:
            raise ConfigError(f"{info['file']} is not the size its manifest gives")
        if hashlib.file_digest(f, "sha256").hexdigest() != info["digest"]:
            raise ConfigError(f"{info['file']} does not match its checksum (it was damaged)")


class Arrays:
    """A checkpoint's arrays by name, mapped from their files (copy on
    write: an engine may use them as its own, the files never change)."""

    def __init__(self, directory: Path, files: dict[str, dict[str, Any]], where: str):
        self.dir, self.files, self.where = directory, files, where

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def info(self, name: str) -> dict[str, Any]:
        """What the manifest says of array `name`'s file."""
        if name not in self.files:
            raise ConfigError(f"{self.where}: {MANIFEST} names no file for {name!r}")
        return self.files[name]

    def __getitem__(self, name: str) -> np.ndarray:
        info = self.info(name)
        dtype, shape = _dtype(info), tuple(info["shape"])
        size = math.prod(shape) * dtype.itemsize
        if size == 0:
            return np.empty(shape, dtype)
        fd = _open_regular(self.dir / info["file"])
        with open(fd, "rb") as f:
            buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
        return np.frombuffer(buf, dtype).reshape(shape)
