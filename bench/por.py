"""Benchmark: could partial-order reduction pay on this protocol? (issue
45, item 3). Measures the inputs of an ample set's conditions on the
reachable states of one config, before anything is built:

- C2 (visibility): an ample set smaller than all enabled actions may hold
  only actions that change nothing a checked invariant reads;
- C1 (persistence): no action dependent on an ample action (one that
  writes what it reads, or reads or writes what it writes) may fire first.

Reads and writes are observed, not declared: every field an invariant or
an action reads while it runs on the states met (each State field's
accessor is wrapped while they run), every field a step changes. Observed
reads are a subset of the true ones, so "visible" is certain and
"invisible" an upper bound on what could be reduced.

    python bench/por.py                                   # the default config
    python bench/por.py --set metadata='"propagated"' --states 300000
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from specs.kafka_elr import load
from specs.kafka_elr.types import State


@contextmanager
def reading(into: defaultdict[str, set[str]], who: list[str | None]) -> Iterator[None]:
    """Each State field read while this runs is added to into[who[0]]."""
    original = {f: State.__dict__[f] for f in State._fields}

    def accessor(field: str, plain: Any) -> property:
        def get(self: State) -> Any:
            if who[0] is not None:
                into[who[0]].add(field)
            return plain.__get__(self, State)

        return property(get)

    for f, plain in original.items():
        setattr(State, f, accessor(f, plain))
    try:
        yield
    finally:
        for f, plain in original.items():
            setattr(State, f, plain)


def explore(spec: Any, cap: int) -> tuple[list[State], Counter[str], defaultdict[str, set[str]]]:
    """States breadth-first up to `cap`; how often each action fired; the
    fields each one changed."""
    seen = dict.fromkeys(spec.init_states(), True)
    frontier, fired, writes = list(seen), Counter[str](), defaultdict[str, set[str]](set)
    while frontier and len(seen) < cap:
        nxt = []
        for s in frontier:
            for name, _args, t in spec.successors(s):
                fired[name] += 1
                writes[name] |= {f for f in State._fields if getattr(s, f) != getattr(t, f)}
                if t not in seen:
                    seen[t] = True
                    nxt.append(t)
        frontier = nxt
    return list(seen), fired, writes


def observed_reads(spec: Any, sample: list[State]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The fields each checked invariant and each action read on `sample`."""
    reads: defaultdict[str, set[str]] = defaultdict(set)
    who: list[str | None] = [None]
    runs: list[tuple[str, Callable[[State], Any]]] = [(n, partial(spec.invariants[n], spec)) for n in spec.to_check()]
    runs += [(f"action {a}", partial(spec.instances, a)) for a in spec.actions]
    with reading(reads, who):
        for name, run in runs:
            who[0] = name
            for s in sample:
                run(s)
        who[0] = None
    invariants = {n: reads[n] for n in spec.to_check()}
    actions = {a: reads[f"action {a}"] for a in spec.actions}
    return invariants, actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], help="KEY=JSON, as modelcheck check --set")
    parser.add_argument("--states", type=int, default=200_000, help="states to meet (breadth-first)")
    parser.add_argument("--sample", type=int, default=20_000, help="states the reads are observed on")
    args = parser.parse_args()
    config = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    spec = load(config)
    states, fired, writes = explore(spec, args.states)
    sample = random.Random(1).sample(states, min(args.sample, len(states)))
    inv_reads, act_reads = observed_reads(spec, sample)
    visible = set().union(*inv_reads.values())
    total = sum(fired.values())
    invisible = [a for a in sorted(fired) if not writes[a] & visible]
    print(f"config {config or 'default'}: {len(states):,} states met, {total:,} steps")
    print(f"the {len(inv_reads)} invariants checked read {len(visible)} of {len(State._fields)} fields")
    for a in sorted(fired):
        seen = sorted(writes[a] & visible)
        print(f"  {a:24} {fired[a] / total:6.1%} of steps  " + (f"visible: {', '.join(seen)}" if seen else "invisible"))
    share = sum(fired[a] for a in invisible) / total if total else 0.0
    print(f"C2: steps of invisible actions, the most an ample set could skip: {share:.1%}")
    for a in invisible:
        dependent = sorted(
            b
            for b in fired
            if b != a and (writes[b] & act_reads[a] or act_reads[b] & writes[a] or writes[b] & writes[a])
        )
        print(f"C1: {a} is dependent on {len(dependent)} of {len(fired) - 1} other actions: {', '.join(dependent)}")


if __name__ == "__main__":
    main()
