"""Random small configs the engines must agree on (hypothesis): every
variant at 3 brokers, so that each variant's kernel compiles once (no
spare broker, hence no reassignment: its targets need one)."""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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
