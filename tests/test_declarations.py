"""Facts about a rule are declared once, at the rule or in one table, and
what is derived from them agrees: the bounds (types.BOUNDS) with the
config keys, the spec's attributes, the state's counters and the actions
that declare them."""

from __future__ import annotations

import typing

import pytest

from specs.kafka_elr import ALL_VARIANTS, VARIANTS, Kip966, load, schema
from specs.kafka_elr.types import BOUNDS, VARIABLES


def test_every_bound_is_a_config_key_an_attribute_and_a_counter():
    keys = {k.name: k for k in schema()}
    variables = {v.name for v in VARIABLES}
    spec = load({})
    for b in BOUNDS:
        assert keys[b.key].default == b.default and keys[b.key].help == b.bounds
        assert getattr(spec, b.key) == b.default
        assert b.counter in variables
    # the attributes Kip966 declares for mypy are exactly the bounds
    declared = {n for n in typing.get_type_hints(Kip966) if n.startswith("max_")}
    assert declared == {b.key for b in BOUNDS}


def test_the_actions_declare_their_bounds():
    keys = {b.key for b in BOUNDS}
    for cls in ALL_VARIANTS.values():
        assert set(cls.bounds.values()) <= keys
    assert Kip966.bounds["AlterUncleanLeaderElection"] == "max_unclean_switches"
    assert ALL_VARIANTS["kafka-4"].bounds["BeginControlledShutdown"] == "max_clean_shutdowns"
    # a bound of 0 leaves its actions dormant
    assert {"AlterUncleanLeaderElection", "AdminElectLeaders"} <= load({}).never_enabled()
    assert "AlterUncleanLeaderElection" not in load({"max_unclean_switches": 1}).never_enabled()


def test_a_variant_registers_itself_and_the_catalog_lists_its_modules():
    from modelcheck.declare import SpecDefinitionError
    from specs.kafka_elr import PROTOCOL
    from specs.kafka_elr.catalog import PROTOCOLS
    from specs.kafka_elr.protocol import REGISTERED

    class Throwaway(Kip966):
        """A variant defined outside the catalog's modules."""

        variant = "throwaway"

    try:
        assert REGISTERED["throwaway"] is Throwaway and "throwaway" not in ALL_VARIANTS
        with pytest.raises(SpecDefinitionError, match="'kip966'"):
            type("Again", (Kip966,), {"variant": "kip966"})
    finally:
        del REGISTERED["throwaway"]
    assert PROTOCOLS == ("kip966", "legacy", "kip966-elr-only", "kafka-4")
    assert all(name in ALL_VARIANTS for name in REGISTERED)
    # the command line's help lists the registered variants (modelcheck/cli/check.py)
    assert PROTOCOL.variants == tuple(VARIANTS)


def test_the_state_class_mypy_reads_matches_the_variables():
    """types.py declares State for mypy as a class (made from VARIABLES at
    run time): the same fields, in the same order, of the same types."""
    import ast
    from pathlib import Path

    from specs.kafka_elr import types

    tree = ast.parse(Path(types.__file__).read_text())
    (cls,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "State"]
    declared = [(a.target.id, ast.unparse(a.annotation)) for a in cls.body if isinstance(a, ast.AnnAssign)]
    stored = [(v.name, "tuple[int, ...]" if v.per_broker else "int") for v in VARIABLES if v.derived is None]
    assert declared == stored
    assert types.State._fields == tuple(name for name, _ in stored)


def test_each_variable_that_holds_brokers_shows_in_the_view_or_says_why_not():
    """view() (symmetry's sort key) is generated from VARIABLES: a variable
    that holds brokers and declares neither how it shows nor why it does
    not is refused as the table loads; every other has its kind's default."""
    from specs.kafka_elr import types

    missing = types.Var("spare", types.NUMBER, lambda c: 0, lambda c: 1, "a per-broker number", per_broker=True)
    with pytest.raises(TypeError, match="spare holds brokers"):
        types._seen(missing)
    chosen = types.Var("chosen", types.BROKER_ID, lambda c: -1, lambda c: 1, "a broker")
    assert [t.expr for t in types._seen(chosen)] == ["int(s.chosen == b)"]
    shown = {v.name for v in VARIABLES if types._seen(v)}
    holds_brokers = {v.name for v in VARIABLES if v.per_broker or v.kind in (types.BROKER_ID, types.BROKERS)}
    assert holds_brokers - shown == {v.name for v in VARIABLES if v.unseen} & holds_brokers
    assert types.view.__doc__ and "seen" in types.VIEW_SOURCE and len(types.VIEW_BITS) == len(types.SEEN)


@pytest.mark.parametrize("variant", ["kip966", "legacy"])
def test_a_brokers_view_is_the_same_under_every_renaming(variant):
    """A sort key must not see broker ids: on reachable states (propagated
    metadata, reassignments), broker b's view in s is broker to[b]'s in s
    renamed, for every renaming."""
    from itertools import permutations

    from symmetry_classes import reachable

    from specs.kafka_elr.types import permute, view

    small = {"max_records": 1, "max_fences": 0, "max_isr_shrinks": 0}
    for config in (
        {"metadata": "propagated"},
        {"brokers": 2, "min_isr": 2, "spare_brokers": 1, "max_reassignments": 1},
    ):
        spec = load({"variant": variant, **small, **config})
        states = list(reachable(spec).values())[::3]
        assert len(states) > 500
        for s in states:
            for to in permutations(range(spec.n)):
                moved = permute(s, to)
                assert all(view(moved, to[b]) == view(s, b) for b in range(spec.n))
