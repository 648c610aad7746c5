"""Shared fixtures: checks that are expensive run once per session.

Kernels compile as tests meet them; a worker that needs one another
worker is compiling waits for it on the cache's lock and loads it (no
up-front compile of every kernel: the fast tier needs few of them)."""

from __future__ import annotations

import os

import pytest

from modelcheck.engine import run
from specs.kafka_elr import load

# A check whose kernel is not compiled yet races the interpreted engine
# against the compile (modelcheck/engine/__init__.py); tests that ask for
# the fast engine mean the compiled one, except those that test the race.
os.environ.setdefault("MODELCHECK_KERNEL", "compiled")


@pytest.fixture(scope="session")
def default_kip966():
    """The embedded default configuration, exhaustively (the README's main
    job, with its default engine; tests/test_engines.py shows the engines agree)."""
    spec = load({})
    return spec, run(spec, engine="fast", workers=2)


@pytest.fixture(scope="session")
def default_legacy():
    spec = load({"variant": "legacy"})
    return spec, run(spec, engine="fast", workers=2)
