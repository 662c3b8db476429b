"""GlobalTensor, LocalTensor and GM_ADDR: typed windows on GM and on one core's UB.

What kernel ports index, slice and read with ``GetValue``; each scalar access is recorded as
a scalar-unit instruction so its cost and its auto-sync wait appear in the replay.

Two ways to get a LocalTensor: from a ``TQue`` / ``TBuf`` (``TPipe.InitBuffer`` placed it), or
at a fixed UB byte address, ``LocalTensor(half, TPosition.VECCALC, addr, tileSize)`` as in
Ascend C's static-tensor programming (the best-practice samples place every buffer by hand,
some overlapping). The fixed form registers its window in the core's UB allocation table so the
checks, the summary and the UB plots see it; see :class:`LocalTensor`.

A GlobalTensor carries its L2 cache mode (``SetL2CacheHint(CacheMode...)``); every copy through
it records the mode in ``Instr.cache``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from aicore_sim.sim import program
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import KernelError, OutOfBoundsError
from aicore_sim.sim.isa import CACHE_DISABLE, CACHE_NORMAL, Instr, Opcode, Operand, Pipe, Space
from aicore_sim.sim.memory import UB_ALIGN, Allocation


@dataclass(frozen=True, slots=True)
class GM_ADDR:
    """A kernel argument: the base address of one GM tensor (``None`` stands for nullptr)."""

    name: str
    offset: int = 0  # bytes

    def __add__(self, nbytes: int) -> GM_ADDR:
        return GM_ADDR(self.name, self.offset + int(nbytes))


_UB = Space.UB


class TPosition(Enum):
    """Logical buffer positions (where a queue's data comes from / goes to)."""

    GM = "GM"
    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"


class CacheMode(Enum):
    """``AscendC::CacheMode``: the L2 cache mode of a GlobalTensor (values as Ascend C's).

    ``CACHE_MODE_NORMAL`` (the default) reads and writes through L2; ``CACHE_MODE_DISABLE``
    goes to HBM without allocating in L2. ``CACHE_MODE_LAST`` and ``CACHE_MODE_PERSISTENT``
    (documented as not yet supported on A2/A3) are named but refused by ``SetL2CacheHint``.
    """

    CACHE_MODE_DISABLE = 0
    CACHE_MODE_NORMAL = 1
    CACHE_MODE_LAST = 2
    CACHE_MODE_PERSISTENT = 4


_CACHE_CODES = {CacheMode.CACHE_MODE_NORMAL: CACHE_NORMAL,
                CacheMode.CACHE_MODE_DISABLE: CACHE_DISABLE}


class GlobalTensor:
    """``GlobalTensor<T>``: a typed view of a GM tensor from an element offset on."""

    __slots__ = ("dtype", "name", "base", "size", "cache")

    def __init__(self, dtype) -> None:
        self.dtype = as_dtype(dtype)
        self.name = ""
        self.base = 0  # byte offset in the GM tensor
        self.size = -1
        self.cache = CACHE_NORMAL  # Instr.cache code of every copy through this tensor

    def SetL2CacheHint(self, mode: CacheMode) -> None:
        """``SetL2CacheHint(mode)``: the L2 cache mode of every later copy through this
        tensor and through tensors ``[]`` makes from it afterwards (recorded in
        ``Instr.cache``; what it costs is the cost model's business). Only
        ``CACHE_MODE_NORMAL`` and ``CACHE_MODE_DISABLE`` are modelled."""
        if not isinstance(mode, CacheMode):
            raise KernelError(f"SetL2CacheHint: expected a CacheMode, got {mode!r}")
        code = _CACHE_CODES.get(mode)
        if code is None:
            raise KernelError(f"SetL2CacheHint: {mode.name} is not modelled (only "
                              "CACHE_MODE_NORMAL and CACHE_MODE_DISABLE are)")
        self.cache = code

    def SetGlobalBuffer(self, addr: GM_ADDR | None, bufferSize: int = -1) -> None:
        """Bind to a GM address. A nullptr binds too, as on device; any access through the
        tensor then fails with a message naming it."""
        if addr is None:
            self.name, self.base, self.size = "", 0, bufferSize
            return
        self.name = addr.name
        self.base = addr.offset
        self.size = bufferSize

    def _check_bound(self, what: str) -> None:
        if not self.name:
            raise KernelError(f"{what}: GlobalTensor<{self.dtype}> is bound to nullptr")

    def __getitem__(self, offset: int) -> GlobalTensor:
        t = GlobalTensor(self.dtype)
        t.name, t.base, t.size = self.name, self.base + int(offset) * self.dtype.itemsize, -1
        t.cache = self.cache
        return t

    def operand(self, nbytes: int) -> Operand:
        self._check_bound("GM access")
        return Operand(Space.GM, self.name, self.base, nbytes, self.dtype)

    def GetPhyAddr(self) -> GM_ADDR | None:
        """``GetPhyAddr()``: the tensor's GM address (a :class:`GM_ADDR`: tensor and byte
        offset; the simulator has no flat GM address space), ``None`` (nullptr) for a tensor
        bound to nullptr, as on device (kernels test it before using an optional input)."""
        if not self.name:
            return None
        return GM_ADDR(self.name, self.base)

    def GetValue(self, offset: int):
        """Scalar GM read through the data cache; returns the value the functional image holds."""
        rec = program.current()
        self._check_bound("GetValue")
        addr = self.base + int(offset) * self.dtype.itemsize
        size = self.dtype.itemsize
        rec.image.check_gm(self.name, addr, size, f"GlobalTensor '{self.name}'.GetValue")
        op = Operand(Space.GM, self.name, addr, size, self.dtype)
        rec.emit(Instr(Pipe.SCALAR, Opcode.GET_VALUE_GM, src=(op,), nbytes=size))
        return rec.image.gm[self.name][addr : addr + size].view(self.dtype)[0]


def _fixed_window(dtype: np.dtype, pos: TPosition, addr: int, tileSize: int
                  ) -> tuple[str, int, int]:
    """Check and register ``LocalTensor<T>(pos, addr, tileSize)``; (buffer name, addr, end).

    The rules are those Ascend C's CPU debug build asserts: a local position (not GM), an
    address 32-byte aligned, ``tileSize`` > 0 elements, a length that is a whole number of
    32-byte blocks, and the window inside the whole UB (the hardware buffer: 192 KiB on
    A2/A3, the platform's ``ub_size``; not ``GetCoreMemSize``, which keeps back what TPipe
    reserves)."""
    what = f"LocalTensor<{dtype}>({pos.name}, {addr}, {tileSize})"
    if pos is TPosition.GM:
        raise KernelError(f"{what}: the position must be a local memory, not GM")
    addr, tileSize = int(addr), int(tileSize)
    if addr < 0 or addr % UB_ALIGN:
        raise KernelError(f"{what}: addr {addr} must be a non-negative multiple of "
                          f"{UB_ALIGN} bytes")
    if tileSize <= 0:
        raise KernelError(f"{what}: tileSize must be > 0 elements")
    nbytes = tileSize * dtype.itemsize
    if nbytes % UB_ALIGN:
        raise KernelError(f"{what}: tensor length {nbytes} bytes is not a multiple of "
                          f"{UB_ALIGN} bytes")
    rec = program.current()
    ub_size = rec.image.ub_bytes
    if addr + nbytes > ub_size:
        raise OutOfBoundsError(f"{what}: UB bytes [{addr}, {addr + nbytes}) pass the end of "
                               f"the UB of {ub_size} bytes by {addr + nbytes - ub_size} bytes")
    table = rec.ub.allocations
    pipe = rec.ub.pipe
    for a in table:
        if a.addr == addr and a.nbytes == nbytes and a.pipe == pipe:
            return a.name, addr, addr + nbytes  # the same window again: one allocation
    name = f"{pos.name}@{addr:#x}"
    if any(a.name == name and a.pipe == pipe for a in table):
        name = f"{name}+{nbytes}"
    name = rec.ub.unique_name(name)
    # fixed: InitBuffer's placement is untouched
    table.append(Allocation(name, addr, nbytes, pipe))
    return name, addr, addr + nbytes


class LocalTensor:
    """``LocalTensor<T>``: a typed window on one UB buffer, from a byte address on.

    ``LocalTensor(dtype, buf, addr, limit)`` is the form the queues and buffers build (``buf``
    names the InitBuffer allocation, ``limit`` is its end). ``LocalTensor(dtype, pos, addr,
    tileSize)`` with a :class:`TPosition` is Ascend C's ``LocalTensor<T>(pos, addr, tileSize)``:
    ``tileSize`` elements at UB byte ``addr``, checked (see :func:`_fixed_window`: alignment,
    length, inside the UB, else ``KernelError`` / ``OutOfBoundsError`` naming the rule and the
    bytes) and registered as an allocation named ``"<POS>@<addr in hex>"``. Windows may overlap
    (the samples alias a source and the destination); the same window made twice is one
    allocation.
    """

    __slots__ = ("dtype", "buf", "addr", "limit", "size")  # size: set by SetSize only

    def __init__(self, dtype, buf: str | TPosition = "", addr: int = 0, limit: int = 0
                 ) -> None:
        # LocalTensor(dtype) alone is C++'s default-constructed ``LocalTensor<T> t;``: bound to
        # no buffer (any access through it fails) until an API such as Concat rebinds it
        self.dtype = as_dtype(dtype)
        if buf.__class__ is TPosition:  # the fixed-address form: limit is tileSize
            buf, addr, limit = _fixed_window(self.dtype, buf, addr, limit)
        self.buf = buf  # the allocation this tensor lives in
        self.addr = addr  # byte address in UB
        self.limit = limit  # first byte after the allocation

    def __getitem__(self, offset: int) -> LocalTensor:
        return LocalTensor(self.dtype, self.buf, self.addr + int(offset) * self.dtype.itemsize,
                           self.limit)

    def ReinterpretCast(self, dtype) -> LocalTensor:
        return LocalTensor(dtype, self.buf, self.addr, self.limit)

    def GetPhyAddr(self) -> int:
        """``GetPhyAddr()``: the tensor's UB byte address."""
        return int(self.addr)

    def GetSize(self) -> int:
        """Elements the tensor holds: what ``SetSize`` set, else up to its buffer's end."""
        size = getattr(self, "size", None)
        return (self.limit - self.addr) // self.dtype.itemsize if size is None else size

    def SetSize(self, size: int) -> None:
        """``SetSize(size)``: the tensor's element count as ``GetSize`` reports it (its buffer
        is unchanged; the size must fit in it)."""
        n = int(size)
        room = (self.limit - self.addr) // self.dtype.itemsize
        if not 0 <= n <= room:
            raise OutOfBoundsError(f"LocalTensor.SetSize({n}): buffer '{self.buf}' holds "
                                   f"{room} elements of {self.dtype} from this tensor on")
        self.size = n

    def operand(self, nelems: int, what: str, align: int = 32, nbytes: int | None = None
                ) -> Operand:
        """The UB window of ``nelems`` elements (or ``nbytes``), bounds- and alignment-checked."""
        dtype, addr = self.dtype, self.addr
        size = nelems * dtype.itemsize if nbytes is None else nbytes
        if not self.buf:
            raise KernelError(f"{what}: the LocalTensor<{dtype}> is default-constructed (bound "
                              "to no buffer)")
        if addr + size > self.limit:
            raise OutOfBoundsError(
                f"{what}: touches UB bytes [{addr}, {addr + size}) but buffer "
                f"'{self.buf}' ends at {self.limit}"
            )
        # the buffer lies inside the UB, so only a negative address can leave it
        if addr < 0 or (align and addr % align):
            program.current().check_ub(addr, size, what, align)
        return Operand(_UB, self.buf, addr, size, dtype)

    def GetValue(self, offset: int):
        """Scalar UB read; in the replay the scalar unit first waits for the producing pipe."""
        rec = program.current()
        t = self[offset]
        op = t.operand(1, f"LocalTensor '{self.buf}'.GetValue", align=0)
        dep = rec.last_ub_writer(op.addr, op.nbytes) if rec.auto_sync else None
        rec.emit(Instr(Pipe.SCALAR, Opcode.GET_VALUE_UB, src=(op,), nbytes=op.nbytes, dep=dep))
        return rec.ub_bytes[op.addr : op.end].view(self.dtype)[0]

    def SetValue(self, offset: int, value) -> None:
        """Scalar UB write; in the replay the scalar unit first waits for the last non-scalar
        writer of those bytes (auto-sync), so a vector fill issued before it cannot land
        after it."""
        rec = program.current()
        op = self[offset].operand(1, f"LocalTensor '{self.buf}'.SetValue", align=0)
        dep = rec.last_ub_writer(op.addr, op.nbytes) if rec.auto_sync else None
        rec.emit(Instr(Pipe.SCALAR, Opcode.SET_VALUE_UB, dst=op, nbytes=op.nbytes,
                       scalar=float(np.asarray(value, dtype=np.float64)), dep=dep))
