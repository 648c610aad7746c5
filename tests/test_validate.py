"""`modelcheck validate`: metadata logs written by the oracle of Kafka
4.0.0's controller (tests/metalogs.py) validate against kafka-4; planted
deviations are caught at the planted record; what is not a metadata log
is one line and exit 2."""

from __future__ import annotations

import json
import random
from collections import deque
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from metalogs import (
    TOPIC,
    TOPIC_ID,
    Placement,
    cluster_log,
    from_snapshot,
    oracle_log,
    planted,
    repeated_log,
    rolling_restarts,
    scenario_log,
)

from cli import main
from modelcheck.config import ConfigError, read_file
from modelcheck.engine.observed import validate
from modelcheck.runs.replay import parse_steps, split_scenario
from specs.kafka_elr import load, observe
from specs.kafka_elr.observation import LogObserved

ROOT = Path(__file__).parent.parent
CONFORMANCE = sorted((ROOT / "specs" / "scenarios" / "conformance").glob("*.toml"))
BIG = 10**6
# the oracle's walks: every controller event of kafka-4 but reassignments, unbounded
WALK = {
    "variant": "kafka-4",
    "max_records": 0,
    "controlled_shutdown": "staged",
    **{
        k: BIG
        for k in (
            "max_fences",
            "max_unclean_shutdowns",
            "max_clean_shutdowns",
            "max_isr_shrinks",
            "max_min_isr_changes",
            "max_admin_elections",
            "max_unclean_switches",
        )
    },
}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def options(**given) -> dict:
    return {"variant": "kafka-4", "partition": None, "min_isr": 2, "unclean_leader_election": False, **given}


def payloads(text: str) -> list[tuple[int, dict]]:
    """Each record line's offset and payload."""
    out = []
    for line in text.splitlines():
        if line.startswith("| offset: ") and " payload: " in line:
            out.append((int(line.split()[2]), json.loads(line.partition(" payload: ")[2])))
    return out


@pytest.fixture(scope="module")
def walks() -> list[tuple[str, list]]:
    spec = load(WALK)
    return [oracle_log(spec, 300, seed) for seed in range(6)]


@pytest.mark.slow
def test_the_oracles_logs_are_behaviours_of_kafka_4(walks):
    fired: set[str] = set()
    for text, _taken in walks:
        verdict = validate(observe(text, "log", options()))
        assert verdict.consistent, verdict.deviation
        assert verdict.records == len(observe(text, "log", options()).expected) > 100
        assert len(verdict.witness) > verdict.records  # replayed through the spec, hidden steps included
        fired |= set(verdict.coverage)
    # the walks exercised every kind of controller decision the log shows
    assert {
        "AdminElectLeaders",
        "AlterMinIsr",
        "AlterUncleanLeaderElection",
        "BeginControlledShutdown",
        "CommitAlterPartition",
        "StartBroker",
        "UnfenceBroker",
    } <= fired


def first_at(text: str, wanted) -> tuple[int, dict]:
    """The first record (offset, payload) after the partition's creation that `wanted` picks."""
    found = [(o, p) for o, p in payloads(text) if wanted(p)]
    assert found, "no record of the kind to plant in"
    return found[0]


def deviation_at(text: str, offset: int, variant: str = "kafka-4"):
    verdict = validate(observe(text, "log", options(variant=variant)))
    assert not verdict.consistent
    obs = observe(text, "log", options(variant=variant))
    planted_record = next(p for o, p in payloads(text) if o == offset)
    batch = obs.expected[verdict.deviation]
    assert json.dumps(planted_record, separators=(",", ":")) in batch.text
    assert f"(offset {offset})" in batch.where or f"offset {offset - 1})" in batch.where
    return verdict


def is_change(p: dict) -> bool:
    return p["type"] == "PARTITION_CHANGE_RECORD"


def test_an_elr_member_missing_after_a_shrink_below_min_isr_is_caught_there(walks):
    text = walks[0][0]
    offset, _ = first_at(text, lambda p: is_change(p) and p["data"].get("eligibleLeaderReplicas"))
    bad = planted(text, offset, lambda p: {**p, "data": {**p["data"], "eligibleLeaderReplicas": []}})
    verdict = deviation_at(bad, offset)
    assert verdict.before and verdict.allowed
    assert any("eligibleLeaderReplicas" in d for a in verdict.allowed for d in a.differences)


def test_an_election_outside_isr_and_elr_with_unclean_election_off_is_caught_there(walks):
    text = walks[0][0]
    offset, p = first_at(
        text, lambda p: is_change(p) and p["data"].get("leader", -2) >= 0 and len(p["data"].get("isr", [0, 0])) == 1
    )
    leader = p["data"]["leader"]
    other = next(b for b in (4, 7, 9) if b != leader)
    # the new leader is a replica the record puts in neither the ISR nor the ELR
    data = {**p["data"], "leader": other, "isr": [leader]}
    verdict = deviation_at(planted(text, offset, lambda q: {**q, "data": data}), offset)
    assert verdict.allowed


def test_a_leader_epoch_bump_the_protocol_does_not_make_is_caught_there(walks):
    """A 4.0 log cannot leave an epoch unbumped (a `leader` field is the
    bump), so the plantable epoch deviation is the other one: a record
    that bumps the epoch and changes nothing (`"leader"` set to the
    current leader) where no rule of kafka-4 does so."""
    text = walks[1][0]
    offset, p = first_at(text, lambda p: is_change(p) and "leader" not in p["data"] and "isr" in p["data"])
    leader = current_leader(text, offset)
    bad = planted(text, offset, lambda q: {**q, "data": {**q["data"], "leader": leader}})
    verdict = deviation_at(bad, offset)
    assert any("leader epoch bumps" in d for a in verdict.allowed for d in a.differences)


def current_leader(text: str, before: int) -> int:
    leader = -1
    for o, p in payloads(text):
        if o >= before:
            break
        if p["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and "leader" in p["data"]:
            leader = p["data"]["leader"]
    return leader


def test_a_broker_in_controlled_shutdown_elected_is_caught_there(walks):
    """The controlled-shutdown flag ignored: a broker that asked to shut
    down (BrokerRegistrationChangeRecord inControlledShutdown 1) is not an
    acceptable leader (ClusterControlManager.isActive)."""
    for text, _ in walks:
        records = payloads(text)
        for i, (_, p) in enumerate(records):
            if p["type"] != "BROKER_REGISTRATION_CHANGE_RECORD" or p["data"].get("inControlledShutdown") != 1:
                continue
            b = p["data"]["brokerId"]
            move = next(
                ((o2, q) for o2, q in records[i + 1 :] if is_change(q) and q["data"].get("leader", -2) not in (-2, b)),
                None,
            )
            later = [q for o2, q in records[i + 1 :] if move and o2 < move[0]]
            if move is None or any(q["type"] != "PARTITION_CHANGE_RECORD" for q in later):
                continue
            offset = move[0]
            bad = planted(text, offset, lambda q, b=b: {**q, "data": {**q["data"], "leader": b}})
            deviation_at(bad, offset)
            return
    pytest.fail("no controlled shutdown followed by an election in the walks")


@pytest.mark.slow
def test_a_long_rolling_restart_log_meets_few_states():
    spec = load(WALK)
    text = repeated_log(spec, rolling_restarts(3), 200)
    obs = observe(text, "log", options())
    verdict = validate(obs)
    assert verdict.consistent and verdict.records == 3000
    # the memo answers repeats: the states met do not grow with the log
    shorter = validate(observe(repeated_log(spec, rolling_restarts(3), 20), "log", options()))
    assert verdict.states == shorter.states
    assert verdict.widest == shorter.widest and verdict.widest_hidden == shorter.widest_hidden


def test_json_lines_are_read_as_the_dump_is(walks):
    text = walks[2][0]
    lines, batch = [], -1
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            batch += 1
        elif line.startswith("| offset:"):
            lines.append(json.dumps({**json.loads(line.partition(" payload: ")[2]), "batch": batch}))
    a = observe(text, "dump", options())
    b = observe("\n".join(lines), "jsonl", options())
    assert [e.key for e in a.expected] == [e.key for e in b.expected]
    assert validate(b).consistent


def test_normal_forms_only_what_equality_reads():
    """`normal` is sound for the search only if it commutes with the spec's
    steps: from every state the oracle walks reach (epochs, counters and
    clean-shutdown files at their real values), the normal successors and
    their observations are those of the normal state."""
    spec = load(WALK)
    text, _ = oracle_log(spec, 120, 11)
    obs = observe(text, "log", options())
    assert isinstance(obs, LogObserved)
    wide = obs.spec_for([("x", ())] * 1000)
    todo, seen, checked = deque(wide.init_states()), set(), 0
    while todo and checked < 400:
        s = todo.popleft()
        if s in seen:
            continue
        seen.add(s)
        checked += 1
        n = obs.normal(s)
        mine = {(a, repr(g), obs.observation(s, t), obs.normal(t)) for a, g, t in wide.successors(s)}
        theirs = {(a, repr(g), obs.observation(n, t), obs.normal(t)) for a, g, t in obs.spec.successors(n)}
        assert mine == theirs, s
        todo.extend(t for _, _, t in wide.successors(s))
    assert checked == 400


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty: not a metadata log"),
        ("hello world\n", "line 1: not a line kafka-dump-log"),
        ('{"type":"PARTITION_RECORD","version":2,"data":{"partitionId":0,', "line 1: the record does not parse"),
        ('{"type":"NOT_A_RECORD","version":0,"data":{}}\n', "'NOT_A_RECORD' is not a metadata record type"),
        ('{"type":"TOPIC_RECORD","version":7,"data":{}}\n', "TOPIC_RECORD has versions 0 to 0, not 7"),
        ('{"type":"NO_OP_RECORD","version":0,"data":{}}\n', "the log creates no partition"),
    ],
)
def test_what_is_not_a_metadata_log_is_one_line_and_exit_2(tmp_path, content, message):
    log = tmp_path / "meta.txt"
    log.write_text(content)
    r = invoke("validate", str(log))
    assert r.exit_code == 2, r.output
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_record_that_touches_the_partition_but_is_not_modelled_is_exit_2(walks, tmp_path):
    text = walks[0][0]
    offset, _ = first_at(text, is_change)
    bad = planted(text, offset, lambda q: {**q, "data": {**q["data"], "replicas": [4, 7, 12]}})
    log = tmp_path / "meta.txt"
    log.write_text(bad)
    r = invoke("validate", str(log), "--min-isr", "2")
    assert r.exit_code == 2 and f"(offset {offset}): replicas changes" in r.stderr


@pytest.mark.slow
def test_the_command_line_says_consistent_and_writes_a_witness_the_viewer_shows(walks, tmp_path):
    log, out = tmp_path / "meta.txt", tmp_path / "w.json"
    log.write_text(walks[3][0])
    r = invoke("validate", str(log), "--min-isr", "2", "--trace-out", str(out), "--partition", f"{TOPIC}:0")
    assert r.exit_code == 0, r.output
    assert f"validate {TOPIC}:0 (replicas 4, 7, 9) against kafka-4: consistent" in r.stdout
    shown = invoke("trace", "show", str(out))
    assert shown.exit_code == 0, shown.output
    r = invoke("validate", str(log), "--min-isr", "2", "--json", "--partition", f"{TOPIC_ID}:0")
    assert json.loads(r.stdout)["verdict"] == "consistent"
    r = invoke("validate", str(log), "--partition", "orders:5")
    assert r.exit_code == 2 and "no such partition (it has: orders:0)" in r.stderr


def test_a_deviation_exits_1_and_names_the_record(walks, tmp_path):
    text = walks[0][0]
    offset, _ = first_at(text, lambda p: is_change(p) and p["data"].get("eligibleLeaderReplicas"))
    log = tmp_path / "meta.txt"
    log.write_text(planted(text, offset, lambda p: {**p, "data": {**p["data"], "eligibleLeaderReplicas": []}}))
    r = invoke("validate", str(log), "--min-isr", "2")
    assert r.exit_code == 1, r.output
    assert "DEVIATION at line" in r.stdout and str(offset) in r.stdout
    assert "the closest steps it allows there" in r.stdout


# what a metadata log cannot show: the difference lives in the data plane
DATA_PLANE = {"partition-hwm-unfenced-follower-out-of-isr": "the high watermark is not in the metadata log"}
# scenarios of a Kafka builder setting the oracle does not run
OTHER_BUILDER = {
    "pcb-remove-unclean-shutdown-replicas-from-elr": "Kafka's test turns useLastKnownLeaderInBalancedRecovery off",
}


@pytest.mark.slow
@pytest.mark.parametrize("path", CONFORMANCE, ids=lambda p: p.stem)
def test_the_conformance_scenarios_as_logs_keep_their_status(path):
    """Each of Kafka 4.0.0's tests that the conformance suite replays, as the
    log Kafka's controller (the oracle) writes for its steps, validated
    against the scenario's variant: `agree` is consistent, `differs` is a
    deviation, but where the difference is one the log cannot show."""
    data = read_file(path)
    config, raw = split_scenario(data, path.name)
    if config.get("max_reassignments"):
        pytest.skip("validate does not model reassignments (docs/validate.md)")
    if path.stem in OTHER_BUILDER:
        pytest.skip(OTHER_BUILDER[path.stem])
    spec = load(config)
    text = scenario_log(spec, parse_steps(spec, raw, path.name))
    given = options(variant=spec.variant, min_isr=spec.config["min_isr"])
    given["unclean_leader_election"] = spec.config["unclean_leader_election"]
    verdict = validate(observe(text, path.name, given))
    differs = data["conformance"]["status"] == "differs" and path.stem not in DATA_PLANE
    assert verdict.consistent != differs, (verdict.deviation, verdict.allowed[:2])


def cluster(events: int, seed: int = 3) -> tuple[list[Placement], str]:
    """Nine brokers, four topics of three partitions, each on three of them."""
    rng = random.Random(seed)
    brokers = list(range(101, 110))
    placements = [
        Placement(f"topic-{t}", f"{t:02d}-Ua9dA7GkTPqGVsNtb1y", p, tuple(rng.sample(brokers, 3)))
        for t in range(4)
        for p in range(3)
    ]
    return placements, cluster_log(load(WALK), placements, events, seed)


@pytest.mark.slow
def test_every_partition_of_a_many_broker_log_is_a_behaviour():
    placements, text = cluster(6000)
    assert text.count("| offset:") > 1500
    steps = 0
    for p in placements:
        obs = observe(text, "cluster", options(partition=f"{p.topic}:{p.number}"))
        verdict = validate(obs)
        assert verdict.consistent, (p, verdict.deviation)
        steps += verdict.records
    assert steps > 1500
    # a broker's fence is one batch for all its partitions: planted in one, caught in that one only
    offset, p = first_at(text, lambda p: is_change(p) and p["data"].get("eligibleLeaderReplicas"))
    bad = planted(text, offset, lambda q: {**q, "data": {**q["data"], "eligibleLeaderReplicas": []}})
    names = {pl.topic_id: pl.topic for pl in placements}
    for pl in placements:
        mine = (pl.topic_id, pl.number) == (p["data"]["topicId"], p["data"]["partitionId"])
        verdict = validate(observe(bad, "cluster", options(partition=f"{names[pl.topic_id]}:{pl.number}")))
        assert verdict.consistent != mine, pl


@pytest.mark.slow
def test_every_variant_gives_a_verdict_on_a_kafka_log(walks):
    """Kafka's log against each variant: kafka-4 agrees; the others answer
    (a deviation where they lack what Kafka does, said in a note), never
    refuse the log."""
    from specs.kafka_elr.catalog import VARIANTS

    text = walks[4][0]
    answers = {}
    for variant in VARIANTS:
        obs = observe(text, "log", options(variant=variant))
        answers[variant] = validate(obs, replay_witness=False).consistent
    assert answers["kafka-4"] and not answers["legacy"] and not answers["kip966"]


def test_the_guard_that_refuses_an_action_is_named_by_its_source():
    from modelcheck.guards import refusal

    spec = load({"variant": "kafka-4"})
    s = spec.init_states()[0]
    values = next(v for v, a in spec._instances["StartBroker"] if a == {"broker": 0})
    guard = refusal(spec, "StartBroker", s, values)
    assert guard is not None and guard.function == "start_broker" and guard.file.endswith("broker.py")
    assert "self.running(s, b)" in guard.source and guard.source.endswith("return None")
    enabled = next(v for v, a in spec._instances["ShrinkIsr"] if a == {"brokers": [1]})
    assert refusal(spec, "ShrinkIsr", s, enabled) is None


def test_a_deviation_says_which_guard_refuses_the_actions_that_write_such_records(walks):
    text = walks[0][0]
    offset, _ = first_at(text, lambda p: is_change(p) and p["data"].get("eligibleLeaderReplicas"))
    bad = planted(text, offset, lambda p: {**p, "data": {**p["data"], "eligibleLeaderReplicas": []}})
    verdict = deviation_at(bad, offset)
    assert verdict.refused, "no candidate action was tried"
    for r in verdict.refused:
        assert r.enabled + sum(n for _, n in r.guards) == r.states
        assert all(g.count(":") >= 2 for g, _ in r.guards)  # file:line (function): source


@pytest.mark.slow
@pytest.mark.parametrize("cut", [9, 60, 140])
def test_a_log_that_begins_at_a_snapshot_is_validated_from_there(walks, cut):
    """Old segments deleted after a snapshot: the dump of the .checkpoint
    (the image: registrations, configs, the partition as it was) then the
    segments after it. The spec's first state is one it reaches with the
    snapshot's view; the rest must follow as before, and a planted
    deviation after the snapshot is still caught there."""
    text = from_snapshot(walks[0][0], cut)
    verdict = validate(observe(text, "snapshot", options()))
    assert verdict.consistent and verdict.starts >= 1
    assert (verdict.prefix > 0) == (cut > 9)  # batch 9 is the first after the partition is created
    after = [o for o, p in payloads(text) if is_change(p) and p["data"].get("eligibleLeaderReplicas")]
    offset = next(o for o in after if o > 50)
    bad = planted(text, offset, lambda p: {**p, "data": {**p["data"], "eligibleLeaderReplicas": []}})
    deviation_at(bad, offset)


LOG_FOR_FUZZ = None


def fuzz_base() -> str:
    """A short oracle log (computed once) that the fuzz test breaks."""
    global LOG_FOR_FUZZ
    if LOG_FOR_FUZZ is None:
        LOG_FOR_FUZZ = oracle_log(load(WALK), 40, 2)[0]
    return LOG_FOR_FUZZ


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_fuzz_a_broken_log_is_a_verdict_or_one_line_never_a_traceback(data):
    """Lines dropped, cut short or duplicated, values replaced in payloads:
    the reader refuses with one line (ConfigError) or the search answers."""
    lines = fuzz_base().splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.sampled_from(["drop", "cut", "twice", "value", "json lines"]))
        if how == "drop":
            del lines[i]
        elif how == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        elif how == "twice":
            lines.insert(i, lines[i])
        elif how == "json lines":
            lines = [line.partition(" payload: ")[2] for line in lines if " payload: " in line]
        elif " payload: " in lines[i]:
            head, _, payload = lines[i].partition(" payload: ")
            record = json.loads(payload)
            if record["data"]:
                key = data.draw(st.sampled_from(sorted(record["data"])))
                record["data"][key] = data.draw(
                    st.one_of(
                        st.none(),
                        st.booleans(),
                        st.integers(-3, 12),
                        st.text(max_size=3),
                        st.lists(st.integers(-2, 12), max_size=4),
                    )
                )
            lines[i] = f"{head} payload: {json.dumps(record)}"
        if not lines:
            break
    text = "\n".join(lines) + "\n"
    try:
        obs = observe(text, "fuzzed", options())
    except ConfigError as e:
        assert str(e) and "\n" not in str(e)
        return
    verdict = validate(obs, replay_witness=True)
    assert verdict.consistent or verdict.deviation is not None


def test_a_first_state_the_spec_never_reaches_is_a_deviation_there(tmp_path):
    """A partition created with a leader outside its ISR: no behaviour of
    kafka-4 has that state, and the search for one stops at --start-states."""
    text = oracle_log(load(WALK), 20, 1)[0]
    offset = next(o for o, p in payloads(text) if p["type"] == "PARTITION_RECORD")
    bad = planted(text, offset, lambda p: {**p, "data": {**p["data"], "isr": [7, 9], "leader": 4}})
    log = tmp_path / "meta.txt"
    log.write_text(bad)
    r = invoke("validate", str(log), "--min-isr", "2", "--start-states", "300")
    assert r.exit_code == 1, r.output
    assert f"DEVIATION at the partition's first state (line 23 (offset {offset}))" in r.stdout
    assert "leader 4, isr [7, 9]" in r.stdout and "none of the first 300 states the spec reaches has it" in r.stdout


def test_a_witness_is_replayed_against_the_log_records_as_well_as_the_spec(monkeypatch):
    """The witness is held to the log itself, not only to the spec: its
    steps must show the log's records in order. Here the log read by the
    replay has two different records exchanged after the search: every
    step still replays and ends where the search ended, and the replay
    refuses it at the first step whose record differs."""
    from modelcheck.engine import observed
    from modelcheck.trace import TraceError

    obs = observe(repeated_log(load(WALK), rolling_restarts(3), 2), "log", options())
    assert validate(obs).consistent
    keys = [e.key for e in obs.expected]
    i = next(k for k in range(len(keys) - 1) if keys[k] != keys[k + 1])
    honest = observed.replay

    def with_records_exchanged(o, *args):
        swapped = list(o.expected)
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        monkeypatch.setattr(o, "expected", swapped)
        return honest(o, *args)

    monkeypatch.setattr(observed, "replay", with_records_exchanged)
    with pytest.raises(TraceError, match="shows no record the log has there"):
        validate(obs)
