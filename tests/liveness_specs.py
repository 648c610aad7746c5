"""A toy spec for temporal properties: an arbiter that grants a request
only while a clock bit is 1. Small enough to reason about by hand, so each
property's verdict under its fairness is known before the checker runs
(tests/test_liveness.py says why each holds or fails). In a module of its
own so that its kernel is compiled once a test session."""

from __future__ import annotations

from typing import NamedTuple

from modelcheck.declare import Field, action, always_eventually, eventually_always, invariant, leads_to, strong, weak
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
