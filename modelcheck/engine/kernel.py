"""How a spec's one text is compiled for the hot loop.

The spec's actions, invariants and `representative` are Python methods
(modelcheck/spec.py says which subset of Python they keep to). Here the
very same source is flattened into free functions, as numba can compile
them, and compiled; nothing of the protocol is written twice:

- a method becomes a function of `self`, where `self` is now a tuple of
  the instance's attribute values (`self.n` reads `self[k]`), and
  `self.m(...)` calls the class's own `m`, resolved through its MRO, so a
  variant's override is what runs, as in Python;
- a module-level function it calls is flattened too; a module-level
  constant becomes a literal; modelcheck.ops primitives become their
  compiled twins (kernel_ops.py); `s._replace(f=v)` becomes a call of the
  state class with every field;
- generated glue (the "kernel module") packs states into rows of uint64
  words as the spec's `layout` declares, enumerates every action over its
  domains in the interpreted spec's order, and keys each successor.

The flattened spec is written to a file under the cache directory named by
its hash (one a variant), the glue to another (one a variant and broker
count: the rest of a config, bounds and domains, is run-time tables), and
numba caches their machine code beside them, so a second run loads instead
of compiling. `kernel_for` raises KernelUnavailable, with the reason,
where numba is missing or the spec cannot be compiled (the caller then
runs the interpreted engine), and returns None where the kernel is not in
the cache and it was asked not to compile.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dis
import hashlib
import importlib.util
import inspect
import os
import pickle
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Callable

from .. import ops
from ..spec import LEADS_TO, Spec

BUILTINS = {"min", "max", "range", "len", "int", "bool", "abs"}
OPS = {ops.replace_at: "replace_at", ops.popcount: "popcount", ops.lowest_bit: "lowest_bit"}
GENERATOR_VERSION = "3"     # bump when the generated code changes shape
MAX_SUCCESSORS = 1 << 16    # a successor's index under its parent is a uint16


class KernelError(Exception):
    """The spec cannot be compiled: one line saying where and why."""


class KernelUnavailable(Exception):
    """No compiled kernel here (numba missing or failing, a spec it cannot
    compile, MODELCHECK_KERNEL=interpreted): the message says why."""


# ---- flattening ----------------------------------------------------------------------

def _is_exception(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _constant(value: Any, where: str) -> ast.expr:
    if value is None or isinstance(value, (bool, int, float)):
        return ast.Constant(value)
    if isinstance(value, tuple) and all(isinstance(v, (bool, int)) for v in value):
        return ast.Tuple([ast.Constant(v) for v in value], ast.Load())
    raise KernelError(f"{where}: {value!r} is not an int, bool or tuple of ints")


class Flattener:
    """Collects the functions reachable from a spec's roots, each rewritten
    into a free function; `source()` is the module they form."""

    def __init__(self, spec: Spec):
        self.cls = type(spec)
        self.spec = spec
        self.state = spec.state_type
        self.done: dict[str, str] = {}              # mangled name -> source
        self.inline: set[str] = set()               # compiled into each caller (see _inlined)
        self.todo: list[tuple[str, Callable, bool]] = []
        self.attrs: list[str] = []                  # self attributes, in tuple order
        self.replacers: dict[tuple[str, ...], str] = {}

    # names ------------------------------------------------------------------
    def method(self, name: str, where: str) -> str:
        owner = next((k for k in self.cls.__mro__ if name in vars(k)), None)
        fn = vars(owner).get(name) if owner else None
        if not inspect.isfunction(fn):
            raise KernelError(f"{where}: self.{name} is not a method of {self.cls.__name__}")
        return self._want(f"{owner.__name__}__{name}", fn, True)

    def function(self, fn: Callable) -> str:
        if fn in OPS:
            return OPS[fn]
        return self._want(f"{fn.__module__.replace('.', '_')}__{fn.__name__}", fn, False)

    def _want(self, mangled: str, fn: Callable, is_method: bool) -> str:
        if mangled not in self.done and all(m != mangled for m, _f, _i in self.todo):
            self.todo.append((mangled, fn, is_method))
        return mangled

    def attr(self, name: str) -> int:
        if name not in self.attrs:
            value = getattr(self.spec, name)
            _constant(value, f"{self.cls.__name__}.{name}")     # must be plain data
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
    def run(self, roots: list[tuple[str, Callable]]) -> None:
        for name, fn in roots:
            mangled = self.method(name, f"{self.cls.__name__}.{name}") if fn is None else self.function(fn)
            self.inline.add(mangled)
        while self.todo:
            mangled, fn, is_method = self.todo.pop(0)
            self.done[mangled] = self._rewrite(mangled, fn, is_method)

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
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        _Rewriter(self, fn.__globals__, local, is_method, where).visit(node)
        body = [b for b in node.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return):
            self.inline.add(mangled)
        return ast.unparse(ast.fix_missing_locations(node))

    def source(self) -> str:
        state = self.state
        lines = [f"# generated by modelcheck.engine.kernel from {self.cls.__module__}.{self.cls.__qualname__}",
                 "# (the same methods the interpreted engine runs); do not edit", "from numba import int64, njit",
                 "from modelcheck.engine.kernel_ops import lowest_bit, popcount, replace_at",
                 f"from {state.__module__} import {state.__qualname__} as State",
                 "jit = njit(cache=True, nogil=True)",
                 "# actions and invariants (one call site each) and one-expression helpers are",
                 "# inlined: a disabled instance then costs its guard, not a call that copies the state",
                 "inlined = njit(cache=True, nogil=True, inline='always')", ""]
        for fields, name in sorted(self.replacers.items(), key=lambda kv: kv[1]):
            values = ", ".join(f if f in fields else f"s.{f}" for f in state._fields)
            lines += ["@inlined", f"def {name}(s, {', '.join(fields)}):", f"    return State({values})", ""]
        for name in sorted(self.done):
            lines += ["@inlined" if name in self.inline else "@jit", self.done[name], ""]
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
    plain.decorator_list, plain.returns = [], None      # evaluated where the function is made, not in it
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
    return [("LOAD_ATTR" if i.opname == "LOAD_METHOD" else i.opname,
             at.get(i.argval) if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs else
             i.argval if not isinstance(i.argval, types.CodeType) else None) for i in ops]


def _typed(arg: ast.expr) -> ast.expr:
    """A constant argument as a plain int64 or bool: numba would otherwise
    compile the callee once more for each literal value passed."""
    if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) and isinstance(arg.operand, ast.Constant):
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
            raise self.fail(node, f"{ast.unparse(node)} cannot be compiled (only functions, constants "
                                  f"and the state class)")
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
            return ast.Call(ast.Name(self.flat.method(f.attr, self.where), ast.Load()),
                            [ast.Name("self", ast.Load()), *map(_typed, node.args)], node.keywords)
        if isinstance(f, ast.Attribute) and f.attr == "_replace":
            if node.args or any(k.arg is None for k in node.keywords):
                raise self.fail(node, "_replace takes field=value keywords only")
            name = self.flat.replacer(tuple(k.arg for k in node.keywords), self.where)
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
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Yield,
                             ast.YieldFrom, ast.Try, ast.With, ast.List, ast.Dict, ast.Set, ast.JoinedStr,
                             ast.Global, ast.Nonlocal)):
            raise self.fail(node, f"{type(node).__name__} cannot be compiled (ints, tuples, loops and "
                                  f"early returns only)")
        return super().generic_visit(node)


# ---- the layout ----------------------------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """Where one element of a state field lives in a packed row."""
    field: int          # index in the state tuple
    element: int | None  # index in a tuple field, or None
    lo: int
    width: int
    word: int
    shift: int


def plan_layout(spec: Spec) -> tuple[list[Slot], int, int]:
    """Every element's bits (first-fit, widest first, never across a word),
    the words a row takes and the bits used."""
    fields = spec.layout()
    names = [f.name for f in fields]
    if names != list(spec.state_type._fields):
        raise KernelError(f"{type(spec).__name__}.layout() must list the fields of "
                          f"{spec.state_type.__name__} in order")
    wanted = []
    for i, f in enumerate(fields):
        width = max(0, (f.hi - f.lo).bit_length())
        if width > 63:     # the words are int64: a 64-bit field's mask would not fit
            raise KernelError(f"layout: field {f.name} needs {width} bits, more than a word's 63")
        if not -2 ** 63 <= f.lo <= f.hi < 2 ** 63:
            # numba would type such a state's field uint64 (or object) and compile the kernel again
            # for it, beside the int64 one: every later call then resolves between the two
            raise KernelError(f"layout: field {f.name} ranges over {f.lo}..{f.hi}, beyond a 64-bit int")
        for e in ([None] if f.length is None else range(f.length)):
            wanted.append((width, i, e, f.lo))
    free: list[int] = []
    slots = []
    for width, i, e, lo in sorted(wanted, key=lambda w: (-w[0], w[1], -1 if w[2] is None else w[2])):
        word = next((k for k, room in enumerate(free) if room >= width), None)
        if word is None:
            free.append(64)
            word = len(free) - 1
        slots.append(Slot(i, e, lo, width, word, 64 - free[word]))
        free[word] -= width
    slots.sort(key=lambda s: (s.field, -1 if s.element is None else s.element))
    return slots, max(1, len(free)), sum(s.width for s in slots)


# ---- the glue ------------------------------------------------------------------------
# One glue module per (spec class, number of processes): what a config
# changes (each field's bits, the argument domains, which actions can fire,
# which invariants are checked, symmetry, how keys are made) is the table
# tuple C = (L, D, DN, LIVE, CHECKED, FLAGS, LABEL) passed at run time, so a new
# config of a variant already compiled compiles nothing.
#   L[slot] = (word, shift, mask, lo): where each element of each field lives
#   D[param, :DN[param]]: the values of each argument of each action
#   LIVE[action]: whether the config can enable it; CHECKED: invariants to check
#   FLAGS = (words a row, key mode, symmetric)
#   LABEL[action]: its first coverage label (one more a value of a coverage_by argument)

# how a packed representative becomes a key: exact in one word or two (a
# bijection), or a fingerprint of 64 or 128 bits (two independent hashes)
KEY_FMIX, KEY_MIX128, KEY_HASH, KEY_HASH128 = range(4)

GLUE_HELPERS = """
@inlined
def get(L, w, i):
    return int64((w[L[i, 0]] >> uint64(L[i, 1])) & uint64(L[i, 2])) + L[i, 3]

@inlined
def put(L, out, i, v):
    x = v - L[i, 3]
    if x < 0 or x > L[i, 2]:
        return False
    out[L[i, 0]] |= uint64(x) << uint64(L[i, 1])
    return True

@jit
def key(mode, row, out):
    if mode == 0:
        out[0] = fmix64(row[0])
    elif mode == 1:
        out[0], out[1] = mix128(row[0], row[1])
    else:
        out[0] = hash_words(row, uint64(0))
        if mode == 3:
            out[1] = hash_words(row, uint64(0x452821E638D01377))

@jit
def key_of(P, C, s, row, scratch, out):
    \"\"\"The visited-set key of state s (packed in row): its representative's row, mixed or hashed.\"\"\"
    if C[5][2]:
        bad = pack(C[0], REPRESENTATIVE(P, s), scratch)
        if bad:
            return bad
        key(C[5][1], scratch, out)
    else:
        key(C[5][1], row, out)
    return 0

@jit
def expand(P, C, frontier, lo, hi, words, keys, parents, index, action, instance, k, reached):
    \"\"\"Successors of frontier rows lo..hi-1 into the buffers from position k: (rows
    expanded, the new k, status: 0 done, -1 buffers full, -2 - field for a field out of
    its range).\"\"\"
    scratch = np.empty(C[5][0], np.uint64)
    v = np.empty(SLOTS, np.int64)
    cap = len(words)
    for i in range(lo, hi):
        end = successors(P, C, unpack_into(C[0], frontier[i], v), i, words, keys, parents, index, action, instance,
                         k, cap, scratch, reached)
        if end < 0:
            return i - lo, k, end
        k = end
    return hi - lo, k, 0

@jit
def keys_of_rows(P, C, rows, out):
    scratch = np.empty(C[5][0], np.uint64)
    v = np.empty(SLOTS, np.int64)
    for i in range(len(rows)):
        bad = key_of(P, C, unpack_into(C[0], rows[i], v), rows[i], scratch, out[i])
        if bad:
            return bad
    return 0
"""


def _glue_source(spec: Spec, flat: Flattener, spec_module: str) -> str:
    cls = type(spec)
    fields = spec.layout()
    values = []         # every slot's value, read from a state s
    for f in fields:
        values += [f"s.{f.name}"] if f.length is None else [f"s.{f.name}[{e}]" for e in range(f.length)]
    state, i = [], 0     # a State built from the slot values v
    for f in fields:
        if f.length is None:
            state.append(f"v[{i}]")
            i += 1
        else:
            state.append("(" + "".join(f"v[{i + e}], " for e in range(f.length)) + ")")
            i += f.length
    lines = [f"# generated by modelcheck.engine.kernel for {cls.__qualname__}, {spec.n} processes; do not edit",
             "import numpy as np", "from numba import njit, int64, uint64",
             "from modelcheck.engine.kernel_ops import fmix64, hash_words, mix128, replace_at",
             f"from {spec_module} import *", "jit = njit(cache=True, nogil=True)",
             "inlined = njit(cache=True, nogil=True, inline='always')", f"SLOTS = {len(values)}",
             GLUE_HELPERS.replace("REPRESENTATIVE", flat.method("representative", "representative")),
             "# a state's slots are one flat tuple of ints, so packing and unpacking are",
             "# loops over the layout table (small code for numba to compile)",
             "@inlined", "def values(s):", f"    return ({', '.join(values)},)", "",
             "@jit", "def unpack_into(L, w, v):", '    """The state packed in row w (v: scratch for its slot values)."""',
             "    for i in range(SLOTS):", "        v[i] = get(L, w, i)", f"    return State({', '.join(state)})", "",
             "@jit", "def unpack(L, w):", "    return unpack_into(L, w, np.empty(SLOTS, np.int64))", "",
             "@jit", "def pack(L, s, out):",
             '    """Write s into out (a row); 0, or 1 + the index of the first field out of its range."""',
             "    for k in range(len(out)):", "        out[k] = 0", "    v = values(s)",
             "    for i in range(SLOTS):", "        if not put(L, out, i, v[i]):", "            return FIELD_OF[i] + 1",
             "    return 0", ""]
    names = [f.name for f in fields]
    lines.insert(lines.index(f"SLOTS = {len(values)}") + 1,
                 f"FIELD_OF = {tuple(names.index(v.split('.')[1].split('[')[0]) for v in values)!r}")
    # the successors of one state, in the interpreted spec's order
    lines += ["@jit", "def successors(P, C, s, row, words, keys, parents, index, action, instance, k, cap, scratch,"
              " reached):",
              '    """Append the successors of s (frontier row `row`) from position k; the new k,',
              '    -1 when the buffers are full, or -2 - field for a field out of range; mark in',
              '    `reached` the goals its steps reach."""',
              "    D, DN, LIVE, LABEL, BASE = C[1], C[2], C[3], C[6], C[7]", "    j = 0"]
    param = 0
    goals = list(cls.goals)
    for number, (name, fn) in enumerate(cls.actions.items()):
        # the coverage label: the action's first, plus the place of its coverage_by argument's value
        split = list(cls.params[name]).index(cls.coverage_by[name]) if cls.coverage_by[name] else None
        label = f"LABEL[{number}]" + ("" if split is None else f" + x{split}")
        lines += [f"    if LIVE[{number}]:", "        n0 = 0"]
        indent, variables = "        ", []
        for d in range(len(cls.params[name])):
            # the instance's number: the action's base, then its argument tuple in mixed radix
            lines += [f"{indent}for x{d} in range(DN[{param}]):", f"{indent}    a{d} = D[{param}, x{d}]",
                      f"{indent}    n{d + 1} = n{d} * DN[{param}] + x{d}"]
            variables.append(f"a{d}")
            indent += "    "
            param += 1
        lines += [f"{indent}t = {flat.method(fn.__name__, name)}(P, s{''.join(', ' + v for v in variables)})",
                  f"{indent}if t is not None:",
                  f"{indent}    if k >= cap:", f"{indent}        return -1",
                  f"{indent}    bad = pack(C[0], t, words[k])",
                  f"{indent}    if not bad:", f"{indent}        bad = key_of(P, C, t, words[k], scratch, keys[k])",
                  f"{indent}    if bad:", f"{indent}        return -2 - bad",
                  f"{indent}    parents[k] = row", f"{indent}    index[k] = j", f"{indent}    action[k] = {label}",
                  f"{indent}    instance[k] = BASE[{number}] + n{len(cls.params[name])}",
                  f"{indent}    k += 1", f"{indent}    j += 1"]
        for g, goal_fn in spec.goals_of[name]:
            lines += [f"{indent}    if reached[{goals.index(g)}] == 0 and {flat.method(goal_fn.__name__, g)}(P, s, t):",
                      f"{indent}        reached[{goals.index(g)}] = 1"]
    lines += ["    return k", ""]
    lines += ["@jit", "def class_sizes(P, C, rows, lo, hi):",
              '    """The states the classes of rows lo..hi-1 hold (symmetry), summed."""',
              "    v = np.empty(SLOTS, np.int64)", "    total = 0", "    for i in range(lo, hi):",
              f"        total += {flat.method('class_size', 'class_size')}(P, unpack_into(C[0], rows[i], v))",
              "    return total", ""]
    lines += ["@jit", "def check(P, C, rows, lo, hi):",
              '    """The first row in lo..hi-1 that violates a checked invariant, and its place in',
              '    CHECKED (-1, -1: none)."""',
              "    CHECKED = C[4]", "    v = np.empty(SLOTS, np.int64)", "    for i in range(lo, hi):",
              "        s = unpack_into(C[0], rows[i], v)",
              "        for j in range(len(CHECKED)):", "            which = CHECKED[j]", "            ok = True"]
    for number, (name, fn) in enumerate(cls.invariants.items()):
        lines += [f"            {'if' if number == 0 else 'elif'} which == {number}:",
                  f"                ok = {flat.method(fn.__name__, name)}(P, s)"]
    lines += ["            if not ok:", "                return i, j", "    return -1, -1", ""]
    # the temporal properties' predicates of each row, as bits (Kernel.labels)
    lines += ["@jit", "def labels(P, C, rows, out):", "    v = np.empty(SLOTS, np.int64)", "    for i in range(len(rows)):",
              "        s = unpack_into(C[0], rows[i], v)", "        bits = uint64(0)"]
    for number, (name, fn) in enumerate(cls.properties.items()):
        call = f"{flat.method(fn.__name__, name)}(P, s)"
        if cls.property_form[name] == LEADS_TO:
            lines += [f"        p, q = {call}", "        if p:", f"            bits |= uint64(1) << uint64({2 * number})",
                      "        if q:", f"            bits |= uint64(1) << uint64({2 * number + 1})"]
        else:
            lines += [f"        if {call}:", f"            bits |= uint64(1) << uint64({2 * number})"]
    lines += ["        out[i] = bits", ""]
    return "\n".join(lines)


class Kernel:
    """A spec compiled: `expand` a frontier's rows into successor rows,
    keys and links; `check` rows against the checked invariants; `pack` and
    `unpack` single states (Python's State and a row of words)."""

    def __init__(self, spec: Spec, cache_dir: Path, fingerprint_bits: int = 64):
        import numpy as np
        cls = type(spec)
        self.fields = spec.layout()
        self.action_count = len(spec.coverage_labels)      # what the kernel's action codes count
        self.goal_count = len(cls.goals)
        self.property_count = len(cls.properties)
        if self.property_count > 32:
            raise KernelError(f"{cls.__name__} declares {self.property_count} temporal properties; a state's "
                              f"labels hold 32")
        self.spec_name = cls.__name__
        slots, self.words, self.bits = plan_layout(spec)
        self.exact = self.bits <= 128          # the visited set holds the packed states themselves
        self.fingerprint_bits = None if self.exact else fingerprint_bits
        if self.exact:
            mode = KEY_MIX128 if self.words == 2 else KEY_FMIX
        else:
            mode = KEY_HASH128 if fingerprint_bits == 128 else KEY_HASH
        self.key_words = 2 if mode in (KEY_MIX128, KEY_HASH128) else 1
        most = sum(len(list(product(*spec.domains(a)))) for a in spec.actions)
        if most > MAX_SUCCESSORS:
            raise KernelError(f"a state may have {most:,} successors, more than the {MAX_SUCCESSORS:,} "
                              f"a parent link numbers")
        # every action and invariant of the class, whatever this config checks or
        # enables, so that the flattened module (and its cached machine code)
        # serves every config of the variant; numba compiles only what is called
        flat = Flattener(spec)
        flat.run([(fn.__name__, None) for fn in [*cls.actions.values(), *cls.invariants.values(), *cls.goals.values(),
                                                 *cls.properties.values()]]
                 + [("representative", None), ("class_size", None)])
        self.params = tuple(getattr(spec, a) for a in flat.attrs)
        self.source = {"spec": flat.source()}
        self.source["glue"] = _glue_source(spec, flat, _module_name("spec", self.source["spec"]))
        domains = [d for a in cls.actions for d in spec.domains(a)]
        width = max([1, *map(len, domains)])
        dormant = spec.never_enabled()
        invariants = list(cls.invariants)
        self.tables = (
            np.array([(s.word, s.shift, (1 << s.width) - 1, s.lo) for s in slots], dtype=np.int64),
            np.array([d + [0] * (width - len(d)) for d in domains] or [[0]], dtype=np.int64),
            np.array([len(d) for d in domains] or [0], dtype=np.int64),
            np.array([a not in dormant for a in cls.actions], dtype=np.uint8),
            np.array([invariants.index(n) for n in spec.checked_invariants()], dtype=np.int64),
            np.array([self.words, mode, spec.symmetric], dtype=np.int64),
            np.array([spec.first_label(a) for a in cls.actions] or [0], dtype=np.int64),
            np.array([spec.instance_base[a] for a in cls.actions] or [0], dtype=np.int64))
        self.cache_dir = cache_dir
        self.module = self._load()

    def _load(self) -> types.ModuleType:
        _load(self.cache_dir, "spec", self.source["spec"])
        return _load(self.cache_dir, "glue", self.source["glue"])

    # A kernel travels to Spark executors as its source and tables, not as
    # the spec object; each loads it from its own cache (compiling once a
    # machine).
    def __getstate__(self) -> dict:
        return {k: v for k, v in vars(self).items() if k not in ("module", "cache_dir")}

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.cache_dir = cache_dir()
        self.module = self._load()

    # ---- what engines call --------------------------------------------------------
    def field_error(self, bad: int) -> KernelError:
        f = self.fields[bad - 1]
        return KernelError(f"a state's {f.name} left the range {f.lo}..{f.hi} that "
                           f"{self.spec_name}.layout() declares for this config")

    def pack(self, state: Any) -> Any:
        import numpy as np
        row = np.zeros(self.words, dtype=np.uint64)
        bad = self.module.pack(self.tables[0], state, row)
        if bad:
            raise self.field_error(bad)
        return row

    def unpack(self, row: Any) -> Any:
        return self.module.unpack(self.tables[0], row)

    def keys(self, rows: Any) -> Any:
        """The visited-set keys of packed states."""
        import numpy as np
        out = np.zeros((len(rows), self.key_words), dtype=np.uint64)
        bad = self.module.keys_of_rows(self.params, self.tables, rows, out)
        if bad:
            raise self.field_error(bad)
        return out

    def labels(self, rows: Any) -> Any:
        """Each row's temporal-property predicates, as bits: property i of
        the class's (in order) holds P at bit 2i and Q (leads-to) at 2i+1."""
        import numpy as np
        out = np.zeros(len(rows), dtype=np.uint64)
        self.module.labels(self.params, self.tables, rows, out)
        return out

    def check(self, rows: Any, lo: int, hi: int) -> tuple[int, int]:
        """(row, place in checked_invariants()) of the first violation in lo..hi-1, or (-1, -1)."""
        row, which = self.module.check(self.params, self.tables, rows, lo, hi)
        return int(row), int(which)

    def class_sizes(self, rows: Any, lo: int, hi: int) -> int:
        """The states the classes of rows lo..hi-1 hold, summed (their count without symmetry)."""
        return int(self.module.class_sizes(self.params, self.tables, rows, lo, hi))

    def compiled(self) -> bool:
        """Whether numba has machine code for this kernel on disk (a run then loads, not compiles)."""
        return any(self.cache_dir.glob(f"__pycache__/{_module_name('glue', self.source['glue'])}.expand-*.nbi"))

    def warm(self, inits: list) -> None:
        """Compile (or load) everything engines call, on the initial states."""
        import numpy as np
        rows = np.array([self.pack(s) for s in inits], dtype=np.uint64)
        self.keys(rows)
        self.check(rows, 0, len(rows))
        self.class_sizes(rows, 0, len(rows))
        m = 1 << 12
        self.module.expand(self.params, self.tables, rows, 0, 1, np.empty((m, self.words), np.uint64),
                           np.empty((m, self.key_words), np.uint64), np.empty(m, np.int64), np.empty(m, np.uint16),
                           np.empty(m, np.uint8), np.empty(m, np.uint16), 0, np.zeros(max(1, self.goal_count), np.uint8))
        if self.property_count:
            self.labels(rows)


def kernel_for(spec: Spec, note: Callable[[str], None] = lambda text: None, compile: bool = True,
               fingerprint_bits: int = 64) -> Kernel | None:
    """The compiled kernel of `spec`, loaded from the cache or (with
    `compile`) compiled now, `note` hearing that a compile will take a
    while; None if it is not in the cache and `compile` is false. States
    too large to store whole are keyed by fingerprints of
    `fingerprint_bits` (64 or 128). KernelUnavailable says why there is
    none at all."""
    if os.environ.get("MODELCHECK_KERNEL") == "interpreted":
        raise KernelUnavailable("MODELCHECK_KERNEL=interpreted")
    try:
        import numba
        from numba.core.errors import NumbaError
    except Exception as e:          # an import that fails in any way: say so, run interpreted
        raise KernelUnavailable(f"numba cannot be imported ({type(e).__name__}: {e})") from None
    try:
        kernel = Kernel(spec, cache_dir(), fingerprint_bits)
        if not kernel.compiled():
            if not compile:
                return None
            note(f"compiling the kernel of {type(spec).__name__} for {spec.n} processes with numba "
                 f"{numba.__version__} (once: later runs load it)")
        kernel.warm(spec.init_states())
    except KernelError as e:
        raise KernelUnavailable(str(e)) from None
    except (NumbaError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise KernelUnavailable(f"numba cannot compile {type(spec).__name__}: {first}") from None
    return kernel


def compile_elsewhere(spec: Spec) -> subprocess.Popen:
    """Compile `spec`'s kernel into the cache in a child process (this
    module run as a program, given this process's pid, sys.path and the
    pickled spec; it dies with this process); it exits 0 when the kernel is
    in the cache, else 3 with the reason on stderr."""
    child = subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid())], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    child.stdin.write(pickle.dumps(sys.path) + pickle.dumps(spec))    # the path first: the spec's class may need it
    child.stdin.close()
    return child


def _compile_here() -> None:
    from ..lifetime import die_with_parent
    die_with_parent(int(sys.argv[1]))        # a compile nobody waits for any more is not left running
    sys.path[:] = pickle.load(sys.stdin.buffer)
    spec = pickle.load(sys.stdin.buffer)
    try:
        kernel_for(spec)
    except KernelUnavailable as e:
        print(e, file=sys.stderr)
        sys.exit(3)


def _module_name(kind: str, source: str) -> str:
    import numba
    digest = hashlib.sha256(f"{GENERATOR_VERSION} {numba.__version__} {source}".encode()).hexdigest()[:20]
    return f"modelcheck_{kind}_{digest}"


def _load(cache_dir: Path, kind: str, source: str) -> types.ModuleType:
    """Import generated source from a file named by its hash (numba caches
    compiled code beside a real file, and the name changes with the text)."""
    name = _module_name(kind, source)
    if name in sys.modules:
        return sys.modules[name]
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{name}.py"
    if not path.is_file() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    loader = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module
    loader.loader.exec_module(module)
    return module


def cache_dir() -> Path:
    """Where generated kernels and numba's machine code live: MODELCHECK_CACHE,
    else $XDG_CACHE_HOME/modelcheck, else ~/.cache/modelcheck."""
    if os.environ.get("MODELCHECK_CACHE"):
        return Path(os.environ["MODELCHECK_CACHE"]) / "kernels"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "modelcheck" / "kernels"


if __name__ == "__main__":      # compile_elsewhere's child
    _compile_here()
