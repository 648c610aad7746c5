"""Mutant schemata (modelcheck/schemata.py): the points a spec's rules
offer, one class whose instances are the mutants, and one compiled kernel
that runs every one of them as the reference engine does."""

from __future__ import annotations

import pickle

import pytest
from mutable_specs import Allocator

from modelcheck.engine import run
from modelcheck.engine.kernel import Kernel
from modelcheck.engine.kernel.cache import cache_dir
from modelcheck.engine.options import CheckOptions
from modelcheck.schemata import schema

POINTS = [
    "#1 Allocator.free (mutable_specs.py:37): drop negation: not s.used & 1 << slot  ->  s.used & 1 << slot",
    "#2 Allocator.free (mutable_specs.py:37): swap set operation: s.used & 1 << slot  ->  s.used | 1 << slot",
    "#3 Allocator.release (mutable_specs.py:47): drop disjunct: s.taken == 0 or self.free(s, slot)  ->  "
    "self.free(s, slot)",
    "#4 Allocator.release (mutable_specs.py:47): flip comparison: s.taken == 0  ->  s.taken != 0",
    "#5 Allocator.release (mutable_specs.py:47): drop disjunct: s.taken == 0 or self.free(s, slot)  ->  s.taken == 0",
    "#6 Allocator.release (mutable_specs.py:49): drop set removal: s.used & ~(1 << slot)  ->  s.used",
    "#7 Allocator.release (mutable_specs.py:50): skip assignment: t = t._replace(taken=t.taken - 1)  ->  (skipped)",
    "#8 Allocator.release (mutable_specs.py:50): drop increment: t.taken - 1  ->  t.taken",
    "#9 Allocator.take (mutable_specs.py:41): drop conjunct: self.free(s, slot) and s.taken < self.slots  ->  "
    "s.taken < self.slots",
    "#10 Allocator.take (mutable_specs.py:41): drop conjunct: self.free(s, slot) and s.taken < self.slots  ->  "
    "self.free(s, slot)",
    "#11 Allocator.take (mutable_specs.py:41): flip strictness: s.taken < self.slots  ->  s.taken <= self.slots",
    "#12 Allocator.take (mutable_specs.py:42): keep field: grab(s.used, slot)  ->  s.used (kept)",
    "#13 Allocator.take (mutable_specs.py:42): drop increment: s.taken + 1  ->  s.taken",
    "#14 mutable_specs.grab (mutable_specs.py:20): swap set operation: used | 1 << slot  ->  used & 1 << slot",
]

# (holds, invariant, distinct, trace length) of each mutant, the reference engine's
VERDICTS = {
    0: (True, None, 8, None),
    1: (True, None, 1, None),  # no slot is ever free: nothing can be taken
    2: (True, None, 1, None),
    3: (True, None, 8, None),
    4: (True, None, 8, None),  # releases only at count 0, where nothing is taken: no release at all
    5: (False, "CountMatches", 5, 2),  # a free slot released: the count goes below the slots taken
    6: (False, "CountMatches", 5, 2),
    7: (False, "CountMatches", 5, 2),
    8: (False, "CountMatches", 5, 2),
    9: (False, "CountMatches", 5, 2),  # a taken slot taken again
    10: (True, None, 8, None),  # a free slot implies the count is below the slots: the conjunct is redundant
    11: (True, None, 8, None),
    12: (False, "CountMatches", 2, 1),
    13: (False, "CountMatches", 2, 1),
    14: (False, "CountMatches", 2, 1),
}


def mutants():
    return schema(Allocator, ["mutable_specs"])


def verdict(r):
    return (r.holds, r.invariant, r.distinct_states, None if r.holds else len(r.trace) - 1)


def test_the_points_are_every_slip_of_the_rules_the_actions_reach_in_source_order():
    points = mutants().points
    assert [p.describe() for p in points] == POINTS
    assert {p.rule: p.actions for p in points} == {
        "Allocator.free": ("Release", "Take"),
        "Allocator.release": ("Release",),
        "Allocator.take": ("Take",),
        "mutable_specs.grab": ("Take",),
    }
    assert schema(Allocator, ["mutable_specs"]) is mutants()  # one class, so one kernel, a base


def test_mutant_zero_is_the_base_and_every_mutant_is_its_slip_on_the_reference_engine():
    base = run(Allocator(3), CheckOptions.of(engine="bfs"))
    assert verdict(base) == VERDICTS[0]
    for number, expected in VERDICTS.items():
        assert verdict(run(mutants().cls(3, mutation=number), CheckOptions.of(engine="bfs"))) == expected, number


def test_every_mutant_runs_in_one_compiled_kernel_with_the_reference_engines_verdict():
    sources = {str(Kernel(mutants().cls(3, mutation=k), cache_dir()).source) for k in VERDICTS}
    assert len(sources) == 1  # the mutant is a parameter, not code
    for number, expected in VERDICTS.items():
        assert verdict(run(mutants().cls(3, mutation=number), CheckOptions.of(engine="fast"))) == expected, number


def test_a_mutant_pickles_as_itself_though_its_class_is_made_not_imported():
    spec = mutants().cls(3, mutation=7)
    again = pickle.loads(pickle.dumps(spec))
    assert type(again) is type(spec) and again.mutation == 7 and again.slots == 3
    assert verdict(run(again, CheckOptions.of(engine="bfs"))) == VERDICTS[7]


@pytest.mark.parametrize("number", [0, 5])
def test_the_generated_source_is_what_the_mutant_runs(number):
    """The schema's methods have a source (the kernel reads it) that holds every switch."""
    import inspect

    text = inspect.getsource(mutants().cls.release)
    assert "self.mutation != 5" in text and "if self.mutation != 7:" in text
    assert verdict(run(mutants().cls(3, mutation=number), CheckOptions.of(engine="bfs"))) == VERDICTS[number]
