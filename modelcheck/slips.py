"""The slips of a mutant schema (schemata.py): what a mutation point
changes in the spec's code, and how the schema switches it on at run time
behind `self.mutation == k` while keeping the code linear."""

from __future__ import annotations

import ast
import copy
import linecache
from collections.abc import Callable
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


def points_of(
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


def helpers() -> dict[str, Callable]:
    text = "".join(f"def mutant__{name}(self, flip, a, b):\n    return {body}\n\n" for name, body in HELPERS.items())
    filename = "<mutant schema helpers>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), scope)
    return {f"mutant__{name}": scope[f"mutant__{name}"] for name in HELPERS}


def _helper(name: str, number: int, a: ast.expr, b: ast.expr) -> ast.expr:
    method = ast.Attribute(ast.Name("self", ast.Load()), f"mutant__{name}", ast.Load())
    return ast.Call(method, [_switch(number), a, b], [])


class Switches(ast.NodeTransformer):
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
