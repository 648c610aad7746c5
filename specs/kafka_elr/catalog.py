"""Every variant a config may name. A variant is one class: a subclass of
Kip966 (or of another variant) that names its `variant` registers itself
(protocol.py); this lists those of the modules below, in their order and
each module's in the order defined: the protocols (`protocol = True`),
then the design mutants, then the real-bug mutants (a `source`: bugs.py),
which the per-variant test sweeps leave to tests/test_bugs.py."""

from __future__ import annotations

import importlib

from .protocol import REGISTERED, Kip966

# the modules that define variants (a variant in a new module: name it here)
VARIANT_MODULES = ("protocol", "variants", "kafka4", "bugs")
for _module in VARIANT_MODULES:
    importlib.import_module(f"{__package__}.{_module}")


def _listed(kind: str) -> list[type[Kip966]]:
    """The registered variants of one kind, by module (VARIANT_MODULES), then as defined."""
    registered = list(REGISTERED.values())
    mine = [c for c in registered if c.__module__.rsplit(".", 1)[-1] in VARIANT_MODULES and _kind(c) == kind]
    return sorted(mine, key=lambda c: (VARIANT_MODULES.index(c.__module__.rsplit(".", 1)[-1]), registered.index(c)))


def _kind(cls: type[Kip966]) -> str:
    if vars(cls).get("protocol"):
        return "protocol"
    return "bug" if "source" in vars(cls) else "mutant"


# the protocols' variants and design mutants, then the real bugs
VARIANTS: dict[str, type[Kip966]] = {c.variant: c for c in _listed("protocol") + _listed("mutant")}
BUGS: tuple[type[Kip966], ...] = tuple(_listed("bug"))
ALL_VARIANTS: dict[str, type[Kip966]] = {**VARIANTS, **{cls.variant: cls for cls in BUGS}}
# the classes Kip966's kernel compiles (kernel_family): every one defined above
Kip966.family = tuple(ALL_VARIANTS.values())


def base_of(cls: type[Kip966]) -> str:
    """The variant a mutant redefines a rule of: the class it subclasses."""
    base = cls.__bases__[0]
    assert issubclass(base, Kip966)
    return base.variant


# the protocol's variants; every other variant is a mutant of the one it subclasses
PROTOCOLS = tuple(c.variant for c in _listed("protocol"))
MUTANTS: dict[str, str] = {name: base_of(cls) for name, cls in ALL_VARIANTS.items() if name not in PROTOCOLS}
