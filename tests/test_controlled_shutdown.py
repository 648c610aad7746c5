"""kafka-4's controlled shutdown as a state (controlled_shutdown = "staged",
issue 31): a broker that entered it stays registered and unfenced, but
leads nothing and is kept out of the ISR until it stops or re-registers.
The scenarios (kafka4-controlled-shutdown-moves-leadership and two
conformance cases) show the steps; the oracle compares every state."""

from __future__ import annotations

import re

import pytest
from symmetry_classes import reachable

from modelcheck.config import ConfigError
from specs.kafka_elr import load


def test_a_broker_in_controlled_shutdown_never_leads_nor_joins_the_isr():
    spec = load(
        {
            "variant": "kafka-4",
            "brokers": 2,
            "max_records": 0,
            "max_clean_shutdowns": 1,
            "controlled_shutdown": "staged",
        }
    )
    states = list(reachable(spec).values())
    shutting = [s for s in states if s.in_controlled_shutdown & ~s.fenced]
    assert len(shutting) > 50
    for s in shutting:
        assert not s.isr & s.in_controlled_shutdown & ~s.fenced
        assert s.leader == -1 or not s.in_controlled_shutdown >> s.leader & 1


def test_atomic_keeps_the_state_constant_and_hides_it():
    spec = load({"variant": "kafka-4"})
    assert "BeginControlledShutdown" in spec.never_enabled()
    assert "in_controlled_shutdown" not in spec.describe(spec.init_states()[0])


def test_staged_is_refused_for_a_variant_without_the_state():
    with pytest.raises(ConfigError) as e:
        load({"variant": "kip966", "controlled_shutdown": "staged"})
    assert str(e.value) == (
        "config key 'controlled_shutdown': \"staged\" with variant 'kip966' is not modelled "
        '(allowed: "atomic"; "staged" with variant \'kafka-4\', whose isAcceptableLeader reads it)'
    )
    assert re.fullmatch(r"[^\n]+", str(e.value))
