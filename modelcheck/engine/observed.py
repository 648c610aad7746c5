"""Trace validation: is a logged history a behaviour of the spec?

A system logs some of its steps and part of its state (Kafka's metadata
log: the controller's decisions, nothing of the brokers' data). The log is
a constraint on the spec, as in Cirstea, Kuppe, Loillier and Merz,
"Validating Traces of Distributed Programs Against TLA+ Specifications"
(2024): breadth-first over (spec state, log position), every state
consistent with the records so far is kept; before each logged step the
spec may take any number of hidden steps (whose observation is None), and
the logged step's observation must equal the record's. Breadth-first, so a
failure is met at the first record no behaviour allows.

The protocol gives the engine an `Observed`: the spec, the view the log
starts in, the expected observations in order, and `normal`, which
forgets what cannot change later observations (epoch values, bound
counters), so that the states met are few however long the log is. The
answer for a set of states and an observation is memoised: a long log of
repeated patterns costs a dict lookup a record, not a search.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..guards import refusal
from ..result import Step
from ..spec import Spec
from .witness import Move, Path, coverage, replay, witness_moves


@dataclass(frozen=True)
class Expected:
    """One logged step: the observation it must have, where it is in the
    log, its records for people, and the actions that write such records
    (to say, at a deviation, which guard refused each)."""

    key: Hashable
    where: str
    text: str
    candidates: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()


class Observed(Protocol):
    """What a protocol's log reader gives the engine."""

    spec: Spec
    start: Hashable  # the view (`view`) of the state the log starts in
    start_where: str  # where in the log that state is
    expected: Sequence[Expected]

    def view(self, s: Any) -> Hashable: ...

    def observation(self, s: Any, t: Any) -> Hashable | None:
        """What the log shows of the step s -> t (s normal): None if nothing."""

    def normal(self, s: Any) -> Any: ...

    def difference(self, wanted: Hashable, got: Hashable) -> list[str]:
        """How an allowed observation differs from the wanted one, in words."""

    def spec_for(self, moves: Sequence[Move]) -> Spec:
        """The spec with bounds wide enough to replay `moves` unnormalised."""

    def start_text(self) -> str:
        """The log's first state, in the log's words."""

    def about(self) -> str:
        """What is validated against what, in a few words."""

    def notes(self) -> list[str]:
        """What the reading passed over or could not see."""


@dataclass(frozen=True)
class Allowed:
    """A logged step the spec could have taken instead: its observation, how
    it differs from the record's, and the hidden steps and action that take it."""

    key: Hashable
    differences: tuple[str, ...]
    path: Path


@dataclass(frozen=True)
class Refused:
    """An action that writes records of the deviation's kind, tried in every
    state the spec could be in just before it: in how many it is enabled
    (its observation then differs from the record's), and the guards that
    refuse it in the others, most frequent first."""

    action: str
    args: dict[str, Any]
    enabled: int
    states: int
    guards: tuple[tuple[str, int], ...]


@dataclass
class Verdict:
    consistent: bool
    records: int  # expected observations checked (all, or up to the deviation)
    states: int  # distinct normal states met
    widest: int  # the most states consistent with one prefix of the log
    widest_hidden: int  # the most states the spec could be in just before one record
    hidden_steps: int  # hidden steps in the witness
    witness: list[Step] = field(default_factory=list)  # the behaviour (to the deviation, if any)
    deviation: int | None = None  # the index of the first record no behaviour allows
    before: list[Any] = field(default_factory=list)  # the states the spec could be in just before it
    allowed: list[Allowed] = field(default_factory=list)  # the closest records it allows there, nearest first
    refused: list[Refused] = field(default_factory=list)  # why the actions that write such records do not
    coverage: dict[str, int] = field(default_factory=dict)  # action -> steps of the witness that took it
    witness_spec: Spec | None = None  # the spec the witness replays in (bounds as wide as it needs)
    prefix: int = 0  # steps from the spec's initial state to the log's first (0: the log starts there)
    unstarted: str | None = None  # why no state of the spec is the log's first, if none is
    starts: int = 0  # the states the log's first view was taken to be


def _move(name: str, args: dict[str, Any]) -> Move:
    return name, tuple(args.items())


class Search:
    """The product of the spec and the log, over normal states numbered as met."""

    def __init__(self, obs: Observed):
        self.obs, self.spec = obs, obs.spec
        self.ids: dict[Any, int] = {}
        self.states: list[Any] = []
        self._successors: dict[int, tuple[tuple[Move, Hashable | None, int], ...]] = {}
        self._closures: dict[int, tuple[tuple[int, int, Move | None], ...]] = {}
        self._steps: dict[tuple[int, Hashable], tuple[tuple[int, Path], ...]] = {}
        self._layers: dict[tuple[int, ...], int] = {}
        self._answers: dict[tuple[int, Hashable], tuple[int, tuple[tuple[int, Path], ...]]] = {}
        self.layers: list[tuple[int, ...]] = []
        self._widths: dict[int, int] = {}

    def number(self, s: Any) -> int:
        n = self.ids.get(s)
        if n is None:
            n = self.ids[s] = len(self.states)
            self.states.append(s)
        return n

    def successors(self, n: int) -> tuple[tuple[Move, Hashable | None, int], ...]:
        """Each enabled step from state n: its move, observation and normal next state."""
        found = self._successors.get(n)
        if found is None:
            s = self.states[n]
            found = self._successors[n] = tuple(
                (_move(name, args), self.obs.observation(s, t), self.number(self.obs.normal(t)))
                for name, args, t in self.spec.successors(s)
            )
        return found

    def closure(self, n: int) -> tuple[tuple[int, int, Move | None], ...]:
        """The states hidden steps reach from n, breadth-first: (state, the
        index of its predecessor here, the move from it), n first."""
        found = self._closures.get(n)
        if found is None:
            out: list[tuple[int, int, Move | None]] = [(n, -1, None)]
            seen = {n}
            i = 0
            while i < len(out):
                for move, seen_as, t in self.successors(out[i][0]):
                    if seen_as is None and t not in seen:
                        seen.add(t)
                        out.append((t, i, move))
                i += 1
            found = self._closures[n] = tuple(out)
        return found

    def hidden_path(self, n: int, i: int) -> Path:
        """The hidden moves from n to the i-th state of its closure."""
        closure, moves = self.closure(n), []
        while i > 0:
            _, i, move = closure[i]
            assert move is not None
            moves.append(move)
        return tuple(reversed(moves))

    def steps(self, n: int, key: Hashable) -> tuple[tuple[int, Path], ...]:
        """The normal states one logged step with observation `key` reaches
        from n (after hidden steps), each with its moves."""
        found = self._steps.get((n, key))
        if found is None:
            out: dict[int, Path] = {}
            for i, (h, _, _) in enumerate(self.closure(n)):
                for move, seen_as, t in self.successors(h):
                    if seen_as == key and t not in out:
                        out[t] = (*self.hidden_path(n, i), move)
            found = self._steps[(n, key)] = tuple(out.items())
        return found

    def hidden_width(self, layer: int) -> int:
        """How many states the spec could be in, hidden steps taken, from `layer` (for the report)."""
        found = self._widths.get(layer)
        if found is None:
            found = self._widths[layer] = sum(len(self.closure(n)) for n in self.layers[layer])
        return found

    def layer_id(self, layer: tuple[int, ...]) -> int:
        found = self._layers.get(layer)
        if found is None:
            found = self._layers[layer] = len(self.layers)
            self.layers.append(layer)
        return found

    def answer(self, layer: int, key: Hashable) -> tuple[int, tuple[tuple[int, Path], ...]]:
        """The layer after a logged step with observation `key` from `layer`,
        and for each of its states the index of its predecessor and the moves."""
        found = self._answers.get((layer, key))
        if found is None:
            nxt: dict[int, tuple[int, Path]] = {}
            for j, n in enumerate(self.layers[layer]):
                for t, path in self.steps(n, key):
                    nxt.setdefault(t, (j, path))
            found = self._answers[(layer, key)] = (self.layer_id(tuple(nxt)), tuple(nxt.values()))
        return found

    def start(self, most: int) -> tuple[int, dict[int, Path], str | None]:
        """The first layer: the normal states with the log's first view that
        the spec reaches first from its initial states (a log may begin
        after a history it does not show: a snapshot), breadth-first, and
        those hidden steps reach from them. States with that view reached
        only by longer histories are not among them: `Verdict.prefix` says
        when a log needed this. The search expands at most `most` states
        (a first view the spec never reaches would make it explore all):
        the third value says why there is no first layer, if there is none."""
        paths: dict[int, Path] = {}
        frontier = [self.number(self.obs.normal(s)) for s in self.spec.init_states()]
        for n in frontier:
            paths.setdefault(n, ())
        at = [n for n in paths if self.obs.view(self.states[n]) == self.obs.start]
        expanded = 0
        while not at and frontier:
            nxt = []
            expanded += len(frontier)
            if expanded > most:
                return self.layer_id(()), {}, f"none of the first {most:,} states the spec reaches has it"
            for n in frontier:
                for move, _, t in self.successors(n):
                    if t not in paths:
                        paths[t] = (*paths[n], move)
                        nxt.append(t)
            frontier = nxt
            at = [n for n in frontier if self.obs.view(self.states[n]) == self.obs.start]
        # and what hidden steps make of them: the log cannot tell those apart
        for n in list(at):
            for i, (h, _, _) in enumerate(self.closure(n)):
                if h not in at:
                    paths.setdefault(h, (*paths[n], *self.hidden_path(n, i)))
                    at.append(h)
        if not at:
            return self.layer_id(()), {}, "no state the spec reaches has it"
        return self.layer_id(tuple(at)), {n: paths[n] for n in at}, None


# how many states the search for the log's first state expands at most (a
# snapshot's: logs from a partition's creation start at the initial state)
START_STATES = 20_000


def validate(
    obs: Observed,
    progress: Callable[[int], None] | None = None,
    replay_witness: bool = True,
    start_states: int = START_STATES,
) -> Verdict:
    """Whether some behaviour of the spec is observed as `obs.expected`;
    `progress(records done)` is called now and then on long logs. The
    witness (to the deviation, if any) is replayed through the spec when
    `replay_witness`."""
    search = Search(obs)
    first, prefixes, unstarted = search.start(start_states)
    if unstarted is not None:
        return Verdict(False, 0, len(search.states), 0, 0, 0, unstarted=unstarted)
    chain: list[tuple[int, tuple[tuple[int, Path], ...]]] = []
    layer, widest, widest_hidden = first, len(search.layers[first]), 0
    deviation = None
    for i, expected in enumerate(obs.expected):
        if progress is not None and i % 65536 == 0:
            progress(i)
        widest_hidden = max(widest_hidden, search.hidden_width(layer))
        nxt, links = search.answer(layer, expected.key)
        if not search.layers[nxt]:
            deviation = i
            break
        chain.append((nxt, links))
        layer = nxt
        widest = max(widest, len(search.layers[nxt]))
    moves, prefix = witness_moves(search, first, prefixes, chain)
    verdict = Verdict(
        prefix=prefix,
        starts=len(search.layers[first]),
        consistent=deviation is None,
        records=len(chain),
        states=len(search.states),
        widest=widest,
        widest_hidden=widest_hidden,
        hidden_steps=len(moves) - len(chain) - prefix,
    )
    if replay_witness:
        verdict.witness_spec, verdict.witness = replay(obs, moves, prefix, search, chain)
    verdict.coverage = coverage(moves)
    if deviation is not None:
        verdict.deviation = deviation
        verdict.before = [search.states[h] for n in search.layers[layer] for h, _, _ in search.closure(n)]
        verdict.allowed = _closest(search, layer, obs.expected[deviation].key)
        verdict.refused = _refused(obs.spec, verdict.before, obs.expected[deviation])
    return verdict


def _closest(search: Search, layer: int, wanted: Hashable, most: int = 5) -> list[Allowed]:
    """The logged steps the spec allows from `layer`, fewest differences from
    the wanted one first (the first path to each)."""
    found: dict[Hashable, Path] = {}
    for n in search.layers[layer]:
        for i, (h, _, _) in enumerate(search.closure(n)):
            for move, seen_as, _ in search.successors(h):
                if seen_as is not None and seen_as not in found:
                    found[seen_as] = (*search.hidden_path(n, i), move)
    ranked = sorted(
        (Allowed(key, tuple(search.obs.difference(wanted, key)), path) for key, path in found.items()),
        key=lambda a: len(a.differences),
    )
    return ranked[:most]


def _refused(spec: Spec, states: list[Any], expected: Expected, most: int = 500) -> list[Refused]:
    """Each candidate action of `expected` tried in (up to `most` of) `states`."""
    out = []
    tried = states[:most]
    for name, wanted in expected.candidates:
        if name not in spec.actions:
            continue
        fn = spec.actions[name]
        instances = [values for values, args in spec._instances[name] if all(args.get(k) == v for k, v in wanted)]
        enabled, guards = 0, dict[str, int]()
        for s in tried:
            refusing = [values for values in instances if fn(spec, s, *values) is None]
            if len(refusing) < len(instances):
                enabled += 1
            elif refusing:
                guard = refusal(spec, name, s, refusing[0])
                text = str(guard) if guard is not None else "(no guard found)"
                guards[text] = guards.get(text, 0) + 1
        ranked = tuple(sorted(guards.items(), key=lambda g: -g[1]))
        out.append(Refused(name, dict(wanted), enabled, len(tried), ranked))
    return out
