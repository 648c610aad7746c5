"""The outside tools some tests need (Java for TLC, Chromium, pyspark).

Where one is missing a test skips with the reason, so the suite runs on a
laptop without them; where MODELCHECK_TEST_REQUIRE names it (or says
"all", as .ci/run does) the test fails instead: a CI that lacks a tool
must go red, not pass while checking less.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from modelcheck.tlc import find_java

TOOLS = ("java", "chromium", "pyspark")


def required() -> set[str]:
    given = {t.strip() for t in os.environ.get("MODELCHECK_TEST_REQUIRE", "").split(",") if t.strip()}
    return set(TOOLS) if "all" in given else given


def present(tool: str) -> bool:
    if tool == "java":
        return find_java() is not None
    if tool == "chromium":
        return shutil.which("chromium") is not None
    return importlib.util.find_spec(tool) is not None


def need(tool: str, why: str) -> None:
    """Skip the calling test (or module, at import) when `tool` is missing;
    fail it when the run requires the tool."""
    assert tool in TOOLS, tool
    if present(tool):
        return
    if tool in required():
        pytest.fail(f"{tool} is missing and MODELCHECK_TEST_REQUIRE requires it: {why}", pytrace=False)
    pytest.skip(f"{tool} is not installed: {why}", allow_module_level=True)
