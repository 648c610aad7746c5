"""Exploration strategies; each returns a modelcheck.result.CheckResult."""
