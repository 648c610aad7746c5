"""`modelcheck check`: one configuration explored by an engine, with
checkpoints, a resume and a memory limit; its verdict printed, and its
exit status returned."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..config import ConfigError
from ..engine import refuse_unsupported
from ..engine import run as run_engine
from ..engine.control import Control
from ..engine.kernel import CompileJob
from ..engine.options import CheckOptions
from ..engine.storage.checkpoint import Checkpoints
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..output import check_file
from ..result import CheckResult, parse_expectation
from ..suite import read_suite
from ..trace import described
from ..views.progress import Progress
from ..views.report import check_json, print_result, print_stop
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .first_compile import after_compile, first_compile, warn_if_interpreted
from .inputs import Loader, load_check_config
from .suite import check_suite, verdict_of


def check_command(
    load: Loader,
    config: str | None,
    overrides: tuple[str, ...],
    options: CheckOptions,
    as_json: bool,
    trace_out: str | None,
    quiet: bool,
    explicit: frozenset[str] = frozenset(),
    suite: Path | None = None,
) -> int:
    """The check of `config` and `overrides` (the spec `load` makes of
    them), as `options` say (`explicit`: the options the user gave, which a
    resumed checkpoint's must agree with); without either (nor a resume),
    the default `suite`'s checks where the spec has one. Its exit status."""
    checkpoints = None
    try:
        options.validate()
        given, expected = load_check_config(config, overrides)
        local = options.local
        if local.resume:
            assert local.checkpoint_dir is not None, "validate: a resume names its directory"
            checkpoints = Checkpoints(local.checkpoint_dir, local.checkpoint_every)
            given, options = resumed(load, checkpoints, given, options, explicit)
        in_suite = suite is not None and config is None and not overrides and not local.resume
        if in_suite:
            assert suite is not None
            if local.checkpoint_dir:
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
            refuse_unsupported(spec, options)
        if trace_out:
            check_file(trace_out, "--trace-out")
        if local.checkpoint_dir and not local.resume:  # last: nothing is created before every option is checked
            checkpoints = Checkpoints(local.checkpoint_dir, local.checkpoint_every)
            checkpoints.prepare(resuming=False)
    except ConfigError as e:
        if checkpoints:
            checkpoints.release()
        fail(str(e))

    def check_one(spec: Any, progress: Progress, control: Control, compiling: CompileJob | None) -> CheckResult:
        return run_engine(
            spec, options, progress=progress, control=control, checkpoints=checkpoints, compiling=compiling
        )

    if in_suite:
        assert suite is not None
        return check_suite(suite, members, specs, check_one, options, as_json, quiet, trace_out)
    spec = specs[0]
    stopped = None
    job = first_compile(spec, options)
    try:
        with stop_on_signals() as stop:
            try:
                with Progress(enabled=not quiet and not as_json) as progress:
                    result = check_one(spec, progress, Control(stop), job)
            except Stopped as e:
                stopped = e
            except ConfigError as e:  # the engine cannot start here (e.g. no Java for Spark)
                fail(str(e))
        if stopped is not None:
            print_stop(stopped, as_json)
            return exit_code(stopped)
        return report(spec, result, expected, options, as_json, trace_out, job, quiet)
    finally:
        if job is not None:
            job.end()


def report(
    spec: Any,
    result: CheckResult,
    expected: str | None,
    options: CheckOptions,
    as_json: bool,
    trace_out: str | None,
    job: CompileJob | None,
    quiet: bool,
) -> int:
    """One check's verdict printed (text or --json), its trace file written,
    the first compile finished when that pays; its exit status."""
    warn_if_interpreted([result])
    trace = described(spec, result.trace)
    verdict = verdict_of(result)
    outputs = Outputs()
    if trace_out and not result.holds:
        text = TraceFile.of(spec, result.trace, result.invariant, result.loop).text()
        trace_out = trace_out if outputs.write(trace_out, "--trace-out", text) else None
    elif trace_out:
        outputs.clear_trace(trace_out, "--trace-out")
    if as_json:
        click.echo(json.dumps(check_json(spec, result, trace, expected, verdict, options)))
    else:
        print_result(spec, result, expected, verdict, trace_out)
    after_compile(job, [result], quiet or as_json)
    return outputs.status(EXIT_HOLDS if result.holds else EXIT_VIOLATED)


def resumed(
    load: Loader,
    checkpoints: Checkpoints,
    given: dict[str, Any],
    options: CheckOptions,
    explicit: frozenset[str],
) -> tuple[dict[str, Any], CheckOptions]:
    """The config and options of the check checkpointed in `checkpoints`
    (opened, locked and verified here); what the command line said of
    them (`explicit`) must agree: a config file or --set given too is read
    over the checkpoint's config, which it must leave as it is."""
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
    bits = int(state.get("fingerprint_bits") or 64)
    for name, now, then in (
        ("engine", options.engine, saved["engine"]),
        ("fingerprint_bits", options.fingerprint_bits, bits),
    ):
        if name in explicit and now != then:
            raise ConfigError(f"{where}: the checkpoint was written with --{name.replace('_', '-')} {then}, not {now}")
    if options.symmetry and not saved["symmetry"]:
        raise ConfigError(f"{where}: the checkpoint was written without --symmetry")
    return config, replace(options, engine=saved["engine"], symmetry=saved["symmetry"], fingerprint_bits=bits)
