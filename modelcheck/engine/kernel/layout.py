"""The row layout: where each element of each state field sits in a
packed row of uint64 words."""

from __future__ import annotations

from dataclasses import dataclass

from ...spec import Spec
from .errors import KernelError


@dataclass(frozen=True)
class Slot:
    """Where one element of a state field lives in a packed row."""

    field: int  # index in the state tuple
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
        raise KernelError(f"{type(spec).__name__}.layout() must list the fields of {spec.state_type.__name__} in order")
    wanted = []
    for i, f in enumerate(fields):
        width = max(0, (f.hi - f.lo).bit_length())
        if width > 63:  # the words are int64: a 64-bit field's mask would not fit
            raise KernelError(f"layout: field {f.name} needs {width} bits, more than a word's 63")
        if not -(2**63) <= f.lo <= f.hi < 2**63:
            # numba would type such a state's field uint64 (or object) and compile the kernel again
            # for it, beside the int64 one: every later call then resolves between the two
            raise KernelError(f"layout: field {f.name} ranges over {f.lo}..{f.hi}, beyond a 64-bit int")
        for e in [None] if f.length is None else range(f.length):
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
