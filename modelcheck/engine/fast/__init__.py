"""The fast engine: breadth-first search over packed states with the
compiled kernel, on W threads, reporting exactly what the reference engine
(bfs.py) reports.

A level is a frontier of packed rows in the order the reference engine
meets those states, expanded in segments of consecutive rows (one segment
a level unless memory is short). Each thread expands a contiguous slice of
a segment (the kernel runs without the GIL), so the threads' successors,
one slice after the other, are the reference engine's candidates in its
own order. Each key belongs to one shard (high bits of the key, below the
bucket's: TLC's MultiFPSet); a shard's thread inserts its candidates, in
that order, into its visited set, so the first occurrence of a new state
wins as in the reference engine, whatever the segments. The winners, in
candidate order, are the next frontier; invariants are checked on them in
slices, and the first violation in that order is the one the reference
engine meets first, with the same distinct and generated counts and
coverage at that point.

Nothing a level holds is a Python object a state: a row of words, a key
(8 or 16 bytes), and a parent link of 6 bytes (the parent's row in the
previous level, the successor's index under it). A counterexample is
rebuilt from the links by replaying successor indices through the
interpreted spec, checked to arrive at the very state the kernel packed,
and re-validated by replay (trace.validate).

Between segments the search is at a safe point: what it has settled is
intact. There it writes a checkpoint when one is due, stops when a
signal asked it to, and sizes the next segment to the memory left; when
that is short it first moves the frontier and the parent links to disk
(storage/spill.py), then the visited set's keys (sorted runs,
storage/visited.py), and stops with a checkpoint only when a segment of
the smallest size no longer fits beside what cannot move.

Once a level no longer fits in one segment, the visited set's keys move
to disk and duplicates are detected late, a level at a time (Stern and
Dill's and Korf's delayed duplicate detection): a segment's winners are
the first occurrence of each of its keys, the next level's rows
*provisionally*; `resolve` sorts the level's keys once (a range of buckets
at a time) and merges them against the sorted runs in one sequential
pass, keeps the first occurrence of each key no run holds, writes those
keys as a new run, and takes back the other rows (a state met earlier in
the level, or in an earlier level: it passed every invariant then, so a
provisional row never hides a violation). Before, a segment merged its
keys into the whole set in memory: a copy of the set a segment. A search
resolves at the end of each level, before a checkpoint or a stop, and at a
violation (whose counts are then exact), so everything it reports is what
the per-segment test would have given.

The search is four layers, each a module: state.py (the cursor, the
shared structures and counts), memory.py (the memory policy: segment
sizes, what moves to disk, late duplicate detection), saved.py (safe
points: checkpoints, stops, resume) and search.py (the level pipeline and
the result).
"""

from .search import Search, check, warm

__all__ = ["Search", "check", "warm"]
