"""GlobalTensor, LocalTensor and GM_ADDR: typed windows on GM and on one core's UB.

What kernel ports index, slice and read with ``GetValue``; each scalar access is recorded as
a scalar-unit instruction so its cost and its auto-sync wait appear in the replay.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aicore_sim import program
from aicore_sim.dtypes import as_dtype
from aicore_sim.errors import KernelError, OutOfBoundsError
from aicore_sim.isa import Instr, Opcode, Operand, Pipe, Space


@dataclass(frozen=True, slots=True)
class GM_ADDR:
    """A kernel argument: the base address of one GM tensor (``None`` stands for nullptr)."""

    name: str
    offset: int = 0  # bytes

    def __add__(self, nbytes: int) -> GM_ADDR:
        return GM_ADDR(self.name, self.offset + int(nbytes))


_UB = Space.UB


class GlobalTensor:
    """``GlobalTensor<T>``: a typed view of a GM tensor from an element offset on."""

    __slots__ = ("dtype", "name", "base", "size")

    def __init__(self, dtype) -> None:
        self.dtype = as_dtype(dtype)
        self.name = ""
        self.base = 0  # byte offset in the GM tensor
        self.size = -1

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
        return t

    def operand(self, nbytes: int) -> Operand:
        self._check_bound("GM access")
        return Operand(Space.GM, self.name, self.base, nbytes, self.dtype)

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


class LocalTensor:
    """``LocalTensor<T>``: a typed window on one UB buffer, from a byte address on."""

    __slots__ = ("dtype", "buf", "addr", "limit")

    def __init__(self, dtype, buf: str, addr: int, limit: int) -> None:
        self.dtype = as_dtype(dtype)
        self.buf = buf  # the InitBuffer allocation this tensor lives in
        self.addr = addr  # byte address in UB
        self.limit = limit  # first byte after the allocation

    def __getitem__(self, offset: int) -> LocalTensor:
        return LocalTensor(self.dtype, self.buf, self.addr + int(offset) * self.dtype.itemsize,
                           self.limit)

    def ReinterpretCast(self, dtype) -> LocalTensor:
        return LocalTensor(dtype, self.buf, self.addr, self.limit)

    def GetSize(self) -> int:
        return (self.limit - self.addr) // self.dtype.itemsize

    def operand(self, nelems: int, what: str, align: int = 32, nbytes: int | None = None
                ) -> Operand:
        """The UB window of ``nelems`` elements (or ``nbytes``), bounds- and alignment-checked."""
        dtype, addr = self.dtype, self.addr
        size = nelems * dtype.itemsize if nbytes is None else nbytes
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
        rec = program.current()
        op = self[offset].operand(1, f"LocalTensor '{self.buf}'.SetValue", align=0)
        rec.emit(Instr(Pipe.SCALAR, Opcode.SET_VALUE_UB, dst=op, nbytes=op.nbytes,
                       scalar=float(np.asarray(value, dtype=np.float64))))
