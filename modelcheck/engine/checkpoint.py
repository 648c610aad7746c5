"""Checkpoints: a search's state at a safe point, on disk, so that a run
stopped by a signal, a kill or a memory limit resumes where it was and
ends with exactly the counts, verdict and counterexample of an
uninterrupted run.

A checkpoint directory holds `manifest.json` (which run it is, where the
search stood, and the files that hold its arrays) and raw array files.
Each file is written whole under a temporary name, fsync'd and renamed;
the manifest is replaced the same way only once every file it names is on
disk, and a file the previous manifest named is removed only after the new
one has landed. A kill at any moment therefore leaves the last complete
checkpoint readable. Files that never change once written (a finished
level's parent links) are written once and named by every later manifest,
so a checkpoint costs what changed since the last one, plus the visited
set and the frontier.
"""

from __future__ import annotations

import json
import mmap
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ConfigError
from .spill import raw

FORMAT = 1
MANIFEST = "manifest.json"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_whole(path: Path, chunks: Iterable[np.ndarray | bytes]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        for chunk in chunks:
            f.write(chunk if isinstance(chunk, bytes) else chunk.data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Checkpoints:
    """A directory of checkpoints of one run: `due()` says whether one is
    wanted now (every `every_s` seconds, and always when a run stops), `save`
    writes one, `load` reads the last."""

    def __init__(self, directory: str | Path, every_s: float = 180.0):
        self.dir = Path(directory)
        self.every_s = every_s
        self.last = time.monotonic()
        self.serial = 0
        self.written: set[str] = set()  # files of earlier checkpoints that never change

    # ---- before a run -------------------------------------------------------------
    def prepare(self, resuming: bool) -> None:
        """Make sure the directory can take checkpoints: created if missing;
        to start a run it must hold no checkpoint (one would be lost), to
        resume it must hold one."""
        if self.dir.exists() and not self.dir.is_dir():
            raise ConfigError(f"checkpoint directory {str(self.dir)!r} is a file")
        has = (self.dir / MANIFEST).is_file()
        if resuming and not has:
            raise ConfigError(f"--resume {str(self.dir)!r}: no checkpoint there (no {MANIFEST})")
        if not resuming and has:
            raise ConfigError(
                f"--checkpoint {str(self.dir)!r} already holds a checkpoint: continue it with "
                f"--resume {self.dir}, or remove it to start over"
            )
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            probe = self.dir / ".modelcheck-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise ConfigError(f"checkpoint directory {str(self.dir)!r}: {e.strerror}") from None

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
        self.serial += 1
        files: dict[str, dict[str, Any]] = {}
        for name, array in (fixed or {}).items():
            files[name] = {**self._write(f"{name}.bin", [array], rewrite=False), "fixed": True}
        for name, value in arrays.items():
            files[name] = self._write(f"{name}.{self.serial}.bin", value if isinstance(value, list) else [value])
        _fsync_dir(self.dir)
        manifest = {"format": FORMAT, "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "state": state, "files": files}
        _write_whole(self.dir / MANIFEST, [json.dumps(manifest, indent=1).encode()])
        _fsync_dir(self.dir)
        keep = {f["file"] for f in files.values()} | {MANIFEST}
        for p in self.dir.iterdir():
            if p.name not in keep and p.name.endswith(".bin"):
                p.unlink()
        self.written = {f["file"] for f in files.values() if f.get("fixed")}
        self.last = time.monotonic()

    def _write(self, filename: str, parts: list[np.ndarray], rewrite: bool = True) -> dict[str, Any]:
        first = parts[0] if parts else np.empty(0, np.uint8)
        rows = sum(len(p) for p in parts)
        info = {
            "file": filename,
            "dtype": first.dtype.str if not first.dtype.names else first.dtype.descr,
            "shape": [rows, *first.shape[1:]],
        }
        if rewrite or filename not in self.written:
            _write_whole(self.dir / filename, (raw(p) for p in parts if len(p)))
        return info

    # ---- reading --------------------------------------------------------------------
    def load(self) -> tuple[dict[str, Any], Arrays]:
        """The last checkpoint's state and its arrays."""
        path = self.dir / MANIFEST
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"--resume {str(self.dir)!r}: cannot read {MANIFEST} ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ConfigError(
                f"--resume {str(self.dir)!r}: not a checkpoint of this modelcheck "
                f"(format {manifest.get('format') if isinstance(manifest, dict) else '?'}, "
                f"expected {FORMAT})"
            )
        self.written = {f["file"] for f in manifest["files"].values() if f.get("fixed")}
        return manifest["state"], Arrays(self.dir, manifest["files"])


class Arrays:
    """A checkpoint's arrays by name, mapped from their files (copy on
    write: an engine may use them as its own, the files never change)."""

    def __init__(self, directory: Path, files: dict[str, dict[str, Any]]):
        self.dir, self.files = directory, files

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def __getitem__(self, name: str) -> np.ndarray:
        info = self.files[name]
        dtype = np.dtype(info["dtype"] if isinstance(info["dtype"], str) else [tuple(f) for f in info["dtype"]])
        shape = tuple(info["shape"])
        size = int(np.prod(shape)) * dtype.itemsize
        if size == 0:
            return np.empty(shape, dtype)
        with open(self.dir / info["file"], "rb") as f:
            if os.fstat(f.fileno()).st_size != size:
                raise ConfigError(f"--resume {str(self.dir)!r}: {info['file']} is not the size its manifest gives")
            buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
        return np.frombuffer(buf, dtype).reshape(shape)
