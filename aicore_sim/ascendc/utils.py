"""Small Ascend C helpers kernel ports call that record nothing: InitSocState and DivCeil.

Step of the flow: kernel-port support. Neither emits an instruction; both exist so a port can
keep upstream's calls in place.
"""

from __future__ import annotations

from aicore_sim.errors import KernelError


def InitSocState() -> None:
    """``AscendC::InitSocState()``: puts the core's control registers in their default state
    at kernel start. It has no effect here and records nothing: every simulated launch starts
    from that state already (no mask, atomic or saturation mode is carried between launches)."""
    return None


def DivCeil(a: int, b: int) -> int:
    """``AscendC::DivCeil(a, b)``: ``a / b`` rounded up, for non-negative integers."""
    a, b = int(a), int(b)
    if b == 0:
        raise KernelError("DivCeil: division by zero")
    if a < 0 or b < 0:
        raise KernelError(f"DivCeil({a}, {b}): operands must be non-negative")
    return (a + b - 1) // b


__all__ = ["DivCeil", "InitSocState"]
