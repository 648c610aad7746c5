"""What every walk draws on: the Plan (how many walks, how deep, the
seed, how a step is picked) and each walk's random stream, written twice
(here, and compiled in walk.py's WALK_SOURCE) to draw the same numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import ConfigError
from ...spec import Spec

CHUNK = 32  # consecutive walks a task runs
MAX_DEPTH = 100_000  # steps a walk may take: each walk holds arrays of --depth entries
PICKS = ("swarm", "action", "instance")  # the first is the default
SWARM_KEEP = 0.5  # the probability a swarm walk keeps an action (Groce et al.'s 1/2)


@dataclass(frozen=True)
class Plan:
    """What every walk needs besides its successors: the number of walks,
    their depth, the seed, and the weighting (a weight a coverage label;
    `by` "instance": an enabled instance is taken with probability in
    proportion to its action's weight; "action": each enabled action in
    proportion to its weight, then one of its instances uniformly;
    "swarm": as "action", with each weight times the walk's own factor
    for the action, swarm_weights())."""

    walks: int
    depth: int
    seed: int
    label_weight: tuple[float, ...]  # coverage label -> its action's weight
    label_action: tuple[int, ...]  # coverage label -> its action's number
    by: str = PICKS[0]
    # each of the spec's actions: does a swarm walk draw a factor for it (not
    # for one the config never enables, so such actions leave the walks as they were)
    drawn: tuple[bool, ...] = ()

    @property
    def uniform(self) -> bool:
        return self.by == "instance" and len(set(self.label_weight)) <= 1


def plan(
    spec: Spec, walks: int, depth: int, seed: int, weights: dict[str, float] | None = None, by: str = PICKS[0]
) -> Plan:
    """A Plan for `spec`; ConfigError for a weight of no action or a
    negative one, an unknown `by`, a depth over MAX_DEPTH or a seed of
    more than 64 bits (the random streams are 64-bit)."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ConfigError(f"--depth {depth}: allowed: 1 to {MAX_DEPTH:,} steps a walk")
    if not 0 <= seed <= MASK:
        raise ConfigError(f"--seed {seed}: allowed: 0 to 2^64 - 1 ({MASK})")
    weights = dict(weights or {})
    for name, w in weights.items():
        if name not in spec.actions:
            raise ConfigError(f"--weight {name}: no such action (allowed: {', '.join(spec.actions)})")
        if not (w >= 0 and w != float("inf")):
            raise ConfigError(f"--weight {name}={w}: a weight is a finite number >= 0")
    if by not in PICKS:
        raise ConfigError(f"--pick {by}: allowed: {', '.join(PICKS)}")
    label_weight, label_action = [], []
    for number, name in enumerate(spec.actions):
        for _label in spec.labels_of(name):
            label_weight.append(float(weights.get(name, 1.0)))
            label_action.append(number)
    dormant = spec.never_enabled()
    drawn = tuple(name not in dormant for name in spec.actions)
    return Plan(walks, depth, seed, tuple(label_weight), tuple(label_action), by, drawn)


# ---- the random numbers: one generator, in Python and compiled ----------------------
# splitmix64 (Steele, Lea, Flood 2014), a walk's stream seeded by (seed, walk):
# small enough to write twice, so the interpreted and the compiled walks draw
# exactly the same numbers and take exactly the same steps.

MASK = (1 << 64) - 1
GOLDEN, MIX1, MIX2, WALK_MIX = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD1B54A32D192ED03


class Stream:
    def __init__(self, seed: int, walk: int):
        self.s = (seed * GOLDEN + walk * WALK_MIX) & MASK

    def next(self) -> int:
        self.s = (self.s + GOLDEN) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * MIX1) & MASK
        z = ((z ^ (z >> 27)) * MIX2) & MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        """A float in [0, 1) with 53 random bits."""
        return (self.next() >> 11) * (1.0 / (1 << 53))


def swarm_weights(rng: Stream, p: Plan) -> tuple[float, ...]:
    """A swarm walk's label weights: for each action in the spec's order
    that the config can enable, a draw that keeps it with probability
    SWARM_KEEP and a draw that is its factor if kept (0 if not), drawn
    again, all of them, if no action of weight above 0 was kept; each
    label's weight times its action's factor. The compiled walk draws the
    same numbers in the same order."""
    actions = len(p.drawn)
    live = [False] * actions  # actions the user's weights and the config leave takeable
    for label, a in enumerate(p.label_action):
        live[a] = live[a] or (p.label_weight[label] > 0 and p.drawn[a])
    factor = [0.0] * actions
    while True:
        kept = False
        for a in range(actions):
            if not p.drawn[a]:
                continue
            u, v = rng.uniform(), rng.uniform()
            factor[a] = v if u < SWARM_KEEP else 0.0
            kept = kept or (factor[a] > 0 and live[a])
        if kept or not any(live):
            return tuple(w * factor[a] for w, a in zip(p.label_weight, p.label_action))


def pick(u: float, labels: list[int] | np.ndarray, p: Plan, weight: tuple[float, ...] | None = None) -> int:
    """The index of the successor a walk takes, given a draw `u` in [0, 1)
    (-1: no successor has weight), by the walk's label weights `weight`
    (default the plan's). Where a swarm walk's actions left out are all
    that is enabled, it takes one of them by the plan's weights, so a walk
    ends only where nothing is enabled, as the other picks' walks do. The
    compiled walk does the same sums in the same order."""
    n = len(labels)
    if p.uniform:
        return int(u * n)
    weights = [(p.label_weight if weight is None else weight)[int(x)] for x in labels]
    if p.by == "swarm" and not any(w > 0 for w in weights):
        weights = [p.label_weight[int(x)] for x in labels]
    if p.by != "instance":
        counts: dict[int, int] = {}
        for x in labels:
            a = p.label_action[int(x)]
            counts[a] = counts.get(a, 0) + 1
        weights = [w / counts[p.label_action[int(x)]] for w, x in zip(weights, labels)]
    total = 0.0
    for w in weights:
        total += w
    if total <= 0:
        return -1
    target, acc = u * total, 0.0
    for i, w in enumerate(weights):
        acc += w
        if acc > target and w > 0:
            return i
    return max(i for i, w in enumerate(weights) if w > 0)
