"""A toy spec for temporal properties: an arbiter that grants a request
only while a clock bit is 1. Small enough to reason about by hand, so each
property's verdict under its fairness is known before the checker runs
(tests/test_liveness.py says why each holds or fails). In a module of its
own so that its kernel is compiled once a test session."""

from __future__ import annotations

from typing import NamedTuple

from modelcheck.declare import (
    Field,
    Param,
    action,
    always_eventually,
    eventually_always,
    invariant,
    leads_to,
    strong,
    weak,
)
from modelcheck.spec import Spec


class ArbiterState(NamedTuple):
    clock: int  # Grant is enabled only while it is 1
    requested: int
    granted: int


class Arbiter(Spec):
    abstract = False
    state_type = ArbiterState

    def __init__(self, properties: tuple[str, ...] = ()):
        self.n = 1
        self.config = {"properties": list(properties)}

    def init_states(self) -> list[ArbiterState]:
        return [ArbiterState(0, 0, 0)]

    def layout(self) -> list[Field]:
        return [Field("clock", 0, 1), Field("requested", 0, 1), Field("granted", 0, 1)]

    def checked_properties(self) -> list[str]:
        return self.config["properties"]

    @action("Tick")
    def tick(self, s: ArbiterState) -> ArbiterState:
        return s._replace(clock=1 - s.clock)

    @action("Request")
    def request(self, s: ArbiterState) -> ArbiterState | None:
        return s._replace(requested=1) if not s.requested and not s.granted else None

    @action("Grant")
    def grant(self, s: ArbiterState) -> ArbiterState | None:
        return s._replace(requested=0, granted=1) if s.requested and s.clock else None

    @action("Release")
    def release(self, s: ArbiterState) -> ArbiterState | None:
        return s._replace(granted=0) if s.granted else None

    @invariant("TypeOK")
    def type_ok(self, s: ArbiterState) -> bool:
        return s.clock in (0, 1)

    @leads_to("RequestGranted", weak("Tick"), strong("Grant"))
    def request_granted(self, s: ArbiterState) -> tuple[bool, bool]:
        return bool(s.requested), bool(s.granted)

    @leads_to("RequestGrantedWeakly", weak("Tick", "Grant"))
    def request_granted_weakly(self, s: ArbiterState) -> tuple[bool, bool]:
        return bool(s.requested), bool(s.granted)

    @leads_to("RequestGrantedUnfairly")
    def request_granted_unfairly(self, s: ArbiterState) -> tuple[bool, bool]:
        return bool(s.requested), bool(s.granted)

    @always_eventually("GrantedOften", weak("Tick", "Request", "Release"), strong("Grant"))
    def granted_often(self, s: ArbiterState) -> bool:
        return bool(s.granted)

    @eventually_always("EventuallyIdle", weak("Tick", "Request", "Release"), strong("Grant"))
    def eventually_idle(self, s: ArbiterState) -> bool:
        return not s.requested


# ---- symmetric toys: two interchangeable processes (--symmetry swaps them) ----------

PROCESS = Param(lambda spec: range(2))


class TwoProcesses(Spec):
    """What both toys below share: two processes, each state's class its
    two renamings, the representative the smaller."""

    abstract = True

    def __init__(self, properties: tuple[str, ...] = ()):
        self.n = 2
        self.config = {"properties": list(properties)}

    def checked_properties(self) -> list[str]:
        return self.config["properties"]

    def enable_symmetry(self) -> None:
        self.symmetric = True

    def representative(self, s):
        return min(s, self.swapped(s)) if self.symmetric else s

    def class_size(self, s) -> int:
        return 1 if not self.symmetric or self.swapped(s) == s else 2

    def swapped(self, s):
        raise NotImplementedError


class TokenState(NamedTuple):
    holds: tuple[int, int]  # which process holds the token


class Token(TwoProcesses):
    """The holder passes the token to the other. One class, and its one step
    leads back into it: the quotient's cycle is one step long, the states'
    two (the token goes there and back)."""

    abstract = False
    state_type = TokenState

    def init_states(self) -> list[TokenState]:
        return [TokenState((1, 0))]

    def swapped(self, s: TokenState) -> TokenState:
        return TokenState(s.holds[::-1])

    @action("Pass", p=PROCESS)
    def pass_token(self, s: TokenState, p: int) -> TokenState | None:
        return TokenState((s.holds[1], s.holds[0])) if s.holds[p] else None

    @invariant("TypeOK")
    def type_ok(self, s: TokenState) -> bool:
        return sum(s.holds) == 1

    @always_eventually("Rests", weak("Pass", each="p"))
    def rests(self, s: TokenState) -> bool:
        return False  # the token never rests: violated by passing it for ever


class RelayState(NamedTuple):
    active: tuple[int, int]  # the process that took the relay
    bit: int  # the active process flips it
    done: int  # the other process finished


class Relay(TwoProcesses):
    """One process takes the relay and flips a bit for ever; the other may
    then finish. Flipping for ever is fair to Flip but not to the other's
    Finish, enabled throughout: under weak fairness of Finish for each
    process, FinishesOften holds. On the quotient Finish looks fair (no
    class has both processes' Finish enabled), so symmetry proposes the
    flipping component and the states refute it."""

    abstract = False
    state_type = RelayState

    def init_states(self) -> list[RelayState]:
        return [RelayState((0, 0), 0, 0)]

    def swapped(self, s: RelayState) -> RelayState:
        return s._replace(active=s.active[::-1])

    @action("Activate", p=PROCESS)
    def activate(self, s: RelayState, p: int) -> RelayState | None:
        return s._replace(active=(int(p == 0), int(p == 1))) if s.active == (0, 0) else None

    @action("Flip", p=PROCESS)
    def flip(self, s: RelayState, p: int) -> RelayState | None:
        return s._replace(bit=1 - s.bit) if s.active[p] else None

    @action("Finish", p=PROCESS)
    def finish(self, s: RelayState, p: int) -> RelayState | None:
        return s._replace(done=1) if s.active[1 - p] and not s.done else None

    @invariant("TypeOK")
    def type_ok(self, s: RelayState) -> bool:
        return sum(s.active) <= 1

    @always_eventually("FinishesOften", weak("Activate", "Flip"), weak("Finish", each="p"))
    def finishes_often(self, s: RelayState) -> bool:
        return bool(s.done)

    @always_eventually("FinishesOftenUnfairly", weak("Activate", "Flip"))
    def finishes_often_unfairly(self, s: RelayState) -> bool:
        return bool(s.done)


class ChainState(NamedTuple):
    x: int


class Chain(Spec):
    """0 -> 1 -> 2 -> 1 -> ...: the initial state is the only trigger of
    its leads-to, and the fair cycle is further on (a lasso's prefix then
    starts with the path from the trigger)."""

    abstract = False
    state_type = ChainState

    def __init__(self):
        self.n = 1
        self.config = {"properties": ["ZeroLeadsToNothing"]}

    def init_states(self) -> list[ChainState]:
        return [ChainState(0)]

    def checked_properties(self) -> list[str]:
        return self.config["properties"]

    @action("Step")
    def step(self, s: ChainState) -> ChainState:
        return ChainState({0: 1, 1: 2, 2: 1}[s.x])

    @invariant("TypeOK")
    def type_ok(self, s: ChainState) -> bool:
        return s.x in (0, 1, 2)

    @leads_to("ZeroLeadsToNothing", weak("Step"))
    def zero_leads_to_nothing(self, s: ChainState) -> tuple[bool, bool]:
        return s.x == 0, False
