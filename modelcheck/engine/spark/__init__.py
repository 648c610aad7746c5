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
                 to be settled at level D: rows, links and, under
                 symmetry, keys (.npy)
    f/D.I        shard I's states new at level D: rows, in link order
    l/D.I        their links, kept for the run (a counterexample's walk back)
    r/D/J        the places in interval J of level D's links, shard by shard

A level is three Spark jobs of one stage each and no shuffle:

    settle   task I: c/D/*.I in link order into I's visited set (the
             first occurrence of a key wins); check the new states'
             invariants; write f/D.I and l/D.I, and send a sample of links
    rank     task J: merge every shard's links in interval J (bounds the
             driver picks from the samples) and write their places, r/D/J
    expand   task I: read its states' ranks back (the interval's first
             rank, from the driver, plus the place), expand the states,
             prune the successors of I's visited set where they stay in
             I, first occurrences only, one file a destination shard:
             c/D+1/I.*

Its records are small handles (a shard's run files, its plan for reading
its ranks) and its results the level's counts, so the driver sends and
receives a few hundred bytes a shard a job. Tasks read only what earlier
jobs wrote and write files under new names (whole, then renamed), so a
task that fails (a lost executor) is rerun with the same result; the
driver deletes a level's inputs once the level is done.

The reference engine's order is reproduced without ranking states on the
driver: each state carries a link, one uint64: its parent's rank in the
parent's level (in that order), then its index among the parent's
successors (16 bits). Comparing links orders a level as the reference
engine discovers it, and a shard keeps the occurrence with the smallest.
The first violation is then the one with the smallest link over all
shards, as in the reference engine, and counts and coverage equal its
own. The counterexample is walked back: a link's rank finds the parent's
link in l/ (the driver keeps each level's interval bounds and first
ranks), and so on to an initial state; the indices are then replayed
through the interpreted spec. A path key of 2 bytes a level did this
before (issue 45): 8 bytes a state at any depth now, for a second and a
third job a level.
"""
