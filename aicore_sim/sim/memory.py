"""Memories of a launch: the per-core Unified Buffer and the chip's Global Memory.

Step of the flow: both the record pass (functional image) and the replay (timed image) hold
one :class:`MemoryImage`; ``semantics.py`` reads and writes their raw bytes. The UB keeps the
``TPipe.InitBuffer`` allocation table of its core for bounds checks, traces and plots.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field

import numpy as np

from aicore_sim.sim.errors import OutOfBoundsError, UBOverflowError

UB_ALIGN = 32  # bytes; UB addresses and InitBuffer sizes are multiples of one 32-byte block


def up(x: int, a: int) -> int:
    """``x`` rounded up to a multiple of ``a`` (0 when ``a`` is 0, as C helpers do)."""
    return 0 if a == 0 else -(-x // a) * a


@dataclass(frozen=True, slots=True)
class Allocation:
    """One ``InitBuffer`` placement: name, first byte, bytes reserved (32-byte rounded), and
    the TPipe it belongs to (0 for the core's first; each ``TPipe.Destroy`` starts the next,
    whose buffers reuse the same UB bytes)."""

    name: str
    addr: int
    nbytes: int
    pipe: int = 0

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


def reserved_bytes(allocations: list[Allocation]) -> int:
    """UB bytes a core reserves at its fullest: per TPipe, the bytes its buffers cover
    (overlapping fixed-address windows counted once); the largest over the core's TPipes."""
    best = 0
    for pipe in {a.pipe for a in allocations}:
        spans = sorted((a.addr, a.end) for a in allocations if a.pipe == pipe)
        covered, reach = 0, -1
        for lo, hi in spans:
            if hi > reach:
                covered += hi - max(lo, reach)
                reach = hi
        best = max(best, covered)
    return best


@dataclass
class UnifiedBuffer:
    """The Unified Buffer of one AIV core: ``capacity`` usable bytes plus an allocation table.

    Allocation is what ``TPipe.InitBuffer`` does: round the request up to 32 bytes and place it
    right after the previous buffer; a request past ``capacity`` is an error that names the
    buffer, the bytes asked and the bytes left. :meth:`rewind` is ``TPipe.Destroy``: the next
    TPipe allocates from byte 0 again (its buffers are tagged with the next ``pipe`` number,
    and a name an earlier TPipe used gets ``@pipe<n>`` appended, so every buffer keeps a name
    of its own in traces and plots).
    """

    capacity: int
    allocations: list[Allocation] = field(default_factory=list)
    top: int = 0
    pipe: int = 0

    def rewind(self) -> None:
        """Release every buffer: the next allocation belongs to the next TPipe, from byte 0."""
        if self.top or any(a.pipe == self.pipe for a in self.allocations):
            self.pipe += 1
        self.top = 0

    def unique_name(self, name: str) -> str:
        """``name``, or ``name@pipe<n>`` when an earlier TPipe's buffer has it."""
        if self.pipe and any(a.name == name for a in self.allocations):
            return f"{name}@pipe{self.pipe}"
        return name

    def alloc(self, name: str, nbytes: int) -> Allocation:
        name = self.unique_name(name)
        size = up(int(nbytes), UB_ALIGN)
        left = self.capacity - self.top
        if size > left:
            wrapped = ""
            if int(nbytes) >= 1 << 48:  # no UB is that big: an unsigned size that wrapped
                wrapped = (" - a size computed in unsigned arithmetic that wrapped below 0 "
                           "(the UB is too small for what the tiling assumed)")
            raise UBOverflowError(
                f"InitBuffer '{name}': asks {size} bytes (request {nbytes} rounded to 32), "
                f"only {left} bytes left of {self.capacity} (used {self.top}){wrapped}"
            )
        a = Allocation(name, self.top, size, self.pipe)
        self.allocations.append(a)
        self.top += size
        return a

    def check(self, addr: int, nbytes: int, what: str) -> None:
        if addr < 0 or addr + nbytes > self.capacity:
            raise OutOfBoundsError(
                f"{what}: UB bytes [{addr}, {addr + nbytes}) outside the UB of "
                f"{self.capacity} bytes"
            )


def _private(raw: np.ndarray) -> np.ndarray:
    """A private, writable copy of the bytes ``raw``. An output buffer that holds only zeros
    (the usual case) becomes a fresh zeroed array, whose pages the system provides only when
    first written: copying a 470 MB zero buffer page by page took 1.1 s, the check 0.13 s."""
    if not raw.any():
        return np.zeros(raw.size, dtype=np.uint8)
    return raw.copy()


class MemoryImage:
    """Byte contents of every GM tensor (shared by all cores) and of each core's UB.

    ``writable`` names the GM tensors a kernel may write (the launch's outputs); the others
    are inputs, held as read-only views of the caller's arrays.
    """

    def __init__(self, gm: dict[str, np.ndarray], ub_bytes: int, cores: int,
                 writable: set[str] | frozenset[str] | None = None) -> None:
        self.gm = gm
        self.ub = [np.zeros(ub_bytes, dtype=np.uint8) for _ in range(cores)]
        self.ub_bytes = ub_bytes
        self.writable = frozenset(gm if writable is None else writable)
        self.constants: list[str] = []  # read-only tensors of the kernel itself, see below

    def add_constant(self, name: str, raw: np.ndarray) -> None:
        """One more read-only GM tensor: ``raw``'s bytes, which the kernel itself brings (a
        table of its binary that it points a ``GlobalTensor`` at); a name already held is
        kept as it is."""
        if name in self.gm:
            return
        raw = raw.reshape(-1).view(np.uint8).view()
        raw.flags.writeable = False
        self.gm[name] = raw
        self.constants.append(name)

    @classmethod
    def from_tensors(cls, tensors: dict[str, np.ndarray], ub_bytes: int, cores: int,
                     writable: set[str] | None = None, copy: bool = True):
        """GM holds the bytes of each tensor (C-contiguous, as on device): a private copy of
        each tensor in ``writable`` (all when None) unless ``copy`` is false, a read-only
        view of every other one (and of every one when ``copy`` is false)."""
        gm = {}
        names = set(tensors) if writable is None else set(writable)
        for k, v in tensors.items():
            raw = np.ascontiguousarray(v).reshape(-1).view(np.uint8)
            if copy and k in names:
                raw = _private(raw)
            else:
                raw = raw.view()
                raw.flags.writeable = False
            gm[k] = raw
        return cls(gm, ub_bytes, cores, names)

    def copy(self) -> MemoryImage:
        """A new image with private, writable copies of the writable tensors and of every UB
        (the read-only inputs are shared)."""
        gm = {k: (_private(v) if k in self.writable else v) for k, v in self.gm.items()}
        other = MemoryImage(gm, self.ub_bytes, 0, self.writable)
        other.constants = list(self.constants)
        other.ub = [u.copy() for u in self.ub]
        return other

    def share_writable(self) -> None:
        """Move the writable tensors into anonymous shared memory, so that processes forked
        from this one write the same bytes (the parallel record pass)."""
        for k in self.writable:
            old = self.gm[k]
            mm = mmap.mmap(-1, max(old.size, 1))
            new = np.frombuffer(mm, dtype=np.uint8, count=old.size)
            if old.any():  # a new anonymous mapping reads as zeros already
                new[:] = old
            self.gm[k] = new

    def gm_array(self, name: str, dtype, shape) -> np.ndarray:
        """GM tensor ``name`` as a typed array (a view of this image's bytes)."""
        return self.gm[name].view(dtype).reshape(shape)

    def check_gm(self, name: str, addr: int, nbytes: int, what: str) -> None:
        size = self.gm[name].size
        if addr < 0 or addr + nbytes > size:
            raise OutOfBoundsError(
                f"{what}: GM bytes [{addr}, {addr + nbytes}) outside tensor '{name}' "
                f"of {size} bytes"
            )
