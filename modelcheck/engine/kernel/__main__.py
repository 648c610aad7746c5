"""compile_elsewhere's child (compiled.CHILD runs it, given the parent's
PID and sys.path): compiles the spec pickled on stdin into the cache, then runs its compiled
search for a moment so that the engine's own compiled helpers are cached
too (fast.warm), and dies with PID."""

from ..fast import warm
from .job import compile_here

warm(*compile_here())
