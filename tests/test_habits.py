"""House rules that code review misses: every dependency held below a
release that may change what we use."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_dependency_is_bounded_above():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    requirements = [*project["dependencies"], *(r for extra in extras for r in extra)]
    unbounded = [r for r in requirements if not re.search(r"<|==", r)]
    assert unbounded == []
