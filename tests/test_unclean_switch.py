"""unclean.leader.election.enable changed at run time (AlterUncleanLeaderElection,
issue 31): a config record that changes the switch and nothing else, in
every variant; the elections it enables come later (the scenarios
kafka4-unclean-switch-elects-later, kip966-unclean-switch-is-aggressive
and the conformance cases of the dynamic switch show them)."""

from __future__ import annotations

import pytest
from symmetry_classes import reachable

from specs.kafka_elr import load


@pytest.mark.parametrize("variant", ["kip966", "legacy", "kip966-elr-only", "kafka-4"])
def test_the_switch_changes_the_switch_only_and_elects_nobody_in_the_same_step(variant):
    spec = load({"variant": variant, "brokers": 2, "max_records": 0, "max_unclean_switches": 2})
    switched = 0
    for s in reachable(spec).values():
        for name, args, t in spec.successors(s):
            if name == "AlterUncleanLeaderElection":
                assert t == s._replace(unclean_election=args["enable"], unclean_switches=s.unclean_switches + 1)
                assert args["enable"] != s.unclean_election
                switched += 1
    assert switched > 100


def test_the_switch_and_its_count_are_shown_only_where_it_may_change():
    fixed = load({"unclean_leader_election": True})
    assert "unclean_election" not in fixed.describe(fixed.init_states()[0])
    switching = load({"max_unclean_switches": 1})
    shown = switching.describe(switching.init_states()[0])
    assert (shown["unclean_election"], shown["unclean_switches"]) == (False, 0)
    assert fixed.init_states()[0].unclean_election == 1
