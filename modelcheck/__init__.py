"""modelcheck: an explicit-state model checker whose specs mirror TLA+.

The engine (this package) knows nothing about any protocol: a protocol is a
`modelcheck.spec.Spec` subclass living outside it (see `specs/`).
"""

__version__ = "0.1.0"
