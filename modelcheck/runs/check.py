"""`modelcheck check`: one configuration explored by an engine, with
checkpoints, a resume and a memory limit; its verdict printed, and its
exit status."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ..config import ConfigError
from ..engine import run as run_engine
from ..engine.checkpoint import Checkpoints
from ..engine.control import Control
from ..engine.kernel import CompileJob
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..memory import default_limit, parse_size
from ..output import check_file
from ..result import CheckResult, parse_expectation
from ..suite import read_suite
from ..trace import described
from ..views.progress import Progress
from ..views.report import check_json, print_result, print_stop
from ..views.tracefile import TraceFile
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .first_compile import after_compile, first_compile, warn_if_interpreted
from .inputs import Loader, check_spark_options, load_check_config
from .suite import check_suite, verdict_of


def check_command(
    load: Loader,
    config: str | None,
    overrides: tuple[str, ...],
    as_json: bool,
    trace_out: str | None,
    quiet: bool,
    workers: int,
    symmetry: bool,
    engine: str,
    master: str | None,
    partitions: int | None,
    fingerprint_bits: str,
    spark_conf: tuple[str, ...],
    checkpoint_dir: str | None,
    checkpoint_every: float,
    resume_dir: str | None,
    max_memory: str | None,
    suite: Path | None = None,
) -> NoReturn:
    """The check of `config` and `overrides` (the spec `load` makes of
    them), as the options say; without either (nor a resume), the default
    `suite`'s checks where the spec has one. Exits with its status."""
    try:
        check_spark_options(engine, master, partitions, spark_conf)
        if engine == "bfs" and fingerprint_bits != "64":
            raise ConfigError(
                "--fingerprint-bits applies to the compiled engines (fast, spark); "
                "the reference engine keeps 64-bit fingerprints"
            )
        given, expected = load_check_config(config, overrides)
        local = [
            name
            for name, given_ in (("checkpoint", checkpoint_dir), ("resume", resume_dir), ("max-memory", max_memory))
            if given_
        ]
        if engine == "spark" and local:
            raise ConfigError(
                f"--{local[0]} applies to the local engines (fast, bfs); a Spark check survives a "
                "lost executor by itself (its shards' state is in files), and its memory is Spark's "
                "(spark.driver.memory, spark.executor.memory)"
            )
        if resume_dir and checkpoint_dir:
            raise ConfigError(
                f"--checkpoint {checkpoint_dir!r} with --resume: a resumed check keeps checkpointing into "
                "its --resume directory; leave out --checkpoint"
            )
        control = Control(
            max_memory=None if engine == "spark" else parse_size(max_memory) if max_memory else default_limit()
        )
        if resume_dir:
            control.checkpoints, control.resume = Checkpoints(resume_dir, checkpoint_every), True
            given, engine, symmetry, fingerprint_bits = resumed(
                load, control.checkpoints, given, engine, symmetry, fingerprint_bits
            )
        in_suite = suite is not None and config is None and not overrides and not resume_dir
        if in_suite:
            assert suite is not None
            if checkpoint_dir:
                raise ConfigError(
                    f"--checkpoint checkpoints one configuration, and without CONFIG.toml or --set check runs "
                    f"the default suite ({suite.name}): give the configuration to checkpoint"
                )
            members = read_suite(suite)
            specs = [load(m.config) for m in members]
        else:
            specs = [load(given)]
            if expected is not None:
                expected = parse_expectation(expected, specs[0], str(config), "[expected] verdict")
        for spec in specs:
            if symmetry:
                spec.enable_symmetry()
        if trace_out:
            check_file(trace_out, "--trace-out")
        if checkpoint_dir:  # last: nothing is created before every option has been checked
            control.checkpoints = Checkpoints(checkpoint_dir, checkpoint_every)
            control.checkpoints.prepare(resuming=False)
    except ConfigError as e:
        fail(str(e))

    def check_one(spec: Any, progress: Progress, control: Control, compiling: CompileJob | None) -> CheckResult:
        return run_engine(
            spec,
            engine=engine,
            workers=workers,
            progress=progress,
            master=master,
            partitions=partitions,
            spark_settings=dict(kv.split("=", 1) for kv in spark_conf),
            fingerprint_bits=int(fingerprint_bits),
            control=control,
            compiling=compiling,
        )

    if in_suite:
        assert suite is not None
        check_suite(suite, members, specs, check_one, engine, workers, control, as_json, quiet, trace_out)
    spec = specs[0]
    stopped = None
    job = first_compile(spec, engine, control)
    try:
        with stop_on_signals() as control.stop:
            try:
                with Progress(enabled=not quiet and not as_json) as progress:
                    result = check_one(spec, progress, control, job)
            except Stopped as e:
                stopped = e
            except ConfigError as e:  # the engine cannot start here (e.g. no Java for Spark)
                fail(str(e))
        if stopped is not None:
            print_stop(stopped, as_json)
            sys.exit(exit_code(stopped))
        report(spec, result, expected, engine, workers, symmetry, as_json, trace_out, job, quiet)
    finally:
        if job is not None:
            job.end()


def report(
    spec: Any,
    result: CheckResult,
    expected: str | None,
    engine: str,
    workers: int,
    symmetry: bool,
    as_json: bool,
    trace_out: str | None,
    job: CompileJob | None,
    quiet: bool,
) -> NoReturn:
    """One check's verdict printed (text or --json), its trace file written,
    the first compile finished when that pays; exits with its status."""
    warn_if_interpreted([result])
    trace = described(spec, result.trace)
    verdict = verdict_of(result)
    outputs = Outputs()
    if trace_out and not result.holds:
        text = TraceFile(spec.config, result.invariant, trace, result.loop).text()
        trace_out = trace_out if outputs.write(trace_out, "--trace-out", text) else None
    elif trace_out:
        outputs.clear_trace(trace_out, "--trace-out")
    if as_json:
        click.echo(json.dumps(check_json(spec, result, trace, expected, verdict, engine, workers, symmetry)))
    else:
        print_result(spec, result, expected, verdict, trace_out)
    after_compile(job, [result], quiet or as_json)
    outputs.exit(EXIT_HOLDS if result.holds else EXIT_VIOLATED)


def resumed(
    load: Loader,
    checkpoints: Checkpoints,
    given: dict[str, Any],
    engine: str,
    symmetry: bool,
    fingerprint_bits: str,
) -> tuple[dict[str, Any], str, bool, str]:
    """The config, engine, symmetry and fingerprint bits of the check
    checkpointed in `checkpoints` (opened, locked and verified here); what
    the command line says of them must agree: a config file or --set given
    too is read over the checkpoint's config, which it must leave as it is."""
    checkpoints.prepare(resuming=True)
    state = checkpoints.load()[0]
    saved = state["identity"]
    config = {k: v for k, v in saved["config"].items() if v is not None}
    where = f"--resume {checkpoints.dir}"
    merged = load({**config, **given}).config
    if merged != saved["config"]:
        key = next(k for k in merged if merged[k] != saved["config"].get(k))
        raise ConfigError(
            f"{where}: the checkpoint's {key} is {json.dumps(saved['config'].get(key))}, "
            f"not {json.dumps(merged[key])} (leave out the config to take the checkpoint's)"
        )
    ctx = click.get_current_context()
    explicit = lambda name: ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE  # noqa: E731
    bits = str(state.get("fingerprint_bits") or 64)
    for name, now, then in (("engine", engine, saved["engine"]), ("fingerprint_bits", fingerprint_bits, bits)):
        if explicit(name) and now != then:
            raise ConfigError(f"{where}: the checkpoint was written with --{name.replace('_', '-')} {then}, not {now}")
    if symmetry and not saved["symmetry"]:
        raise ConfigError(f"{where}: the checkpoint was written without --symmetry")
    return config, saved["engine"], saved["symmetry"], bits
