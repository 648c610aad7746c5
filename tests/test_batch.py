"""The batch layer against plain Python: the visited set's one operation
(test-and-set of a level, the first occurrence of a new key winning), the
sort it rests on, and shard routing."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from modelcheck.engine.batch import BUCKET_BITS, Visited, first_occurrences, shard_of, sort_keys


def rows(values: list[tuple[int, ...]], width: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64).reshape(len(values), width)


# keys with many repeats, spread over all buckets (top bits) and equal in the top word sometimes
WORD = st.one_of(st.integers(0, 3), st.integers(0, 2 ** 64 - 1), st.sampled_from([2 ** 63, 2 ** 64 - 1, 2 ** 56]))


def levels(width: int):
    key = st.tuples(*[WORD] * width)
    return st.lists(st.lists(key, max_size=60), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2).flatmap(lambda w: st.tuples(st.just(w), levels(w))))
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
    probe = [(5,) * width, (2 ** 64 - 2,) * width]
    assert visited.contains(rows(probe, width)).tolist() == [p in seen for p in probe]


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
    keys = np.random.default_rng(7).integers(0, 2 ** 63, size=(40000, 1), dtype=np.uint64) * np.uint64(2)
    for shards in (1, 2, 3, 8):
        owner = shard_of(keys, shards)
        counts = np.bincount(owner.astype(np.int64), minlength=shards)
        assert len(counts) == shards and counts.min() > 0.8 * len(keys) / shards
    # the owner does not depend on the bucket bits, so every shard's buckets fill
    same_low = keys & np.uint64((1 << 64 - BUCKET_BITS) - 1)
    assert (shard_of(same_low, 4) == shard_of(same_low | np.uint64(0xFF << 56), 4)).all()
