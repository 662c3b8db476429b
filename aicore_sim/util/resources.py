"""How much memory this machine can give a run, and the check that a case fits in it; the
cyclic garbage collector paused while a run builds its long-lived objects (:func:`gc_paused`).

Step of the flow: the command line asks before it generates inputs or launches anything, and
:class:`aicore_sim.sim.recording.Recording` asks again before the record pass with everything
the tiling fixed (GM tensors, one UB image per core, the instruction streams and their trace), so a
case that cannot fit is refused with one line (exit 2) instead of being left to eat the machine's
memory. The limit is the smallest of the memory available (``MemAvailable``), the address-space
limit of the process (``RLIMIT_AS``, e.g. ``ulimit -v``) and ``--max-memory``.
"""

from __future__ import annotations

import gc
import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import numpy as np

HEADROOM_BYTES = 1 << 30
"""Memory a run needs besides its tensors (interpreter, streams, trace): about 1 GiB for a
DeepSeek-V3 layer (reports/bench_op_end_to_end.md)."""


BYTES_PER_INSTRUCTION = 1024
"""Memory of one recorded instruction with its trace rows: P1 (DeepSeek-V3 layer) timing-only
peaks at 835 MiB for 781,552 instructions with its 504 MiB of inputs memory-mapped (as
measured then; ``--inputs`` files are now read into memory, counted as inputs)
(reports/bench_op_end_to_end.md), about 1 KiB each once the interpreter is taken off."""

_LIMIT: int | None = None


def set_limit(nbytes: int | None) -> None:
    """Cap what a run may use (``--max-memory``); None removes the cap."""
    global _LIMIT
    _LIMIT = nbytes


def parse_size(text: str) -> int:
    """``"512M"``, ``"4G"``, ``"1.5GiB"``, ``"1000000"`` -> bytes (ValueError otherwise)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"expected a size like 512M or 4G, got {text!r}")
    v = float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper())
    if v < 1:
        raise ValueError(f"must be at least 1 byte, got {text!r}")
    return int(v)


def _address_space_left() -> int | None:
    """RLIMIT_AS minus the address space in use, or None without a limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return max(0, soft - used)
    except (ImportError, OSError, ValueError):
        return None


def available_bytes() -> int | None:
    """Memory a run may still take: the smallest of ``MemAvailable`` (else free physical
    pages), the ``RLIMIT_AS`` room and :func:`set_limit`'s cap; None when nothing says."""
    figures = [x for x in (_physical_available(), _address_space_left(), _LIMIT)
               if x is not None]
    return min(figures) if figures else None


def _physical_available() -> int | None:
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
    """Bytes of an array of ``shape`` (exact Python integers: no int64 overflow)."""
    return math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(tensors: Mapping[str, int], available: int | None = None,
               headroom: int = HEADROOM_BYTES) -> None:
    """Raise ``MemoryError`` naming the biggest item when ``tensors`` (label -> bytes) plus
    ``headroom`` exceed the available memory."""
    available = available_bytes() if available is None else available
    if available is None or not tensors:
        return
    need = sum(tensors.values()) + headroom
    if need <= available:
        return
    big = max(tensors, key=tensors.get)
    limit = " (the --max-memory limit)" if _LIMIT is not None and available == _LIMIT else ""
    raise MemoryError(
        f"{big}: the case needs about {gib(need)} ({big} alone {gib(tensors[big])}, all "
        f"items {gib(sum(tensors.values()))}, plus {gib(headroom)} for the simulator) "
        f"but {gib(available)} of memory is available{limit}: use a smaller case")


def check_launch(copied_bytes: int, cores: int, ub_size: int, images: int,
                 instructions: int | None) -> None:
    """Before a record pass: ``ResourceError`` when the GM tensors the launch copies, its
    ``images`` memory images (one UB per core each) and the instruction streams cannot fit."""
    from aicore_sim.sim.errors import ResourceError

    items = {"GM output copies": copied_bytes,
             f"UB images ({images} x {cores} cores x {ub_size} bytes)": images * cores * ub_size}
    if instructions is not None:
        items[f"instruction streams (~{instructions:,} instructions x "
              f"{BYTES_PER_INSTRUCTION} bytes)"] = instructions * BYTES_PER_INSTRUCTION
    try:
        check_fits(items, headroom=HEADROOM_BYTES // 4)
    except MemoryError as e:
        raise ResourceError(str(e)) from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused meanwhile (enabled again after, if it was): for work
    that builds many long-lived objects and frees its temporaries by reference counting, where
    the collector's passes find nothing to free."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["BYTES_PER_INSTRUCTION", "HEADROOM_BYTES", "available_bytes", "check_fits",
           "check_launch", "gc_paused", "nbytes", "parse_size", "set_limit"]
