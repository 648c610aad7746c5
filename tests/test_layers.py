"""The import layering: core modules (modelcheck/*.py) <- engine/ <- views/
<- runs/ <- cli/ and cli.py, each importing only its own layer or those
below it; no module of modelcheck imports the protocol (specs/), which
cli.py registers (modelcheck/protocol.py); and no import cycle, not even inside a layer or through a
function's lazy import. Read from the source with ast (nothing is
imported), so a layer crossed anywhere, even under TYPE_CHECKING, fails."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("core", "engine", "views", "runs", "cli")  # lowest first


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {module_name(p): p for p in (ROOT / "modelcheck").rglob("*.py")}
    found["cli"] = ROOT / "cli.py"
    return found


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules (and specs') that `name` imports, anywhere in
    its text; `from package import module` names the module."""
    package = name if is_package(path) else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        out |= {t for t in targets if t.split(".")[0] in ("modelcheck", "specs", "cli")}
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def layer(module: str) -> str | None:
    """A module's layer; None for the protocol (specs)."""
    if module == "cli":
        return "cli"
    if module.startswith("specs"):
        return None
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ("engine", "views", "runs", "cli") else "core"


def layering_violations(edges: dict[str, set[str]]) -> list[str]:
    """Each import that runs up a layer, or into specs/ from modelcheck."""
    bad = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            here, there = layer(source), layer(target)
            if there is None and source != "cli":
                bad.append(f"{source} -> {target}: only cli.py picks the protocol")
            elif there is not None and LAYERS.index(there) > LAYERS.index(here):
                bad.append(f"{source} ({here}) -> {target} ({there}): imports a layer above its own")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles (Tarjan's strongly connected components of more
    than one module, or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_import_stays_in_its_layer_or_goes_down():
    assert layering_violations(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_the_walk_sees_the_imports_it_judges():
    """The checks above would pass on an empty graph: the walk must find
    the imports that define the layers."""
    edges = graph()
    assert "modelcheck.cli" in edges["cli"] and "modelcheck.runs.check" in edges["modelcheck.cli.check"]
    assert layer("modelcheck.cli.check") == "cli"
    assert "modelcheck.views.report" in edges["modelcheck.runs.check"]
    assert "modelcheck.engine.kernel" in edges["modelcheck.engine.reach"]  # a lazy import, in a function
    assert "modelcheck.engine.storage.batch" in edges["modelcheck.engine.fast.search"]  # from ..storage import batch
    assert "modelcheck.formats.scenario" in edges["modelcheck.views.explorer"]
    assert "specs.kafka_elr" in edges["cli"] or "specs" in edges["cli"]


ENGINE_FOLDERS = ("fast", "kernel", "liveness", "refinement", "spark", "storage", "walks")  # engine/ by concern


def test_the_engine_folders_are_the_engine_layer():
    """A module in a folder of engine/ is of the engine layer, and the walk
    finds the imports into and out of the folders."""
    edges = graph()
    for folder in ENGINE_FOLDERS:
        found = [m for m in edges if m.startswith(f"modelcheck.engine.{folder}.")]
        assert found and {layer(m) for m in found} == {"engine"}, folder
        assert (ROOT / "modelcheck" / "engine" / folder / "__init__.py").is_file()
    assert "modelcheck.engine.storage.visited" in edges["modelcheck.engine.fast.state"]
    assert "modelcheck.engine.spark.environment" in edges["modelcheck.engine.spark.session"]
    assert "modelcheck.engine.storage.batch" in edges["modelcheck.engine.refinement.refine_fast"]
    assert "modelcheck.engine.walks.walk" in edges["modelcheck.engine.walks.simulate"]
    assert "modelcheck.config" in edges["modelcheck.engine.storage.checkpoint"]  # three dots: the core
    assert layering_violations({"modelcheck.engine.storage.visited": {"modelcheck.views.report"}}) != []


def test_storage_imports_no_search():
    """What the searches keep sits below them: engine/storage/ imports the
    core and itself, never a search, a walk or the kernel."""
    edges = graph()
    storage = [m for m in edges if m.startswith("modelcheck.engine.storage")]
    assert storage
    assert [
        f"{m} -> {t}"
        for m in sorted(storage)
        for t in sorted(edges[m])
        if layer(t) != "core" and not t.startswith("modelcheck.engine.storage")
    ] == []


def test_a_crossed_layer_or_a_cycle_is_found():
    assert layering_violations({"modelcheck.views.explorer": {"modelcheck.runs.replay"}}) == [
        "modelcheck.views.explorer (views) -> modelcheck.runs.replay (runs): imports a layer above its own"
    ]
    assert layering_violations({"modelcheck.engine.fast": {"specs.kafka_elr"}}) == [
        "modelcheck.engine.fast -> specs.kafka_elr: only cli.py picks the protocol"
    ]
    assert layering_violations({"modelcheck.trace": {"modelcheck.engine.bfs"}}) != []
    assert cycles(
        {
            "modelcheck.engine.walks.simulate": {"modelcheck.engine.walks.simulate_spark"},
            "modelcheck.engine.walks.simulate_spark": {"modelcheck.engine.walks.simulate"},
        }
    ) == [["modelcheck.engine.walks.simulate", "modelcheck.engine.walks.simulate_spark"]]
