"""The generated glue ("kernel module") of a spec class and broker count:
packing and unpacking rows, every action over its domains in the
interpreted spec's order, invariant checks, keys and property labels.
Only what depends on the spec is generated; a field's bits and a row's
key are rows.py's, imported."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...declare import LEADS_TO
from ...spec import Spec
from .flatten import Flattener, internal_decorator

# One glue module per (kernel family, number of processes): the rules of
# every class of the family (Spec.kernel_family, each instance choosing its
# own by the parameters P); what a class and config change (each field's
# bits, the argument domains, which actions can fire, which invariants are
# checked, symmetry, how keys are made) is the table tuple C (Tables) passed
# at run time, so a new config, or another variant of the family, compiles
# nothing.


class Tables(NamedTuple):
    """The tuple C every generated function takes: its slots named once.
    The glue reads C[i] at the place of each name here (TABLE), and
    compiled.py builds it, passing numba a plain tuple (the compiled
    signature, and so the cache, is a tuple's)."""

    layout: np.ndarray  # L[slot] = (word, shift, mask, lo): where each element of each field lives
    domains: np.ndarray  # D[param, :DN[param]]: the values of each argument of each action (none: omitted)
    domain_sizes: np.ndarray  # DN[param]
    live: np.ndarray  # LIVE[action]: whether the config can enable it
    checked: np.ndarray  # CHECKED: the invariants to check, as places among the family's
    flags: np.ndarray  # FLAGS: Flags
    label: np.ndarray  # LABEL[action]: its first coverage label (one more a value of a coverage_by argument)
    base: np.ndarray  # BASE[action]: the number of its first instance
    goal: np.ndarray  # GOAL[goal]: its place among the class's own goals (-1: omitted)
    properties: np.ndarray  # PROPERTY[property]: its place among the class's own properties (-1: omitted)


class Flags(NamedTuple):
    """Tables.flags, slot by slot."""

    words: int  # words a row
    key_mode: int  # KEY_FMIX, KEY_MIX128, KEY_HASH or KEY_HASH128
    symmetric: int


TABLE = {name: f"C[{i}]" for i, name in enumerate(Tables._fields)}  # each table as the glue reads it
FLAG = {name: f"{TABLE['flags']}[{i}]" for i, name in enumerate(Flags._fields)}
LAYOUT = Tables._fields.index("layout")


@dataclass(frozen=True)
class Rules:
    """What a kernel's glue enumerates: the actions, invariants, goals and
    properties of every class of its family (in the name order Spec keeps);
    an instance's tables switch off what its own class omits."""

    actions: dict[str, Callable]
    params: dict[str, tuple[str, ...]]
    coverage_by: dict[str, str | None]
    invariants: dict[str, Callable]
    goals: dict[str, Callable]
    goal_actions: dict[str, tuple[str, ...]]
    properties: dict[str, Callable]
    property_form: dict[str, str]

    @staticmethod
    def signature(cls: type[Spec]) -> dict[str, dict[str, tuple]]:
        """Each rule's name -> what the glue makes of it: classes that agree
        on every rule they both have can share a kernel."""
        return {
            "actions": {n: (f.__name__, tuple(cls.params[n]), cls.coverage_by[n]) for n, f in cls.actions.items()},
            "invariants": {n: (f.__name__,) for n, f in cls.invariants.items()},
            "goals": {n: (f.__name__, cls.goal_actions[n]) for n, f in cls.goals.items()},
            "properties": {n: (f.__name__, cls.property_form[n]) for n, f in cls.properties.items()},
        }

    @classmethod
    def of(cls, family: Sequence[type[Spec]]) -> Rules:
        def union(kind: str) -> dict[str, Callable]:
            merged = {n: f for k in reversed(family) for n, f in getattr(k, kind).items()}
            return dict(sorted(merged.items()))

        def each(kind: str) -> dict:
            return {n: v for k in reversed(family) for n, v in getattr(k, kind).items()}

        actions, goals, properties = union("actions"), union("goals"), union("properties")
        return cls(
            actions,
            {n: tuple(p) for n, p in each("params").items()},
            each("coverage_by"),
            union("invariants"),
            goals,
            each("goal_actions"),
            properties,
            each("property_form"),
        )

    def actions_of(self, goal: str) -> list[str]:
        """The actions whose steps goal `goal` is checked on."""
        return [a for a in self.actions if not self.goal_actions[goal] or a in self.goal_actions[goal]]

    def goals_of(self, action: str) -> list[tuple[str, Callable]]:
        return [(g, f) for g, f in self.goals.items() if not self.goal_actions[g] or action in self.goal_actions[g]]


# how a packed representative becomes a key (Flags.key_mode; rows.key): exact
# in one word or two (a bijection), or a fingerprint of 64 or 128 bits (two
# independent hashes)
KEY_FMIX, KEY_MIX128, KEY_HASH, KEY_HASH128 = range(4)

GLUE_HELPERS = """
@internal
def key_of(P, C, s, row, scratch, out):
    \"\"\"The visited-set key of state s (packed in row): its representative's row, mixed or hashed.\"\"\"
    if {symmetric}:
        bad = pack({layout}, REPRESENTATIVE(P, s), scratch)
        if bad:
            return bad
        key({key_mode}, scratch, out)
    else:
        key({key_mode}, row, out)
    return 0

@jit
def expand(P, C, frontier, lo, hi, words, keys, parents, index, action, instance, k, reached):
    \"\"\"Successors of frontier rows lo..hi-1 into the buffers from position k: (rows
    expanded, the new k, status: 0 done, -1 buffers full, -2 - field for a field out of
    its range).\"\"\"
    scratch = np.empty({words}, np.uint64)
    v = np.empty(SLOTS, np.int64)
    cap = len(words)
    for i in range(lo, hi):
        end = successors(P, C, unpack_into({layout}, frontier[i], v), i, words, keys, parents, index, action, instance,
                         k, cap, scratch, reached)
        if end < 0:
            return i - lo, k, end
        k = end
    return hi - lo, k, 0

@jit
def keys_of_rows(P, C, rows, out):
    scratch = np.empty({words}, np.uint64)
    v = np.empty(SLOTS, np.int64)
    for i in range(len(rows)):
        if {symmetric}:
            bad = key_of(P, C, unpack_into({layout}, rows[i], v), rows[i], scratch, out[i])
            if bad:
                return bad
        else:
            key({key_mode}, rows[i], out[i])  # a plain key reads the row, not the state
    return 0
"""


def glue_source(spec: Spec, flat: Flattener, rules: Rules, spec_module: str) -> str:
    T = TABLE
    fields = spec.layout()
    values = []  # every slot's value, read from a state s
    for f in fields:
        values += [f"s.{f.name}"] if f.length is None else [f"s.{f.name}[{e}]" for e in range(f.length)]
    state, i = [], 0  # a State built from the slot values v
    for f in fields:
        if f.length is None:
            state.append(f"v[{i}]")
            i += 1
        else:
            state.append("(" + "".join(f"v[{i + e}], " for e in range(f.length)) + ")")
            i += f.length
    lines = [
        f"# generated by modelcheck.engine.kernel for {flat.family[0].__qualname__}, {spec.n} processes; do not edit",
        f"# (the rules of {', '.join(c.__qualname__ for c in flat.family)}, each instance choosing its own)",
        "import numpy as np",
        "from numba import njit, int64, uint64",
        "from modelcheck.engine.kernel_ops import replace_at",
        "from modelcheck.engine.kernel.rows import get, key, put",
        f"from {spec_module} import *",
        "jit = njit(cache=True, nogil=True)",
        "inlined = njit(cache=True, nogil=True, inline='always')",
        *internal_decorator("internal"),
        f"SLOTS = {len(values)}",
        GLUE_HELPERS.format(**TABLE, **FLAG).replace("REPRESENTATIVE", flat.method("representative", "representative")),
        "# a state's slots are one flat tuple of ints, so packing and unpacking are",
        "# loops over the layout table (small code for numba to compile)",
        "@inlined",
        "def values(s):",
        f"    return ({', '.join(values)},)",
        "",
        "@internal",
        "def unpack_into(L, w, v):",
        '    """The state packed in row w (v: scratch for its slot values)."""',
        "    for i in range(SLOTS):",
        "        v[i] = get(L, w, i)",
        f"    return State({', '.join(state)})",
        "",
        "@jit",
        "def unpack(L, w):",
        "    return unpack_into(L, w, np.empty(SLOTS, np.int64))",
        "",
        "@jit",
        "def pack(L, s, out):",
        '    """Write s into out (a row); 0, or 1 + the index of the first field out of its range."""',
        "    for k in range(len(out)):",
        "        out[k] = 0",
        "    v = values(s)",
        "    for i in range(SLOTS):",
        "        if not put(L, out, i, v[i]):",
        "            return FIELD_OF[i] + 1",
        "    return 0",
        "",
    ]
    names = [f.name for f in fields]
    lines.insert(
        lines.index(f"SLOTS = {len(values)}") + 1,
        f"FIELD_OF = {tuple(names.index(v.split('.')[1].split('[')[0]) for v in values)!r}",
    )
    # the successors of one state, in the interpreted spec's order
    lines += [
        "@internal",
        "def successors(P, C, s, row, words, keys, parents, index, action, instance, k, cap, scratch, reached):",
        '    """Append the successors of s (frontier row `row`) from position k; the new k,',
        "    -1 when the buffers are full, or -2 - field for a field out of range; mark in",
        '    `reached` the goals its steps reach."""',
        f"    D, DN, LIVE, LABEL, BASE, GOAL = {T['domains']}, {T['domain_sizes']}, {T['live']}, {T['label']}, "
        f"{T['base']}, {T['goal']}",
        "    j = 0",
    ]
    param = 0
    goals = list(rules.goals)
    for number, (name, fn) in enumerate(rules.actions.items()):
        # the coverage label: the action's first, plus the place of its coverage_by argument's value
        by = rules.coverage_by[name]
        split = list(rules.params[name]).index(by) if by else None
        label = f"LABEL[{number}]" + ("" if split is None else f" + x{split}")
        lines += [f"    if LIVE[{number}]:", "        n0 = 0"]
        indent, variables = "        ", []
        for d in range(len(rules.params[name])):
            # the instance's number: the action's base, then its argument tuple in mixed radix
            lines += [
                f"{indent}for x{d} in range(DN[{param}]):",
                f"{indent}    a{d} = D[{param}, x{d}]",
                f"{indent}    n{d + 1} = n{d} * DN[{param}] + x{d}",
            ]
            variables.append(f"a{d}")
            indent += "    "
            param += 1
        lines += [
            f"{indent}t = {flat.method(fn.__name__, name)}(P, s{''.join(', ' + v for v in variables)})",
            f"{indent}if t is not None:",
            f"{indent}    if k >= cap:",
            f"{indent}        return -1",
            f"{indent}    bad = pack({T['layout']}, t, words[k])",
            f"{indent}    if not bad:",
            f"{indent}        bad = key_of(P, C, t, words[k], scratch, keys[k])",
            f"{indent}    if bad:",
            f"{indent}        return -2 - bad",
            f"{indent}    parents[k] = row",
            f"{indent}    index[k] = j",
            f"{indent}    action[k] = {label}",
            f"{indent}    instance[k] = BASE[{number}] + n{len(rules.params[name])}",
            f"{indent}    k += 1",
            f"{indent}    j += 1",
        ]
        for g, goal_fn in rules.goals_of(name):
            # GOAL[goal]: its place among the instance's class's goals, -1 if it omits it
            at = f"GOAL[{goals.index(g)}]"
            lines += [
                f"{indent}    if {at} >= 0 and reached[{at}] == 0 and {flat.method(goal_fn.__name__, g)}(P, s, t):",
                f"{indent}        reached[{at}] = 1",
            ]
    lines += ["    return k", ""]
    lines += [
        "@jit",
        "def class_sizes(P, C, rows, lo, hi):",
        '    """The states the classes of rows lo..hi-1 hold (symmetry), summed."""',
        "    v = np.empty(SLOTS, np.int64)",
        "    total = 0",
        "    for i in range(lo, hi):",
        f"        total += {flat.method('class_size', 'class_size')}(P, unpack_into({T['layout']}, rows[i], v))",
        "    return total",
        "",
    ]
    lines += [
        "@jit",
        "def check(P, C, rows, lo, hi):",
        '    """The first row in lo..hi-1 that violates a checked invariant, and its place in',
        '    CHECKED (-1, -1: none)."""',
        f"    CHECKED = {T['checked']}",
        "    v = np.empty(SLOTS, np.int64)",
        "    for i in range(lo, hi):",
        f"        s = unpack_into({T['layout']}, rows[i], v)",
        "        for j in range(len(CHECKED)):",
        "            which = CHECKED[j]",
        "            ok = True",
    ]
    for number, (name, fn) in enumerate(rules.invariants.items()):
        lines += [
            f"            {'if' if number == 0 else 'elif'} which == {number}:",
            f"                ok = {flat.method(fn.__name__, name)}(P, s)",
        ]
    lines += ["            if not ok:", "                return i, j", "    return -1, -1", ""]
    # the temporal properties' predicates of each row, as bits (Kernel.labels)
    lines += [
        "@jit",
        "def labels(P, C, rows, out):",
        "    v = np.empty(SLOTS, np.int64)",
        "    for i in range(len(rows)):",
        f"        s = unpack_into({T['layout']}, rows[i], v)",
        "        bits = uint64(0)",
    ]
    for number, (name, fn) in enumerate(rules.properties.items()):
        # PROPERTY[property]: its place among the instance's class's properties, -1 if it omits it
        call = f"{flat.method(fn.__name__, name)}(P, s)"
        at = f"{T['properties']}[{number}]"
        if rules.property_form[name] == LEADS_TO:
            lines += [
                f"        if {at} >= 0:",
                f"            p, q = {call}",
                "            if p:",
                f"                bits |= uint64(1) << uint64(2 * {at})",
                "            if q:",
                f"                bits |= uint64(1) << uint64(2 * {at} + 1)",
            ]
        else:
            lines += [f"        if {at} >= 0 and {call}:", f"            bits |= uint64(1) << uint64(2 * {at})"]
    lines += ["        out[i] = bits", ""]
    return "\n".join(lines)
