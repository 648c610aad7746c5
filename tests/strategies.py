"""Random small configs the engines must agree on (hypothesis): every
variant at 3 brokers, so that each variant's kernel compiles once (no
spare broker, hence no reassignment: its targets need one)."""

import signal
from typing import Any

from hypothesis import HealthCheck, reject, settings
from hypothesis import strategies as st

from modelcheck.engine import run
from modelcheck.engine.control import Control
from modelcheck.engine.options import CheckOptions
from modelcheck.lifetime import Stopped, StopRequest
from modelcheck.result import CheckResult
from specs.kafka_elr import VARIANTS


def small(variant: str) -> st.SearchStrategy[dict]:
    """The keys drawn for `variant`, each from the values it accepts
    (controlled_shutdown = "staged" is kafka-4's only; legacy has no ELR
    feature to start off or change)."""
    versions = (
        {"elr_version": st.integers(0, 1), "max_version_changes": st.integers(0, 1)} if variant != "legacy" else {}
    )
    return st.fixed_dictionaries(
        {
            "variant": st.just(variant),
            "min_isr": st.integers(1, 4),
            "max_records": st.integers(0, 1),
            "max_unclean_shutdowns": st.integers(0, 2),
            "max_clean_shutdowns": st.integers(0, 1),  # CleanShutdown and StopBroker
            "max_fences": st.integers(0, 1),
            "max_isr_shrinks": st.integers(0, 1),
            "max_min_isr_changes": st.integers(0, 1),
            "max_admin_elections": st.integers(0, 1),
            "max_unclean_switches": st.integers(0, 1),
            "unclean_leader_election": st.booleans(),
            "unclean_recovery_strategy": st.sampled_from(["none", "balanced", "aggressive"]),
            "controlled_shutdown": st.sampled_from(["atomic", "staged"] if variant == "kafka-4" else ["atomic"]),
            "acks": st.sampled_from([["1"], ["all"], ["1", "all"]]),
            **versions,
        }
    )


SMALL = st.sampled_from(sorted(VARIANTS)).flatmap(small)


def fuzzing(examples: int, *also_suppressed: HealthCheck) -> settings:
    """Hypothesis settings for the fuzz tests: the same examples every run
    (derandomized, no example database, so CI and a laptop agree), no
    deadline (a check's time varies with the machine's load)."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, *also_suppressed],
    )


# The most distinct states a random config may reach to be kept: the
# reference engine checks some 500 to 2,000 states a second, and an
# example drawn with every bound at its top can reach millions.
SMALL_STATES = 15_000


def small_enough(spec: Any, options: CheckOptions) -> CheckResult:
    """The result of checking `spec` as `options` say, or hypothesis
    rejects the example once the search passes SMALL_STATES (checked at
    each progress report), so that a random config's size, not its luck,
    bounds what the differential tests cost."""
    request = StopRequest()

    def progress(counts: dict) -> None:
        if counts.get("distinct", 0) > SMALL_STATES:
            request.signum = signal.SIGINT

    try:
        result = run(spec, options, progress=progress, control=Control(stop=request))
    except Stopped:
        reject()
    if result.distinct_states > SMALL_STATES:
        reject()
    return result
