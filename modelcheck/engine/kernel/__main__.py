"""compile_elsewhere's child: `python -m modelcheck.engine.kernel PID`
compiles the spec pickled on stdin into the cache, and dies with PID."""

from .compiled import compile_here

compile_here()
