"""The kafka-4 spec's controller against the oracle transliterated from
Kafka 4.0.0 (kafka_oracle.py), on every reachable state of a config.

For each state and each event the model can take there, the oracle is
given the controller's state (mapped from the spec's variables) and the
same input, and its outcomes are compared with the spec's successors on
the controller's variables. An event whose outcome leaves those variables
as they are (Kafka writes no record; the spec has no successor or an
unchanged one) is a no-op on both sides, so what is compared is the set of
changed outcomes. The events stand for Kafka's as follows (the bounds are
the model's, applied to both sides):

- FenceBroker b: the session of unfenced b times out (maybeFenceOneStaleBroker);
- UnfenceBroker b: fenced, running b heartbeats, caught up (BHM:406-416);
- StartBroker b: stopped, fenced b registers a new incarnation with the
  epoch of its clean-shutdown file (or -1), getting the next broker epoch;
- CleanShutdown b: running b asks to shut down, and is fenced (an
  unfenced leader goes through controlled shutdown first);
- BeginControlledShutdown b (controlled_shutdown = "staged"): running,
  unfenced b enters controlled shutdown (handleBrokerInControlledShutdown)
  and stays unfenced;
- CommitAlterPartition: the proposal in flight reaches the controller from
  its proposer, with the epochs it was made at, RECOVERED (Partition.makeLeader
  marks a new leader RECOVERED at once, Partition.scala:752-766, and sends its
  own state, 1754, 1779);
- ElectLeader: either periodic task, the auto leader rebalance or the
  unclean election of leaderless partitions;
- AdminElectLeaders type: ElectLeaders for the partition;
- AlterMinIsr v: SET min.insync.replicas = v on the topic's own override or
  on the cluster (no override);
- AlterUncleanLeaderElection v: SET unclean.leader.election.enable = v, the
  same two ways;
- ReassignPartition replicas: alterPartitionReassignments with the target
  replicas as an ascending list (one reassignment at a time, the model's
  bound); CancelReassignment: the same request with no replicas (a cancel);
- every other action is the data plane: the controller's variables stay.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial

from kafka_oracle import (
    MIN_IN_SYNC_REPLICAS,
    NO_LEADER,
    PREFERRED,
    RECOVERED,
    UNCLEAN,
    UNCLEAN_LEADER_ELECTION_ENABLE,
    BrokerRegistration,
    Controller,
    PartitionRegistration,
)

from specs.kafka_elr.arguments import ADMIN_TYPES
from specs.kafka_elr.types import NO_PROPOSAL, RUNNING, State, members

# the model's AdminElectLeaders types (kafka-4 has these two) as ElectLeadersRequest's ElectionType
ELECTION_TYPES = {"PREFERRED": PREFERRED, "UNCLEAN": UNCLEAN}
PARTITION_EPOCH = 100  # the model has no partition epoch: any start will do
CONTROLLER_ACTIONS = (
    "FenceBroker",
    "UnfenceBroker",
    "StartBroker",
    "CleanShutdown",
    "BeginControlledShutdown",
    "CommitAlterPartition",
    "ElectLeader",
    "AdminElectLeaders",
    "AlterMinIsr",
    "AlterUncleanLeaderElection",
    "ReassignPartition",
    "CancelReassignment",
)


@dataclass(frozen=True)
class Outcome:
    """The controller's part of a state, as both sides can say it: sets as
    ascending tuples (so Kafka's lastKnownElr [-1] can be told apart), and
    the brokers in controlled shutdown that are unfenced (Kafka's
    CleanShutdown of a leader passes through it and keeps the flag once
    fenced, the model's does not: a fenced broker's flag has no effect, as
    isActive and ineligibleReplicasForIsr refuse it for being fenced, and its
    next registration clears it), and
    the proposal in flight that the controller would still accept: one made
    before the partition changed carries an old partition epoch and is
    rejected, so a stale proposal and a dropped one are the same to it. The
    replica list is in its order (the model's: `replica_list`)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    last_known_leader: int
    leader_recovery: int
    fenced: tuple[int, ...]
    in_controlled_shutdown: tuple[int, ...]
    broker_epoch: tuple[int, ...]
    min_isr: int
    unclean_election: int
    live_proposal: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def replica_list(s: State) -> tuple[int, ...]:
    """The model's replica list: ascending, those listed last at the end."""
    return tuple(members(s.replicas & ~s.listed_last) + members(s.replicas & s.listed_last))


def of_spec(t: State) -> Outcome:
    return Outcome(
        t.leader,
        t.leader_epoch,
        tuple(members(t.isr)),
        tuple(members(t.elr)),
        tuple(members(t.last_known_elr)),
        t.last_known_leader,
        t.leader_recovery,
        tuple(members(t.fenced)),
        tuple(members(t.in_controlled_shutdown & ~t.fenced)),
        t.broker_epoch,
        t.min_isr,
        t.unclean_election,
        NO_PROPOSAL if t.pending_stale else t.pending_isr,
        replica_list(t),
        tuple(members(t.adding)),
        tuple(members(t.removing)),
    )


def controller_of(spec, s: State) -> Controller:
    """Kafka's controller in spec state s."""
    partition = PartitionRegistration(
        replicas=replica_list(s),
        isr=tuple(members(s.isr)),
        leader=s.leader,
        leader_recovery_state=s.leader_recovery,
        leader_epoch=s.leader_epoch,
        partition_epoch=PARTITION_EPOCH,
        elr=tuple(members(s.elr)),
        last_known_elr=tuple(members(s.last_known_elr)),
        removing_replicas=tuple(members(s.removing)),
        adding_replicas=tuple(members(s.adding)),
    )
    registrations = {
        b: BrokerRegistration(
            epoch=s.broker_epoch[b],
            fenced=fenced(s, b),
            in_controlled_shutdown=bool(s.in_controlled_shutdown >> b & 1),
        )
        for b in spec.brokers
    }
    return Controller(partition, registrations, s.min_isr, bool(s.unclean_election), bool(s.elr_version))


def of_oracle(spec, s: State, c: Controller, proposal_answered: bool) -> Outcome:
    """The oracle's controller as an Outcome: Kafka has no last known leader
    apart from lastKnownElr (the model's stays -1); a record makes a
    proposal in flight stale (its partition epoch is old), an answer ends it."""
    p = c.partition
    live = of_spec(s).live_proposal
    if proposal_answered or p.partition_epoch != PARTITION_EPOCH:
        live = NO_PROPOSAL
    return Outcome(
        p.leader,
        p.leader_epoch,
        p.isr,
        p.elr,
        p.last_known_elr,
        NO_LEADER,
        p.leader_recovery_state,
        tuple(b for b in spec.brokers if c.registrations[b].fenced),
        tuple(b for b in spec.brokers if c.registrations[b].in_controlled_shutdown and not c.registrations[b].fenced),
        tuple(c.registrations[b].epoch for b in spec.brokers),
        c.min_isr,
        int(c.unclean_leader_election),
        live,
        p.replicas,
        p.adding_replicas,
        p.removing_replicas,
    )


def running(s: State, b: int) -> bool:
    return s.status[b] == RUNNING


def fenced(s: State, b: int) -> bool:
    return bool(s.fenced >> b & 1)


# what Kafka's controller does for an event (a Controller method with its arguments)
Way = Callable[[Controller], object]


def events(spec, s: State) -> Iterator[tuple[str, dict, list[Way]]]:
    """Each controller event of the model in state s: its action, the
    arguments that pick it out, and what Kafka may do for it (none when
    the event cannot happen here)."""

    def when(possible: bool, *ways: Way) -> list[Way]:
        return list(ways) if possible else []

    for b in spec.brokers:
        may_fence = not fenced(s, b) and (not running(s, b) or s.fences < spec.max_fences)
        yield "FenceBroker", {"broker": b}, when(may_fence, partial(Controller.fence_stale_broker, broker=b))
        may_unfence = fenced(s, b) and running(s, b) and not s.in_controlled_shutdown >> b & 1
        yield "UnfenceBroker", {"broker": b}, when(may_unfence, partial(Controller.heartbeat_unfence, broker=b))
        start = partial(
            Controller.register_broker,
            broker=b,
            previous_broker_epoch=s.clean_shutdown_epoch[b],
            new_broker_epoch=s.broker_epoch[b] + 1,
        )
        yield "StartBroker", {"broker": b}, when(fenced(s, b) and not running(s, b), start)
        may_stop = s.clean_shutdowns < spec.max_clean_shutdowns and running(s, b)
        yield "CleanShutdown", {"broker": b}, when(may_stop, partial(Controller.heartbeat_shutdown, broker=b))
        may_begin = may_stop and spec.staged_shutdown and not fenced(s, b) and not s.in_controlled_shutdown >> b & 1
        begin = partial(Controller.enter_controlled_shutdown, broker=b)
        yield "BeginControlledShutdown", {"broker": b}, when(may_begin, begin)
    in_flight = s.pending_isr != NO_PROPOSAL
    yield "CommitAlterPartition", {}, when(in_flight, partial(commit, s=s, propagated=spec.propagated))
    tasks = (Controller.maybe_balance_partition_leaders, Controller.maybe_elect_unclean_leaders)
    yield "ElectLeader", {}, when(True, *tasks)
    admin = s.admin_elections < spec.max_admin_elections
    for kind in spec.admin_types:
        name = ADMIN_TYPES[kind]
        if name not in ELECTION_TYPES:  # kip966's recovery elections: Kafka's ElectLeaders has none
            yield "AdminElectLeaders", {"type": name}, []
            continue
        elect = partial(Controller.elect_leader, election_type=ELECTION_TYPES[name])
        yield "AdminElectLeaders", {"type": name}, when(admin, elect)
    alter = s.min_isr_changes < spec.max_min_isr_changes
    for v in range(1, spec.rf + 1):
        yield "AlterMinIsr", {"min_isr": v}, when(alter, *config_sets(MIN_IN_SYNC_REPLICAS, v))
    switch = s.unclean_switches < spec.max_unclean_switches
    for on in (False, True):
        ways = config_sets(UNCLEAN_LEADER_ELECTION_ENABLE, on)
        yield "AlterUncleanLeaderElection", {"enable": on}, when(switch, *ways)
    moving = bool(s.adding | s.removing)
    may_reassign = s.reassignments < spec.max_reassignments and not moving
    for target in spec.targets:
        reassign = partial(Controller.change_partition_reassignment, target=members(target))
        yield "ReassignPartition", {"replicas": members(target)}, when(may_reassign and target != s.replicas, reassign)
    yield "CancelReassignment", {}, when(moving, Controller.cancel_partition_reassignment)


def config_sets(name: str, value: int | bool) -> list[Way]:
    """incrementalAlterConfigs SET name = value, on the topic's own override
    or on the cluster's value (no override)."""
    alter = Controller.incremental_alter_config
    return [partial(alter, name=name, value=value, topic_level=topic) for topic in (True, False)]


def commit(c: Controller, s: State, propagated: bool) -> None:
    """The AlterPartition in flight in s, as its proposer sent it."""
    sender = s.pending_from if propagated else s.leader
    proposed = members(s.pending_isr)
    sender_epoch = s.pending_epochs[sender] if sender in proposed else s.broker_epoch[sender] if sender >= 0 else -1
    c.alter_partition(
        broker_id=sender,
        broker_epoch=sender_epoch,
        leader_epoch=s.leader_epoch,  # the epochs it was made at: the current ones unless stale
        partition_epoch=PARTITION_EPOCH - 1 if s.pending_stale else PARTITION_EPOCH,
        new_isr_with_epochs=[(b, s.pending_epochs[b]) for b in proposed],
        leader_recovery_state=RECOVERED,
    )


@dataclass(frozen=True)
class Difference:
    """One event on which the two disagree: the changed outcomes of each."""

    action: str
    args: dict
    state: State
    spec: frozenset[Outcome]
    oracle: frozenset[Outcome]


def without_proposal(o: Outcome) -> Outcome:
    """The controller's own variables (the proposal is the broker's)."""
    return replace(o, live_proposal=NO_PROPOSAL)


def oracle_outcomes(spec, s: State, action: str, ways: list[Way]) -> frozenset[Outcome]:
    out = set()
    for way in ways:
        c = controller_of(spec, s)
        way(c)
        out.add(of_oracle(spec, s, c, action == "CommitAlterPartition"))
    return frozenset(out)


# what no event of the oracle reads (the data plane and counters of
# data-plane actions): states equal but for these share the oracle's answers
UNREAD = ("log", "hwm", "acked", "acks_all", "exposed", "produced", "isr_shrinks", "unclean_shutdowns")


def oracle_answers(spec, s: State) -> list[tuple[str, dict, frozenset[Outcome]]]:
    """Each event of state s with the oracle's outcomes."""
    return [(action, args, oracle_outcomes(spec, s, action, ways)) for action, args, ways in events(spec, s)]


@dataclass
class Comparison:
    """What comparing a config found: every disagreement, nearest states
    first; how many states were compared; and for each controller action,
    how many events both sides agreed changed the controller (so that a
    comparison that compared nothing cannot pass unnoticed)."""

    differences: list[Difference]
    states: int
    agreed_changes: Counter[str]


def compare(spec) -> Comparison:
    """Every reachable state of `spec` compared (a breadth-first search:
    each state's successors serve the search and the comparison)."""
    todo = deque(spec.init_states())
    seen = {spec.encode(s) for s in todo}
    answers: dict[State, list] = {}
    blank = {name: getattr(todo[0], name) for name in UNREAD}
    found = Comparison([], 0, Counter())
    while todo:
        s = todo.popleft()
        found.states += 1
        successors = spec.successors(s)
        key = s._replace(**blank)
        if key not in answers:
            answers[key] = oracle_answers(spec, key)
        compare_state(spec, s, successors, answers[key], found)
        for _action, _args, t in successors:
            key = spec.encode(t)
            if key not in seen:
                seen.add(key)
                todo.append(t)
    return found


def compare_state(spec, s: State, successors: list, answers: list, found: Comparison) -> None:
    """State s, whose successors are `successors` and whose events the
    oracle answered with `answers`, compared into `found`: controller
    events (the spec's successors of the event's action whose arguments
    include the event's; the others, such as the leader a step elects,
    range freely), and data-plane actions, which must leave the
    controller's variables alone."""
    same = of_spec(s)
    for action, args, theirs in answers:
        mine = frozenset(
            of_spec(t)
            for name, given, t in successors
            if name == action and all(given.get(k) == v for k, v in args.items())
        )
        mine, theirs = mine - {same}, theirs - {same}
        if mine != theirs:
            found.differences.append(Difference(action, args, s, mine, theirs))
        elif theirs:
            found.agreed_changes[action] += 1
    for action, args, t in successors:
        if action not in CONTROLLER_ACTIONS and without_proposal(of_spec(t)) != without_proposal(same):
            found.differences.append(Difference(action, args, s, frozenset({of_spec(t)}), frozenset()))
