"""Shared fixtures: checks that are expensive run once per session."""

from __future__ import annotations

import pytest

from modelcheck.engine.bfs import check
from specs.kafka_elr import load


@pytest.fixture(scope="session")
def default_kip966():
    """The embedded default configuration, exhaustively (the README's main job)."""
    spec = load({})
    return spec, check(spec)


@pytest.fixture(scope="session")
def default_legacy():
    spec = load({"variant": "legacy"})
    return spec, check(spec)
