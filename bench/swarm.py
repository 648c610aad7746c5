"""Benchmark: how soon `modelcheck simulate` finds a violation, per pick,
for every cell of specs/matrix.toml whose expected verdict violates an
invariant, taken to replication factor 5.

A cell goes to RF=5 by `at_rf5`: brokers 5, min_isr 3 (a majority, as 2
of 3), and each fault bound that is at least 1 (unclean shutdowns, fences,
ISR shrinks) raised by as much as min_isr was, so a cell beyond KIP-966's
tolerance (min_isr - 1 unclean shutdowns) stays as far beyond it, and one
within it stays within it. Cells of a temporal property are left out:
simulate checks invariants only. Each pick runs the walks `modelcheck simulate`
runs with its defaults (its --depth, and its --pick for the first
column), up to --walks walks, on seeds 0..--seeds-1; a cell's time is
the search's (`elapsed_s`, as --json prints it: no start-up, no kernel
compile, no shrinking). "found" names the invariants the walks broke
(any checked invariant ends a walk; the RF=3 verdict follows where it
differs).

    python bench/swarm.py                           # every cell, seeds 0..4, at most 20,000 walks
    python bench/swarm.py --only legacy --picks swarm,action
    python bench/swarm.py --issue                   # the issue's command: N=5, min_isr 3, 3 unclean shutdowns
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import cli  # noqa: F401  (registers the protocol)
from modelcheck.cli.walks import simulate as simulate_command
from modelcheck.engine.kernel import kernel_for
from modelcheck.engine.walks.plan import PICKS, plan
from modelcheck.engine.walks.simulate import simulate
from modelcheck.runs.matrix import read_matrix
from modelcheck.views.matrix_page import machine
from specs.kafka_elr import load

FAULTS = ("max_unclean_shutdowns", "max_fences", "max_isr_shrinks")
ISSUE = {"brokers": 5, "min_isr": 3, "max_unclean_shutdowns": 3}  # issue 29's command


def cli_default(name: str) -> Any:
    """The default of `modelcheck simulate`'s option `name`: what a user gets."""
    return next(p.default for p in simulate_command.params if p.name == name)


def at_rf5(config: dict[str, Any]) -> dict[str, Any]:
    """A cell's config at replication factor 5 (the module docstring says how)."""
    before = load(config).config  # the effective values, defaults filled in
    raise_by = 3 - before["min_isr"]
    out = {**config, "brokers": 5, "min_isr": 3}
    for key in FAULTS:
        if before[key] >= 1:
            out[key] = before[key] + raise_by
    return out


def violated_cells(path: str) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(name, config, RF=5 config, expected verdict) of each cell pinned
    as an invariant's violation."""
    _meta, cells = read_matrix(path, load)
    out: list[tuple[str, dict[str, Any], dict[str, Any], str]] = []
    for cell in cells:
        if cell.expect is None or not cell.expect.startswith("violated") or load(cell.config).checked_properties():
            continue
        out.append((cell.name, cell.config, at_rf5(cell.config), cell.expect))
    return out


SHORT = {"min_isr": "min_isr", "max_unclean_shutdowns": "unclean", "max_fences": "fences", "max_isr_shrinks": "shrinks"}


def changed(config: dict[str, Any], rf5: dict[str, Any]) -> str:
    """The keys at_rf5 changed besides brokers, with their values at RF=5."""
    before, after = load(config).config, load(rf5).config
    return ", ".join(f"{SHORT[k]} {after[k]}" for k in SHORT if after[k] != before[k]) or "-"


def measure(config: dict[str, Any], picks: list[str], seeds: int, walks: int, depth: int) -> dict[str, list]:
    """Per pick, one (invariant or None, walks, seconds) per seed."""
    spec = load(config)
    kernel = kernel_for(spec)
    simulate(spec, plan(spec, 1, 1, 0), kernel=kernel)  # compiles (or loads) the walk loop, untimed
    out: dict[str, list] = {}
    for by in picks:
        out[by] = []
        for seed in range(seeds):
            r = simulate(spec, plan(spec, walks, depth, seed, {}, by), kernel=kernel, shrink_budget=0)
            out[by].append((r.invariant, r.walks, r.elapsed_s))
    return out


def cell_text(runs: list) -> str:
    """Seeds that found a violation; of those, the median (min-max) walks
    to the first, and the median (max) search time."""
    found = [(w, s) for inv, w, s in runs if inv]
    if not found:
        return f"0/{len(runs)}"
    ws, ss = sorted(w for w, _ in found), sorted(s for _, s in found)
    return (
        f"{len(found)}/{len(runs)}: {statistics.median(ws):,.0f} ({ws[0]:,}-{ws[-1]:,}) walks, "
        f"{statistics.median(ss):.1f} s (max {ss[-1]:.1f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrix", default="specs/matrix.toml")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="cells whose name contains NAME")
    ap.add_argument(
        "--picks",
        default=None,
        help=f"comma-separated, of {', '.join(PICKS)} (default: the CLI's default first, then the others)",
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--walks", type=int, default=20_000, help="walks a run may take at most")
    ap.add_argument("--issue", action="store_true", help="only the issue's config (N=5, min_isr 3, 3 unclean)")
    ns = ap.parse_args()
    default = cli_default("pick")
    depth = cli_default("depth")
    picks = ns.picks.split(",") if ns.picks else [default, *(p for p in PICKS if p != default)]
    cells: list[tuple[str, dict[str, Any], dict[str, Any], str]]
    if ns.issue:
        cells = [("issue 29's command", {}, ISSUE, "violated: NoAckedLoss")]
    else:
        cells = [c for c in violated_cells(ns.matrix) if not ns.only or any(o in c[0] for o in ns.only)]
    print(f"machine: {machine()}; load average at start {os.getloadavg()[0]:.1f}")
    print(
        f"simulate's defaults: --pick {default}, --depth {depth}; at most {ns.walks:,} walks, "
        f"seeds 0..{ns.seeds - 1}; each entry: seeds that found a violation (the others found nothing in "
        f"{ns.walks:,} walks), and of those the median (min-max) walks to the first and the median (max) "
        f"search time"
    )
    print()
    heads = [f"`--pick {p}`" + (" (default)" if p == default else "") for p in picks]
    print("| cell | at brokers=5, changed | found | " + " | ".join(heads) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in picks) + " |")
    started = time.perf_counter()
    for name, config, rf5, expect in cells:
        runs = measure(rf5, picks, ns.seeds, ns.walks, depth)
        invariants = sorted({inv for rs in runs.values() for inv, _w, _s in rs if inv})
        found = ", ".join(invariants) if invariants else "nothing"
        if invariants and expect != f"violated: {invariants[0]}" or len(invariants) > 1:
            found += f" (RF=3: {expect.removeprefix('violated: ')})"
        print(
            f"| {name} | {changed(config, rf5)} | {found} | " + " | ".join(cell_text(runs[p]) for p in picks) + " |",
            flush=True,
        )
    print(f"\n{time.perf_counter() - started:.0f} s; load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
