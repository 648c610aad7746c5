"""`modelcheck simulate`: random walks through a config too large to
check exhaustively, here or on Spark; a violation's walk shrunk, printed
and re-validated, and the exit status."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from ..config import ConfigError
from ..engine.walks.plan import plan as make_plan
from ..engine.walks.simulate import simulate as run_simulation
from ..formats.tracefile import TraceFile
from ..lifetime import Stopped, exit_code, stop_on_signals
from ..memory import default_limit, parse_size
from ..output import check_file
from ..trace import described
from ..views.progress import Progress
from ..views.report import print_simulation, simulation_json, simulation_stop_json
from .exits import EXIT_HOLDS, EXIT_VIOLATED, Outputs, fail
from .inputs import Loader, check_spark_options, load_check_config


def simulate_command(
    load: Loader,
    config: str | None,
    overrides: tuple[str, ...],
    walks: int,
    depth: int,
    seed: int,
    weights: tuple[str, ...],
    pick: str,
    workers: int,
    engine: str,
    master: str | None,
    partitions: int | None,
    spark_conf: tuple[str, ...],
    as_json: bool,
    trace_out: str | None,
    quiet: bool,
    max_memory: str | None,
) -> int:
    """The walks the options plan on the spec `load` makes of the config,
    reported; exits 1 on a violation, 0 when none was found."""
    try:
        check_spark_options(engine, master, partitions, spark_conf)
        if engine == "spark" and workers != 1:
            raise ConfigError("--workers applies to --engine local; Spark's parallelism is --partitions")
        weight = {}
        for item in weights:
            name, eq, value = item.partition("=")
            if name.strip() in weight:
                raise ConfigError(f"--weight {item!r}: {name.strip()} has a weight already; give each action one")
            try:
                weight[name.strip()] = float(value) if eq else float("nan")
            except ValueError:
                weight[name.strip()] = float("nan")
            if weight[name.strip()] != weight[name.strip()]:
                raise ConfigError(f"--weight {item!r}: expected ACTION=W, W a number >= 0 (e.g. FenceBroker=0.5)")
        given, _expected = load_check_config(config, overrides)
        spec = load(given)
        if spec.checked_properties():
            raise ConfigError(
                "properties: random walks check invariants only (a finite walk shows no fair cycle); "
                "check temporal properties with modelcheck check"
            )
        the_plan = make_plan(spec, walks, depth, seed, weight, pick)
        if trace_out:
            check_file(trace_out, "--trace-out")
        limit = parse_size(max_memory) if max_memory else default_limit()
    except ConfigError as e:
        fail(str(e))
    workers = usable_workers(workers)
    with stop_on_signals() as stop, Progress(enabled=not quiet and not as_json) as progress:
        try:
            kernel = simulation_kernel(spec, engine, progress)
            result = run_simulation(
                spec,
                the_plan,
                kernel=kernel,
                workers=workers,
                progress=progress,
                stop=stop,
                engine=engine,
                master=master,
                partitions=partitions,
                spark_settings=dict(kv.split("=", 1) for kv in spark_conf),
                max_memory=limit,
            )
        except Stopped as e:
            if as_json:
                click.echo(json.dumps(simulation_stop_json(e, the_plan)))
            click.echo(
                f"simulate {e.why} after {e.elapsed_s:.1f} s, no verdict: {e.generated:,} states visited, "
                f"{e.distinct:,} distinct",
                err=True,
            )
            return exit_code(e)
        except ConfigError as e:  # the engine cannot start here (e.g. no Java for Spark)
            fail(str(e))
    trace = described(spec, result.trace)
    outputs = Outputs()
    if trace_out and result.invariant:
        text = TraceFile.of(spec, result.trace, result.invariant).text()
        trace_out = trace_out if outputs.write(trace_out, "--trace-out", text) else None
    elif trace_out:
        outputs.clear_trace(trace_out, "--trace-out")
    rate = result.states_visited / result.elapsed_s if result.elapsed_s else 0.0
    if as_json:
        click.echo(json.dumps(simulation_json(spec, result, trace, the_plan, weight, rate)))
    else:
        print_simulation(spec, result, the_plan, trace_out, rate)
    return outputs.status(EXIT_VIOLATED if result.invariant else EXIT_HOLDS)


def usable_workers(workers: int) -> int:
    """`workers`, or the CPUs this process may run on where it asks for
    more (said in one line): walks are CPU-bound, the results do not depend
    on it, and each worker is a process holding the kernel."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if workers > cpus:
        click.echo(f"warning: --workers {workers}: {cpus} CPU(s) here; running {cpus} worker process(es)", err=True)
    return min(workers, cpus)


def simulation_kernel(spec: Any, engine: str, progress: Progress) -> Any:
    """The compiled kernel walks run on (compiled now, once, if need be),
    or None to run the interpreted spec, with a warning saying why; Spark
    needs it."""
    from ..engine.kernel import KernelUnavailable, kernel_for

    try:
        return kernel_for(spec, lambda text: progress({"note": text}))
    except KernelUnavailable as e:
        if engine == "spark":
            raise ConfigError(f"--engine spark runs the compiled kernel, and there is none here: {e}") from None
        click.echo(f"warning: no compiled kernel ({e}); walks run on the interpreted spec", err=True)
        return None
