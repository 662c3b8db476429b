"""How much memory this machine can give a run, and the check that a case fits in it.

Step of the flow: the command line asks before it generates inputs or launches anything, so a
case whose tensors cannot fit is refused with one line (exit 2) instead of being left to eat
the machine's memory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

HEADROOM_BYTES = 1 << 30
"""Memory a run needs besides its tensors (interpreter, streams, trace): about 1 GiB for a
DeepSeek-V3 layer (reports/bench_op_end_to_end.md)."""


def available_bytes() -> int | None:
    """Memory available to new allocations (Linux ``MemAvailable``, else free physical pages),
    or None when the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(tensors: Mapping[str, int], available: int | None = None) -> None:
    """Raise ``MemoryError`` naming the biggest tensor when ``tensors`` (label -> bytes) plus
    :data:`HEADROOM_BYTES` exceed the available memory."""
    available = available_bytes() if available is None else available
    if available is None or not tensors:
        return
    need = sum(tensors.values()) + HEADROOM_BYTES
    if need <= available:
        return
    big = max(tensors, key=tensors.get)
    raise MemoryError(
        f"{big}: the case needs about {gib(need)} ({big} alone {gib(tensors[big])}, all "
        f"tensors {gib(sum(tensors.values()))}, plus {gib(HEADROOM_BYTES)} for the simulator) "
        f"but {gib(available)} of memory is available: use a smaller case")


__all__ = ["HEADROOM_BYTES", "available_bytes", "check_fits", "nbytes"]
