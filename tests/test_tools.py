"""tests/tools.py: a missing tool skips a test on a laptop and fails it
where the run requires it (.ci/run requires all)."""

from __future__ import annotations

import pytest
from tools import need


def test_a_missing_tool_skips_unless_the_run_requires_it(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("MODELCHECK_TEST_REQUIRE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed: the page test"):
        need("chromium", "the page test")
    for required in ("all", "java, chromium"):
        monkeypatch.setenv("MODELCHECK_TEST_REQUIRE", required)
        with pytest.raises(pytest.fail.Exception, match="chromium is missing and MODELCHECK_TEST_REQUIRE requires it"):
            need("chromium", "the page test")
    monkeypatch.setenv("MODELCHECK_TEST_REQUIRE", "java")
    with pytest.raises(pytest.skip.Exception):
        need("chromium", "the page test")


def test_a_present_tool_neither_skips_nor_fails(monkeypatch):
    monkeypatch.setenv("MODELCHECK_TEST_REQUIRE", "all")
    need("pyspark", "installed by the test extra")
