"""Action arguments and the constants they range over (MODEL.md "Action
arguments"): the domain of each argument as a function of the spec
instance, and how its values read in traces and scenarios.
"""

from __future__ import annotations

from modelcheck.declare import Param

from .types import NO_LEADER, members
from .types import PREFERRED_REPLICA as PREFERRED_REPLICA  # the initial leader: declared with the state

ACKS_NAMES = ("1", "all")
ACKS_1, ACKS_ALL = 0, 1
ADMIN_TYPES = ("PREFERRED", "UNCLEAN", "LONGEST_LOG_AGGRESSIVE", "LONGEST_LOG_BALANCED", "DESIGNATION")
PREFERRED, UNCLEAN, LONGEST_LOG_AGGRESSIVE, LONGEST_LOG_BALANCED, DESIGNATION = range(5)
STRATEGIES = ("none", "balanced", "aggressive")
STRATEGY_NONE, STRATEGY_BALANCED, STRATEGY_AGGRESSIVE = range(3)

# ---- action arguments (MODEL.md "Action arguments") ----------------------------------
BROKER = Param(lambda spec: range(spec.n))
LEADER = Param(lambda spec: range(spec.n))
# the leader elected in the same record as the change that triggered it;
# absent (-1) when the change elects nobody
ELECTED = Param(lambda spec: range(-1, spec.n), absent=NO_LEADER)
BROKER_SET = Param(lambda spec: spec.broker_sets, show=members)
KEEP = Param(lambda spec: range(spec.max_records + 1))
ACKS = Param(lambda spec: spec.acks_modes, show=ACKS_NAMES.__getitem__)
ADMIN_TYPE = Param(lambda spec: spec.admin_types, show=ADMIN_TYPES.__getitem__)
MIN_ISR = Param(lambda spec: range(1, spec.rf + 1))
# a new value of unclean.leader.election.enable
SWITCH = Param(lambda spec: (0, 1), show=bool)
# a reassignment's target: a replica set of replication-factor size
TARGET = Param(lambda spec: spec.targets, show=members)
# the broker acting as leader (metadata = "propagated": whoever believes it
# leads); absent under "atomic", where it is the controller's leader
AT = Param(lambda spec: spec.brokers if spec.propagated else (NO_LEADER,), absent=NO_LEADER)
# a broker receiving metadata: none under "atomic"
RECEIVER = Param(lambda spec: spec.brokers if spec.propagated else ())
