"""A small spec whose rules live in methods and in a module function, for
the mutant schema's tests (tests/test_schemata.py): slots taken and
released, with a count that must match them."""

from __future__ import annotations

from typing import NamedTuple

from modelcheck.declare import Field, Param, action, invariant
from modelcheck.ops import popcount
from modelcheck.spec import Spec


class Slots(NamedTuple):
    used: int  # the taken slots, a bitmask
    taken: int  # how many are taken


def grab(used: int, slot: int) -> int:
    return used | (1 << slot)


class Allocator(Spec):
    abstract = False
    state_type = Slots

    def __init__(self, slots: int = 3):
        self.slots, self.n = slots, 1

    def init_states(self) -> list[Slots]:
        return [Slots(0, 0)]

    def layout(self) -> list[Field]:
        return [Field("used", 0, (1 << self.slots) - 1), Field("taken", 0, self.slots)]

    def free(self, s: Slots, slot: int) -> bool:
        return not s.used & (1 << slot)

    @action("Take", slot=Param(lambda spec: range(spec.slots)))
    def take(self, s: Slots, slot: int) -> Slots | None:
        if self.free(s, slot) and s.taken < self.slots:
            return s._replace(used=grab(s.used, slot), taken=s.taken + 1)
        return None

    @action("Release", slot=Param(lambda spec: range(spec.slots)))
    def release(self, s: Slots, slot: int) -> Slots | None:
        if s.taken == 0 or self.free(s, slot):
            return None
        t = s._replace(used=s.used & ~(1 << slot))
        t = t._replace(taken=t.taken - 1)
        return t

    @invariant("CountMatches")
    def count_matches(self, s: Slots) -> bool:
        return popcount(s.used) == s.taken
