------------------------------- MODULE KIP966 -------------------------------
(***************************************************************************)
(* The TLA+ mirror of specs/kafka_elr (variants "kip966", "legacy" and    *)
(* "reassignment-ignores-min-isr", which is kip966 but for one rule).      *)
(*                                                                         *)
(* The Python spec is the source of truth; this module follows it          *)
(* operator by operator (docs/tla.md gives the mapping) so that TLC        *)
(* reaches exactly the same distinct states as `modelcheck check` on the   *)
(* same config.  A Python bitmask is a set of broker ids (or of record     *)
(* ids), a Python tuple indexed by broker is a function on Brokers, a log  *)
(* is a sequence of <<leader_epoch, record_id>> pairs, and pending_isr is  *)
(* either NoProposal or the function b |-> broker epoch of the proposal.   *)
(*                                                                         *)
(* The cluster's versions (KIP-966's upgrade and downgrade plan,         *)
(* specs/kafka_elr/versions.py) are variables too: the finalized          *)
(* metadata.version, eligible.leader.replicas.version (the ELR feature)   *)
(* and each broker's software, which operators change within             *)
(* MaxVersionChanges and MaxSoftwareChanges.                               *)
(*                                                                         *)
(* Style: every Python helper `f(s, ...) -> State` is an operator on a     *)
(* record `s` holding all variables, and every action `A` is              *)
(* `\E t \in ANext(St) : Go(t)` where ANext(s) is the set of successors    *)
(* the Python generator yields.  This keeps nested effects (fence ->      *)
(* ELR update -> election -> ELR update -> leader change) a literal        *)
(* transcription.                                                          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    N,                        \* the replication factor: replicas 0..N-1 at first, 0 the preferred one
    Spare,                    \* spare brokers N..N+Spare-1, which a reassignment may add
    MinIsr,                   \* initial min.insync.replicas
    MaxRecords,
    MaxUncleanShutdowns,
    MaxCleanShutdowns,
    MaxFences,
    MaxIsrShrinks,
    MaxMinIsrChanges,
    MaxAdminElections,
    MaxUncleanSwitches,       \* AlterUncleanLeaderElection steps
    MaxReassignments,
    MaxVersionChanges,        \* operator changes of metadata.version and eligible.leader.replicas.version
    MaxSoftwareChanges,       \* brokers' software upgrades and downgrades
    StartMetadataVersion,     \* metadata.version at the start: "old" (before KIP-966's) or "new"
    StartElrVersion,          \* eligible.leader.replicas.version at the start: 0 or 1 (the ELR on)
    StartOldSoftware,         \* the brokers that run the "old" software at the start (the others "new")
    ElrSwitchWhen,            \* "any", or "at-min-isr": the ELR turned on or off only with min ISR in the ISR
    Variant,                  \* "kip966", "legacy" or "reassignment-ignores-min-isr"
    UncleanLeaderElection,    \* BOOLEAN: its initial value (AlterUncleanLeaderElection changes it)
    UncleanRecoveryStrategy,  \* "none", "balanced" or "aggressive"
    Acks,                     \* a non-empty subset of {"1", "all"}
    FenceCutsDataPlane,       \* BOOLEAN: a fenced broker stops fetching
    Metadata,                 \* "atomic" or "propagated": brokers act on their own views
    NoProposal                \* a model value: no AlterPartition in flight

ASSUME N \in Nat /\ N >= 1
ASSUME Spare \in Nat
ASSUME MinIsr \in Nat /\ MinIsr >= 1
ASSUME Variant \in {"kip966", "legacy", "reassignment-ignores-min-isr"}
ASSUME MaxReassignments \in Nat
ASSUME UncleanLeaderElection \in BOOLEAN
ASSUME FenceCutsDataPlane \in BOOLEAN
ASSUME Metadata \in {"atomic", "propagated"}
ASSUME UncleanRecoveryStrategy \in {"none", "balanced", "aggressive"}
ASSUME Acks /= {} /\ Acks \subseteq {"1", "all"}
ASSUME MaxVersionChanges \in Nat /\ MaxSoftwareChanges \in Nat
ASSUME StartMetadataVersion \in {"old", "new"} /\ StartElrVersion \in {0, 1}
ASSUME ElrSwitchWhen \in {"any", "at-min-isr"}
ASSUME StartOldSoftware \subseteq 0 .. (N + Spare - 1)
\* the starting versions are a cluster Kafka can be in (load's _check_versions):
\* ELR needs the new metadata version, which needs every broker on the new software
ASSUME StartElrVersion = 1 => StartMetadataVersion = "new"
ASSUME StartMetadataVersion = "new" => StartOldSoftware = {}
\* legacy has no eligible.leader.replicas.version: the version keys keep their defaults
ASSUME Variant = "legacy" =>
    /\ MaxVersionChanges = 0 /\ MaxSoftwareChanges = 0
    /\ StartMetadataVersion = "new" /\ StartElrVersion = 1 /\ StartOldSoftware = {} /\ ElrSwitchWhen = "any"

\* every broker of the cluster (the domain of the per-broker functions);
\* the partition's replica set is the variable `replicas`, N of them
\* outside a reassignment
Brokers == 0 .. (N + Spare - 1)
Assigned == 0 .. (N - 1)      \* the initial replica set
NoLeader == -1
NoEpoch == -1
Preferred == 0

VARIABLES
    \* controller
    leader, leader_epoch, isr, elr, last_known_elr, last_known_leader,
    leader_recovery, fenced,
    \* kafka-4's registrations in controlled shutdown: always {} here
    in_controlled_shutdown,
    broker_epoch, min_isr,
    \* unclean.leader.election.enable now
    unclean_election,
    \* the assignment: the replica set (during a reassignment the original
    \* and the target replicas together), its adding and removing replicas
    replicas, adding, removing,
    \* kafka-4's replicas listed last in the replica list: always {} here
    listed_last,
    \* the cluster's versions: metadata.version ("old"/"new"),
    \* eligible.leader.replicas.version (0/1), each broker's software ("old"/"new")
    metadata_version, elr_version, software,
    \* brokers
    status, clean_shutdown_epoch, log, hwm, pending_isr, pending_stale,
    \* each broker's view (Metadata = "propagated"; constant under "atomic")
    pending_from, seen_leader, seen_epoch, seen_isr, seen_min_isr,
    \* ghosts and bound counters (part of the state's identity, as in Python)
    acked, acks_all, exposed,
    produced, unclean_shutdowns,
    \* an unclean shutdown happened while the ELR feature was off
    crashed_without_elr,
    clean_shutdowns, fences, isr_shrinks,
    min_isr_changes, admin_elections, unclean_switches,
    \* reassignments made; version and software changes made; a completion
    \* or cancellation left the ISR under min ISR
    reassignments, version_changes, software_changes, below_min_isr_reassigned

vars == <<leader, leader_epoch, isr, elr, last_known_elr, last_known_leader,
          leader_recovery, fenced, in_controlled_shutdown, broker_epoch, min_isr, unclean_election,
          replicas, adding, removing, listed_last,
          metadata_version, elr_version, software,
          status, clean_shutdown_epoch, log, hwm, pending_isr, pending_stale,
          pending_from, seen_leader, seen_epoch, seen_isr, seen_min_isr,
          acked, acks_all, exposed,
          produced, unclean_shutdowns, crashed_without_elr, clean_shutdowns, fences, isr_shrinks,
          min_isr_changes, admin_elections, unclean_switches, reassignments,
          version_changes, software_changes, below_min_isr_reassigned>>

\* The current state as one record: what the Python operators take as `s`.
St == [leader |-> leader, leader_epoch |-> leader_epoch, isr |-> isr, elr |-> elr,
       last_known_elr |-> last_known_elr, last_known_leader |-> last_known_leader,
       leader_recovery |-> leader_recovery, fenced |-> fenced,
       in_controlled_shutdown |-> in_controlled_shutdown,
       broker_epoch |-> broker_epoch, min_isr |-> min_isr, unclean_election |-> unclean_election,
       replicas |-> replicas, adding |-> adding, removing |-> removing, listed_last |-> listed_last,
       metadata_version |-> metadata_version, elr_version |-> elr_version, software |-> software,
       status |-> status, clean_shutdown_epoch |-> clean_shutdown_epoch,
       log |-> log, hwm |-> hwm, pending_isr |-> pending_isr, pending_stale |-> pending_stale,
       pending_from |-> pending_from, seen_leader |-> seen_leader, seen_epoch |-> seen_epoch,
       seen_isr |-> seen_isr, seen_min_isr |-> seen_min_isr,
       acked |-> acked, acks_all |-> acks_all, exposed |-> exposed,
       produced |-> produced, unclean_shutdowns |-> unclean_shutdowns,
       crashed_without_elr |-> crashed_without_elr,
       clean_shutdowns |-> clean_shutdowns, fences |-> fences,
       isr_shrinks |-> isr_shrinks, min_isr_changes |-> min_isr_changes,
       admin_elections |-> admin_elections, unclean_switches |-> unclean_switches,
       reassignments |-> reassignments,
       version_changes |-> version_changes, software_changes |-> software_changes,
       below_min_isr_reassigned |-> below_min_isr_reassigned]

\* Make record t the next state.
Go(t) ==
    /\ leader' = t.leader
    /\ leader_epoch' = t.leader_epoch
    /\ isr' = t.isr
    /\ elr' = t.elr
    /\ last_known_elr' = t.last_known_elr
    /\ last_known_leader' = t.last_known_leader
    /\ leader_recovery' = t.leader_recovery
    /\ fenced' = t.fenced
    /\ in_controlled_shutdown' = t.in_controlled_shutdown
    /\ broker_epoch' = t.broker_epoch
    /\ min_isr' = t.min_isr
    /\ unclean_election' = t.unclean_election
    /\ replicas' = t.replicas
    /\ adding' = t.adding
    /\ removing' = t.removing
    /\ listed_last' = t.listed_last
    /\ metadata_version' = t.metadata_version
    /\ elr_version' = t.elr_version
    /\ software' = t.software
    /\ status' = t.status
    /\ clean_shutdown_epoch' = t.clean_shutdown_epoch
    /\ log' = t.log
    /\ hwm' = t.hwm
    /\ pending_isr' = t.pending_isr
    /\ pending_stale' = t.pending_stale
    /\ pending_from' = t.pending_from
    /\ seen_leader' = t.seen_leader
    /\ seen_epoch' = t.seen_epoch
    /\ seen_isr' = t.seen_isr
    /\ seen_min_isr' = t.seen_min_isr
    /\ acked' = t.acked
    /\ acks_all' = t.acks_all
    /\ exposed' = t.exposed
    /\ produced' = t.produced
    /\ unclean_shutdowns' = t.unclean_shutdowns
    /\ crashed_without_elr' = t.crashed_without_elr
    /\ clean_shutdowns' = t.clean_shutdowns
    /\ fences' = t.fences
    /\ isr_shrinks' = t.isr_shrinks
    /\ min_isr_changes' = t.min_isr_changes
    /\ admin_elections' = t.admin_elections
    /\ unclean_switches' = t.unclean_switches
    /\ reassignments' = t.reassignments
    /\ version_changes' = t.version_changes
    /\ software_changes' = t.software_changes
    /\ below_min_isr_reassigned' = t.below_min_isr_reassigned

-----------------------------------------------------------------------------
(* Utilities *)

Min(a, b) == IF a <= b THEN a ELSE b
Max(a, b) == IF a >= b THEN a ELSE b
SetMin(S) == CHOOSE x \in S : \A y \in S : x <= y
Size(S) == Cardinality(S)
\* Python's seq[:k] (k >= 0, clamped to the length)
Prefix(sq, k) == SubSeq(sq, 1, Min(k, Len(sq)))
IsPrefix(a, b) == Len(a) <= Len(b) /\ \A i \in 1 .. Len(a) : a[i] = b[i]
Records(lg) == {lg[i][2] : i \in 1 .. Len(lg)}

-----------------------------------------------------------------------------
(* rules.py *)

\* KIP-966 "ELR update will take a proposed ISR": [isr, elr, clean] where
\* clean says whether LastKnownELR is cleaned.
UpdateElr(cur_isr, cur_elr, proposed, min) ==
    IF Size(proposed) >= min
    THEN [isr |-> proposed, elr |-> {}, clean |-> TRUE]
    ELSE [isr |-> proposed, elr |-> (cur_elr \cup (cur_isr \ proposed)) \ proposed, clean |-> FALSE]

RegistrationIsCleanRule(previous, registered) ==
    previous /= NoEpoch /\ previous = registered

CleanCandidates(i, e, f) == IF i \ f /= {} THEN i \ f ELSE e \ f

CommonPrefixLen(a, b) ==
    LET n == Min(Len(a), Len(b))
    IN  CHOOSE k \in 0 .. n : (\A i \in 1 .. k : a[i] = b[i]) /\ (k = n \/ a[k + 1] /= b[k + 1])

LastWrittenEpoch(lg) == IF lg = <<>> THEN NoEpoch ELSE lg[Len(lg)][1]

\* recovery_rank(a) >= recovery_rank(b) as Python tuples (epoch, length)
RankGeq(a, b) ==
    \/ LastWrittenEpoch(a) > LastWrittenEpoch(b)
    \/ LastWrittenEpoch(a) = LastWrittenEpoch(b) /\ Len(a) >= Len(b)

\* 0-based offset where epoch e starts in lg, else Len(lg)
EpochStartOffset(lg, e) ==
    IF \E i \in 1 .. Len(lg) : lg[i][1] = e
    THEN SetMin({i \in 1 .. Len(lg) : lg[i][1] = e}) - 1
    ELSE Len(lg)

-----------------------------------------------------------------------------
(* Derived values *)

Legacy == Variant = "legacy"
\* unclean.leader.election.enable = TRUE maps to Aggressive (KIP-966 "Other" 3)
StrategyIn(s) == IF s.unclean_election THEN "aggressive" ELSE UncleanRecoveryStrategy
AdminTypes == IF Legacy THEN {"PREFERRED", "UNCLEAN"}
              ELSE {"PREFERRED", "UNCLEAN", "LONGEST_LOG_AGGRESSIVE", "LONGEST_LOG_BALANCED", "DESIGNATION"}

\* min(min.insync.replicas, replication factor), the replication factor being
\* the partition's replica list (during a reassignment, original and target
\* together), as Kafka counts it; FinalMinIsr: that of the target
EffMinIsr(s) == Min(s.min_isr, Size(s.replicas))
FinalMinIsr(s) == Min(s.min_isr, N)
Running(s, b) == s.status[b] = "RUNNING"
Unfenced(s, b) == b \notin s.fenced
PendingSet(s) == IF s.pending_isr = NoProposal THEN {} ELSE DOMAIN s.pending_isr
LostUnregistered(s) == {b \in Brokers : s.status[b] = "OFFLINE_DIRTY"}

-----------------------------------------------------------------------------
(* What a broker acts on: the controller's state under Metadata = "atomic", *)
(* the metadata last delivered to it under "propagated".                    *)

Propagated == Metadata = "propagated"
\* the values of an action's `at` argument (Python: absent under atomic)
AtDomain == IF Propagated THEN Brokers ELSE {NoLeader}
ActingLeader(s, at) ==
    IF ~Propagated THEN s.leader ELSE IF s.seen_leader[at] = at THEN at ELSE NoLeader
LeaderSeenBy(s, b) == IF Propagated THEN s.seen_leader[b] ELSE s.leader
EpochSeenBy(s, b) == IF Propagated THEN s.seen_epoch[b] ELSE s.leader_epoch
IsrSeenBy(s, ld) == IF Propagated THEN s.seen_isr[ld] ELSE s.isr
MinIsrSeenBy(s, ld) == IF Propagated THEN Min(s.seen_min_isr[ld], N) ELSE EffMinIsr(s)
ProposedBy(s, ld) == IF ~Propagated \/ s.pending_from = ld THEN PendingSet(s) ELSE {}
Follows(s, b, ld) == ~Propagated \/ (s.seen_leader[b] = ld /\ s.seen_epoch[b] = s.seen_epoch[ld])
ViewIsCurrent(s, ld) ==
    ~Propagated \/ (s.seen_leader[ld] = s.leader /\ s.seen_epoch[ld] = s.leader_epoch /\ s.seen_isr[ld] = s.isr)
Delivered(s, b, with_min_isr) ==
    LET leads == s.leader = b
    IN  [s EXCEPT !.seen_leader[b] = s.leader, !.seen_epoch[b] = s.leader_epoch,
                  !.seen_isr[b] = IF leads THEN s.isr ELSE {},
                  !.seen_min_isr[b] = IF ~leads THEN 0 ELSE IF with_min_isr THEN s.min_isr ELSE s.seen_min_isr[b]]
Forgotten(s, b) ==
    IF ~Propagated THEN s
    ELSE [s EXCEPT !.seen_leader[b] = NoLeader, !.seen_epoch[b] = 0, !.seen_isr[b] = {}, !.seen_min_isr[b] = 0]

-----------------------------------------------------------------------------
(* What the versions enable (versions.py) *)

\* eligible.leader.replicas.version >= 1: the controller records the ELR and
\* lets the ISR empty.  Never in legacy (class Legacy's elr_enabled), which
\* has no such feature: its ISR never empties and its elections are
\* ElectionsWithoutElr, as KIP-966's controller with the feature off.
ElrEnabled(s) == ~Legacy /\ s.elr_version = 1

\* the ELR the controller elects from: none while the feature is off
ElrInForce(s) == IF ElrEnabled(s) THEN s.elr ELSE {}

\* t written as a PartitionChangeRecord while the feature is off: "all the
\* ELR related fields will be removed on the next partition change"
WithoutElrFields(t) == [t EXCEPT !.elr = {}, !.last_known_elr = {}, !.last_known_leader = NoLeader]

\* every registered broker supports the new versions (upgrade_needs_software
\* is true in every mirrored variant)
SupportedByBrokers(s) == \A b \in Brokers : s.software[b] = "new"

MayChangeVersions(s) == s.version_changes < MaxVersionChanges

VersionsChanged(s) == [s EXCEPT !.version_changes = s.version_changes + 1]

-----------------------------------------------------------------------------
(* Policy hooks: IF Legacy THEN class Legacy's ELSE class Kip966's; *)
(* IF ~ElrEnabled(s) where Kip966's own rule reads the ELR feature     *)

\* `t`'s partition differs from `s`'s: a PartitionChangeRecord is written
PartitionChanged(s, t) ==
    <<t.leader, t.leader_epoch, t.isr, t.elr, t.last_known_elr, t.last_known_leader, t.leader_recovery,
      t.replicas, t.adding, t.removing>>
    /= <<s.leader, s.leader_epoch, s.isr, s.elr, s.last_known_elr, s.last_known_leader, s.leader_recovery,
         s.replicas, s.adding, s.removing>>

\* A partition change written while the feature is off: its ELR fields removed
WrittenWithoutElr(t) == WithoutElrFields(t)

\* A PartitionChangeRecord t applied to s: if it changed the partition, an
\* AlterPartition in flight was made at an older partition epoch (stale);
\* written while the ELR feature is off, the record has no ELR fields.
Recorded(s, t) ==
    IF ~PartitionChanged(s, t) THEN t
    ELSE LET u == IF ElrEnabled(t) THEN t ELSE WrittenWithoutElr(t)
         IN  IF u.pending_isr = NoProposal THEN u ELSE [u EXCEPT !.pending_stale = TRUE]

\* with the feature off (always in legacy) the ISR never empties
ChangeIsr(s, proposed) ==
    IF ~ElrEnabled(s)
    THEN Recorded(s, [s EXCEPT !.isr = IF proposed = {} THEN s.isr ELSE proposed])
    ELSE LET u == UpdateElr(s.isr, s.elr, proposed, EffMinIsr(s))
         IN  Recorded(s, [s EXCEPT !.isr = u.isr, !.elr = u.elr,
                                   !.last_known_elr = IF u.clean THEN {} ELSE s.last_known_elr])

\* the HWM min ISR rule is the new software's
HwmMayAdvance(s, ld) ==
    Legacy \/ s.software[ld] = "old" \/ Size(IsrSeenBy(s, ld)) >= MinIsrSeenBy(s, ld)

HwmQuorum(s, ld) == IsrSeenBy(s, ld) \cup ProposedBy(s, ld)

\* KIP-966's detection: from the new metadata version on, for a broker on
\* the new software (the old one sends no epoch)
RegistrationIsClean(s, b) ==
    \/ Legacy
    \/ /\ s.metadata_version = "new"
       /\ s.software[b] = "new"
       /\ RegistrationIsCleanRule(s.clean_shutdown_epoch[b], s.broker_epoch[b])

\* a clean registration is handled as a fence of the (already fenced) broker
CleanRegistration(s, b) == s

\* with the feature off the ELR is ignored: handled as a fence
UncleanRegistration(s, b) ==
    IF ~ElrEnabled(s) THEN CleanRegistration(s, b)
    ELSE Recorded(s, [s EXCEPT !.isr = s.isr \ {b}, !.elr = s.elr \ {b},
                               !.last_known_elr = s.last_known_elr \cup (s.elr \cap {b})])

MinIsrChanged(s) ==
    IF EffMinIsr(s) <= Size(s.isr) THEN Recorded(s, [s EXCEPT !.elr = {}, !.last_known_elr = {}]) ELSE s

-----------------------------------------------------------------------------
(* Shared effects *)

\* An unclean election sets RECOVERING; other changes carry it (KIP-704).
\* Written while the ELR feature is off, the record has no ELR fields.
SetLeader(s, ld, unclean) ==
    IF ld = s.leader THEN s
    ELSE LET t == [s EXCEPT !.leader = ld, !.leader_epoch = s.leader_epoch + 1,
                            !.pending_isr = NoProposal, !.pending_stale = FALSE, !.pending_from = NoLeader,
                            !.leader_recovery = IF unclean THEN "RECOVERING" ELSE s.leader_recovery,
                            !.last_known_leader = IF ld /= NoLeader THEN NoLeader ELSE s.last_known_leader]
         IN  IF ElrEnabled(t) THEN t ELSE WrittenWithoutElr(t)

Elect(s, c, unclean) ==
    LET t == IF unclean THEN [s EXCEPT !.isr = {c}, !.elr = {}]
             ELSE IF c \notin s.isr THEN ChangeIsr([s EXCEPT !.elr = s.elr \ {c}], {c})
             ELSE s
    IN  SetLeader(t, c, unclean)

\* Before KIP-966 (the feature off; always in legacy): an unfenced ISR
\* member; else, with unclean.leader.election.enable, any unfenced replica
\* (unclean).
ElectionsWithoutElr(s) ==
    LET clean == CleanCandidates(s.isr, {}, s.fenced)
    IN  IF clean /= {} THEN {Elect(s, c, FALSE) : c \in clean}
        ELSE IF ~s.unclean_election THEN {}
        ELSE {Elect(s, c, TRUE) : c \in {b \in s.replicas : Unfenced(s, b)}}

\* The states of the elections the controller makes on its own (Python's
\* candidates + reelect): ISR members, then unfenced ELR members.
Elections(s) ==
    IF ~ElrEnabled(s) THEN ElectionsWithoutElr(s)
    ELSE {Elect(s, c, FALSE) : c \in CleanCandidates(s.isr, s.elr, s.fenced)}

BalancedWinners(s, answered) ==
    IF ~(s.last_known_elr \subseteq answered) THEN {}
    ELSE {w \in answered : \A m \in s.last_known_elr : RankGeq(s.log[w], s.log[m])}

\* none while the ELR feature is off (always in legacy)
RecoveryWinners(s, strategy) ==
    IF \/ s.leader /= NoLeader \/ strategy = "none" \/ ~ElrEnabled(s)
       \/ CleanCandidates(s.isr, s.elr, s.fenced) /= {}
       \/ s.isr /= {} \/ (s.elr /= {} /\ strategy /= "aggressive")
    THEN {}
    ELSE LET answered == {b \in s.replicas : Running(s, b) /\ Unfenced(s, b)}
         IN  IF strategy = "balanced" THEN BalancedWinners(s, answered) ELSE answered

RecoveryChoices(s, strategy) == {Elect(s, w, TRUE) : w \in RecoveryWinners(s, strategy)}

RemoveBroker(s, b) ==
    LET s1 == [s EXCEPT !.fenced = s.fenced \cup {b}]
        s2 == IF b \in s1.isr
              THEN LET t == ChangeIsr(s1, s1.isr \ {b})
                   IN  IF t.isr = {} THEN [t EXCEPT !.last_known_leader = b] ELSE t
              ELSE s1
        choices == Elections(s2)
    IN  IF s2.leader /= b THEN {s2}
        ELSE IF choices = {} THEN {SetLeader(s2, NoLeader, FALSE)}
        ELSE choices

-----------------------------------------------------------------------------
(* Clients and the leader: data plane *)

ProduceAt(s, ld) ==
    LET record == s.produced + 1
    IN  IF ld = NoLeader \/ ~Running(s, ld) \/ s.produced >= MaxRecords THEN {}
        ELSE {[s EXCEPT !.log[ld] = Append(s.log[ld], <<EpochSeenBy(s, ld), record>>),
                        !.produced = record,
                        !.acks_all = IF a = "all" THEN s.acks_all \cup {record} ELSE s.acks_all]
              : a \in {x \in Acks : ~(x = "all" /\ Size(IsrSeenBy(s, ld)) < MinIsrSeenBy(s, ld))}}

ProduceNext(s) == UNION {ProduceAt(s, ActingLeader(s, at)) : at \in AtDomain}

\* b fetches from the leader it knows, which answers only at its own epoch
Fetches(s, b) ==
    LET ld == LeaderSeenBy(s, b)
    IN  /\ ld /= NoLeader /\ b /= ld /\ Running(s, ld) /\ Running(s, b)
        /\ b \in s.replicas      \* one a reassignment adds starts with an empty log
        /\ ~(FenceCutsDataPlane /\ (b \in s.fenced \/ ld \in s.fenced))
        /\ ActingLeader(s, ld) = ld /\ EpochSeenBy(s, b) = EpochSeenBy(s, ld)

FetchBy(s, b) ==
    LET ld == LeaderSeenBy(s, b)
        lead == s.log[ld]
        own == s.log[b]
        k == CommonPrefixLen(own, lead)
        new == IF k < Len(own) THEN Prefix(own, k) ELSE Prefix(lead, Len(own) + 1)
    IN  [s EXCEPT !.log[b] = new, !.hwm[b] = Min(s.hwm[ld], Len(new))]

\* broker b's fetch (Python: Fetch with broker = b); a no-op is no step
FetchNextOf(s, b) == IF Fetches(s, b) /\ FetchBy(s, b) /= s THEN {FetchBy(s, b)} ELSE {}

FetchNext(s) == UNION {FetchNextOf(s, b) : b \in Brokers}

NewlyAcked(s, ld, new_hwm) ==
    LET lg == s.log[ld]
    IN  IF Size(IsrSeenBy(s, ld)) < MinIsrSeenBy(s, ld) THEN {}
        ELSE {lg[i][2] : i \in {j \in (s.hwm[ld] + 1) .. new_hwm : lg[j][1] = EpochSeenBy(s, ld)}}
             \cap s.acks_all

AdvanceHwmAt(s, ld) ==
    IF ld = NoLeader \/ ~Running(s, ld) \/ ~HwmMayAdvance(s, ld) THEN {}
    ELSE IF \E b \in HwmQuorum(s, ld) \ {ld} : ~Follows(s, b, ld) THEN {}
    ELSE LET lead == s.log[ld]
             new == SetMin({Len(lead)} \cup {CommonPrefixLen(s.log[b], lead) : b \in HwmQuorum(s, ld) \ {ld}})
         IN  IF new <= s.hwm[ld] THEN {}
             ELSE {[s EXCEPT !.hwm[ld] = new, !.acked = s.acked \cup NewlyAcked(s, ld, new),
                             !.exposed = IF new > Len(s.exposed) THEN Prefix(lead, new) ELSE s.exposed]}

AdvanceHwmNext(s) == UNION {AdvanceHwmAt(s, ActingLeader(s, at)) : at \in AtDomain}

-----------------------------------------------------------------------------
(* The leader: AlterPartition *)

ProposalOk(s, ld) == ld /= NoLeader /\ Running(s, ld) /\ s.pending_isr = NoProposal

\* An AlterPartition request: each member with its broker epoch (KIP-903);
\* made from a stale view, it carries an old partition epoch.
Proposal(s, members) == [b \in members |-> s.broker_epoch[b]]
Propose(s, ld, members) ==
    LET t == [s EXCEPT !.pending_isr = Proposal(s, members)]
    IN  IF ~Propagated THEN t ELSE [t EXCEPT !.pending_from = ld, !.pending_stale = ~ViewIsCurrent(s, ld)]

ShrinkIsrAt(s, ld) ==
    IF ~ProposalOk(s, ld) \/ s.isr_shrinks >= MaxIsrShrinks THEN {}
    ELSE {Propose([s EXCEPT !.isr_shrinks = s.isr_shrinks + 1], ld, IsrSeenBy(s, ld) \ group)
          : group \in SUBSET (IsrSeenBy(s, ld) \ {ld}) \ {{}}}

ShrinkIsrNext(s) == UNION {ShrinkIsrAt(s, ActingLeader(s, at)) : at \in AtDomain}

ExpandIsrAt(s, ld) ==
    IF ~ProposalOk(s, ld) \/ s.leader_recovery = "RECOVERING" THEN {}
    ELSE LET lead == s.log[ld]
             floor == Max(s.hwm[ld], EpochStartOffset(lead, EpochSeenBy(s, ld)))
             caught_up == {b \in s.replicas : /\ b \notin IsrSeenBy(s, ld) /\ Running(s, b) /\ Unfenced(s, b)
                                           /\ Len(s.log[b]) >= floor /\ IsPrefix(s.log[b], lead)
                                           /\ Follows(s, b, ld)}
         IN  {Propose(s, ld, IsrSeenBy(s, ld) \cup group) : group \in SUBSET caught_up \ {{}}}

ExpandIsrNext(s) == UNION {ExpandIsrAt(s, ActingLeader(s, at)) : at \in AtDomain}

CommitAlterPartitionNext(s) ==
    LET p == PendingSet(s)
        t == [s EXCEPT !.pending_isr = NoProposal, !.pending_stale = FALSE, !.pending_from = NoLeader]
        valid == /\ ~s.pending_stale
                 /\ s.leader \in p
                 /\ p \cap s.fenced = {}
                 /\ \A b \in p : s.broker_epoch[b] = s.pending_isr[b]
                 /\ ~(s.leader_recovery = "RECOVERING" /\ Size(p) > 1)
    IN  IF s.pending_isr = NoProposal \/ s.leader = NoLeader THEN {}
        ELSE {IF ~valid THEN t
              ELSE IF Propagated THEN Delivered(ChangeIsr(t, p), s.pending_from, FALSE)  \* the response
              ELSE ChangeIsr(t, p)}

-----------------------------------------------------------------------------
(* Controller and broker lifecycle *)

\* The per-broker actions are written as XNextOf(s, b), the successors of
\* X's instances with argument broker = b, and XNext(s) as their union:
\* the fairness conditions of the temporal properties are per broker.
FenceBrokerNextOf(s, b) ==
    IF ~Unfenced(s, b) THEN {}
    ELSE IF Running(s, b)
    THEN IF s.fences >= MaxFences THEN {}
         ELSE RemoveBroker([s EXCEPT !.fences = s.fences + 1], b)
    ELSE RemoveBroker(s, b)

FenceBrokerNext(s) == UNION {FenceBrokerNextOf(s, b) : b \in Brokers}

UnfenceBrokerNextOf(s, b) ==
    IF Unfenced(s, b) \/ ~Running(s, b) THEN {}
    ELSE LET t == [s EXCEPT !.fenced = s.fenced \ {b}]
             choices == IF t.leader = NoLeader THEN Elections(t) ELSE {}
         IN  IF choices = {} THEN {t} ELSE choices

UnfenceBrokerNext(s) == UNION {UnfenceBrokerNextOf(s, b) : b \in Brokers}

\* (the ghost crashed_without_elr notes a crash with the ELR off; legacy,
\* which never has the ELR, leaves it alone)
UncleanShutdownNext(s) ==
    IF s.unclean_shutdowns >= MaxUncleanShutdowns THEN {}
    ELSE UNION {{[Forgotten(s, b) EXCEPT !.status[b] = "OFFLINE_DIRTY",
                           !.log[b] = Prefix(s.log[b], keep),
                           !.hwm[b] = Min(s.hwm[b], keep),
                           !.clean_shutdown_epoch[b] = NoEpoch,
                           !.unclean_shutdowns = s.unclean_shutdowns + 1,
                           !.crashed_without_elr = IF ~Legacy /\ ~ElrEnabled(s) THEN TRUE
                                                   ELSE s.crashed_without_elr]
                 : keep \in 0 .. Len(s.log[b])}
                : b \in {x \in Brokers : Running(s, x)}}

\* An orderly stop: the log is flushed and the CleanShutdownFile holds the
\* broker's epoch (Kafka's LogManager.shutdown(brokerEpoch)), whatever became
\* of the controlled shutdown; clean shutdowns, controlled or not, share
\* MaxCleanShutdowns.  Old software writes no epoch.
StoppedCleanly(s, b) ==
    [Forgotten(s, b) EXCEPT !.status[b] = "OFFLINE_CLEAN",
                            !.clean_shutdown_epoch[b] = IF s.software[b] = "new" THEN s.broker_epoch[b]
                                                        ELSE NoEpoch,
                            !.clean_shutdowns = s.clean_shutdowns + 1]

\* a controlled shutdown the controller answers (a fenced broker is let go
\* at once and handled as fenced again)
CleanShutdownNext(s) ==
    IF s.clean_shutdowns >= MaxCleanShutdowns THEN {}
    ELSE UNION {RemoveBroker(StoppedCleanly(s, b), b) : b \in {x \in Brokers : Running(s, x)}}

\* an orderly stop the controller does not answer (timed out, cut off): it
\* learns of it when it fences the broker
StopBrokerNext(s) ==
    IF s.clean_shutdowns >= MaxCleanShutdowns THEN {}
    ELSE {StoppedCleanly(s, b) : b \in {x \in Brokers : Running(s, x)}}

\* Stopped broker b runs again and registers (StartBroker, and a start on
\* other software: UpgradeSoftware, DowngradeSoftware).
Started(s, b) ==
    LET t == [s EXCEPT !.status[b] = "RUNNING",
                       !.broker_epoch[b] = s.broker_epoch[b] + 1,
                       !.clean_shutdown_epoch[b] = NoEpoch]
        u == IF RegistrationIsClean(s, b) THEN CleanRegistration(t, b) ELSE UncleanRegistration(t, b)
    IN  IF Propagated THEN Delivered(u, b, TRUE) ELSE u

StartBrokerNextOf(s, b) ==
    IF Running(s, b) \/ Unfenced(s, b) THEN {} ELSE {Started(s, b)}

StartBrokerNext(s) == UNION {StartBrokerNextOf(s, b) : b \in Brokers}

ElectLeaderNext(s) == IF s.leader /= NoLeader THEN {} ELSE Elections(s)

UncleanRecoveryNext(s) == IF Legacy THEN {} ELSE RecoveryChoices(s, StrategyIn(s))

CompleteRecoveryNext(s) ==
    IF /\ s.leader /= NoLeader /\ s.leader_recovery = "RECOVERING" /\ Running(s, s.leader)
       /\ EpochSeenBy(s, s.leader) = s.leader_epoch /\ LeaderSeenBy(s, s.leader) = s.leader
    THEN {Recorded(s, [s EXCEPT !.leader_recovery = "RECOVERED"])}
    ELSE {}

\* a running broker catches up with the metadata log (a no-op is no step)
MetadataUpdateNextOf(s, b) ==
    IF ~Propagated \/ ~Running(s, b) \/ Delivered(s, b, TRUE) = s THEN {} ELSE {Delivered(s, b, TRUE)}

MetadataUpdateNext(s) == UNION {MetadataUpdateNextOf(s, b) : b \in Brokers}

-----------------------------------------------------------------------------
(* Operators *)

AdminChoices(s, kind) ==
    IF kind = "PREFERRED"
    THEN IF s.leader /= Preferred /\ Preferred \in s.isr /\ Unfenced(s, Preferred)
         THEN {Elect(s, Preferred, FALSE)} ELSE {}
    ELSE IF s.leader /= NoLeader THEN {}
    ELSE IF kind = "UNCLEAN"
    THEN LET clean == CleanCandidates(s.isr, ElrInForce(s), s.fenced)
             live == {b \in s.replicas : Unfenced(s, b)}
         IN  IF clean /= {} THEN {Elect(s, SetMin(clean), FALSE)}
             ELSE IF live /= {} THEN {Elect(s, SetMin(live), TRUE)}
             ELSE {}
    ELSE IF kind = "LONGEST_LOG_AGGRESSIVE" THEN RecoveryChoices(s, "aggressive")
    ELSE IF kind = "LONGEST_LOG_BALANCED" THEN RecoveryChoices(s, "balanced")
    ELSE \* DESIGNATION: any unfenced replica
         {Elect(s, d, d \notin (s.isr \cup ElrInForce(s))) : d \in {b \in s.replicas : Unfenced(s, b)}}

AdminElectLeadersNext(s) ==
    IF s.admin_elections >= MaxAdminElections THEN {}
    ELSE LET t == [s EXCEPT !.admin_elections = s.admin_elections + 1]
         IN  UNION {AdminChoices(t, kind) : kind \in AdminTypes}

AlterMinIsrNext(s) ==
    IF s.min_isr_changes >= MaxMinIsrChanges THEN {}
    ELSE {MinIsrChanged([s EXCEPT !.min_isr = v, !.min_isr_changes = s.min_isr_changes + 1])
          : v \in (1 .. N) \ {s.min_isr}}

\* unclean.leader.election.enable changes: a config record, no election
AlterUncleanLeaderElectionNext(s) ==
    IF s.unclean_switches >= MaxUncleanSwitches THEN {}
    ELSE {[s EXCEPT !.unclean_election = v, !.unclean_switches = s.unclean_switches + 1]
          : v \in BOOLEAN \ {s.unclean_election}}

-----------------------------------------------------------------------------
(* Reassignment (AlterPartitionReassignments; KIP-966 4, 4a, 4b) *)

\* An operator moves the partition to a new replica set of N replicas: until
\* the controller completes or cancels it, the partition is assigned the old
\* and new replicas together, the new ones adding, the old ones removing.
ReassignPartitionNext(s) ==
    IF s.reassignments >= MaxReassignments \/ s.adding \cup s.removing /= {} THEN {}
    ELSE {Recorded(s, [s EXCEPT !.replicas = s.replicas \cup target, !.adding = target \ s.replicas,
                                !.removing = s.replicas \ target, !.reassignments = s.reassignments + 1])
          : target \in {x \in SUBSET Brokers : Size(x) = N /\ x /= s.replicas}}

\* KIP-966 4a/4b: a reassignment ends only with an ISR of at least min ISR
\* members; before it (legacy, and the variant that ignores the rule) any
\* non-empty ISR does.
MayEndReassignment(s, i) ==
    IF Legacy \/ Variant = "reassignment-ignores-min-isr" THEN i /= {} ELSE Size(i) >= FinalMinIsr(s)

\* The PartitionChangeRecord that ends a reassignment: the `dropped` replicas
\* leave the replica set and the ISR (with the ELR update); ELR,
\* LastKnownELR and LastKnownLeader keep only final replicas; the dropped
\* replicas' logs are deleted.  A dropped leader is replaced in the same
\* record (an election, or none); a kept leader keeps its epoch (its pending
\* acks=all records are still acknowledged).
Reassigned(s, dropped) ==
    LET moved == s.leader /= NoLeader /\ s.leader \in dropped
        final == s.replicas \ dropped
        u == ChangeIsr([s EXCEPT !.replicas = final, !.adding = {}, !.removing = {}], s.isr \ dropped)
        t0 == [u EXCEPT !.elr = u.elr \cap final, !.last_known_elr = u.last_known_elr \cap final,
                       !.log = [b \in Brokers |-> IF b \in dropped THEN <<>> ELSE s.log[b]],
                       !.hwm = [b \in Brokers |-> IF b \in dropped THEN 0 ELSE s.hwm[b]],
                       !.last_known_leader = IF s.last_known_leader \in dropped THEN NoLeader
                                             ELSE s.last_known_leader,
                       !.below_min_isr_reassigned = IF Size(u.isr) < FinalMinIsr(s) THEN TRUE
                                                    ELSE s.below_min_isr_reassigned]
        \* a record written with the feature off: no ELR fields
        t == IF ElrEnabled(t0) THEN t0 ELSE WrittenWithoutElr(t0)
        choices == Elections(t)
    IN  IF ~moved
        THEN {[t EXCEPT !.pending_isr = NoProposal, !.pending_stale = FALSE, !.pending_from = NoLeader]}
        ELSE IF choices = {} THEN {SetLeader(t, NoLeader, FALSE)}
        ELSE choices

\* The controller completes it once every adding replica is in the ISR and
\* the ISR without the removing replicas may end it.
CompleteReassignmentNext(s) ==
    IF \/ s.adding \cup s.removing = {} \/ ~(s.adding \subseteq s.isr)
       \/ ~MayEndReassignment(s, s.isr \ s.removing)
    THEN {}
    ELSE Reassigned(s, s.removing)

\* An operator cancels it: the adding replicas leave (the same ISR condition).
CancelReassignmentNext(s) ==
    IF s.adding \cup s.removing = {} \/ ~MayEndReassignment(s, s.isr \ s.adding) THEN {}
    ELSE Reassigned(s, s.adding)

-----------------------------------------------------------------------------
(* Upgrades and downgrades (versions.py; KIP-966 "Compatibility,           *)
(* Deprecation, and Migration Plan").  Legacy has none (Legacy.omit).      *)

\* The operator finalizes the new metadata version once every broker runs
\* the new software.
UpgradeMetadataVersionNext(s) ==
    IF \/ Legacy \/ ~MayChangeVersions(s) \/ s.metadata_version = "new" \/ ~SupportedByBrokers(s) THEN {}
    ELSE {[VersionsChanged(s) EXCEPT !.metadata_version = "new"]}

\* The partition once the metadata version is old: its ELR fields gone.
MetadataDowngraded(s) == WithoutElrFields(s)

\* The operator goes back to the old metadata version, the ELR feature off first.
DowngradeMetadataVersionNext(s) ==
    IF \/ Legacy \/ ~MayChangeVersions(s) \/ s.metadata_version = "old" \/ ElrEnabled(s) THEN {}
    ELSE {MetadataDowngraded([VersionsChanged(s) EXCEPT !.metadata_version = "old"])}

\* The partition as the controller loads it with the feature on: as its last
\* record has it (no record is written).
ElrUpgraded(s) == s

\* eligible.leader.replicas.version goes to 1 (needs the new metadata version).
\* elr_switch_when = "at-min-isr": the operator turns the ELR on or off only
\* while the ISR has min ISR members (no partition is under min ISR)
OperatorMaySwitch(s) == ElrSwitchWhen = "any" \/ Size(s.isr) >= EffMinIsr(s)

UpgradeElrVersionNext(s) ==
    IF \/ Legacy \/ ~MayChangeVersions(s) \/ ElrEnabled(s) \/ s.metadata_version /= "new"
       \/ ~SupportedByBrokers(s) \/ ~OperatorMaySwitch(s)
    THEN {}
    ELSE {ElrUpgraded([VersionsChanged(s) EXCEPT !.elr_version = 1])}

\* eligible.leader.replicas.version goes to 0: no partition record (the
\* controller ignores the ELR fields, the next change removes them).
DowngradeElrVersionNext(s) ==
    IF Legacy \/ ~MayChangeVersions(s) \/ ~ElrEnabled(s) \/ ~OperatorMaySwitch(s) THEN {}
    ELSE {[VersionsChanged(s) EXCEPT !.elr_version = 0]}

\* A broker's software is the one it registered with, so the other software
\* counts from the broker's start on it: b is stopped and registered
\* fenced, runs the other software, and the config allows one more change.
MayRestartOn(s, b, sw) ==
    /\ s.software_changes < MaxSoftwareChanges
    /\ ~Running(s, b)
    /\ b \in s.fenced
    /\ s.software[b] /= sw

OnSoftware(s, b, sw) == [s EXCEPT !.software[b] = sw, !.software_changes = s.software_changes + 1]

\* A stopped broker starts on the new software and registers (as
\* StartBroker: its CleanShutdownFile is as the old software left it).
UpgradeSoftwareNextOf(s, b) ==
    IF Legacy \/ ~MayRestartOn(s, b, "new") THEN {}
    ELSE {Started(OnSoftware(s, b, "new"), b)}

UpgradeSoftwareNext(s) == UNION {UpgradeSoftwareNextOf(s, b) : b \in Brokers}

\* A stopped broker starts on the old software, once the metadata version
\* is old (upgrade_needs_software is true in every mirrored variant).
DowngradeSoftwareNextOf(s, b) ==
    IF Legacy \/ ~MayRestartOn(s, b, "old") \/ s.metadata_version /= "old" THEN {}
    ELSE {Started(OnSoftware(s, b, "old"), b)}

DowngradeSoftwareNext(s) == UNION {DowngradeSoftwareNextOf(s, b) : b \in Brokers}

-----------------------------------------------------------------------------
(* The specification *)

Init ==
    /\ leader = Preferred
    /\ leader_epoch = 0
    /\ isr = Assigned
    /\ elr = {}
    /\ last_known_elr = {}
    /\ last_known_leader = NoLeader
    /\ leader_recovery = "RECOVERED"
    /\ fenced = {}
    /\ in_controlled_shutdown = {}
    /\ broker_epoch = [b \in Brokers |-> 1]
    /\ min_isr = MinIsr
    /\ unclean_election = UncleanLeaderElection
    /\ replicas = Assigned
    /\ adding = {}
    /\ removing = {}
    /\ listed_last = {}
    /\ metadata_version = StartMetadataVersion
    /\ elr_version = StartElrVersion
    /\ software = [b \in Brokers |-> IF b \in StartOldSoftware THEN "old" ELSE "new"]
    /\ status = [b \in Brokers |-> "RUNNING"]
    /\ clean_shutdown_epoch = [b \in Brokers |-> NoEpoch]
    /\ log = [b \in Brokers |-> <<>>]
    /\ hwm = [b \in Brokers |-> 0]
    /\ pending_isr = NoProposal
    /\ pending_stale = FALSE
    /\ pending_from = NoLeader
    /\ seen_leader = [b \in Brokers |-> IF Propagated THEN Preferred ELSE NoLeader]
    /\ seen_epoch = [b \in Brokers |-> 0]
    /\ seen_isr = [b \in Brokers |-> IF Propagated /\ b = Preferred THEN Assigned ELSE {}]
    /\ seen_min_isr = [b \in Brokers |-> IF Propagated /\ b = Preferred THEN MinIsr ELSE 0]
    /\ acked = {}
    /\ acks_all = {}
    /\ exposed = <<>>
    /\ produced = 0
    /\ unclean_shutdowns = 0
    /\ crashed_without_elr = FALSE
    /\ clean_shutdowns = 0
    /\ fences = 0
    /\ isr_shrinks = 0
    /\ min_isr_changes = 0
    /\ admin_elections = 0
    /\ unclean_switches = 0
    /\ reassignments = 0
    /\ version_changes = 0
    /\ software_changes = 0
    /\ below_min_isr_reassigned = FALSE

Produce == \E t \in ProduceNext(St) : Go(t)
Fetch == \E t \in FetchNext(St) : Go(t)
AdvanceHwm == \E t \in AdvanceHwmNext(St) : Go(t)
ShrinkIsr == \E t \in ShrinkIsrNext(St) : Go(t)
ExpandIsr == \E t \in ExpandIsrNext(St) : Go(t)
CommitAlterPartition == \E t \in CommitAlterPartitionNext(St) : Go(t)
FenceBroker == \E t \in FenceBrokerNext(St) : Go(t)
UnfenceBroker == \E t \in UnfenceBrokerNext(St) : Go(t)
UncleanShutdown == \E t \in UncleanShutdownNext(St) : Go(t)
CleanShutdown == \E t \in CleanShutdownNext(St) : Go(t)
StartBroker == \E t \in StartBrokerNext(St) : Go(t)
StopBroker == \E t \in StopBrokerNext(St) : Go(t)
ElectLeader == \E t \in ElectLeaderNext(St) : Go(t)
UncleanRecovery == \E t \in UncleanRecoveryNext(St) : Go(t)
CompleteRecovery == \E t \in CompleteRecoveryNext(St) : Go(t)
AdminElectLeaders == \E t \in AdminElectLeadersNext(St) : Go(t)
AlterMinIsr == \E t \in AlterMinIsrNext(St) : Go(t)
AlterUncleanLeaderElection == \E t \in AlterUncleanLeaderElectionNext(St) : Go(t)
MetadataUpdate == \E t \in MetadataUpdateNext(St) : Go(t)
ReassignPartition == \E t \in ReassignPartitionNext(St) : Go(t)
CompleteReassignment == \E t \in CompleteReassignmentNext(St) : Go(t)
CancelReassignment == \E t \in CancelReassignmentNext(St) : Go(t)
UpgradeMetadataVersion == \E t \in UpgradeMetadataVersionNext(St) : Go(t)
DowngradeMetadataVersion == \E t \in DowngradeMetadataVersionNext(St) : Go(t)
UpgradeElrVersion == \E t \in UpgradeElrVersionNext(St) : Go(t)
DowngradeElrVersion == \E t \in DowngradeElrVersionNext(St) : Go(t)
UpgradeSoftware == \E t \in UpgradeSoftwareNext(St) : Go(t)
DowngradeSoftware == \E t \in DowngradeSoftwareNext(St) : Go(t)

\* the per-broker actions (Python: the instances with argument broker = b),
\* for the per-broker fairness of the temporal properties
FetchOf(b) == \E t \in FetchNextOf(St, b) : Go(t)
FenceBrokerOf(b) == \E t \in FenceBrokerNextOf(St, b) : Go(t)
UnfenceBrokerOf(b) == \E t \in UnfenceBrokerNextOf(St, b) : Go(t)
StartBrokerOf(b) == \E t \in StartBrokerNextOf(St, b) : Go(t)
MetadataUpdateOf(b) == \E t \in MetadataUpdateNextOf(St, b) : Go(t)

Next ==
    \/ AdminElectLeaders
    \/ AdvanceHwm
    \/ AlterMinIsr
    \/ AlterUncleanLeaderElection
    \/ CancelReassignment
    \/ CleanShutdown
    \/ CommitAlterPartition
    \/ CompleteReassignment
    \/ CompleteRecovery
    \/ DowngradeElrVersion
    \/ DowngradeMetadataVersion
    \/ DowngradeSoftware
    \/ ElectLeader
    \/ ExpandIsr
    \/ FenceBroker
    \/ Fetch
    \/ MetadataUpdate
    \/ Produce
    \/ ReassignPartition
    \/ ShrinkIsr
    \/ StartBroker
    \/ StopBroker
    \/ UncleanRecovery
    \/ UncleanShutdown
    \/ UnfenceBroker
    \/ UpgradeElrVersion
    \/ UpgradeMetadataVersion
    \/ UpgradeSoftware

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants (the legacy configs list only legacy's) *)

TypeOK ==
    /\ leader \in Brokers \cup {NoLeader}
    /\ last_known_leader \in Brokers \cup {NoLeader}
    /\ leader_epoch \in Nat
    /\ isr \subseteq Brokers /\ elr \subseteq Brokers
    /\ last_known_elr \subseteq Brokers /\ fenced \subseteq Brokers
    /\ PendingSet(St) \subseteq Brokers
    /\ pending_stale \in BOOLEAN
    /\ leader_recovery \in {"RECOVERED", "RECOVERING"}
    /\ min_isr >= 1
    /\ DOMAIN status = Brokers /\ DOMAIN broker_epoch = Brokers
    /\ DOMAIN clean_shutdown_epoch = Brokers /\ DOMAIN log = Brokers /\ DOMAIN hwm = Brokers
    /\ \A b \in Brokers : status[b] \in {"RUNNING", "OFFLINE_CLEAN", "OFFLINE_DIRTY"}
    /\ \A b \in Brokers : 0 <= hwm[b] /\ hwm[b] <= Len(log[b])
    \* the assignment: ISR and leader are replicas; adding and removing split
    \* the replicas beyond the original and the target sets
    /\ replicas \subseteq Brokers
    /\ isr \cup adding \cup removing \cup (IF leader /= NoLeader THEN {leader} ELSE {}) \subseteq replicas
    /\ adding \cap removing = {}
    /\ Size(replicas \ adding) = N /\ Size(replicas \ removing) = N
    /\ reassignments \in Nat /\ below_min_isr_reassigned \in BOOLEAN
    \* the versions
    /\ metadata_version \in {"old", "new"} /\ elr_version \in {0, 1}
    /\ DOMAIN software = Brokers /\ \A b \in Brokers : software[b] \in {"old", "new"}
    /\ crashed_without_elr \in BOOLEAN /\ version_changes \in Nat /\ software_changes \in Nat

\* (the ELR the controller elects from: none while the feature is off)
ElrDisjointIsr == isr \cap ElrInForce(St) = {}

ElrOnlyUnderMinIsr == ElrInForce(St) = {} \/ Size(isr) < EffMinIsr(St)

ElrHasDataToHwm == \A b \in ElrInForce(St) \ LostUnregistered(St) : IsPrefix(exposed, log[b])

ElrWithinReplicas == elr \cup last_known_elr \subseteq replicas

ReassignmentKeepsMinIsr == ~below_min_isr_reassigned

LeaderInIsr == leader = NoLeader \/ leader \in isr

LeaderUnfenced == leader = NoLeader \/ leader \notin fenced

\* KIP-841: no fenced or shutting-down replica in the ISR, but the last
\* member an ISR keeps when it cannot empty (the ELR off), leaderless
IsrMembersEligible ==
    LET bad == isr \cap (fenced \cup in_controlled_shutdown)
    IN  \/ bad = {}
        \/ leader = NoLeader /\ isr = bad /\ Size(bad) = 1

\* (a claim of the ELR: none while the feature is off)
ElectableAtLeastMinIsr ==
    \/ ~ElrEnabled(St)
    \/ unclean_shutdowns - Size(LostUnregistered(St)) > 0
    \/ Size(isr \cup elr) >= EffMinIsr(St)

LogMatching ==
    \A i, j \in Brokers :
        i < j =>
            LET a == log[i]
                b == log[j]
                k == CommonPrefixLen(a, b)
            IN  \A x \in (k + 1) .. Min(Len(a), Len(b)) : a[x] /= b[x]

RecoveringIsrSingleton ==
    \/ leader_recovery = "RECOVERED"
    \/ leader /= NoLeader /\ isr = {leader}
    \/ leader = NoLeader /\ Size(isr) <= 1

RecoveryKeepsLastKnownElrData ==
    LET kept == UNION {Records(log[m]) : m \in last_known_elr} \cap acked
    IN  \A w \in RecoveryWinners(St, StrategyIn(St)) : kept \subseteq Records(log[w])

NoneNeverElectsUnclean ==
    StrategyIn(St) /= "none" \/ leader_recovery = "RECOVERED" \/ admin_elections > 0 \/ unclean_switches > 0

NoAckedLoss ==
    LET holders == isr \cup ElrInForce(St) \cup (IF leader /= NoLeader THEN {leader} ELSE {})
    IN  acked \subseteq UNION {Records(log[b]) : b \in holders}

ConsistentRead ==
    leader = NoLeader \/ ~Running(St, leader) \/ IsPrefix(exposed, log[leader])

\* The same, for a cluster that turns the ELR on or off at run time: only
\* for runs whose crashes all happened with the ELR on.
NoAckedLossUnderElr == crashed_without_elr \/ NoAckedLoss

ConsistentReadUnderElr == crashed_without_elr \/ ConsistentRead

ElrHasDataToHwmUnderElr == crashed_without_elr \/ ElrHasDataToHwm

-----------------------------------------------------------------------------
(* Temporal properties (invariants.py, the @leads_to methods of Kip966)    *)
(* and the fairness each is checked under.  Python's                       *)
(* weak("A", each="broker") is \A b \in Brokers : WF_vars(AOf(b)),         *)
(* weak("A") is WF_vars(A).  An action a variant or config lacks has no    *)
(* successors (UncleanRecovery in legacy, MetadataUpdate under             *)
(* "atomic"), so its fairness asks nothing, as in Python.  A step to the   *)
(* same state is a stutter: <<A>>_vars.                                    *)
(*                                                                         *)
(* WF_vars(A) is written out as []<>~ENABLED <<A>>_vars \/ []<><<A>>_vars, *)
(* with ENABLED <<A>>_vars computed: a step of A sets every variable to a  *)
(* successor t in ANext(St), so it is enabled iff ANext(St) \ {St} /= {}   *)
(* (Moves).  Same formula; but TLC evaluates ENABLED of these actions      *)
(* without caching St and the nested LETs, about 100 times slower (2,962   *)
(* states a minute instead of 3,000 a second: docs/tla.md).                *)

Moves(S) == S \ {St} /= {}

\* WF_vars(FenceBrokerOf(b)), ..., one per fairness condition of invariants.py
FenceBrokerFair(b) == []<>~Moves(FenceBrokerNextOf(St, b)) \/ []<><<FenceBrokerOf(b)>>_vars
UnfenceBrokerFair(b) == []<>~Moves(UnfenceBrokerNextOf(St, b)) \/ []<><<UnfenceBrokerOf(b)>>_vars
FetchFair(b) == []<>~Moves(FetchNextOf(St, b)) \/ []<><<FetchOf(b)>>_vars
MetadataUpdateFair(b) == []<>~Moves(MetadataUpdateNextOf(St, b)) \/ []<><<MetadataUpdateOf(b)>>_vars
StartBrokerFair(b) == []<>~Moves(StartBrokerNextOf(St, b)) \/ []<><<StartBrokerOf(b)>>_vars
ElectLeaderFair == []<>~Moves(ElectLeaderNext(St)) \/ []<><<ElectLeader>>_vars
UncleanRecoveryFair == []<>~Moves(UncleanRecoveryNext(St)) \/ []<><<UncleanRecovery>>_vars
CommitAlterPartitionFair == []<>~Moves(CommitAlterPartitionNext(St)) \/ []<><<CommitAlterPartition>>_vars
AdvanceHwmFair == []<>~Moves(AdvanceHwmNext(St)) \/ []<><<AdvanceHwm>>_vars
ExpandIsrFair == []<>~Moves(ExpandIsrNext(St)) \/ []<><<ExpandIsr>>_vars
CompleteRecoveryFair == []<>~Moves(CompleteRecoveryNext(St)) \/ []<><<CompleteRecovery>>_vars
CompleteReassignmentFair == []<>~Moves(CompleteReassignmentNext(St)) \/ []<><<CompleteReassignment>>_vars

\* CONTROLLER: fences, unfences (each broker), elects, runs the unclean
\* recovery and answers AlterPartition requests
ControllerFairness ==
    /\ \A b \in Brokers : FenceBrokerFair(b) /\ UnfenceBrokerFair(b)
    /\ ElectLeaderFair
    /\ UncleanRecoveryFair
    /\ CommitAlterPartitionFair

\* REPLICATION: followers fetch and metadata reaches each running broker;
\* the leader advances its HWM, grows the ISR, finishes a recovery
ReplicationFairness ==
    /\ \A b \in Brokers : FetchFair(b) /\ MetadataUpdateFair(b)
    /\ AdvanceHwmFair
    /\ ExpandIsrFair
    /\ CompleteRecoveryFair

\* RESTARTS: a stopped broker comes back
RestartFairness == \A b \in Brokers : StartBrokerFair(b)

\* REASSIGNMENT: the controller completes a reassignment it may complete
ReassignmentFairness == CompleteReassignmentFair

\* one specification per fairness set (TLC checks a PROPERTY under the
\* SPECIFICATION's fairness)
ControllerSpec == Spec /\ ControllerFairness
RestartsSpec == Spec /\ ControllerFairness /\ RestartFairness
ReplicationSpec == Spec /\ ControllerFairness /\ ReplicationFairness /\ RestartFairness
ReassignmentSpec == Spec /\ ControllerFairness /\ ReplicationFairness /\ RestartFairness /\ ReassignmentFairness
\* (no RESTARTS: a broker that stopped may never come back)
ReplicationWithoutRestartsSpec == Spec /\ ControllerFairness /\ ReplicationFairness

\* under ControllerSpec
LeaderlessGetsLeader == (leader = NoLeader) ~> (leader /= NoLeader)

\* under RestartsSpec
LeaderlessGetsLeaderOnceBrokersRestart == (leader = NoLeader) ~> (leader /= NoLeader)

\* under RestartsSpec
BalancedElectsOnceLastKnownElrIsBack ==
    (/\ leader = NoLeader /\ isr = {} /\ elr = {}
     /\ last_known_elr /= {} /\ \A m \in last_known_elr : Running(St, m))
    ~> (leader /= NoLeader)

\* under ReplicationSpec: a leader's records above its HWM while the ISR
\* has min ISR members are eventually below it, or the ISR drops under
\* min ISR, or leadership moves
HwmStuck ==
    /\ leader /= NoLeader
    /\ Size(isr) >= EffMinIsr(St)
    /\ hwm[leader] < Len(log[leader])
HwmAdvancesAtMinIsr == HwmStuck ~> ~HwmStuck

\* under ReplicationWithoutRestartsSpec: the same, even if a broker that
\* stopped never comes back (KAFKA-15021)
HwmAdvancesAtMinIsrWithoutRestarts == HwmStuck ~> ~HwmStuck

\* under ReplicationWithoutRestartsSpec: a RECOVERING leader recovers, or
\* the partition loses its leader first (KIP-704)
RecoveringLeaderRecovers ==
    (leader /= NoLeader /\ leader_recovery = "RECOVERING")
    ~> (leader = NoLeader \/ leader_recovery = "RECOVERED")

\* under ReassignmentSpec: a reassignment is eventually completed or cancelled
Reassigning == adding \cup removing /= {}
ReassignmentEnds == Reassigning ~> ~Reassigning

=============================================================================
