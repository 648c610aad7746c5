"""A Spark level's links ranked across shards: what the executors count
in intervals and read back is each state's place in the whole level, and
a counterexample's walk back finds each rank's link. The tasks are run
here on files as the executors run them (no Spark: these are numpy)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from modelcheck.engine.spark.tasks import (
    INDEX_BITS,
    Shard,
    _rank,
    _save,
    link_at,
    plans,
    ranks_file,
    read_ranks,
    sample_of,
    splitters_of,
)

LEVEL = st.lists(st.integers(0, (1 << 40) - 1), unique=True, min_size=1, max_size=600)  # a level ranked has states


def ranked(root, level: list[int], shards: int, seed: int, intervals: int):
    """Deal `level`'s links to shards, sorted in each as _settle writes
    them, and rank them in `intervals` intervals as the driver does; each
    shard's ranks read back, and the intervals."""
    rng = np.random.default_rng(seed)
    home = rng.integers(0, shards, len(level))
    links = np.array(level, dtype=np.uint64)
    mine = [np.sort(links[home == s]) for s in range(shards)]
    for d in ("l", "r/0"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for s, held in enumerate(mine):
        _save(Shard(str(root), s).links(0), held)
    sample = np.sort(np.concatenate([sample_of(h) for h in mine]))
    splitters = splitters_of(sample, intervals)
    counted = [_rank(None, str(root), shards, 0, splitters, j) for j in range(intervals)]
    bases, each = plans(np.array([c[1] for c in counted]))
    return mine, [read_ranks(str(root), 0, each[s], len(mine[s])) for s in range(shards)], splitters, bases


@settings(max_examples=60, deadline=None)
@given(level=LEVEL, shards=st.integers(1, 6), fewer=st.integers(0, 5), seed=st.integers(0, 2**32 - 1))
def test_ranks_read_back_are_each_states_place_in_the_whole_level(tmp_path_factory, level, shards, fewer, seed):
    root = tmp_path_factory.mktemp("run")
    mine, ranks, splitters, bases = ranked(root, level, shards, seed, intervals=max(1, shards - fewer))
    everything = np.sort(np.array(level, dtype=np.uint64))
    for held, got in zip(mine, ranks):
        assert got.tolist() == np.searchsorted(everything, held).tolist()
    for rank, link in enumerate(everything.tolist()):
        assert link_at(str(root), shards, 0, splitters, bases, rank) == link


def test_a_level_that_one_shard_holds_is_ranked_in_its_order(tmp_path):
    level = [(p << INDEX_BITS) | i for p in (0, 3, 7) for i in (5, 0, 2)]
    mine, ranks, _splitters, _bases = ranked(tmp_path, level, 4, seed=1, intervals=4)
    everything = sorted(level)
    got = {int(link): int(r) for held, rs in zip(mine, ranks) for link, r in zip(held, rs)}
    assert [got[link] for link in everything] == list(range(9))
    assert all((tmp_path / "r" / "0" / str(j)).exists() for j in range(4))
    assert ranks_file(str(tmp_path), 0, 2).endswith("/r/0/2")
