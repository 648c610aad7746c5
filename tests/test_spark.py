"""The Spark engine reproduces the local engines exactly (verdict, counts,
coverage, the trace itself) on local[1], local[2] and a standalone cluster,
and says in one line what is missing when it cannot start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from derived_specs import LeaderlessKip966
from hypothesis import HealthCheck, given, settings
from spark_cluster import standalone_cluster
from strategies import SMALL, small_enough
from tools import need

from cli import main
from modelcheck.engine import run
from modelcheck.engine.options import CheckOptions
from modelcheck.engine.spark import environment as spark_environment
from modelcheck.engine.spark import session as spark_session
from modelcheck.engine.spark.driver import Search
from specs.kafka_elr import load

need("pyspark", "the spark extra is not installed")

CONFIGS = [
    {"max_records": 1, "max_fences": 0},  # holds, 8,302 states, 17 levels
    {"variant": "legacy"},  # NoAckedLoss, 7 steps
    {"variant": "hwm-on-maximal-isr"},  # ElrHasDataToHwm, 6 steps
]


EXECUTORS = {"spark.modelcheck.driverStates": "0"}  # every level a Spark job


def summary(r):
    return (
        r.verdict,
        r.invariant,
        r.distinct_states,
        r.generated_states,
        r.depth,
        r.coverage,
        [(s.action, s.args) for s in r.trace],
        r.goals,
    )


@pytest.mark.parametrize(
    "master,partitions,config",
    [(m, None, c) for m in ("local[1]", "local[2]") for c in CONFIGS]
    + [("local[2]", 3, CONFIGS[1])],  # shards need not match cores
    ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else f"{v}",
)
@pytest.mark.slow
def test_spark_reproduces_the_local_engine_exactly(master, partitions, config):
    """Every level on the executors (none on the driver while they start)."""
    spec = load(config)
    expected = summary(run(spec, CheckOptions.of(engine="fast", workers=1)))
    assert (
        summary(
            run(spec, CheckOptions.of(engine="spark", master=master, partitions=partitions, spark_settings=EXECUTORS))
        )
        == expected
    )


@pytest.mark.slow
def test_levels_ranked_in_several_intervals_give_the_reference_trace(monkeypatch):
    """A level this small is ranked in one interval; forced to one a
    shard (3 shards), on the executors, the links still order each level
    as the reference engine does: the same counts and counterexample."""
    monkeypatch.setattr(Search, "RANK_INTERVAL", 50)
    spec = load(CONFIGS[1])
    expected = summary(run(spec, CheckOptions.of(engine="fast", workers=1)))
    options = CheckOptions.of(engine="spark", master="local[2]", partitions=3, spark_settings=EXECUTORS)
    assert summary(run(spec, options)) == expected


@pytest.mark.slow
def test_levels_the_driver_runs_while_spark_starts_give_the_same_answers():
    """By default the driver runs levels itself until the executors are
    ready (or when a level is small): the same files, the same counts."""
    spec = load(CONFIGS[1])
    got = run(spec, CheckOptions.of(engine="spark", master="local[2]"))
    assert summary(got) == summary(run(spec, CheckOptions.of(engine="fast", workers=1)))
    assert got.run_info["spark_driver_levels"] > 0


@settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(SMALL)
@pytest.mark.slow
def test_random_configs_give_the_reference_answers_on_spark(config):
    """The differential test of tests/test_engines.py, with Spark local[2]
    against the reference engine (a few examples: each starts Spark)."""
    spec = load(config)
    reference = summary(small_enough(spec, CheckOptions.of(engine="bfs")))
    assert summary(run(spec, CheckOptions.of(engine="spark", master="local[2]"))) == reference


@pytest.mark.slow
def test_spark_with_symmetry_keeps_the_reduced_count_and_the_shortest_trace():
    spec = load({"variant": "legacy"})
    spec.enable_symmetry()
    fast = run(spec, CheckOptions.of(engine="fast", workers=2))
    expected = summary(fast)
    spark = run(spec, CheckOptions.of(engine="spark", master="local[2]", spark_settings=EXECUTORS))
    assert summary(spark) == expected
    assert spark.run_info["symmetry"] == fast.run_info["symmetry"]
    assert expected[2] < 16590 and len(expected[6]) == 8


@pytest.mark.slow
def test_a_violating_initial_state_is_found_at_depth_1_on_spark():
    spec = LeaderlessKip966(load({"max_records": 1}).config)
    expected = summary(run(spec, CheckOptions.of(engine="bfs")))
    assert expected[:5] == ("violated", "Leaderless", 1, 1, 1)
    assert summary(run(spec, CheckOptions.of(engine="spark", master="local[2]", spark_settings=EXECUTORS))) == expected


@pytest.mark.slow
def test_the_cli_runs_spark_and_reports_the_legacy_counterexample(tmp_path):
    out = tmp_path / "trace.json"
    p = subprocess.run(
        [
            "modelcheck",
            "check",
            "--engine",
            "spark",
            "--master",
            "local[2]",
            "--partitions",
            "4",
            "--spark-conf",
            "spark.default.parallelism=3",
            "--set",
            "variant=legacy",
            "--json",
            "--trace-out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 1, p.stderr
    got = json.loads(p.stdout)
    assert (got["verdict"], got["invariant"], got["distinct_states"], len(got["trace"]) - 1) == (
        "violated",
        "NoAckedLoss",
        16590,
        7,
    )
    assert (got["engine"], got["master"], got["partitions"]) == ("spark", "local[2]", 4)
    assert json.loads(out.read_text())["invariant"] == "NoAckedLoss"
    assert p.stderr == ""  # Spark's JVM and log4j chatter stay out of the terminal


# ---- what is missing, in one line --------------------------------------------------


def cli(*args):
    return CliRunner().invoke(main, list(args))


def test_spark_options_are_refused_for_other_engines():
    r = cli("check", "--master", "local[2]")
    assert r.exit_code == 2 and r.output.strip() == "error: --master applies to --engine spark only"
    r = cli("check", "--engine", "fast", "--partitions", "4")
    assert r.exit_code == 2 and r.output.strip() == "error: --partitions applies to --engine spark only"
    assert cli("check", "--engine", "spark", "--partitions", "0").exit_code == 2
    r = cli("check", "--engine", "spark", "--spark-conf", "spark.executor.memory")
    assert (
        r.exit_code == 2
        and r.output.strip()
        == "error: --spark-conf 'spark.executor.memory': expected KEY=VALUE, e.g. spark.executor.memory=8g"
    )


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "spark.modelcheck.registrationTimout=9",
            "--spark-conf spark.modelcheck.registrationTimout: not a setting of modelcheck's (those are "
            "spark.modelcheck.stateDir, spark.modelcheck.driverStates, spark.modelcheck.registrationTimeout)",
        ),
        (
            "spark.modelcheck.registrationTimeout=0",
            "--spark-conf spark.modelcheck.registrationTimeout='0': expected a number of seconds above 0",
        ),
        (
            "spark.modelcheck.registrationTimeout=inf",
            "--spark-conf spark.modelcheck.registrationTimeout='inf': expected a number of seconds above 0",
        ),
        (
            "spark.modelcheck.driverStates=1e6",
            "--spark-conf spark.modelcheck.driverStates='1e6': expected a whole number of states, 0 or more",
        ),
        ("spark.modelcheck.stateDir=", "--spark-conf spark.modelcheck.stateDir='': expected a directory"),
    ],
)
def test_modelchecks_own_spark_settings_are_checked_before_spark_starts(setting, message):
    """A misspelt key was ignored and a bad value was a traceback once Spark had started."""
    for command in ("check", "simulate"):
        r = cli(command, "--engine", "spark", "--master", "local[1]", "--spark-conf", setting)
        assert (r.exit_code, r.output) == (2, f"error: {message}\n")


def test_a_master_url_spark_would_refuse_is_refused_before_spark_starts():
    for bad in ("foo", "local[0]", "spark://"):
        r = cli("check", "--engine", "spark", "--master", bad)
        assert r.exit_code == 2
        assert (
            r.output == f"error: --master {bad!r}: expected local, local[N], local[*], spark://HOST:PORT, "
            "yarn or k8s://https://HOST:PORT\n"
        )


def test_why_spark_failed_is_read_from_its_log(monkeypatch, tmp_path):
    """What a user sees when Spark stops (no master at the URL) or refuses
    to start: the reason Spark logged, not py4j's call that failed."""
    log = tmp_path / "jvm.log"
    log.write_text("")
    monkeypatch.setattr(spark_session, "_jvm_log", [open(log, "rb")])
    log.write_text(
        "WARNING: Using incubator modules: jdk.incubator.vector\n"
        "13:20:00 ERROR StandaloneSchedulerBackend: Application has been killed. "
        "Reason: All masters are unresponsive! Giving up.\n"
    )
    assert (
        spark_session._reason(RuntimeError("An error occurred while calling o36.defaultParallelism."))
        == "Application has been killed. Reason: All masters are unresponsive! Giving up."
    )
    log.write_text(
        'Exception in thread "main" org.apache.spark.SparkException: Master must either be yarn '
        "or start with spark, k8s, or local\n\tat org.apache.spark.deploy.SparkSubmit.error\n"
    )
    assert (
        spark_session._reason(RuntimeError("gateway exited"))
        == "SparkException: Master must either be yarn or start with spark, k8s, or local"
    )
    log.write_text("")
    assert spark_session._reason(RuntimeError("\nJava gateway process exited\nmore")) == "Java gateway process exited"


def test_without_pyspark_the_spark_engine_says_how_to_install_it(monkeypatch):
    real = spark_environment.importlib_util.find_spec
    monkeypatch.setattr(
        spark_environment.importlib_util, "find_spec", lambda name: None if name == "pyspark" else real(name)
    )
    r = cli("check", "--engine", "spark", "-q")
    assert r.exit_code == 2
    assert (
        r.output == "error: --engine spark needs pyspark, which is not installed: "
        "pip install '.[spark]' in a modelcheck checkout, or pip install pyspark\n"
    )


def test_without_java_17_the_spark_engine_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    r = cli("check", "--engine", "spark", "-q")
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "needs Java 17 or newer, and no java was found (JAVA_HOME=" in r.output
    old = tmp_path / "jdk11" / "bin"
    old.mkdir(parents=True)
    (old / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    (old / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk11"))
    r = cli("check", "--engine", "spark", "-q")
    assert r.exit_code == 2
    assert (
        r.output == f"error: --engine spark needs Java 17 or newer; {old / 'java'} is Java 11: "
        "set JAVA_HOME to a JDK 17+\n"
    )


# ---- what executors import --------------------------------------------------------------


@pytest.mark.slow
def test_spark_env_zips_what_executors_import(tmp_path):
    r = cli("spark-env", "-o", str(tmp_path / "mc.zip"))
    assert r.exit_code == 0, r.output
    probe = "import cli, modelcheck.engine.spark.tasks, specs.kafka_elr; print(modelcheck.__file__, specs.__file__)"
    p = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "mc.zip")},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [
        str(tmp_path / "mc.zip" / "modelcheck" / "__init__.py"),
        str(tmp_path / "mc.zip" / "specs" / "__init__.py"),
    ]
    assert cli("spark-env", "-o", str(tmp_path / "no" / "mc.zip")).exit_code == 2
    r = cli("spark-env", "-o", str(tmp_path))
    assert r.exit_code == 2 and r.output == f"error: --out {tmp_path}: is a directory\n"


# ---- a real standalone cluster: a master and a worker JVM on loopback -------------------


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """(master URL, the worker's directory of applications)."""
    root = tmp_path_factory.mktemp("standalone")
    with standalone_cluster(root) as url:
        yield url, root / "work"


@pytest.fixture(scope="module")
def standalone_master(standalone):
    return standalone[0]


@pytest.fixture(scope="module")
def bare_executor_python(tmp_path_factory):
    """A Python for executors that has numpy and numba (the kernel's
    dependencies) but not modelcheck (no site-packages: `python -S`), as a
    cluster node without modelcheck installed: the engine must ship itself
    and the spec."""
    import llvmlite
    import numba
    import numpy

    root = tmp_path_factory.mktemp("executor-python")
    deps = root / "deps"
    deps.mkdir()
    for package in (Path(numpy.__file__).parent, Path(numba.__file__).parent, Path(llvmlite.__file__).parent):
        for path in package.parent.glob(package.name + "*"):  # the package, and numpy.libs where wheels put it
            (deps / path.name).symlink_to(path)
    python = root / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{deps}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    probe = subprocess.run(
        [str(python), "-c", "import numpy, numba\nimport modelcheck"], capture_output=True, text=True, cwd=root
    )
    assert "No module named 'modelcheck'" in probe.stderr
    return python


@pytest.mark.slow
def test_a_standalone_cluster_checks_like_the_local_engine(standalone_master, bare_executor_python):
    """The legacy counterexample (a verdict, counts and a trace) on a real
    cluster; the lost-executor test below runs a holds on one."""
    config = ["--set", "variant=legacy"]
    p = subprocess.run(
        ["modelcheck", "check", "--engine", "spark", "--master", standalone_master, "--json", *config],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYSPARK_PYTHON": str(bare_executor_python)},
    )
    got = json.loads(p.stdout)
    local = json.loads(
        subprocess.run(
            ["modelcheck", "check", "-w", "1", "--json", *config], capture_output=True, text=True, timeout=600
        ).stdout
    )
    keys = ("verdict", "invariant", "distinct_states", "generated_states", "depth", "coverage", "trace")
    assert {k: got[k] for k in keys} == {k: local[k] for k in keys}
    assert (got["master"], got["partitions"]) == (standalone_master, 2)  # the worker's 2 cores
    assert p.returncode == (0 if local["verdict"] == "holds" else 1) and p.stderr == ""


@pytest.mark.slow
def test_a_lost_executor_is_replaced_and_the_check_completes(standalone, bare_executor_python, tmp_path):
    """The shards' state is in files, not in the executor: when it is
    killed mid-check, its tasks are rerun on the one the worker starts
    instead, and the result is the local engine's."""
    url, apps = standalone
    before = set(apps.iterdir()) if apps.exists() else set()
    check = subprocess.Popen(
        [
            "modelcheck",
            "check",
            "--engine",
            "spark",
            "--master",
            url,
            "--json",
            "-q",
            "--set",
            "max_records=1",
            "--spark-conf",
            "spark.modelcheck.driverStates=0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": str(bare_executor_python)},
    )
    pgrep = lambda *args: subprocess.run(["pgrep", *args], capture_output=True, text=True).stdout.split()  # noqa: E731
    killed = []
    while not killed and check.poll() is None:
        for executor in pgrep("-f", "CoarseGrainedExecutorBackend"):
            if pgrep("-P", executor):  # its Python workers have started: the check is under way
                time.sleep(4)
                os.kill(int(executor), signal.SIGKILL)
                killed.append(executor)
        time.sleep(0.2)
    out, err = check.communicate(timeout=600)
    assert killed and check.returncode == 0, err
    got = json.loads(out)
    assert (got["verdict"], got["distinct_states"], got["generated_states"], got["depth"]) == (
        "holds",
        108175,
        303859,
        21,
    )
    (app,) = set(apps.iterdir()) - before
    assert len(list(app.iterdir())) == 2  # executor 0, killed, and executor 1 that finished the check


def test_with_a_checkpoint_dir_results_are_the_same_on_local_spark(tmp_path):
    spec = load({"variant": "legacy"})
    expected = summary(run(spec, CheckOptions.of(engine="fast", workers=1)))
    got = run(
        spec, CheckOptions.of(engine="spark", master="local[2]", spark_settings={"spark.checkpoint.dir": str(tmp_path)})
    )
    assert summary(got) == expected
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_without_a_kernel_the_spark_engine_refuses_instead_of_running_on_one_thread():
    p = subprocess.run(
        ["modelcheck", "check", "--engine", "spark", "-q", "--set", "max_records=1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MODELCHECK_KERNEL": "interpreted"},
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        "error: --engine spark runs the compiled kernel, and there is none here: MODELCHECK_KERNEL=interpreted\n"
    )


@pytest.mark.parametrize("by, expected", [("action", (95, 2506, 6)), ("swarm", (13, 352, 6))])
@pytest.mark.slow
def test_simulate_on_spark_gives_the_local_walks_exactly(by, expected):
    """Random walks (modelcheck simulate) spread over executors: the same
    seed, the same walks, counts and shrunk trace as one local process,
    for swarm walks (each drawing its own mix of actions) too."""
    from modelcheck.engine.kernel import kernel_for
    from modelcheck.engine.walks.plan import plan
    from modelcheck.engine.walks.simulate import simulate

    spec = load({"max_unclean_shutdowns": 2})
    p = plan(spec, 300, 40, 3, {}, by)
    kernel = kernel_for(spec)

    def walks(r):
        return (
            r.verdict,
            r.invariant,
            r.walks,
            r.states_visited,
            r.distinct_seen,
            r.coverage,
            [(s.action, s.args) for s in r.trace],
            r.shrink.get("walk"),
        )

    spark = simulate(spec, p, kernel=kernel, engine="spark", master="local[2]")
    assert walks(spark) == walks(simulate(spec, p, kernel=kernel))
    assert (spark.walks, spark.states_visited, len(spark.trace) - 1) == expected
