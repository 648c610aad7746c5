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
import copy
import functools
import importlib
import inspect
import linecache
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

SWITCH = "mutation"


@dataclass(frozen=True)
class Point:
    """One mutation point: the mutant numbered `number` makes `change` in `rule`."""

    number: int
    rule: str  # "Controller.change_isr" or "rules.update_elr"
    actions: tuple[str, ...]  # the actions whose code reaches it
    where: str  # file:line of the original code
    kind: str
    change: str  # "before  ->  after"

    def describe(self) -> str:
        return f"#{self.number} {self.rule} ({self.where}): {self.kind}: {self.change}"


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
            found = _points(node, len(points) + 1, rule, reached[key][1], where, fn.__code__.co_firstlineno - 1)
            points += [p for _node, p, _alt in found]
            node = _Switches(found).visit(node)
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
            **_helpers(),
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


# ---- the points ----------------------------------------------------------------------------
STRICTNESS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SENSE: dict[type, type] = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


def _alternatives(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(kind, the mutated node) for each mutation of `node` itself."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        flipped = STRICTNESS.get(op) or SENSE.get(op)
        if flipped:
            kind = "flip strictness" if op in STRICTNESS else "flip comparison"
            return [(kind, ast.Compare(node.left, [flipped()], node.comparators))]
    if isinstance(node, ast.BoolOp):
        kind = "drop conjunct" if isinstance(node.op, ast.And) else "drop disjunct"
        out: list[tuple[str, ast.AST]] = []
        for i in range(len(node.values)):
            rest = node.values[:i] + node.values[i + 1 :]
            out.append((kind, rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest)))
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("drop negation", node.operand)]
    if isinstance(node, ast.BinOp):
        if (
            isinstance(node.op, ast.BitAnd)
            and isinstance(node.right, ast.UnaryOp)
            and isinstance(node.right.op, ast.Invert)
        ):
            return [("drop set removal", node.left)]
        if isinstance(node.op, (ast.BitOr, ast.BitAnd)):
            other = ast.BitAnd() if isinstance(node.op, ast.BitOr) else ast.BitOr()
            return [("swap set operation", ast.BinOp(node.left, other, node.right))]
        if isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.right, ast.Constant) and node.right.value == 1:
            return [("drop increment", node.left)]
    return []


def _kept_fields(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(a keyword's value, the receiver's field) of a `name._replace(field=value)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "_replace"
        and isinstance(node.func.value, ast.Name)
    ):
        receiver = node.func.value.id
        return [
            (k.value, ast.Attribute(ast.Name(receiver, ast.Load()), k.arg, ast.Load()))
            for k in node.keywords
            if k.arg is not None
        ]
    return []


def _rebinding(fn: ast.FunctionDef) -> list[ast.stmt]:
    """Assignments to a name already bound on every path (an argument, or a
    name a top-level statement before bound): skipping one leaves it bound."""
    bound = {a.arg for a in fn.args.args}
    out: list[ast.stmt] = []
    for top in fn.body:
        for node in ast.walk(top):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id in bound:
                    out.append(node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in bound:
                out.append(node)
        if isinstance(top, ast.Assign):
            bound |= {t.id for t in top.targets if isinstance(t, ast.Name)}
    return out


def _points(
    fn: ast.FunctionDef, first: int, rule: str, actions: tuple[str, ...], where: str, offset: int
) -> list[tuple[ast.AST, Point, ast.AST]]:
    """(node, its Point, the node it becomes) for every point of `fn`, in
    source order, numbered from `first`."""
    found: list[tuple[int, int, int, ast.AST, str, ast.AST]] = []
    skip = {id(b) for b in fn.body[:1] if isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)}
    for node in ast.walk(fn):
        if id(node) in skip or not isinstance(node, (ast.expr, ast.stmt)):
            continue
        for order, (kind, alt) in enumerate(_alternatives(node)):
            found.append((node.lineno, node.col_offset, order, node, kind, alt))
        for value, kept in _kept_fields(node):
            found.append((value.lineno, value.col_offset, 9, value, "keep field", kept))
    for stmt in _rebinding(fn):
        found.append((stmt.lineno, stmt.col_offset, 0, stmt, "skip assignment", ast.Pass()))
    found.sort(key=lambda f: f[:3])
    # one mutant a distinct change: a kept field that is also a dropped increment is one
    seen: set[tuple[int, str]] = set()
    unique = []
    for f in found:
        key = (id(f[3]), ast.unparse(_mutated_text(f[3], f[4], f[5])))
        if key not in seen:
            seen.add(key)
            unique.append(f)
    out = []
    for number, (line, _col, _order, node, kind, alt) in enumerate(unique, start=first):
        change = f"{_one_line(node)}  ->  {_one_line(alt) if not isinstance(alt, ast.Pass) else '(skipped)'}"
        if kind == "keep field":
            change = f"{_one_line(node)}  ->  {_one_line(alt)} (kept)"
        out.append((node, Point(number, rule, actions, f"{where}:{line + offset}", kind, change), alt))
    return out


def _mutated_text(node: ast.AST, kind: str, alt: ast.AST) -> ast.AST:
    """What a point's node reads as when mutated (to tell duplicates apart)."""
    if kind in ("drop set removal", "drop increment") and isinstance(node, ast.BinOp):
        return node.left
    return alt


def _one_line(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 70 else text[:67] + "..."


def _switch(number: int, op: ast.cmpop | None = None) -> ast.expr:
    """`self.mutation == number` (or another comparison)."""
    mutation = ast.Attribute(ast.Name("self", ast.Load()), SWITCH, ast.Load())
    return ast.Compare(mutation, [op or ast.Eq()], [ast.Constant(number)])


# the operators a point flips or swaps, each a helper that reads its operands once:
# a switch costs its test, not a second copy of the operands (which numba would compile twice)
HELPERS = {
    "Lt": "a <= b if flip else a < b",
    "LtE": "a < b if flip else a <= b",
    "Gt": "a >= b if flip else a > b",
    "GtE": "a > b if flip else a >= b",
    "Eq": "a != b if flip else a == b",
    "NotEq": "a == b if flip else a != b",
    "BitOr": "a & b if flip else a | b",
    "BitAnd": "a | b if flip else a & b",
    "remove": "a if flip else a & ~b",
}


def _helpers() -> dict[str, Callable]:
    text = "".join(f"def mutant__{name}(self, flip, a, b):\n    return {body}\n\n" for name, body in HELPERS.items())
    filename = "<mutant schema helpers>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), scope)
    return {f"mutant__{name}": scope[f"mutant__{name}"] for name in HELPERS}


def _helper(name: str, number: int, a: ast.expr, b: ast.expr) -> ast.expr:
    method = ast.Attribute(ast.Name("self", ast.Load()), f"mutant__{name}", ast.Load())
    return ast.Call(method, [_switch(number), a, b], [])


class _Switches(ast.NodeTransformer):
    """Each point's node is rewritten so that `self.mutation == k` makes the
    change, children first; every encoding keeps the node's size linear:
    a dropped conjunct is `(bool(c) or self.mutation == k)`, a dropped
    disjunct `(bool(c) and self.mutation != k)`, a dropped `not` compares
    with the switch, a flipped or swapped operator is a helper call, a kept
    field `(s.f if self.mutation == k else value)`, a skipped statement
    `if self.mutation != k: statement`."""

    def __init__(self, found: list[tuple[ast.AST, Point, ast.AST]]):
        self.at: dict[int, list[tuple[int, str, ast.AST]]] = {}
        for node, point, alt in found:
            self.at.setdefault(id(node), []).append((point.number, point.kind, alt))

    def visit(self, node: ast.AST) -> Any:
        points = self.at.get(id(node), [])
        node = self.generic_visit(node)
        drops = [number for number, kind, _alt in points if kind in ("drop conjunct", "drop disjunct")]
        switched: ast.AST = node
        if drops:
            assert isinstance(node, ast.BoolOp) and len(drops) == len(node.values)
            keep = isinstance(node.op, ast.And)
            switched = ast.BoolOp(
                node.op,
                [
                    ast.BoolOp(
                        ast.Or() if keep else ast.And(),
                        [
                            ast.Call(ast.Name("bool", ast.Load()), [value], []),
                            _switch(number, ast.Eq() if keep else ast.NotEq()),
                        ],
                    )
                    for value, number in zip(node.values, drops)
                ],
            )
        for number, kind, alt in points:
            if kind in ("drop conjunct", "drop disjunct"):
                continue
            if kind in ("flip strictness", "flip comparison"):
                assert isinstance(switched, ast.Compare)
                op = type(switched.ops[0]).__name__
                switched = _helper(op, number, switched.left, switched.comparators[0])
            elif kind == "swap set operation":
                assert isinstance(switched, ast.BinOp)
                switched = _helper(type(switched.op).__name__, number, switched.left, switched.right)
            elif kind == "drop set removal":
                assert isinstance(switched, ast.BinOp) and isinstance(switched.right, ast.UnaryOp)
                switched = _helper("remove", number, switched.left, switched.right.operand)
            elif kind == "drop increment":
                assert isinstance(switched, ast.BinOp)
                step = ast.IfExp(_switch(number), ast.Constant(0), ast.Constant(1))
                switched = ast.BinOp(switched.left, switched.op, step)
            elif kind == "drop negation":
                assert isinstance(switched, ast.UnaryOp)
                switched = ast.Compare(switched, [ast.NotEq()], [_switch(number)])
            elif isinstance(switched, ast.stmt):  # a skipped statement
                switched = ast.If(_switch(number, ast.NotEq()), [switched], [])
            else:  # a kept field (built of names only)
                assert isinstance(switched, ast.expr) and isinstance(alt, ast.expr)
                switched = ast.IfExp(_switch(number), copy.deepcopy(alt), switched)
        return switched
