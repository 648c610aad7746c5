"""Every variant a config may name: the protocol's variants and design
mutants (variants.py), then the real-bug mutants (bugs.py), which the
per-variant test sweeps leave to tests/test_bugs.py."""

from __future__ import annotations

from .bugs import BUGS
from .protocol import Kip966
from .variants import VARIANTS

ALL_VARIANTS: dict[str, type[Kip966]] = {**VARIANTS, **{cls.variant: cls for cls in BUGS}}


def base_of(cls: type[Kip966]) -> str:
    """The variant a mutant redefines a rule of: the class it subclasses."""
    base = cls.__bases__[0]
    assert issubclass(base, Kip966)
    return base.variant


# the protocol's variants; every other variant is a mutant of the one it subclasses
PROTOCOLS = ("kip966", "legacy", "kip966-elr-only", "kafka-4")
MUTANTS: dict[str, str] = {name: base_of(cls) for name, cls in ALL_VARIANTS.items() if name not in PROTOCOLS}
