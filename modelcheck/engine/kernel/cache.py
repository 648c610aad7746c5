"""Generated modules on disk: each in a file named by a hash of its text
(numba caches machine code beside a real file), under cache_dir()."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pkgutil
import sys
import types
from pathlib import Path

from ...durable import write_text

GENERATOR_VERSION = "3"  # bump when the generated code changes shape
# the real modules the generated ones import compiled code from: numba's cache
# does not notice when a callee in another file changes, so their text is
# part of every generated module's name (read as package data: on a Spark
# executor the package is a zip)
IMPORTED = (("modelcheck.engine.kernel", "rows.py"), ("modelcheck.engine", "kernel_ops.py"))


def imported_text() -> str:
    return "".join((pkgutil.get_data(package, name) or b"").decode() for package, name in IMPORTED)


def module_name(kind: str, source: str) -> str:
    import numba

    text = imported_text()
    digest = hashlib.sha256(f"{GENERATOR_VERSION} {numba.__version__} {text} {source}".encode()).hexdigest()[:20]
    return f"modelcheck_{kind}_{digest}"


def load_module(cache_dir: Path, kind: str, source: str) -> types.ModuleType:
    """Import generated source from a file named by its hash (numba caches
    compiled code beside a real file, and the name changes with the text)."""
    name = module_name(kind, source)
    if name in sys.modules:
        return sys.modules[name]
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{name}.py"
    if not path.is_file() or path.read_text() != source:
        write_text(path, source, sync=False)
    loader = importlib.util.spec_from_file_location(name, path)
    if loader is None or loader.loader is None:
        raise ImportError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module
    loader.loader.exec_module(module)
    return module


def cache_dir() -> Path:
    """Where generated kernels and numba's machine code live: MODELCHECK_CACHE,
    else $XDG_CACHE_HOME/modelcheck, else ~/.cache/modelcheck."""
    if os.environ.get("MODELCHECK_CACHE"):
        return Path(os.environ["MODELCHECK_CACHE"]) / "kernels"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "modelcheck" / "kernels"
