"""A counterexample as a path (initial state and successor positions): its
encodings round-trip, `walk` and `path_of` invert each other on real
traces, and a trace file is read back along its path, refused when the
path and the states it shows disagree."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelcheck.config import ConfigError
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.formats.tracefile import TraceFile
from modelcheck.path import Path, PathError, path_of, walk
from modelcheck.views.tracefile import open_trace
from specs.kafka_elr import load

paths = st.builds(Path, st.integers(0, 10**9 - 1), st.lists(st.integers(0, 10**9 - 1), max_size=30).map(tuple))


@given(paths)
def test_a_path_round_trips_through_json_and_text(path):
    assert Path.from_json(json.loads(json.dumps(path.to_json())), "f") == path
    assert Path.decode(path.encode()) == path


@pytest.mark.parametrize(
    "data", [None, [], {"init": 0}, {"init": -1, "steps": []}, {"init": 0, "steps": [1.0]}, {"init": True, "steps": []}]
)
def test_a_malformed_path_is_refused_in_one_line(data):
    with pytest.raises(ConfigError, match="f: path is .*; allowed"):
        Path.from_json(data, "f")


@pytest.fixture(scope="module")
def violation():
    spec = load({"variant": "legacy", "max_records": 1})
    result = run(spec, CheckOptions.of(engine="bfs"))
    assert not result.holds
    return spec, result


def test_walk_and_path_of_invert_each_other_on_a_counterexample(violation):
    spec, result = violation
    path = path_of(spec, result.trace)
    assert len(path.steps) == len(result.trace) - 1
    assert walk(spec, path) == result.trace


def test_a_path_past_what_the_spec_offers_is_refused(violation):
    spec, result = violation
    path = path_of(spec, result.trace)
    with pytest.raises(PathError, match="step 1: successor 999 of the"):
        walk(spec, Path(path.init, (999, *path.steps[1:])))


def test_a_trace_file_is_read_back_along_its_path(tmp_path, violation):
    spec, result = violation
    file = tmp_path / "t.json"
    file.write_text(TraceFile.of(spec, result.trace, result.invariant).text())
    doc = json.loads(file.read_text())
    assert doc["path"] == path_of(spec, result.trace).to_json()
    _spec, tf, steps = open_trace(str(file), load)
    assert tf.path == path_of(spec, result.trace) and steps == result.trace
    # a path that leads elsewhere than the states the file shows is refused, naming the step
    doc["path"]["steps"][0] += 1
    file.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"t.json: the path does not lead to the steps the trace shows"):
        open_trace(str(file), load)
    # without a path (an older file, or one written by hand) each step is searched, as before
    del doc["path"]
    file.write_text(json.dumps(doc))
    assert open_trace(str(file), load)[2] == result.trace


def test_every_engine_returns_the_path_its_trace_walks(violation):
    """The reference engine and the compiled one find the same shortest
    counterexample, and each returns it as a path that walks to its trace."""
    spec, reference = violation
    fast = run(spec, CheckOptions.of(engine="fast", workers=2))
    assert reference.path is not None and fast.path == reference.path
    assert walk(spec, fast.path) == fast.trace == reference.trace
