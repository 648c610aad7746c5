"""--max-violations K: after the shortest counterexample the search goes
on without the invariants already violated, so it reports up to K, each
of its own invariant and each the shortest of that invariant (held here
against a plain breadth-first search of the interpreted spec), the same
on every engine, in check's text and JSON and in the gate."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli import main
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from specs.kafka_elr import load

# no-unclean-detection breaks three invariants here, in 5,942 states
THREE = {"variant": "no-unclean-detection", "brokers": 2, "min_isr": 1, "max_records": 1}
SETS = [x for k, v in THREE.items() for x in ("--set", f"{k}={v}")]


def shortest_violations(spec) -> tuple[dict[str, int], int]:
    """Each checked invariant's shortest counterexample, in steps (a plain
    search of the interpreted spec, level by level; absent: it holds), and
    how many states are reachable."""
    found: dict[str, int] = {}
    level = {spec.encode(s): s for s in spec.init_states()}
    seen, depth = set(level), 0
    while level:
        for state in level.values():
            for name in spec.violated(state):
                found.setdefault(name, depth)
        following = {}
        for state in level.values():
            for _name, _args, nxt in spec.successors(state):
                key = spec.encode(nxt)
                if key not in seen:
                    seen.add(key)
                    following[key] = nxt
        level, depth = following, depth + 1
    return found, len(seen)


@pytest.mark.parametrize("engine", ["bfs", "fast"])
def test_each_further_violation_is_the_shortest_of_an_invariant_not_violated_before(engine):
    spec = load(THREE)
    shortest, reachable = shortest_violations(spec)
    assert len(shortest) == 3
    result = run(spec, CheckOptions.of(engine, max_violations=5))
    found = [result, *result.further]
    assert all(
        r.run_info.get("kernel", "interpreted") == ("compiled" if engine == "fast" else "interpreted") for r in found
    )
    assert [r.invariant for r in found] == sorted(shortest, key=shortest.get)
    for r in found:
        assert len(r.trace) - 1 == shortest[r.invariant]
        assert r.invariant in spec.violated(r.trace[-1].state)  # replayed by the engine; the last state breaks it
    assert result.run_info["others_hold_in"] == reachable  # the last search was complete
    one = run(load(THREE), CheckOptions.of(engine))
    assert (one.invariant, one.distinct_states, len(one.trace)) == (
        result.invariant,
        result.distinct_states,
        len(result.trace),
    )


def test_k_bounds_the_violations_and_the_engines_agree():
    spec = load(THREE)
    two = {e: run(spec, CheckOptions.of(e, max_violations=2)) for e in ("bfs", "fast")}
    for r in two.values():
        assert len(r.further) == 1 and "others_hold_in" not in r.run_info
    described = {e: [(x.invariant, x.distinct_states, len(x.trace)) for x in (r, *r.further)] for e, r in two.items()}
    assert described["bfs"] == described["fast"]


def test_check_prints_and_reports_every_violation():
    r = CliRunner().invoke(main, ["check", *SETS, "--max-violations", "5", "-q"])
    assert r.exit_code == 1, r.output
    lines = [line for line in r.stdout.splitlines() if line.startswith(("violated", "holds"))]
    assert [line.split(" after ")[0] for line in lines[:3]] == [
        "violated: NoAckedLoss",
        "violated (2): ElrHasDataToHwm",
        "violated (3): ConsistentRead",
    ]
    assert lines[3].startswith("holds: the 13 other invariants hold in every reachable state (5,942 states")
    r = CliRunner().invoke(main, ["check", *SETS, "--max-violations", "2", "--json"])
    out = json.loads(r.stdout)
    assert (out["invariant"], [f["invariant"] for f in out["further"]]) == ("NoAckedLoss", ["ElrHasDataToHwm"])
    assert len(out["further"][0]["trace"]) == out["further"][0]["depth"]


def test_one_violation_is_the_default_and_max_violations_with_a_checkpoint_is_refused(tmp_path):
    r = CliRunner().invoke(main, ["check", *SETS, "--json"])
    assert json.loads(r.stdout)["further"] == []
    r = CliRunner().invoke(main, ["check", *SETS, "--max-violations", "2", "--checkpoint", str(tmp_path / "c")])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith("error: --max-violations 2 with --checkpoint: ") and r.stderr.count("\n") == 1
    assert not (tmp_path / "c").exists()
    r = CliRunner().invoke(main, ["check", *SETS, "--max-violations", "0"])
    assert r.exit_code == 2 and "'--max-violations': 0 is not in the range x>=1" in r.stderr


def gate_file(tmp_path, further: list[str], most: int = 3) -> str:
    config = ", ".join(f"{k} = {json.dumps(v)}" for k, v in THREE.items())
    path = tmp_path / "gate.toml"
    path.write_text(
        "[defaults]\n\n[[entry]]\n"
        f'name = "three"\nconfig = {{ {config} }}\nexpect = "violated: NoAckedLoss"\n'
        f"max_violations = {most}\nfurther = {json.dumps(further)}\n"
    )
    return str(path)


def test_the_gate_pins_and_reports_the_further_violations(tmp_path):
    ok = CliRunner().invoke(main, ["gate", gate_file(tmp_path, ["ElrHasDataToHwm", "ConsistentRead"]), "--json"])
    assert ok.exit_code == 0, ok.output
    (entry,) = json.loads(ok.stdout)
    assert entry["further"] == ["ElrHasDataToHwm", "ConsistentRead"]
    said = " ".join(ok.stderr.split())  # the console wraps at 80 columns
    assert "passed: three: violated: NoAckedLoss, then violated: ElrHasDataToHwm, then violated: ConsistentRead" in said
    bad = CliRunner().invoke(main, ["gate", gate_file(tmp_path, ["ConsistentRead"], most=2)])
    assert bad.exit_code == 1
    assert "further violations: expected ['ConsistentRead'], got ['ElrHasDataToHwm']" in " ".join(bad.stderr.split())
    refused = CliRunner().invoke(main, ["gate", gate_file(tmp_path, ["ConsistentRead"], most=1)])
    assert refused.exit_code == 2 and "further is ['ConsistentRead']; allowed:" in refused.stderr


@pytest.mark.slow
def test_spark_finds_the_same_violations():
    spec = load(THREE)
    fast, spark = (
        run(spec, CheckOptions.of(e, max_violations=5, master=m)) for e, m in (("fast", None), ("spark", "local[2]"))
    )
    assert [(r.invariant, r.distinct_states, len(r.trace)) for r in (spark, *spark.further)] == [
        (r.invariant, r.distinct_states, len(r.trace)) for r in (fast, *fast.further)
    ]
    assert len(spark.further) == 2 and spark.run_info["others_hold_in"] == fast.run_info["others_hold_in"]


def test_a_temporal_property_violated_once_the_other_invariants_hold_ends_the_list():
    """Properties are checked once every invariant holds: past the three
    invariants, the property's lasso is the last violation reported."""
    config = {**THREE, "properties": ["LeaderlessGetsLeader"]}
    result = run(load(config), CheckOptions.of("fast", max_violations=6))
    found = [(r.invariant, r.loop is not None) for r in (result, *result.further)]
    assert found == [
        ("NoAckedLoss", False),
        ("ElrHasDataToHwm", False),
        ("ConsistentRead", False),
        ("LeaderlessGetsLeader", True),
    ]
    assert "others_hold_in" not in result.run_info
