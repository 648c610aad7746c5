"""`modelcheck simulate`: random walks are deterministic for a seed (the
same walks, counts and trace compiled or interpreted, on any number of
workers, whatever the pick), the default pick (swarm) finds the N=5 data
loss the old uniform default missed, a violation is shrunk to a
counterexample as short as check's and re-validated, exit codes and
output are check's, Ctrl-C stops the walks and their workers."""

from __future__ import annotations

import json
import signal

import pytest
from click.testing import CliRunner
from processes import alive, descendants, start, wait_for

from cli import main
from modelcheck.engine.kernel import kernel_for
from modelcheck.engine.walks.plan import PICKS, Stream, pick, plan, swarm_weights
from modelcheck.engine.walks.simulate import simulate
from modelcheck.trace import validate
from modelcheck.views.tracefile import open_trace
from specs.kafka_elr import load

TWO_UNCLEAN = {"max_unclean_shutdowns": 2}  # check: NoAckedLoss in 6 steps (docs/verdicts.md)
ISSUE_29 = [
    "--set",
    "brokers=5",
    "--set",
    "min_isr=3",
    "--set",
    "max_unclean_shutdowns=3",
    "--walks",
    "20000",
    "--depth",
    "60",
]  # uniform picks found nothing here (seeds 0 and 7)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def summary(r):
    return (
        r.verdict,
        r.invariant,
        r.walks,
        r.states_visited,
        r.distinct_seen,
        r.coverage,
        [(s.action, s.args) for s in r.trace],
        r.shrink.get("walk"),
        r.shrink.get("walk_steps"),
    )


def test_the_stream_is_splitmix64():
    s = Stream(0, 0)
    assert [s.next() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]  # splitmix64 from 0
    assert 0 <= Stream(7, 3).uniform() < 1


def test_pick_by_weight():
    p = plan(load({}), 1, 1, 0, {"Fetch": 0}, "instance")
    fetch = p.label_action.index(list(load({}).actions).index("Fetch"))
    produce = p.label_action.index(list(load({}).actions).index("Produce"))
    assert [pick(u, [fetch, produce, fetch], p) for u in (0.0, 0.5, 0.999)] == [1, 1, 1]
    p = plan(load({}), 1, 1, 0, {}, "action")  # Produce's one instance weighs as Fetch's two together
    assert [pick(u, [fetch, produce, fetch], p) for u in (0.2, 0.3, 0.6, 0.8)] == [0, 1, 1, 2]


def test_a_swarm_walk_keeps_about_half_the_actions_at_its_own_weights():
    spec = load({})
    labels = spec.coverage_labels
    fetch, fence, produce = (labels.index(a) for a in ("Fetch", "FenceBroker", "Produce"))
    plain = plan(spec, 1, 1, 0, {}, "swarm")
    kept = [swarm_kept(spec, plain, walk) for walk in (0, 4, 5)]
    # only actions this config can enable are drawn (16 of 32 here are not)
    assert kept[0] == [
        "CommitAlterPartition",
        "CompleteRecovery",
        "ElectLeader",
        "ExpandIsr",
        "FenceBroker",
        "ShrinkIsr",
        "StartBroker",
    ]
    dormant = spec.never_enabled()
    assert len(dormant) == 16 and not any(a in dormant for walk in range(50) for a in swarm_kept(spec, plain, walk))
    assert "Fetch" not in kept[0] and "Fetch" in kept[1] and kept[1] != kept[2]  # each walk its own mix
    assert all(0 < w < 1 for w in swarm_weights(Stream(0, 0), plain) if w > 0)
    # --weight multiplies a walk's own weight; 0 leaves the action out of every walk
    weighted = plan(spec, 1, 1, 0, {"Fetch": 2, "FenceBroker": 0}, "swarm")
    for walk in range(20):
        mine, theirs = swarm_weights(Stream(0, walk), plain), swarm_weights(Stream(0, walk), weighted)
        assert theirs[fetch] == 2 * mine[fetch] and theirs[fence] == 0
    assert swarm_weights(Stream(0, 4), plain)[fence] > 0
    # never none: with every other action weighted 0, every walk keeps Produce
    only = plan(spec, 1, 1, 0, {name: 0 for name in spec.actions if name != "Produce"}, "swarm")
    assert all(swarm_weights(Stream(0, walk), only)[produce] > 0 for walk in range(200))


def swarm_kept(spec, p, walk: int) -> list[str]:
    return [spec.coverage_labels[i] for i, w in enumerate(swarm_weights(Stream(0, walk), p)) if w > 0]


def test_a_swarm_step_takes_a_kept_action_else_any():
    spec = load({})
    p = plan(spec, 1, 1, 0, {}, "swarm")
    fetch, produce = (spec.coverage_labels.index(a) for a in ("Fetch", "Produce"))
    walk = [0.0] * len(p.label_weight)
    walk[produce] = 0.3  # this walk kept Produce only
    assert [pick(u, [fetch, produce, fetch], p, tuple(walk)) for u in (0.0, 0.5, 0.999)] == [1, 1, 1]
    walk[produce] = 0.0  # nothing kept is enabled: as --pick action
    assert [pick(u, [fetch, produce, fetch], p, tuple(walk)) for u in (0.2, 0.3, 0.6, 0.8)] == [0, 1, 1, 2]


@pytest.mark.parametrize(
    "by, weights",
    [
        ("instance", {}),
        ("action", {}),
        ("instance", {"Fetch": 0.5}),
        ("swarm", {}),
        ("swarm", {"Fetch": 2, "FenceBroker": 0}),
    ],
)
@pytest.mark.slow
def test_compiled_and_interpreted_walks_agree_exactly(by, weights):
    spec = load(TWO_UNCLEAN)
    p = plan(spec, 200, 40, 3, weights, by)
    compiled = simulate(spec, p, kernel=kernel_for(spec))
    assert summary(compiled) == summary(simulate(spec, p))
    assert compiled.run_info["kernel"] == "compiled"


def test_a_violation_is_shrunk_to_checks_shortest_and_revalidated():
    spec = load(TWO_UNCLEAN)
    r = simulate(spec, plan(spec, 300, 40, 3, {}, "action"), kernel=kernel_for(spec))
    assert (r.verdict, r.invariant, r.walks, r.states_visited, r.distinct_seen) == (
        "violated",
        "NoAckedLoss",
        95,
        2506,
        2188,
    )
    assert r.shrink["walk"] == 94 and r.shrink["walk_steps"] == 14 and len(r.walk_trace) == 15
    assert len(r.trace) - 1 == 6 == r.shrink["steps"]  # check's shortest at N=3 is 6 steps
    validate(spec, r.trace, "NoAckedLoss")
    assert [s.action for s in r.trace[1:]] == [
        "FenceBroker",
        "Produce",
        "Fetch",
        "AdvanceHwm",
        "UncleanShutdown",
        "UncleanShutdown",
    ]


def test_walks_run_on_the_machine_code_the_engines_compiled():
    """The walks called the kernel with literal 0 and 1, for which numba
    compiled the whole successor function a second time (about 45 s of one
    core on the first simulate of a variant): the kernel's entry points
    keep the one signature the engines compiled, with int64 arguments."""
    spec = load(TWO_UNCLEAN)
    kernel = kernel_for(spec)
    assert simulate(spec, plan(spec, 20, 10, 1, {}, "swarm"), kernel=kernel).run_info["kernel"] == "compiled"
    for entry in (kernel.module.expand, kernel.module.check):
        assert len(entry.signatures) == 1, entry.signatures
        assert "Literal" not in str(entry.signatures[0])


@pytest.mark.parametrize("by", ["action", "swarm"])
def test_workers_give_the_same_result(by):
    spec = load(TWO_UNCLEAN)
    p = plan(spec, 300, 40, 3, {}, by)
    kernel = kernel_for(spec)
    assert summary(simulate(spec, p, kernel=kernel, workers=2)) == summary(simulate(spec, p, kernel=kernel))


def test_swarm_walks_are_the_same_every_run():
    spec = load(TWO_UNCLEAN)
    p = plan(spec, 300, 40, 3, {}, "swarm")
    kernel = kernel_for(spec)
    first = simulate(spec, p, kernel=kernel)
    assert summary(first) == summary(simulate(spec, p, kernel=kernel)) == summary(simulate(spec, p, kernel=kernel))
    assert (first.invariant, first.walks, first.states_visited, first.distinct_seen, first.shrink["walk"]) == (
        "NoAckedLoss",
        13,
        352,
        331,
        12,
    )


def test_swarm_is_the_default_pick():
    assert PICKS[0] == "swarm" and plan(load({}), 1, 1, 0).by == "swarm"


@pytest.mark.parametrize(
    "seed, walk, actions",
    [
        (
            0,
            1874,
            [
                "FenceBroker",
                "UnfenceBroker",
                "ExpandIsr",
                "CommitAlterPartition",
                "ShrinkIsr",
                "CommitAlterPartition",
                "Produce",
                "Fetch",
                "Fetch",
                "AdvanceHwm",
                "UncleanShutdown",
                "UncleanShutdown",
                "UncleanShutdown",
            ],
        ),
        (
            7,
            302,
            [
                "Produce",
                "Fetch",
                "Fetch",
                "Fetch",
                "Fetch",
                "AdvanceHwm",
                "ShrinkIsr",
                "CommitAlterPartition",
                "FenceBroker",
                "UncleanShutdown",
                "UncleanShutdown",
                "UncleanShutdown",
            ],
        ),
    ],
)
@pytest.mark.slow
def test_the_default_pick_finds_the_n5_data_loss(seed, walk, actions):
    """Issue 29: with 5 brokers, min ISR 3 and three unclean shutdowns the
    uniform default found nothing in 20,000 walks on these seeds."""
    r = invoke("simulate", *ISSUE_29, "--seed", str(seed), "--json")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert (d["pick"], d["verdict"], d["invariant"], d["walks"], d["shrink"]["walk"]) == (
        "swarm",
        "violated",
        "NoAckedLoss",
        walk + 1,
        walk,
    )
    assert [s["action"] for s in d["trace"][1:]] == actions


def test_cli_json_and_the_trace_it_writes(tmp_path):
    out = tmp_path / "t.json"
    r = invoke(
        "simulate",
        "--set",
        "max_unclean_shutdowns=2",
        "--walks",
        "300",
        "--depth",
        "40",
        "--seed",
        "3",
        "--pick",
        "action",
        "--json",
        "--trace-out",
        str(out),
    )
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert {
        k: d[k]
        for k in (
            "verdict",
            "invariant",
            "walks",
            "states_visited",
            "distinct_seen",
            "seed",
            "exhaustive",
            "walk_steps",
        )
    } == {
        "verdict": "violated",
        "invariant": "NoAckedLoss",
        "walks": 95,
        "states_visited": 2506,
        "distinct_seen": 2188,
        "seed": 3,
        "exhaustive": False,
        "walk_steps": 14,
    }
    assert len(d["trace"]) == 7 and d["trace"][0]["action"] is None and d["coverage"]["UncleanShutdown"] == 190
    _spec, tf, steps = open_trace(str(out), load)  # replayed through the spec as it is read
    assert tf.invariant == "NoAckedLoss" and [s.action for s in steps] == [s["action"] for s in d["trace"]]
    assert invoke("trace", "show", str(out)).exit_code == 0


def test_nothing_found_is_never_holds():
    r = invoke("simulate", "--walks", "50", "--depth", "30", "--seed", "1")
    assert r.exit_code == 0, r.output
    assert "nothing found" in r.stdout and "Not exhaustive" in r.stdout and "holds" not in r.stdout
    assert "walks: 50  states visited:" in r.stdout and "never taken:" in r.stdout
    d = json.loads(invoke("simulate", "--walks", "50", "--depth", "30", "--seed", "1", "--json").stdout)
    assert d["verdict"] == "nothing found" and d["invariant"] is None and d["trace"] == [] and d["walks"] == 50


@pytest.mark.parametrize(
    "args, message",
    [
        (["--weight", "Bogus=1"], "--weight Bogus: no such action"),
        (["--weight", "Fetch=-1"], "--weight Fetch=-1.0: a weight is a finite number >= 0"),
        (["--weight", "Fetch"], "--weight 'Fetch': expected ACTION=W"),
        (["--master", "local[2]"], "--master applies to --engine spark only"),
        (["--engine", "spark", "--workers", "2"], "--workers applies to --engine local"),
        (["--set", "brokers=9"], "brokers"),
        (["--trace-out", "/nonexistent/dir/t.json"], "--trace-out"),
        (["--seed", str(2**64)], f"--seed {2**64}: allowed: 0 to 2^64 - 1 ({2**64 - 1})"),  # exit 3 before
        (["--depth", "100001"], "--depth 100001: allowed: 1 to 100,000 steps a walk"),
        (["--max-memory", "lots"], "--max-memory 'lots': expected a size such as 512M"),
    ],
)
def test_bad_input_is_one_line(args, message):
    r = invoke("simulate", *args)
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_walks_and_their_workers():
    proc = start("simulate", "--walks", "100000000", "--workers", "2")
    try:
        workers = wait_for(lambda: [p for p in descendants(proc.pid) if alive(p)], 60, "the workers")
        wait_for(lambda: len([p for p in descendants(proc.pid) if alive(p)]) >= 2, 60, "two workers")
        workers = descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        err = proc.stderr.read().decode()
        assert "simulate stopped by SIGINT after" in err and "Traceback" not in err, err
        wait_for(lambda: not any(alive(p) for p in workers), 10, "the workers to end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_a_stopped_simulation_prints_its_json():
    """--json printed nothing when a signal stopped the walks."""
    proc = start("simulate", "--walks", "100000000", "--workers", "2", "--json")
    try:
        wait_for(lambda: len([p for p in descendants(proc.pid) if alive(p)]) >= 2, 60, "two workers")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 143
        out = json.loads(proc.stdout.read())
        assert (out["verdict"], out["reason"], out["exhaustive"], out["seed"]) == (
            "stopped",
            "stopped by SIGTERM",
            False,
            0,
        )
        assert out["states_visited"] >= out["distinct_seen"] >= 0 and out["elapsed_s"] > 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_simulate_refuses_temporal_properties_in_one_line():
    """A walk is finite: it cannot show a fair cycle, so a config asking
    for properties is refused rather than reported as nothing found."""
    from click.testing import CliRunner

    from cli import main

    r = CliRunner().invoke(main, ["simulate", "--set", 'properties=["LeaderlessGetsLeader"]', "--walks", "10"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("error: properties: random walks check invariants only") and r.stderr.count("\n") == 1


# ---- resources: nothing in proportion to --walks, memory bounded, workers capped --------------


def test_more_workers_than_cpus_run_as_many_as_the_cpus_with_a_warning(monkeypatch):
    """`-w 40` forked 40 processes on 2 cores."""
    import modelcheck.engine.walks.simulate as engine

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(engine, "_on_processes", lambda *a: pytest.fail(f"{a[4]} worker processes on one CPU"))
    r = invoke("simulate", "--walks", "64", "--depth", "30", "--workers", "40", "--json", "-q")
    assert r.exit_code == 0, r.output
    assert r.stderr == "warning: --workers 40: 1 CPU(s) here; running 1 worker process(es)\n"
    assert json.loads(r.stdout)["workers"] == 1


def test_past_the_memory_limit_the_walks_stop_in_one_line_exit_2():
    r = invoke("simulate", "--walks", str(10**20), "--max-memory", "10M", "-q")
    assert (r.exit_code, r.stdout) == (2, ""), r.output
    assert r.stderr.startswith(
        "simulate stopped at the memory limit 10.0 MiB (--max-memory; the distinct states seen grow with the "
        "walks) after "
    )
    assert r.stderr.count("\n") == 1 and "no verdict: " in r.stderr and " 0 states visited" not in r.stderr


@pytest.mark.slow
def test_walks_by_the_10_to_the_20_start_at_once_and_hold_little_memory():
    """1e8 walks held 513 MB before the first walk, a 20-digit number 21.7 GB."""
    import resource
    import subprocess
    import threading
    from pathlib import Path

    def limited() -> None:  # the old code must fail this test, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    proc = subprocess.Popen(
        ["modelcheck", "simulate", "--walks", str(10**20)], stderr=subprocess.PIPE, text=True, preexec_fn=limited
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True).start()
    try:
        first = lambda: next((x for x in lines if x.startswith("walks ")), None) or proc.poll() is not None  # noqa: E731
        note = wait_for(first, 60, "the first walks")
        assert note is not True, lines  # it ended without walking
        assert note.split()[1].endswith(f"/{10**20:,}") and int(note.split()[1].split("/")[0].replace(",", "")) > 0
        status = Path(f"/proc/{proc.pid}/status").read_text()
        peak = int(next(x for x in status.splitlines() if x.startswith("VmHWM:")).split()[1]) << 10
        assert peak < 400 << 20, f"{peak >> 20} MiB"  # about 180 MiB: Python, numpy, numba and the kernel
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any(x.startswith("simulate stopped by SIGTERM after ") for x in lines), lines
