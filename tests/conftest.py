"""Shared fixtures: checks that are expensive run once per session; and,
for the whole suite and for the fast tier (-m "not slow"), the kernels
they use compiled in processes of their own, started before the workers:
else, from an empty cache (a fresh clone, or the first run after a spec
edit), both workers meet the default kernel first and one waits on the
cache's lock while the other compiles it, one core idle. The whole suite
waits for its kernels; the fast tier (the edit loop) runs its tests
meanwhile, a worker that meets a kernel waiting on the lock its compile
holds. With a warm cache this costs about a second. A run of a few files,
or of another tier, compiles what its tests meet."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from specs.kafka_elr import load

# A check whose kernel is not compiled yet races the interpreted engine
# against the compile (modelcheck/engine/__init__.py); tests that ask for
# the fast engine mean the compiled one, except those that test the race.
os.environ.setdefault("MODELCHECK_KERNEL", "compiled")

# A suite started in the background (a shell's `cmd &`, a bench) inherits
# SIGINT ignored, and so would every process it starts; the tests of
# Ctrl-C need it delivered, as at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The kernels the whole suite compiles (a variant's, for a number of
# brokers; a variant's mutants share it, Spec.kernel_family), in two halves
# of about equal compile time: compiled here two at a time, both cores
# busy, before the workers start and meet them.
WARM = [
    [("kip966", 3), ("derived_specs.LeaderlessKip966", 3)],
    [("kafka-4", 3), ("kip966", 4), ("kip966", 2)],
]  # fmt: skip
# The fast tier's kernels, one process each (legacy's and every mutant's
# for 3 brokers are kip966's; it meets no other: bench/tiers.py lists what
# a cold tier compiled, and a fast test of kafka-4, or of another broker
# count, costs a compile of about 2.5 minutes of one core).
FAST_WARM = [[("kip966", 3)], [("kip966", 2)]]
# Each kernel is compiled under the cache's lock, taken before it is
# announced (a line on stdout): a worker started after the announcement
# that meets the kernel waits for it, never compiles it too.
COMPILE = """
import importlib, json, sys
sys.path.insert(0, "tests")
from modelcheck.engine.kernel import Kernel, cache_dir
from specs.kafka_elr import load
for name, brokers in json.loads(sys.argv[1]):
    config = {"brokers": brokers, "min_isr": min(2, brokers), "max_admin_elections": 1, "max_clean_shutdowns": 1,
              "max_min_isr_changes": 1}
    if "." in name:
        module, cls = name.rsplit(".", 1)
        spec = getattr(importlib.import_module(module), cls)(load(config).config)
    else:
        spec = load({**config, "variant": name})
    kernel = Kernel(spec, cache_dir())
    with kernel.compiling():
        print(name, brokers, flush=True)
        kernel.warm(spec.init_states())
"""
COMPILING = pytest.StashKey[list[subprocess.Popen]]()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.getoption("numprocesses", default=None) in (None, 0, "0"):
        return  # a worker, or no workers: kernels compile as tests meet them
    root = Path(__file__).resolve().parent.parent
    if any(Path(a.split("::")[0]).resolve() != root / "tests" for a in config.args):
        return  # some files: they compile what their tests meet
    markexpr = (config.option.markexpr or "").strip()
    if markexpr == "not slow":
        groups = FAST_WARM
    elif "slow" in markexpr:
        return  # another tier: it compiles what its tests meet
    else:
        groups = WARM
    procs = [
        subprocess.Popen([sys.executable, "-c", COMPILE, json.dumps(g)], cwd=root, stdout=subprocess.PIPE, text=True)
        for g in groups
    ]
    for p in procs:
        assert p.stdout is not None
        p.stdout.readline()  # its first kernel's lock is held
    if groups is FAST_WARM:
        config.stash[COMPILING] = procs
        return
    for p in procs:
        p.communicate()


def pytest_unconfigure(config: pytest.Config) -> None:
    """A fast tier's compiles have ended with its tests, unless it was
    stopped early: then they are not waited for."""
    for p in config.stash.get(COMPILING, []):
        if p.poll() is None:
            p.terminate()
        p.communicate()


@pytest.fixture(scope="session")
def default_kip966():
    """The embedded default configuration, exhaustively (the README's main
    job, with its default engine; tests/test_engines.py shows the engines agree)."""
    spec = load({})
    return spec, run(spec, CheckOptions.of(engine="fast", workers=2))


@pytest.fixture(scope="session")
def default_legacy():
    spec = load({"variant": "legacy"})
    return spec, run(spec, CheckOptions.of(engine="fast", workers=2))


@pytest.fixture
def cell_pools(monkeypatch) -> list[int]:
    """The size of every pool of processes matrix and gate start for their cells."""
    from modelcheck.runs import matrix

    sizes: list[int] = []
    real = matrix.worker_pool

    def pool(jobs: int):
        sizes.append(jobs)
        return real(jobs)

    monkeypatch.setattr(matrix, "worker_pool", pool)
    return sizes
