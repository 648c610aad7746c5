--------------------------- MODULE KIP966Refines ---------------------------
(***************************************************************************)
(* Refinement between two variants of the mirror (issue 33, docs/tla.md   *)
(* "Refinement").  The implementation is KIP966 itself, with its Variant   *)
(* and its config's constants; the abstract spec is KIP966 again, with     *)
(* AbstractVariant and the refinement mapping substituted for the          *)
(* variables.  TLC checks `SPECIFICATION Spec` with                        *)
(* `PROPERTY AbstractSpec`: the image of every initial state is an         *)
(* abstract initial state, and the image of every reachable step is an     *)
(* abstract step or a stutter ([Abstract!Next]_Abstract!vars).             *)
(***************************************************************************)
EXTENDS KIP966

CONSTANTS
    AbstractVariant,  \* "kip966", "legacy" or "reassignment-ignores-min-isr"
    Mapping           \* "identity", or "elr-projected-away": ELR, LastKnownELR and LastKnownLeader dropped

ASSUME AbstractVariant \in {"kip966", "legacy", "reassignment-ignores-min-isr"}
ASSUME Mapping \in {"identity", "elr-projected-away"}

Projected == Mapping = "elr-projected-away"

\* The refinement mapping: a projected variable reads as the constant it
\* keeps in legacy (which has no ELR and never records a LastKnownLeader);
\* every other variable maps to itself (implicit in the INSTANCE).
Abstract == INSTANCE KIP966 WITH
    Variant <- AbstractVariant,
    elr <- IF Projected THEN {} ELSE elr,
    last_known_elr <- IF Projected THEN {} ELSE last_known_elr,
    last_known_leader <- IF Projected THEN NoLeader ELSE last_known_leader

AbstractSpec == Abstract!Spec
=============================================================================
