"""A metadata log's reading (observer.py) as the engine's `Observed`
(modelcheck/engine/observed.py): the spec's controller view, the
observation of a step, the normal form of a state, and words for people."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from modelcheck.config import ConfigError
from modelcheck.engine.observed import Move

from .observer import ELR_FEATURE, UNCLEAN, Reading
from .types import BOUNDS, NEW, NO_EPOCH, NO_LEADER, RECOVERY_NAMES, State, members

# the view's fields, in order, for people
VIEW = (
    "leader",
    "isr",
    "eligibleLeaderReplicas",
    "lastKnownElr",
    "leaderRecoveryState",
    "fenced",
    "inControlledShutdown",
    "min.insync.replicas",
    UNCLEAN,
    "metadata.version",
    ELR_FEATURE,
)
SETS = {1, 2, 3, 5, 6}


class LogObserved:
    """A Reading as the engine's `Observed` (modelcheck/engine/observed.py)."""

    def __init__(self, reading: Reading, load: Any, variant: str):
        self.reading, self.load, self.variant = reading, load, variant
        self.base = {
            **reading.config,
            "variant": variant,
            "max_records": 0,
            "controlled_shutdown": "staged",
            "metadata": "atomic",
        }
        self.lacking: list[str] = []  # what the variant cannot do of what a log may show
        # every bound but records' 1: `normal` resets the counters, so none is ever reached
        self.bounds = [b.key for b in BOUNDS[1:] if b.key not in NOT_LOGGED]
        self.spec = self.loaded(1)
        self.rf = self.spec.rf
        self.start = reading.start
        self.expected = reading.expected
        self.zeroed = {b.counter: 0 for b in BOUNDS}  # the bound counters, as `normal` leaves them

    def loaded(self, bound: int) -> Any:
        """The spec with every bound `bound`; what the variant refuses is left
        out and said: Kafka's two-step controlled shutdown (kafka-4's only),
        version changes (legacy has no ELR version)."""
        while True:
            try:
                return self.load({**self.base, **{key: bound for key in self.bounds}})
            except ConfigError as e:
                if "'controlled_shutdown'" in str(e) and self.base["controlled_shutdown"] == "staged":
                    self.base["controlled_shutdown"] = "atomic"
                    self.lacking.append(
                        f"{self.variant} has no separate controlled-shutdown step: an inControlledShutdown "
                        "record is a deviation from it"
                    )
                elif "'max_version_changes'" in str(e) and "max_version_changes" in self.bounds:
                    self.bounds.remove("max_version_changes")
                    self.lacking.append(f"{self.variant} cannot change versions: a FeatureLevelRecord is a deviation")
                else:
                    raise

    @property
    def start_where(self) -> str:
        return self.reading.start_where

    def start_text(self) -> str:
        """The log's first state of the partition, in the records' words."""
        words = self.words((self.start, 0, 0))
        return ", ".join(f"{k} {v}" for k, v in words.items() if k not in ("leader epoch bumps", "new registrations"))

    def about(self) -> str:
        c = self.reading.cluster
        replicas = ", ".join(map(str, c.replicas))
        return f"{c.topic or c.topic_id}:{self.reading.number} (replicas {replicas}) against {self.variant}"

    def notes(self) -> list[str]:
        skipped = ", ".join(f"{k} x{n}" for k, n in sorted(self.reading.skipped.items()))
        return [*self.lacking, *self.reading.notes, *([f"passed over: {skipped}"] if skipped else [])]

    def view(self, s: State) -> tuple[int, ...]:
        return (
            s.leader,
            s.isr,
            s.elr,
            s.last_known_elr,
            s.leader_recovery,
            s.fenced,
            s.in_controlled_shutdown & ~s.fenced,
            min(s.min_isr, self.rf),
            s.unclean_election,
            s.metadata_version,
            s.elr_version,
        )

    def observation(self, s: State, t: State) -> Hashable | None:
        seen = self.view(t)
        bumps = t.leader_epoch - s.leader_epoch
        registered = sum(1 << b for b in range(self.rf) if t.broker_epoch[b] != s.broker_epoch[b])
        if not bumps and not registered and seen == self.view(s):
            return None
        return seen, bumps, registered

    def normal(self, s: State) -> State:
        """`s` with what only equality reads made canonical: the leader epoch
        0, each broker's epoch 2, its clean-shutdown file's and proposal's
        epochs 2 if they are its current one, 1 if older (-1 and 0: none),
        and the bound counters 0."""
        current = s.broker_epoch

        def relative(values: tuple[int, ...], none: int) -> tuple[int, ...]:
            return tuple(v if v == none else 2 if v == current[b] else 1 for b, v in enumerate(values))

        return s._replace(
            leader_epoch=0,
            broker_epoch=(2,) * len(current),
            clean_shutdown_epoch=relative(s.clean_shutdown_epoch, NO_EPOCH),
            pending_epochs=relative(s.pending_epochs, 0),
            **self.zeroed,  # type: ignore[arg-type]
        )

    def words(self, key: Hashable) -> dict[str, Any]:
        assert isinstance(key, tuple)
        seen: tuple[int, ...] = key[0]
        bumps: int = key[1]
        registered: int = key[2]
        ids = self.reading.cluster.replicas
        out: dict[str, Any] = {}
        for i, (name, value) in enumerate(zip(VIEW, seen)):
            if i in SETS:
                out[name] = value if value == NO_LEADER else [ids[b] for b in members(value)]
            elif i == 0:
                out[name] = value if value == NO_LEADER else ids[value]
            elif i == 4:
                out[name] = RECOVERY_NAMES[value]
            elif i in (8,):
                out[name] = bool(value)
            elif i == 9:
                out[name] = "4.0-IV1 or later" if value == NEW else "before 4.0-IV1"
            else:
                out[name] = value
        out["leader epoch bumps"] = bumps
        out["new registrations"] = [ids[b] for b in members(registered)]
        return out

    def difference(self, wanted: Hashable, got: Hashable) -> list[str]:
        w, g = self.words(wanted), self.words(got)
        return [f"{k}: the log has {w[k]}, the spec {g[k]}" for k in w if w[k] != g[k]]

    def spec_for(self, moves: Sequence[Move]) -> Any:
        """Every bound as wide as the witness is long: no counter counts
        more than one a step (a bound's action may count only sometimes,
        as FenceBroker counts only running brokers, so none is read off)."""
        return self.loaded(max(1, len(moves)))


# bounds the log cannot exercise here: reassignments are refused when read; brokers' software is the newest
NOT_LOGGED = ("max_reassignments", "max_software_changes")
