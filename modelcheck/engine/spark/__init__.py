"""The Spark engine: the fast engine's level-synchronous search, with the
frontier and the visited set split in shards over Spark executors, for
state spaces one machine cannot hold. Executors expand with the compiled
kernel (broadcast as its source and tables, loaded from each machine's
cache) and use the shared batch layer and visited set.

A shard's state lives in files, never in Spark's blocks, so it is never
pickled, shuffled or cached by the JVM: under one run directory (in the
temp dir of a local or loopback master; on a cluster of several hosts, a
directory every executor sees, spark.modelcheck.stateDir)

    v/I.D[.mK]   shard I's visited set: sorted runs (visited.Run), one
                 written a level, merged in size tiers (an LSM tree)
    c/D/J.I      candidates for shard I that shard J's expansion made,
                 to be settled at level D: rows, keys and paths (.npy)
    f/D.I        shard I's states new at level D: rows and paths

A level is one Spark job of one stage and no shuffle, task I:

    settle   c/D/*.I in path order into I's visited set (the first
             occurrence of a key wins); check the new states' invariants
    expand   the new states' successors, pruned of I's visited set where
             they stay in I, first occurrences only, one file a
             destination shard: c/D+1/I.*

Its records are small handles (a shard's run files) and its result the
level's counts, so the driver sends and receives a few hundred bytes a
shard a level. Tasks read only what the previous level wrote and write
files under new names (whole, then renamed), so a task that fails (a
lost executor) is rerun with the same result; the driver deletes a
level's inputs once the level is done.

The reference engine's order is reproduced without ranking states on the
driver: each state carries its path, the successor indices along its path
from an initial state (big-endian uint16s, so byte order is the reference
engine's order of discovery), and a shard keeps the occurrence with the
smallest path. The first violation is then the one with the smallest path
over all shards, as in the reference engine, and counts and coverage equal
its own. The path is also the counterexample: replayed through the
interpreted spec index by index, it needs no parent links.
"""
