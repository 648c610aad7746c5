"""Stories state the protocol's decisions as the spec makes them: each
sentence that says what the controller or a broker decided (a registration
taken as clean, an AlterPartition rejected, the leader a follower fetches
from) agrees with the spec's own predicate on the step's pre-state."""

from __future__ import annotations

import random

import pytest
from symmetry_classes import reachable

from modelcheck.result import Step
from specs.kafka_elr import VARIANTS, load

TOLD = ("StartBroker", "CommitAlterPartition", "Fetch")


def step(spec, s, action: str, **args):
    """The successor of `s` by the instance of `action` with `args`."""
    found = [t for a, t in spec.instances(action, s) if a == args]
    assert len(found) == 1, (action, args, spec.instances(action, s))
    return found[0]


def sentence(spec, s, action: str, args: dict, t) -> str:
    """The story of the one step s -> t (its first sentence)."""
    return spec.story([Step(None, {}, s), Step(action, args, t)], "NoAckedLoss").split(". ")[0]


def check_told(spec, s, action: str, args: dict, t, seen: set) -> None:
    """The step's sentence against the spec's predicate; `seen` collects
    which (action, verdict) pairs occurred."""
    text = sentence(spec, s, action, args, t)
    if action == "StartBroker":
        clean = spec.registration_is_clean(s, args["broker"])
        assert ("registers cleanly" in text, "registers uncleanly" in text) == (clean, not clean), text
        seen.add((action, clean))
    elif action == "CommitAlterPartition":
        accepted = spec.alter_partition_valid(s)
        assert ("rejects the ISR proposal" in text) == (not accepted), text
        assert accepted or (t.isr, t.elr) == (s.isr, s.elr)
        seen.add((action, accepted))
    elif action == "Fetch":
        source = spec.leader_seen_by(s, args["broker"])
        assert (f"fetches from deposed leader {source} " in text) == (source != s.leader), text
        seen.add((action, source == s.leader))


def test_a_crash_detected_at_registration_is_told_as_unclean():
    """Broker 2 crashes, is fenced (it leaves the ISR, which keeps min ISR
    members, so no ELR change), and restarts: its CleanShutdownFile is
    empty, so the controller takes the registration as unclean although
    ISR and ELR do not change."""
    spec = load({"variant": "kip966"})
    s0 = spec.init_states()[0]
    s1 = step(spec, s0, "UncleanShutdown", broker=2, keep=0)
    s2 = step(spec, s1, "FenceBroker", broker=2)
    s3 = step(spec, s2, "StartBroker", broker=2)
    assert not spec.registration_is_clean(s2, 2)
    assert (s3.isr, s3.elr, s3.last_known_elr) == (s2.isr, s2.elr, s2.last_known_elr)
    trace = [
        Step(None, {}, s0),
        Step("UncleanShutdown", {"broker": 2, "keep": 0}, s1),
        Step("FenceBroker", {"broker": 2}, s2),
        Step("StartBroker", {"broker": 2}, s3),
    ]
    story = spec.story(trace, "NoAckedLoss")
    assert "broker 2 restarts and registers uncleanly (ISR {0,1}, ELR {})" in story, story
    assert "registers cleanly" not in story


def test_every_transition_of_a_small_config_is_told_as_the_spec_decides():
    spec = load({"variant": "kip966", "brokers": 2, "max_records": 1, "max_fences": 0, "max_clean_shutdowns": 1})
    states = list(reachable(spec).values())
    assert len(states) == 6688
    seen: set = set()
    for s in states:
        for action in TOLD:
            for args, t in spec.instances(action, s):
                check_told(spec, s, action, args, t, seen)
    # each verdict occurs both ways: the test is not vacuous
    assert seen == {(a, v) for a in TOLD for v in (True, False)} - {("Fetch", False)}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("metadata", ["atomic", "propagated"])
def test_random_walks_are_told_as_each_variant_decides(variant, metadata):
    config = {
        "variant": variant,
        "max_records": 2,
        "max_clean_shutdowns": 1,
        "max_unclean_shutdowns": 2,
        "metadata": metadata,
    }
    spec = load(config)
    rnd = random.Random(f"{variant}/{metadata}")
    seen: set = set()
    for _walk in range(40):
        s = spec.init_states()[0]
        for _ in range(40):
            succ = spec.successors(s)
            if not succ:
                break
            action, args, t = succ[rnd.randrange(len(succ))]
            if action in TOLD:
                check_told(spec, s, action, args, t, seen)
            s = t
    assert ("StartBroker", True) in seen and ("CommitAlterPartition", True) in seen
