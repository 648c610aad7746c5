"""Shared fixtures: checks that are expensive run once per session."""

from __future__ import annotations

import pytest

from modelcheck.engine import run
from specs.kafka_elr import load


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
