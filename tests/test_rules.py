"""The protocol's pure operators, against the sentences of KIP-966."""

from specs.kafka_elr import logs, rules
from specs.kafka_elr.logs import from_entries as log
from specs.kafka_elr.types import mask_of as m


def test_elr_update_below_min_isr_adds_the_removed_members():
    # KIP-966 example, T1: ISR {b1..b4}, min ISR 3, b1 proposes ISR {b1, b2}
    assert rules.update_elr(m([0, 1, 2, 3]), 0, m([0, 1]), 3) == (m([0, 1]), m([2, 3]), False)


def test_elr_update_at_min_isr_empties_elr_and_cleans_last_known_elr():
    # T2: b3 catches up, ISR {b1, b2, b3}: "ELR is cleaned"
    assert rules.update_elr(m([0, 1]), m([2, 3]), m([0, 1, 2]), 3) == (m([0, 1, 2]), 0, True)


def test_elr_update_retains_elr_and_drops_members_back_in_isr():
    # T4: ISR {b1} ELR {b2, b3}; b1 proposes ISR {b1, b4}: ELR stays {b2, b3}
    assert rules.update_elr(m([0]), m([1, 2]), m([0, 3]), 3) == (m([0, 3]), m([1, 2]), False)
    # a proposed ISR that re-admits an ELR member removes it from the ELR
    assert rules.update_elr(m([0]), m([1, 2]), m([0, 1]), 3) == (m([0, 1]), m([2]), False)


def test_elr_update_allows_an_empty_isr():
    # T5: the last ISR members are fenced: the ISR may be empty now
    assert rules.update_elr(m([3]), m([0, 1, 2]), 0, 3) == (0, m([0, 1, 2, 3]), False)


def test_clean_shutdown_detection_compares_epochs():
    assert rules.registration_is_clean(previous_broker_epoch=4, registered_epoch=4)
    assert not rules.registration_is_clean(previous_broker_epoch=3, registered_epoch=4)
    # "if the broker shuts down before it receives the broker epoch, it will write -1"
    assert not rules.registration_is_clean(previous_broker_epoch=-1, registered_epoch=-1)


def test_election_order_prefers_isr_then_unfenced_elr():
    assert rules.clean_candidates(isr=m([1, 2]), elr=m([0]), fenced=m([2])) == m([1])
    assert rules.clean_candidates(isr=0, elr=m([0, 3]), fenced=m([3])) == m([0])
    assert rules.clean_candidates(isr=m([1]), elr=m([0]), fenced=m([0, 1])) == 0


def test_recovery_rank_is_last_epoch_then_log_length():
    longer_older = log([(0, 1), (0, 2), (0, 3)])
    shorter_newer = log([(0, 1), (2, 4)])
    assert rules.recovery_rank(shorter_newer) > rules.recovery_rank(longer_older)
    assert rules.recovery_rank(log([(1, 1), (1, 2)])) > rules.recovery_rank(log([(1, 1)]))
    assert rules.recovery_rank(log([])) == (-1, 0)


def test_truncation_keeps_the_common_prefix():
    assert logs.common_prefix_len(log([(0, 1), (0, 2)]), log([(0, 1), (1, 3)])) == 1
    assert logs.common_prefix_len(log([]), log([(0, 1)])) == 0
    assert logs.common_prefix_len(log([(0, 1)]), log([(0, 1), (0, 2)])) == 1
    assert logs.common_prefix_len(log([(0, 1), (0, 2)]), log([(0, 1), (0, 2)])) == 2


def test_epoch_start_offset():
    entries = log([(0, 1), (0, 2), (3, 3)])
    assert rules.epoch_start_offset(entries, 3) == 2
    assert rules.epoch_start_offset(entries, 4) == 3


def test_a_packed_log_behaves_as_its_list_of_entries():
    entries = [(0, 1), (5, 2), (31, 7)]
    packed = log(entries)
    assert logs.entries(packed) == entries and logs.length(packed) == 3
    assert logs.entries(logs.prefix(packed, 2)) == entries[:2] and logs.prefix(packed, 9) == packed
    assert logs.is_prefix(logs.prefix(packed, 1), packed) and not logs.is_prefix(packed, logs.prefix(packed, 1))
    assert logs.last_epoch(packed, -1) == 31 and logs.last_epoch(log([]), -1) == -1
    assert logs.records(packed) == m([1, 2, 7])
    full = log([(1, r) for r in range(1, 8)])  # MAX_RECORDS entries fill 56 bits
    assert logs.length(full) == 7 and full < 1 << 56


def test_a_log_entry_refuses_an_epoch_it_cannot_hold():
    import pytest

    with pytest.raises(OverflowError, match="exceeds 31"):
        logs.entry(32, 1)
