"""Checkpoints and the memory limit, in the engines themselves: a search
stopped anywhere resumes to exactly the uninterrupted result (counts,
coverage, goals, the counterexample itself), on any number of workers; a
checkpoint torn half-way leaves the previous one usable; a search short of
memory finishes by spilling to disk, or stops with a checkpoint.
(tests/test_lifetime.py does the same through real signals and kills.)"""

from __future__ import annotations

import functools
import gc
import json
import subprocess
from typing import Any

import pytest
from processes import ROOT
from resuming import interrupted, resume, stop_after

from modelcheck.engine import run
from modelcheck.engine.control import Control
from modelcheck.engine.fast import memory as fast_memory
from modelcheck.engine.options import CheckOptions
from modelcheck.engine.storage.checkpoint import Checkpoints
from modelcheck.lifetime import Stopped
from modelcheck.memory import anon_rss, parse_size, release_freed
from specs.kafka_elr import load

FIELDS = ("verdict", "invariant", "distinct_states", "generated_states", "depth", "coverage", "goals")


def same(a, b) -> None:
    assert {f: getattr(a, f) for f in FIELDS} == {f: getattr(b, f) for f in FIELDS}
    assert [(s.action, s.args, s.state) for s in a.trace] == [(s.action, s.args, s.state) for s in b.trace]


@functools.cache
def uninterrupted(engine: str, config: str):
    return run(load(json.loads(config)), CheckOptions.of(engine=engine, workers=2))


CASES: list[tuple[str, dict[str, Any], int]] = [
    ("fast", {"variant": "legacy"}, 2),
    ("fast", {"variant": "legacy"}, 5),
    ("fast", {}, 8),
    ("bfs", {"variant": "legacy", "max_records": 1}, 2),
    ("bfs", {"variant": "legacy", "max_records": 1}, 5),
    ("bfs", {"max_records": 1, "max_fences": 0}, 5),
]


@pytest.mark.parametrize(
    "engine,config,reports", CASES, ids=[f"{e}-{c.get('variant', 'kip966')}-{r}" for e, c, r in CASES]
)
@pytest.mark.slow
def test_a_stopped_search_resumes_to_exactly_the_uninterrupted_result(tmp_path, engine, config, reports):
    """Stopped on two workers, resumed on one (the visited set is split anew)."""
    spec = load(config)
    whole = uninterrupted(engine, json.dumps(config))
    stop = interrupted(spec, engine, tmp_path, reports)
    assert 0 < stop.distinct < whole.distinct_states and stop.checkpoint == str(tmp_path)
    same(resume(spec.config, engine, tmp_path, workers=1), whole)


@pytest.mark.slow
def test_a_checkpoint_resumes_on_more_workers_than_wrote_it(tmp_path):
    spec = load({})
    interrupted(spec, "fast", tmp_path, 8, workers=2)
    same(resume(spec.config, "fast", tmp_path, workers=3), uninterrupted("fast", "{}"))


class Torn(Exception):
    pass


class TornCheckpoints(Checkpoints):
    """Dies (as a kill would) after writing some files of its fourth checkpoint."""

    def __init__(self, directory):
        super().__init__(directory, every_s=0)
        self.files = 0

    def _write(self, *args):
        if self.serial == 3:  # the fourth is being written
            self.files += 1
            if self.files == 3:
                raise Torn
        return super()._write(*args)


def test_a_checkpoint_torn_half_way_leaves_the_previous_one_usable(tmp_path):
    spec = load({"variant": "legacy"})
    whole = uninterrupted("fast", json.dumps({"variant": "legacy"}))
    checkpoints = TornCheckpoints(tmp_path)
    checkpoints.prepare(resuming=False)
    with pytest.raises(Torn):
        run(spec, CheckOptions.of(engine="fast", workers=2), checkpoints=checkpoints)
    assert json.loads((tmp_path / "manifest.json").read_text())["state"]["depth"] == 3  # the third
    same(resume(spec.config, "fast", tmp_path), whole)


@pytest.mark.slow
def test_short_of_memory_the_fast_engine_spills_and_splits_levels_to_the_same_answer(tmp_path):
    spec = load({})
    whole = uninterrupted("fast", "{}")
    # what the process holds now, plus a few MB: the visited set fits, a whole level's candidates do not
    r = run(
        spec, CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (24 << 20), spill_dir=str(tmp_path))
    )
    same(r, whole)
    assert r.run_info["spilled"] is True and r.run_info["segments"] > r.depth
    assert list(tmp_path.iterdir()) == []  # spilled files have no name: nothing is left


@pytest.mark.slow
def test_with_symmetry_a_visited_set_on_disk_counts_the_states_its_classes_hold_once(tmp_path, monkeypatch):
    """Once the keys are on disk a segment's new classes are provisional,
    and their states are counted when the level is resolved: the same
    classes and class states as in memory, though about half the
    provisional rows of a level are taken back."""
    monkeypatch.setattr(fast_memory, "VISITED_SHARE", 0.0)
    spec = load({})
    spec.enable_symmetry()
    whole = run(spec, CheckOptions.of(engine="fast", workers=2))
    r = run(
        spec, CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (24 << 20), spill_dir=str(tmp_path))
    )
    same(r, whole)
    assert r.holds and r.run_info["visited_flushes"] > 0 and r.run_info["segments"] > r.depth
    assert r.run_info["symmetry"] == whole.run_info["symmetry"]
    assert whole.run_info["symmetry"]["class_states"] > whole.distinct_states


@pytest.mark.slow
def test_a_visited_set_moved_to_disk_gives_the_same_answer_and_resumes_from_disk(tmp_path, monkeypatch):
    """With no share of the limit left to the visited set, a search short
    of memory moves its keys to sorted runs on disk (nameless: nothing is
    left behind) and ends with the same answer; stopped there, its
    checkpoint resumes onto disk again, on another number of workers."""
    monkeypatch.setattr(fast_memory, "VISITED_SHARE", 0.0)
    spec = load({})
    whole = uninterrupted("fast", "{}")
    spill = tmp_path / "spill"
    spill.mkdir()
    r = run(
        spec, CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (24 << 20), spill_dir=str(spill))
    )
    same(r, whole)
    assert r.run_info["visited_flushes"] > 0 and 0 < r.memory["visited_disk_bytes"] <= r.memory["visited_bytes"]
    assert list(spill.iterdir()) == []
    checkpoints = Checkpoints(tmp_path / "ck", every_s=0)
    checkpoints.prepare(resuming=False)
    request, progress = stop_after(r.depth - 6)
    with pytest.raises(Stopped):
        limit = settled_rss() + (24 << 20)
        options = CheckOptions.of(engine="fast", workers=2, max_memory=limit, spill_dir=str(spill))
        run(spec, options, progress=progress, control=Control(stop=request), checkpoints=checkpoints)
    checkpoints = Checkpoints(tmp_path / "ck", every_s=0)
    checkpoints.prepare(resuming=True)
    options = CheckOptions.of(
        engine="fast", workers=1, resume=True, max_memory=settled_rss() + (24 << 20), spill_dir=str(spill)
    )
    resumed = run(spec, options, checkpoints=checkpoints)
    same(resumed, whole)
    assert resumed.memory["visited_disk_bytes"] > 0


DISK_CASES = [({}, True), ({"brokers": 4, "max_records": 1}, False)]


@pytest.mark.parametrize("config,symmetric", DISK_CASES, ids=["default-symmetry", "4-brokers-1-record"])
@pytest.mark.slow
def test_levels_settled_on_disk_give_the_counts_of_the_search_in_memory(tmp_path, config, symmetric):
    """Short of memory, a level split into segments is settled at its end
    against the keys on disk (one external sort a level): the counts,
    coverage, goals and, with symmetry, the classes and the states they
    hold are those of the search in memory."""
    spec = load(config)
    if symmetric:
        spec.enable_symmetry()
    whole = run(spec, CheckOptions.of(engine="fast", workers=2))
    r = run(
        spec, CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (24 << 20), spill_dir=str(tmp_path))
    )
    same(r, whole)
    assert r.run_info.get("symmetry") == whole.run_info.get("symmetry")
    assert r.run_info["segments"] > r.depth and r.run_info["visited_flushes"] > 0
    assert r.memory["visited_disk_bytes"] == r.memory["visited_bytes"] == whole.memory["visited_bytes"]


@pytest.mark.slow
def test_a_violation_found_with_the_visited_set_on_disk_has_the_exact_counts_and_trace(tmp_path, monkeypatch):
    """Duplicates in the runs are detected late; at a violation the search
    first settles them, so its counts, coverage and shortest trace are the
    in-memory search's."""
    monkeypatch.setattr(fast_memory, "VISITED_SHARE", 0.0)
    config = {"brokers": 4, "min_isr": 3, "max_unclean_shutdowns": 3, "max_records": 1, "max_fences": 0}
    whole = uninterrupted("fast", json.dumps(config))
    r = run(
        load(config),
        CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (24 << 20), spill_dir=str(tmp_path)),
    )
    assert not whole.holds and r.run_info["visited_flushes"] > 0
    same(r, whole)


@pytest.mark.slow
def test_at_the_memory_limit_a_search_stops_with_a_checkpoint_that_resumes(tmp_path):
    spec = load({})
    checkpoints = Checkpoints(tmp_path / "ck", every_s=3600)
    checkpoints.prepare(resuming=False)
    with pytest.raises(Stopped) as stop:
        run(
            spec,
            CheckOptions.of(engine="fast", workers=2, max_memory=settled_rss() + (6 << 20)),
            checkpoints=checkpoints,
        )
    whole = uninterrupted("fast", "{}")
    assert stop.value.signum is None and 1000 < stop.value.distinct < whole.distinct_states
    assert str(stop.value).startswith("memory limit ") and f"--resume {tmp_path / 'ck'}" in str(stop.value)
    same(resume(spec.config, "fast", tmp_path / "ck"), whole)


@pytest.mark.parametrize("engine", ["fast", "bfs"])
@pytest.mark.slow
def test_the_memory_limit_from_the_command_line_is_one_line_exit_2_and_resumes(tmp_path, engine):
    ck = tmp_path / "ck"
    config = ["--set", "max_records=1", "--set", "max_fences=0"]
    r = cli("check", "--engine", engine, *config, "--max-memory", "1M", "--checkpoint", str(ck))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: memory limit 1.0 MiB (--max-memory) reached at ") and r.stderr.count("\n") == 1
    assert f"modelcheck check --resume {ck}" in r.stderr
    resumed = json.loads(cli("check", "--resume", str(ck), "--json", "-q").stdout)
    whole = json.loads(cli("check", *config, "--json", "-q").stdout)
    assert resumed["engine"] == engine
    assert {k: resumed[k] for k in FIELDS} == {k: whole[k] for k in FIELDS}


def settled_rss() -> int:
    """This process's anonymous memory with what earlier tests freed handed
    back first: a limit set a few MiB above it means the same to the search
    whichever tests ran in this worker before (untrimmed free memory would
    let the search grow unseen; trimmed mid-search, it would look like room)."""
    gc.collect()
    release_freed()
    return anon_rss()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["modelcheck", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--max-memory", "lots"], "--max-memory 'lots': expected a size such as 512M, 8G or 1.5GiB"),
        (["--max-memory", "0"], "--max-memory '0': expected a size such as 512M, 8G or 1.5GiB"),
        (["--engine", "spark", "--checkpoint", "DIR"], "--checkpoint applies to the local engines (fast, bfs)"),
        (["--engine", "spark", "--max-memory", "1G"], "--max-memory applies to the local engines (fast, bfs)"),
        (["--resume", "{tmp}/nothing"], "--resume '{tmp}/nothing': no checkpoint there (no manifest.json)"),
    ],
)
def test_bad_checkpoint_and_memory_options_are_one_line_exit_2(tmp_path, args, message):
    r = cli("check", *[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: " + message.format(tmp=tmp_path)) and r.stderr.count("\n") == 1


def stopped_checkpoint(directory, *config: str) -> None:
    r = cli("check", *config, "--max-memory", "1M", "--checkpoint", str(directory))
    assert r.returncode == 2, r.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--set", "max_records=2"],
            "the checkpoint's max_records is 1, not 2 (leave out the config to take the checkpoint's)",
        ),
        (["--engine", "bfs"], "the checkpoint was written with --engine fast, not bfs"),
        (["--symmetry"], "the checkpoint was written without --symmetry"),
        (["--checkpoint", "{ck}"], "--checkpoint '{ck}' already holds a checkpoint: continue it with --resume {ck}"),
    ],
)
@pytest.mark.slow
def test_a_resume_that_does_not_match_its_checkpoint_is_refused(tmp_path, args, message):
    ck = tmp_path / "ck"
    stopped_checkpoint(ck, "--set", "max_records=1")
    # a new --checkpoint is of one configuration (bare, check runs the default suite, which refuses one)
    resume_args = ["--set", "max_records=1"] if "--checkpoint" in args else ["--resume", str(ck)]
    r = cli("check", *resume_args, *[a.format(ck=ck) for a in args])
    assert r.returncode == 2 and r.stdout == "", r.stderr
    prefix = "" if "--checkpoint" in args else f"--resume {ck}: "
    assert r.stderr.startswith(f"error: {prefix}{message.format(ck=ck)}") and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_checkpoint_whose_files_were_damaged_is_refused(tmp_path):
    ck = tmp_path / "ck"
    stopped_checkpoint(ck, "--set", "max_records=1")
    victim = next(p for p in ck.iterdir() if p.name.startswith("frontier."))
    victim.write_bytes(victim.read_bytes()[:-8])
    r = cli("check", "--resume", str(ck))
    assert (
        r.returncode == 2
        and r.stderr == f"error: --resume {str(ck)!r}: {victim.name} is not the size its manifest gives\n"
    )
    (ck / "manifest.json").write_text("{")
    r = cli("check", "--resume", str(ck))
    assert r.returncode == 2 and r.stderr.startswith(f"error: --resume {str(ck)!r}: cannot read manifest.json")


def test_sizes_read_as_binary_units():
    assert [parse_size(s) for s in ("512M", "8G", "1.5GiB", "100", "2k")] == [512 << 20, 8 << 30, 3 << 29, 100, 2048]
