"""The spec's methods flattened into free functions numba can compile
(the package's docstring lists the rewrites): `Flattener` walks what the
roots call, `_Rewriter` rewrites one function's body."""

from __future__ import annotations

import ast
import builtins
import copy
import dis
import inspect
import textwrap
import types
from collections.abc import Callable, Sequence
from typing import Any

from ... import ops
from ...spec import Spec
from .errors import KernelError

BUILTINS = {"min", "max", "range", "len", "int", "bool", "abs"}
OPS = {ops.replace_at: "replace_at", ops.popcount: "popcount", ops.lowest_bit: "lowest_bit"}


def _is_exception(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _constant(value: Any, where: str) -> ast.expr:
    if value is None or isinstance(value, (bool, int, float)):
        return ast.Constant(value)
    if isinstance(value, tuple) and all(isinstance(v, (bool, int)) for v in value):
        return ast.Tuple([ast.Constant(v) for v in value], ast.Load())
    raise KernelError(f"{where}: {value!r} is not an int, bool or tuple of ints")


def internal_decorator(name: str) -> list[str]:
    """Generated lines defining decorator `name` for the functions only
    compiled code calls (the flattened spec's, the glue's helpers): without
    the wrapper for calls from Python numba would compile for each."""
    return [
        "# called from compiled code only: no wrapper for calls from Python",
        f"{name} = njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)",
    ]


class Flattener:
    """Collects the functions reachable from a spec's roots, each rewritten
    into a free function; `source()` is the module they form."""

    def __init__(self, spec: Spec, family: Sequence[type] = ()):
        self.cls = type(spec)
        self.spec = spec
        # the classes whose rules the module carries, each chosen at run time
        # by the instance's place among them (see `method`): the same module
        # text, and so the same machine code, for every one of them
        self.family = tuple(family) if self.cls in family else (*family, self.cls)
        self.me = self.family.index(self.cls)
        self.state = spec.state_type
        self.done: dict[str, str] = {}  # mangled name -> source
        self.inline: set[str] = set()  # compiled into each caller (see _inlined)
        self.called: set[str] = set()  # never inlined (see run)
        self.todo: list[tuple[str, Callable, bool]] = []
        self.wanted: set[str] = set()  # done or in todo
        self.attrs: list[str] = []  # self attributes, in tuple order
        self.choices: dict[str, tuple[list[str], list[int], Callable]] = {}  # see `method`
        self.replacers: dict[tuple[str, ...], str] = {}

    # names ------------------------------------------------------------------
    def method(self, name: str, where: str) -> str:
        """The flattened name of `self.name`: the definition the spec's class
        resolves, or, where the family's classes resolve it to different
        definitions, a chooser that calls the one of the instance's class,
        by a number its parameters carry (so variants share one kernel)."""
        # (the class that defines it, the function) for each class, None where none does
        owners = [next((k for k in c.__mro__ if name in vars(k)), None) for c in self.family]
        each = [(o, vars(o)[name]) if o is not None and inspect.isfunction(vars(o)[name]) else None for o in owners]
        found = [d for d in each if d is not None]
        if not found:
            raise KernelError(f"{where}: self.{name} is not a method of {self.cls.__name__}")
        # a class without the method never calls it: it may take the first definition
        defined = [found[0] if d is None else d for d in each]
        distinct = list(dict.fromkeys(defined))
        targets = [self._want(f"{o.__name__}__{name}", f, True) for o, f in distinct]
        if len(targets) == 1:
            return targets[0]
        if name not in self.choices:
            self.attrs.append(f"choice of {name}")
            self.choices[name] = (targets, [distinct.index(d) for d in defined], distinct[0][1])
        return f"choose__{name}"

    def param(self, attr: str) -> Any:
        """The value of one of `attrs` for the spec instance: an attribute,
        or which definition of a chosen method its class runs."""
        if attr.startswith("choice of "):
            return self.choices[attr.removeprefix("choice of ")][1][self.me]
        if hasattr(self.spec, attr):
            return getattr(self.spec, attr)
        # another class's attribute, never read by this one's rules: its class default
        return next(getattr(c, attr) for c in self.family if hasattr(c, attr))

    def function(self, fn: Callable) -> str:
        if fn in OPS:
            return OPS[fn]
        return self._want(f"{fn.__module__.replace('.', '_')}__{fn.__name__}", fn, False)

    def _want(self, mangled: str, fn: Callable, is_method: bool) -> str:
        if mangled not in self.wanted:
            self.wanted.add(mangled)
            self.todo.append((mangled, fn, is_method))
        return mangled

    def attr(self, name: str) -> int:
        if name not in self.attrs:
            if not any(hasattr(c, name) for c in self.family) and not hasattr(self.spec, name):
                raise KernelError(
                    f"{self.cls.__name__}.{name}: an attribute of another variant's instances only; give it a "
                    "default in its class, so the variants can share a kernel"
                )
            _constant(self.param(name), f"{self.cls.__name__}.{name}")  # must be plain data
            self.attrs.append(name)
        return self.attrs.index(name)

    def replacer(self, fields: tuple[str, ...], where: str) -> str:
        unknown = [f for f in fields if f not in self.state._fields]
        if unknown:
            raise KernelError(f"{where}: _replace({unknown[0]}=...): {self.state.__name__} has no such field")
        if fields not in self.replacers:
            self.replacers[fields] = f"replace__{'__'.join(fields)}"
        return self.replacers[fields]

    # the walk -------------------------------------------------------------------
    def run(self, roots: Sequence[tuple[str, Callable | None]], called: Sequence[str] = ()) -> None:
        """Flatten `roots`, (a method's name, None) or (name, a module-level
        function), and everything they call. A root is inlined into its one
        call site, but the methods named in `called`, whose call sites are
        many (a goal is checked after each step of each of its actions), are
        compiled once and called: inlined, each copy costs its compile."""
        for name, fn in roots:
            mangled = self.method(name, f"{self.cls.__name__}.{name}") if fn is None else self.function(fn)
            self.inline.update(self.choices[name][0] if mangled == f"choose__{name}" else [mangled])
        for name in called:
            mangled = self.method(name, f"{self.cls.__name__}.{name}")
            self.called.update(self.choices[name][0] if mangled == f"choose__{name}" else [mangled])
        while self.todo:
            mangled, fn, is_method = self.todo.pop(0)
            self.done[mangled] = self._rewrite(mangled, fn, is_method)
        self.inline -= self.called

    def _rewrite(self, mangled: str, fn: Callable, is_method: bool) -> str:
        where = f"{fn.__module__}.{fn.__qualname__}"
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError) as e:
            raise KernelError(f"{where}: no source to compile ({e})") from None
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise KernelError(f"{where}: not a plain function")
        _same_code(node, fn, where)
        node.name, node.decorator_list, node.returns = mangled, [], None
        for a in node.args.args + node.args.kwonlyargs:
            a.annotation = None
        if node.args.vararg or node.args.kwarg:
            raise KernelError(f"{where}: *args and **kwargs cannot be compiled")
        local = {a.arg for a in node.args.args} | {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        _Rewriter(self, fn.__globals__, local, is_method, where).visit(node)
        body = [b for b in node.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return):
            self.inline.add(mangled)
        return ast.unparse(ast.fix_missing_locations(node))

    def source(self) -> str:
        state = self.state
        lines = [
            "# generated by modelcheck.engine.kernel from "
            + ", ".join(f"{c.__module__}.{c.__qualname__}" for c in self.family),
            "# (the same methods the interpreted engine runs); do not edit",
            "from numba import int64, njit",
            "from modelcheck.engine.kernel_ops import lowest_bit, popcount, replace_at",
            f"from {state.__module__} import {state.__qualname__} as State",
            *internal_decorator("jit"),
            "# actions and invariants (one call site each) and one-expression helpers are",
            "# inlined: a disabled instance then costs its guard, not a call that copies the state",
            "inlined = njit(cache=True, nogil=True, inline='always')",
            "",
        ]
        for fields, name in sorted(self.replacers.items(), key=lambda kv: kv[1]):
            values = ", ".join(f if f in fields else f"s.{f}" for f in state._fields)
            lines += ["@inlined", f"def {name}(s, {', '.join(fields)}):", f"    return State({values})", ""]
        for name in sorted(self.done):
            lines += ["@inlined" if name in self.inline else "@jit", self.done[name], ""]
        for name, (targets, _chosen, fn) in sorted(self.choices.items()):
            args = ", ".join(["self", *list(inspect.signature(fn).parameters)[1:]])
            at = self.attrs.index(f"choice of {name}")
            lines += ["@inlined", f"def choose__{name}({args}):", f"    c = self[{at}]"]
            for number, target in enumerate(targets[:-1]):
                lines += [f"    {'if' if number == 0 else 'elif'} c == {number}:", f"        return {target}({args})"]
            lines += [f"    return {targets[-1]}({args})", ""]
        return "\n".join(lines)


def _same_code(node: ast.FunctionDef, fn: Callable, where: str) -> None:
    """The source read from the file must be what the interpreter runs: a
    file edited since it was imported would otherwise be compiled in its
    new form while the interpreted engine runs the old one. (A function with
    free variables, such as super()'s __class__, is refused by the
    rewriter, which says why.)"""
    if fn.__code__.co_freevars:
        return
    plain = copy.deepcopy(node)
    plain.decorator_list, plain.returns = [], None  # evaluated where the function is made, not in it
    for a in plain.args.args + plain.args.kwonlyargs:
        a.annotation = None
    plain.args.defaults = [ast.Constant(None) for _ in plain.args.defaults]
    plain.args.kw_defaults = [None if d is None else ast.Constant(None) for d in plain.args.kw_defaults]
    namespace: dict[str, Any] = {}
    exec(compile(ast.fix_missing_locations(ast.Module([plain], [])), "<check>", "exec"), namespace)
    if _shape(namespace[node.name].__code__) != _shape(fn.__code__):
        raise KernelError(f"{where}: its file has changed since it was imported; restart to compile what runs")


def _shape(code: types.CodeType) -> list[tuple[str, Any]]:
    """A function's instructions, with what compiling it outside its module
    may change left out: a call of a module's function loads it as an
    attribute or a method, and jumps move with that (so they are compared
    by the instruction they land on)."""
    ops = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "PRECALL", "NOP")]
    at = {i.offset: n for n, i in enumerate(ops)}
    return [
        (
            "LOAD_ATTR" if i.opname == "LOAD_METHOD" else i.opname,
            at.get(i.argval)
            if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs
            else i.argval
            if not isinstance(i.argval, types.CodeType)
            else None,
        )
        for i in ops
    ]


def _typed(arg: ast.expr) -> ast.expr:
    """A constant argument as a plain int64 or bool: numba would otherwise
    compile the callee once more for each literal value passed."""
    if (
        isinstance(arg, ast.UnaryOp)
        and isinstance(arg.op, ast.USub)
        and isinstance(arg.operand, ast.Constant)
        and isinstance(arg.operand.value, int)
    ):
        arg = ast.Constant(-arg.operand.value)
    if isinstance(arg, ast.Constant) and type(arg.value) in (int, bool):
        return ast.Call(ast.Name("int64" if type(arg.value) is int else "bool", ast.Load()), [arg], [])
    return arg


class _Rewriter(ast.NodeTransformer):
    """One function's body: self, globals and _replace rewritten (see Flattener)."""

    def __init__(self, flat: Flattener, scope: dict, local: set[str], is_method: bool, where: str):
        self.flat, self.scope, self.local, self.is_method, self.where = flat, scope, local, is_method, where

    def fail(self, node: ast.AST, why: str) -> KernelError:
        return KernelError(f"{self.where} (line {getattr(node, 'lineno', '?')}): {why}")

    def resolve(self, node: ast.expr) -> tuple[bool, Any]:
        """(found, value) of a global name or module attribute."""
        if isinstance(node, ast.Name) and node.id not in self.local:
            if node.id in self.scope:
                return True, self.scope[node.id]
            if node.id in BUILTINS or _is_exception(getattr(builtins, node.id, None)):
                return True, getattr(builtins, node.id)
            raise self.fail(node, f"name {node.id!r} is not defined or cannot be compiled")
        if isinstance(node, ast.Attribute):
            found, value = self.resolve(node.value)
            if found and isinstance(value, types.ModuleType):
                return True, getattr(value, node.attr)
        return False, None

    def as_global(self, node: ast.expr, value: Any) -> ast.expr:
        if value is self.flat.state:
            return ast.Name("State", ast.Load())
        if isinstance(node, ast.Name) and value is getattr(builtins, node.id, None):
            return node
        if inspect.isfunction(value):
            return ast.Name(self.flat.function(value), ast.Load())
        if isinstance(value, (types.ModuleType, type)) or callable(value):
            raise self.fail(
                node, f"{ast.unparse(node)} cannot be compiled (only functions, constants and the state class)"
            )
        return _constant(value, f"{self.where}: {ast.unparse(node)}")

    def is_self(self, node: ast.expr) -> bool:
        return self.is_method and isinstance(node, ast.Name) and node.id == "self"

    def visit_Call(self, node: ast.Call) -> ast.expr:
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super":
            raise self.fail(node, "super() cannot be compiled: call a shared helper instead")
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [ast.keyword(k.arg, self.visit(k.value)) for k in node.keywords]
        if isinstance(f, ast.Attribute) and self.is_self(f.value):
            return ast.Call(
                ast.Name(self.flat.method(f.attr, self.where), ast.Load()),
                [ast.Name("self", ast.Load()), *map(_typed, node.args)],
                node.keywords,
            )
        if isinstance(f, ast.Attribute) and f.attr == "_replace":
            if node.args or any(k.arg is None for k in node.keywords):
                raise self.fail(node, "_replace takes field=value keywords only")
            name = self.flat.replacer(tuple(k.arg for k in node.keywords if k.arg is not None), self.where)
            return ast.Call(ast.Name(name, ast.Load()), [self.visit(f.value), *(k.value for k in node.keywords)], [])
        node.func = self.visit(f)
        if isinstance(node.func, ast.Name) and node.func.id not in BUILTINS:
            node.args = [_typed(a) for a in node.args]
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if self.is_self(node.value):
            if isinstance(node.ctx, ast.Store):
                raise self.fail(node, "a spec attribute cannot be assigned in compiled code")
            return ast.Subscript(ast.Name("self", ast.Load()), ast.Constant(self.flat.attr(node.attr)), ast.Load())
        found, value = self.resolve(node)
        if found:
            return self.as_global(node, value)
        node.value = self.visit(node.value)
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.local or (self.is_method and node.id == "self"):
            return node
        return self.as_global(node, self.resolve(node)[1])

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(
            node,
            (
                ast.Lambda,
                ast.ListComp,
                ast.SetComp,
                ast.DictComp,
                ast.GeneratorExp,
                ast.Yield,
                ast.YieldFrom,
                ast.Try,
                ast.With,
                ast.List,
                ast.Dict,
                ast.Set,
                ast.JoinedStr,
                ast.Global,
                ast.Nonlocal,
            ),
        ):
            raise self.fail(
                node, f"{type(node).__name__} cannot be compiled (ints, tuples, loops and early returns only)"
            )
        return super().generic_visit(node)
