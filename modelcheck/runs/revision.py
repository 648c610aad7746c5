"""A package as it was at another git revision, imported beside the one in
use: what the gate's `--against REF` compares a spec with.

The package's directory is extracted from the commit (`git archive`) into
a temporary directory and imported under a name of its own, so neither
the working tree nor the package already imported is touched. Its own
imports must be relative (or of modules outside it), as specs/' are."""

from __future__ import annotations

import atexit
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

from ..config import ConfigError


def git(repo: str, *args: str) -> bytes:
    """git's output; ConfigError with its message if it fails (or is missing)."""
    try:
        done = subprocess.run(["git", "-C", repo, *args], capture_output=True, check=False)
    except OSError as e:
        raise ConfigError(f"--against: git cannot run here ({e.strerror})") from None
    if done.returncode:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise ConfigError(f"--against: git {args[0]} in {repo}: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout


def package_at(repo: str, ref: str, package: str) -> ModuleType:
    """`package` (a directory at the top of `repo`) at revision `ref`, imported
    as `_modelcheck_<package>_at_<commit>`."""
    try:
        commit = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except ConfigError:
        raise ConfigError(f"--against {ref}: not a commit of the git repository {repo}") from None
    name = f"_modelcheck_{package}_at_{commit}"
    if name in sys.modules:
        return sys.modules[name]
    archive = git(repo, "archive", "--format=tar", commit, "--", package)
    where = Path(tempfile.mkdtemp(prefix="modelcheck-against-"))
    atexit.register(shutil.rmtree, where, True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    init = where / package / "__init__.py"
    if not init.is_file():
        raise ConfigError(f"--against {ref}: {package}/ at {commit[:12]} is not a Python package")
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None, "a file location always gives a loader"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
