"""Why a kernel cannot be had: raised by every step of making one, and
told apart by the engines (KernelUnavailable: run interpreted, or refuse)."""


class KernelError(Exception):
    """The spec cannot be compiled: one line saying where and why."""


class KernelUnavailable(Exception):
    """No compiled kernel here (numba missing or failing, a spec it cannot
    compile, MODELCHECK_KERNEL=interpreted): the message says why."""


class FieldOutOfRange(KernelError):
    """A reached state has a field outside the range the spec's layout()
    declares (its TypeOK domain): the search stops there, without a trace."""
