"""Named failures of a simulated launch.

Every error says which core, pipe, buffer or argument is at fault and why, so a user can fix
the kernel or the case without reading simulator code.
"""

from __future__ import annotations


class SimError(Exception):
    """Base class of everything the simulator raises on purpose."""


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


class UsageError(SimError):
    """A bad command-line parameter (exit 2; the message names the option and the rule)."""
