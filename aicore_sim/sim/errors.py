"""Named failures of a simulated launch.

Every error says which core, pipe, buffer or argument is at fault and why, so a user can fix
the kernel or the case without reading simulator code.
"""

from __future__ import annotations


class SimError(Exception):
    """Base class of everything the simulator raises on purpose.

    ``exit_code`` is what the command line returns for it: 1, the kernel or the simulation
    failed (a result that cannot be trusted); 2, the user's input was refused (the message
    names the field and the rule). ``tag`` goes before the message (e.g. an aclnn status).
    """

    exit_code = 1
    tag = ""


class InputError(SimError):
    """Base class of the refusals of a user's input: exit 2, the message on one line."""

    exit_code = 2


class UBOverflowError(SimError):
    """``TPipe.InitBuffer`` asked for more Unified Buffer than is left."""


class OutOfBoundsError(SimError):
    """An instruction touches bytes outside its UB buffer, the UB, or its GM tensor."""


class DeadlockError(SimError):
    """A ``WaitFlag`` (or a barrier / auto-sync wait) can never be satisfied."""


class EventIdError(SimError):
    """An event id outside 0..7, or a TQue found no free event id."""


class KernelError(SimError):
    """A kernel port used the Ascend C API in a way the hardware does not allow."""


class UsageError(InputError):
    """A bad command-line parameter (exit 2; the message names the option and the rule)."""


class PlatformError(InputError):
    """A platform the host tiling accepts but a launch cannot run on (e.g. no usable UB)."""


class ResourceError(InputError):
    """A run would need more memory (or instructions) than allowed; refused before the work."""
