"""Mutant schemata: one subclass of a spec class whose rules carry every
mechanical mutation point behind a run-time switch, `self.mutation`, so
that mutant k is an instance of that one class with mutation = k (0: none).
The reference engine runs it as it runs any variant, and the compiled
engine compiles one kernel for all its mutants: the switch is a parameter,
not code (issue 42).

A point is a slip a reviewer could miss, made in the spec's own code:
drop a conjunct or disjunct of a condition, or its `not`; flip a
comparison's strictness (< and <=, > and >=) or sense (== and !=); swap a
set operation (| and &); drop a set removal (a & ~b to a); drop an
increment (e + 1 to e); keep a field an update sets (s._replace(f=v) keeps
s.f); skip an assignment that rebinds a name. The rules mutated are the
functions of the given modules that the class's actions reach; a module
function is turned into a method of the schema, so its points are switched
like a method's. Points are numbered from 1 in (module, function, line)
order: the same code gives the same numbers."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .slips import SWITCH, Point, Switches, helpers, points_of


@dataclass(frozen=True)
class Schema:
    cls: type
    points: tuple[Point, ...]


def schema(base: type, module_names: Sequence[str]) -> Schema:
    """The schema of `base` over the rules of the modules named (cached:
    one class per base, so its kernel is found again)."""
    return _schema(base, tuple(module_names))


@functools.cache
def _schema(base: type, module_names: tuple[str, ...]) -> Schema:
    modules = {name: importlib.import_module(name) for name in module_names}
    reached = _reached(base, modules)
    methods: dict[str, str] = {}  # a module function's name as a schema method
    for key, (fn, _actions) in reached.items():
        if not key.startswith("self."):
            methods[key] = f"{fn.__module__.rsplit('.', 1)[-1]}__{fn.__name__}"
    points: list[Point] = []
    namespace: dict[str, Any] = {}
    by_module: dict[str, list[tuple[str, Callable]]] = {}
    for key, (fn, _actions) in sorted(reached.items(), key=lambda kv: (kv[1][0].__module__, kv[1][0].__qualname__)):
        if fn.__module__ in modules:
            by_module.setdefault(fn.__module__, []).append((key, fn))
    for module_name, fns in by_module.items():
        module = modules[module_name]
        texts = []
        for key, fn in fns:
            node = _parse(fn)
            as_method = not key.startswith("self.")
            rule = f"{module_name.rsplit('.', 1)[-1]}.{fn.__name__}" if as_method else fn.__qualname__
            where = _relative(module)
            found = points_of(node, len(points) + 1, rule, reached[key][1], where, fn.__code__.co_firstlineno - 1)
            points += [p for _node, p, _alt in found]
            node = Switches(found).visit(node)
            _Calls(fn.__globals__, methods, modules).visit(node)
            if as_method:
                node.name = methods[key]
                node.args.args.insert(0, ast.arg("self"))
            texts.append(ast.unparse(ast.fix_missing_locations(node)))
        filename = f"<mutant schema of {base.__qualname__}: {module_name}>"
        text = "\n\n".join(texts) + "\n"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        scope = dict(vars(module))
        exec(compile(text, filename, "exec"), scope)
        for key, _fn in fns:
            name = key.removeprefix("self.") if key.startswith("self.") else methods[key]
            namespace[name] = scope[name]
    cls = type(
        f"{base.__name__}Mutants",
        (base,),
        {
            **namespace,
            **helpers(),
            SWITCH: 0,
            "__module__": base.__module__,
            "__init__": _init(base),
            "__reduce__": lambda self: (_instance, (base, module_names, self.__dict__)),
            "kernel_family": lambda self: (type(self),),
        },
    )
    return Schema(cls, tuple(points))


def _init(base: type) -> Callable:
    def __init__(self: Any, *args: Any, mutation: int = 0, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)  # type: ignore[misc]
        setattr(self, SWITCH, mutation)

    return __init__


def _instance(base: type, module_names: tuple[str, ...], state: dict[str, Any]) -> Any:
    """Unpickle a schema instance (its class is made, not imported)."""
    cls: Any = _schema(base, module_names).cls
    spec = cls.__new__(cls)
    spec.__dict__.update(state)
    return spec


def _relative(module: types.ModuleType) -> str:
    """A module's file as its import path names it (specs/kafka_elr/rules.py)."""
    path = module.__name__.replace(".", "/")
    return f"{path}/__init__.py" if hasattr(module, "__path__") else f"{path}.py"


def _parse(fn: Callable) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(node, ast.FunctionDef)
    node.decorator_list, node.returns = [], None
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    return node


# ---- what the actions reach ----------------------------------------------------------
def _reached(base: type, modules: dict[str, types.ModuleType]) -> dict[str, tuple[Callable, tuple[str, ...]]]:
    """Functions the actions reach, each with the actions (declared names)
    that reach it: "self.name" for a method, "module.name" for a function of
    one of `modules` (others are not walked)."""
    reached: dict[str, tuple[Callable, list[str]]] = {}
    for action, method in base.actions.items():  # type: ignore[attr-defined]
        todo, seen = [f"self.{method.__name__}"], set()
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            fn = _resolve(base, key, modules)
            if fn is None:
                continue
            reached.setdefault(key, (fn, []))[1].append(action)
            todo += _calls(fn, tuple(modules))
    return {key: (fn, tuple(actions)) for key, (fn, actions) in reached.items()}


@functools.cache
def _calls(fn: Callable, module_names: tuple[str, ...]) -> list[str]:
    modules = {name: importlib.import_module(name) for name in module_names}
    found = []
    for call in ast.walk(_parse(fn)):
        if isinstance(call, ast.Call):
            callee = _callee(call.func, fn.__globals__, modules)
            if callee:
                found.append(callee)
    return found


def _resolve(base: type, key: str, modules: dict[str, types.ModuleType]) -> Callable | None:
    if key.startswith("self."):
        name = key.removeprefix("self.")
        owner = next((k for k in base.__mro__ if name in vars(k)), None)
        value = None if owner is None else vars(owner)[name]
        return value if inspect.isfunction(value) else None
    module_name, name = key.rsplit(".", 1)
    value = getattr(modules[module_name], name, None)
    return value if inspect.isfunction(value) and value.__module__ == module_name else None


def _callee(func: ast.expr, scope: dict[str, Any], modules: dict[str, types.ModuleType]) -> str | None:
    """The key of a call's target: a method of self, or a function of `modules`."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self":
            return f"self.{func.attr}"
        target = scope.get(func.value.id)
        if isinstance(target, types.ModuleType) and target.__name__ in modules:
            return f"{target.__name__}.{func.attr}"
    if isinstance(func, ast.Name):
        target = scope.get(func.id)
        if inspect.isfunction(target) and target.__module__ in modules:
            return f"{target.__module__}.{target.__name__}"
    return None


class _Calls(ast.NodeTransformer):
    """Calls of a reached module function become calls of its schema method."""

    def __init__(self, scope: dict, methods: dict[str, str], modules: dict):
        self.scope, self.methods, self.modules = scope, methods, modules

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        key = _callee(node.func, self.scope, self.modules)
        if key in self.methods:
            node.func = ast.Attribute(ast.Name("self", ast.Load()), self.methods[key], ast.Load())
        return node
