"""The visited set against plain Python: its one operation (test-and-set
of a level, the first occurrence of a new key winning), in memory and with
sorted runs on disk, the sort it rests on, and shard routing."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelcheck.engine.storage.sorted_keys import first_occurrences, sort_keys
from modelcheck.engine.storage.visited import BUCKET_BITS, Run, Visited, reshard, shard_of


def rows(values: list[tuple[int, ...]], width: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64).reshape(len(values), width)


# keys with many repeats, spread over all buckets (top bits) and equal in the top word sometimes
WORD = st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1), st.sampled_from([2**63, 2**64 - 1, 2**56]))


def levels(width: int):
    key = st.tuples(*[WORD] * width)
    return st.lists(st.lists(key, max_size=60), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2).flatmap(lambda w: st.tuples(st.just(w), levels(w))))
@pytest.mark.slow
def test_insert_new_is_a_test_and_set_in_order(case):
    width, batches = case
    visited, seen = Visited(width), set()
    for keys in batches:
        winner = visited.insert_new(rows(keys, width))
        expected = []
        for k in keys:
            expected.append(k not in seen)
            seen.add(k)
        assert winner.tolist() == expected
        assert len(visited) == len(seen)
        assert visited.nbytes == 8 * width * len(seen)
        assert visited.contains(rows(keys, width)).all()
    probe = [(5,) * width, (2**64 - 2,) * width]
    assert visited.contains(rows(probe, width)).tolist() == [p in seen for p in probe]


# after each level: 0 nothing, 1 flush to a nameless run, 2 flush to a named run, 3 compact, 4 flush and merge
MOVES = st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=4, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 2).flatmap(lambda w: st.tuples(st.just(w), levels(w), MOVES)))
def test_runs_on_disk_answer_as_memory_does(tmp_path_factory, case):
    """Keys moved to runs (named or not, compacted or not) are found as if
    they had stayed in memory: the same winners, the same membership."""
    width, batches, moves = case
    where = tmp_path_factory.mktemp("runs")
    visited, seen = Visited(width), set()
    for level, (keys, move) in enumerate(zip(batches, moves)):
        winner = visited.insert_new(rows(keys, width))
        expected = []
        for k in keys:
            expected.append(k not in seen)
            seen.add(k)
        assert winner.tolist() == expected
        if move == 1:
            visited.flush(directory=str(where))
        elif move == 2:
            visited.flush(path=str(where / f"run-{level}"))
        elif move == 3:
            visited.compact(directory=str(where))
            assert len(visited.runs) <= 1 and visited.memory_keys == 0
        elif move == 4:
            visited.flush(directory=str(where))
            visited.merge_runs(directory=str(where))
            sizes = [len(r) for r in visited.runs]
            assert all(2 * newer < older for older, newer in zip(sizes, sizes[1:]))
        assert len(visited) == len(seen) and visited.nbytes == 8 * width * len(seen)
        assert visited.memory_bytes + visited.disk_bytes == visited.nbytes
        assert visited.contains(rows(keys, width)).all()
    named = [r.path for r in visited.runs if r.path]
    if named:  # a named run is whole on disk: opened again, it holds the same keys
        reopened = Visited.from_runs(width, named)
        assert sum(len(r) for r in reopened.runs) == sum(len(r) for r in visited.runs if r.path)
    every = sorted(seen)
    kept = [tuple(k) for b in visited.bucket_keys() for k in b.tolist()]
    assert kept == every


def test_merge_restores_halving_sizes_after_flushes_without_a_merge(tmp_path):
    """A checkpoint flushes without merging, so a small run can sit before a
    larger one ([1, 3], then [1, 3, 1]); the next merge repairs the whole
    list, not only the newest pair (found by hypothesis above)."""
    visited = Visited(1)
    for i, (count, named) in enumerate([(1, False), (3, True), (1, False)]):
        visited.insert_new(rows([(1000 * i + k,) for k in range(count)], 1))
        visited.flush(path=str(tmp_path / f"run-{i}") if named else None, directory=str(tmp_path))
    assert [len(r) for r in visited.runs] == [1, 3, 1]
    visited.merge_runs(directory=str(tmp_path))
    assert [len(r) for r in visited.runs] == [4, 1]
    assert visited.contains(rows([(0,), (1000,), (1002,), (2000,)], 1)).all()


def test_a_run_is_sorted_by_bucket_and_refuses_other_files(tmp_path):
    keys = np.random.default_rng(3).integers(0, 2**64 - 1, size=(5000, 2), dtype=np.uint64, endpoint=True)
    visited = Visited(2)
    visited.insert_new(keys)
    visited.flush(path=str(tmp_path / "run"))
    run = Run.open(str(tmp_path / "run"))
    assert len(run) == 5000 and not os.path.exists(tmp_path / "run.tmp")
    assert [tuple(r) for r in run.keys.tolist()] == sorted(tuple(r) for r in keys.tolist())
    for b in range(1 << BUCKET_BITS):
        assert (run.bucket(b)[:, 0] >> np.uint64(64 - BUCKET_BITS) == b).all()
    (tmp_path / "other").write_bytes(b"\0" * 4096)
    with pytest.raises(ValueError, match="not a run"):
        Run.open(str(tmp_path / "other"))


@pytest.mark.parametrize("on_disk", [False, True])
def test_reshard_keeps_every_key_on_its_shard(tmp_path, on_disk):
    keys = np.random.default_rng(5).integers(0, 2**64 - 1, size=(20000, 1), dtype=np.uint64, endpoint=True)
    buckets = [keys[keys[:, 0] >> np.uint64(64 - BUCKET_BITS) == b] for b in range(1 << BUCKET_BITS)]
    shards = reshard(buckets, 3, str(tmp_path), on_disk=on_disk)
    assert sum(len(s) for s in shards) == 20000
    assert all(bool(s.runs) == on_disk for s in shards)
    owner = shard_of(keys, 3)
    for s, visited in enumerate(shards):
        assert visited.contains(keys).tolist() == (owner == s).tolist()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2).flatmap(lambda w: st.lists(st.tuples(*[WORD] * w), max_size=300).map(lambda k: (w, k))))
def test_sort_keys_is_stable_and_first_occurrences_are_the_first(case):
    width, keys = case
    order, ordered = sort_keys(rows(keys, width))
    assert order.tolist() == sorted(range(len(keys)), key=lambda i: (keys[i], i))
    assert [tuple(r) for r in ordered.tolist()] == sorted(keys)
    firsts = first_occurrences(rows(keys, width))
    assert firsts.tolist() == sorted({k: i for i, k in reversed(list(enumerate(keys)))}.values())


def test_shards_split_keys_evenly_below_the_bucket_bits():
    keys = np.random.default_rng(7).integers(0, 2**63, size=(40000, 1), dtype=np.uint64) * np.uint64(2)
    for shards in (1, 2, 3, 8):
        owner = shard_of(keys, shards)
        counts = np.bincount(owner.astype(np.int64), minlength=shards)
        assert len(counts) == shards and counts.min() > 0.8 * len(keys) / shards
    # the owner does not depend on the bucket bits, so every shard's buckets fill
    same_low = keys & np.uint64((1 << 64 - BUCKET_BITS) - 1)
    assert (shard_of(same_low, 4) == shard_of(same_low | np.uint64(0xFF << 56), 4)).all()


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.slow
def test_few_candidates_are_found_in_a_large_run(width):
    """A run's bucket far larger than its candidates is searched where each
    key's value puts it (the sparse path): hits, misses and keys at a
    bucket's edges all answer as a set would."""
    rng = np.random.default_rng(11)
    keys = rng.integers(0, 2**64 - 1, size=(300_000, width), dtype=np.uint64, endpoint=True)
    visited = Visited(width)
    visited.insert_new(keys)
    visited.flush()
    edges = np.array(
        [[b << 56] + [0] * (width - 1) for b in range(0, 256, 17)]
        + [[(b << 56) - 1] + [2**64 - 1] * (width - 1) for b in range(1, 256, 19)],
        dtype=np.uint64,
    )
    probe = np.concatenate(
        [
            keys[rng.integers(0, len(keys), 300)],
            keys[:1] + np.uint64(1),
            rng.integers(0, 2**64 - 1, size=(300, width), dtype=np.uint64, endpoint=True),
            edges,
        ]
    )
    present = {tuple(k) for k in keys.tolist()}
    assert visited.contains(probe).tolist() == [tuple(k) in present for k in probe.tolist()]
    assert visited.insert_new(probe).tolist() == [
        tuple(k) not in present and tuple(k) not in {tuple(x) for x in probe[:i].tolist()}
        for i, k in enumerate(probe.tolist())
    ]


def settled(seen: set, parts: list[list[tuple[int, ...]]]) -> list[bool]:
    """Plain Python's delayed duplicate detection of a level: the first
    occurrence of each key not seen before, over the parts one after the other."""
    expected = []
    for k in (k for part in parts for k in part):
        expected.append(k not in seen)
        seen.add(k)
    return expected


# a level's provisional keys in parts (segments), split among 1-3 shards, sorted in 1 or many bucket ranges
LEVELS = st.integers(1, 2).flatmap(
    lambda w: st.tuples(
        st.just(w),
        st.lists(st.lists(st.lists(st.tuples(*[WORD] * w), max_size=40), max_size=3), min_size=1, max_size=4),
        st.integers(1, 3),
        st.sampled_from([None, 1, 1 << 20]),
    )
)


@settings(max_examples=150, deadline=None)
@given(LEVELS)
def test_a_level_settled_at_its_end_keeps_the_first_occurrence_of_each_new_key(tmp_path_factory, case):
    """add_level (the level-wide external sort) against plain Python: a key
    in a run, in an earlier part or twice in one part is dropped, the first
    of a new key kept, whatever the shards and the bucket ranges the
    sort goes by (a budget of 1 byte: one range a bucket); each level's
    new keys become a run that the next level is checked against."""
    width, levels, shards, budget = case
    where = str(tmp_path_factory.mktemp("runs"))
    visited, seen = [Visited(width) for _ in range(shards)], set()
    for parts in levels:
        keep = np.zeros(sum(len(p) for p in parts), dtype=np.bool_)
        arrays = [rows(p, width) for p in parts]
        for s, v in enumerate(visited):
            v.add_level(arrays, keep, shards, s, budget, where)
        assert keep.tolist() == settled(seen, parts)
        assert sum(len(v) for v in visited) == len(seen) == sum(v.disk_bytes for v in visited) // (8 * width)
    every = [tuple(k) for v in visited for b in v.bucket_keys() for k in b.tolist()]
    assert sorted(every) == sorted(seen) and len(every) == len(seen)


def test_a_key_in_a_run_and_twice_in_a_level_is_new_only_where_first_met(tmp_path):
    """The cases a wrong merge gets wrong, by hand: a key of an earlier
    level (in a run) met again; a new key met in two segments and twice in
    one; keys at a bucket's edges; more runs than one (merged by size)."""
    top = 1 << 56
    visited = Visited(1)
    for level in ([(5,), (top - 1,)], [(top,)], [(2 * top + 1,)]):
        visited.add_level([rows(level, 1)], np.zeros(len(level), dtype=np.bool_), directory=str(tmp_path))
    assert len(visited) == 4 and visited.disk_bytes == 32
    parts = [[(top,), (9,), (9,), (top - 2,)], [(5,), (top - 2,), (2 * top + 1,), (2**64 - 1,)], [(2**64 - 1,), (9,)]]
    keep = np.zeros(10, dtype=np.bool_)
    visited.add_level([rows(p, 1) for p in parts], keep, budget=1, directory=str(tmp_path))
    assert keep.tolist() == [False, True, False, True, False, False, False, True, False, False]
    assert len(visited) == 7 and visited.contains(rows([(9,), (top - 2,), (2**64 - 1,), (8,)], 1)).tolist() == [
        True,
        True,
        True,
        False,
    ]
