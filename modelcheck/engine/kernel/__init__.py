"""How a spec's one text is compiled for the hot loop.

The spec's actions, invariants and `representative` are Python methods
(modelcheck/spec.py says which subset of Python they keep to). Here the
very same source is flattened into free functions, as numba can compile
them, and compiled; nothing of the protocol is written twice:

- a method becomes a function of `self`, where `self` is now a tuple of
  the instance's attribute values (`self.n` reads `self[k]`), and
  `self.m(...)` calls the class's own `m`, resolved through its MRO, so a
  variant's override is what runs, as in Python;
- a module-level function it calls is flattened too; a module-level
  constant becomes a literal; modelcheck.ops primitives become their
  compiled twins (kernel_ops.py); `s._replace(f=v)` becomes a call of the
  state class with every field;
- generated glue (the "kernel module") packs states into rows of uint64
  words as the spec's `layout` declares, enumerates every action over its
  domains in the interpreted spec's order, and keys each successor.

Variants share a kernel: the classes a spec names in `kernel_family` that
agree on their rules are flattened into one module, a method they define
differently called through a chooser that runs the instance's own (by a
number in `self`), a rule a class omits switched off by its tables.

The flattened spec is written to a file under the cache directory named by
its hash (one a family of variants), the glue to another (one a family and
broker count: the rest of a config, bounds and domains, is run-time tables), and
numba caches their machine code beside them, so a second run loads instead
of compiling. `kernel_for` raises KernelUnavailable, with the reason,
where numba is missing or the spec cannot be compiled (the caller then
runs the interpreted engine), and returns None where the kernel is not in
the cache and it was asked not to compile.

Its modules, one job each: flatten.py (the spec's methods as free
functions), layout.py (where each field sits in a row of words), glue.py
(the generated module that packs, expands, checks and keys rows), rows.py
(its static part: a slot's bits, a row's key),
cache.py (generated modules on disk, named by their text), compiled.py
(the Kernel engines call, loaded or compiled) and job.py (CompileJob, a
compile in a child while the interpreted engine checks; __main__.py is
that child, run with its parent's sys.path).
"""

from .cache import cache_dir
from .compiled import Kernel, kernel_for
from .errors import FieldOutOfRange, KernelError, KernelUnavailable
from .job import CompileJob, compile_ahead, compile_job, compiling_ahead

__all__ = [
    "CompileJob",
    "Kernel",
    "FieldOutOfRange",
    "KernelError",
    "KernelUnavailable",
    "cache_dir",
    "compile_ahead",
    "compile_job",
    "compiling_ahead",
    "kernel_for",
]
