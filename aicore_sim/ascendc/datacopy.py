"""DataCopyPad and DataCopy: the MTE2 (GM->UB), MTE3 (UB->GM) and UB->UB transfers.

``DataCopyPad`` GM->UB copies ``blockCount`` blocks of ``blockLen`` bytes; GM blocks are
``srcStride`` bytes apart (end to start), UB blocks start on 32-byte boundaries and are
``dstStride`` 32-byte blocks apart. UB->GM is the mirror image (UB stride in blocks, GM stride
in bytes).

``DataCopy(dst, src, calCount)`` is the contiguous form: one block of ``calCount`` elements whose
length the library passes to the hardware in 32-byte units (``DataCopyParams{1,
calCount * sizeof(T) / 32, 0, 0}``). Its alignment rules: the byte count must be a multiple of
32 and every UB address must be 32-byte aligned; a count that is not is reported as a
``misaligned`` hazard and, as on device, only the whole 32-byte blocks are moved. GM->UB runs
on MTE2 and UB->GM on MTE3 (the same transfers as DataCopyPad, so the same copy curves); UB->UB
is ``copy_ubuf_to_ubuf`` on the vector pipe.

``DataCopyPad`` also takes the older 16-bit parameter structs, ``DataCopyParams`` (blockCount,
blockLen in bytes, srcStride, dstStride; each a uint16, checked) with ``DataCopyPadParams``
(isPad, leftPadding, rightPadding: uint8; paddingValue), meaning the same as the Ext forms.

Every GM<->UB copy records the L2 cache mode of its GlobalTensor in ``Instr.cache``.
"""

from __future__ import annotations

from dataclasses import dataclass

from aicore_sim.ascendc.args import unsigned_fields
from aicore_sim.ascendc.tensors import GlobalTensor, LocalTensor
from aicore_sim.sim import program
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Operand, Pipe, Space

MAX_BLOCK_COUNT = 4095  # uint16 field, A2/A3 documented range
MAX_BLOCK_LEN = 2097151  # bytes
MAX_DATA_COPY_BLOCKS = 65535  # DataCopyParams.blockLen: uint16, in 32-byte blocks
DATA_COPY_LABEL = "DataCopy"


@dataclass
class _Blocks:
    """The fields of the two copy structs: blockCount, blockLen, srcStride, dstStride."""

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


@dataclass
class _Padding:
    """The fields before the padding value of the two padding structs: isPad, leftPadding,
    rightPadding."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0


@dataclass
class DataCopyExtParams(_Blocks):
    """``DataCopyExtParams``: blockCount, blockLen (bytes), srcStride, dstStride, rsv."""

    rsv: int = 0


@dataclass
class DataCopyPadExtParams(_Padding):
    """``DataCopyPadExtParams<T>``: isPad, leftPadding, rightPadding, paddingValue."""

    paddingValue: float = 0


@dataclass
class DataCopyParams(_Blocks):
    """``DataCopyParams``: blockCount, blockLen, srcStride, dstStride, each a ``uint16_t``.

    With ``DataCopyPad`` the lengths mean what ``DataCopyExtParams``' do (blockLen and the GM
    stride in bytes, the UB stride in 32-byte blocks); a field outside [0, 65535] is a
    ``KernelError`` when the copy is made."""


@dataclass
class DataCopyPadParams(_Padding):
    """``DataCopyPadParams``: isPad, leftPadding, rightPadding (``uint8_t``), paddingValue."""

    paddingValue: int = 0


def _check_u16(p: DataCopyParams) -> DataCopyExtParams:
    """The Ext form of a ``DataCopyParams`` whose fields fit their uint16 range."""
    return DataCopyExtParams(*unsigned_fields(
        p, ("blockCount", "blockLen", "srcStride", "dstStride"), 16, "DataCopyPad"))


def _check_pad(p: DataCopyPadParams) -> None:
    unsigned_fields(p, ("leftPadding", "rightPadding"), 8, "DataCopyPad")


def _up32(x: int) -> int:
    return -(-x // 32) * 32


def _check(p: DataCopyExtParams) -> tuple[int, int, int, int]:
    count, length = int(p.blockCount), int(p.blockLen)
    if not 0 <= count <= MAX_BLOCK_COUNT:
        raise KernelError(f"DataCopyPad: blockCount {count} outside [0, {MAX_BLOCK_COUNT}]")
    if not 0 <= length <= MAX_BLOCK_LEN:
        raise KernelError(f"DataCopyPad: blockLen {length} outside [0, {MAX_BLOCK_LEN}] bytes")
    return count, length, int(p.srcStride), int(p.dstStride)


def DataCopyPad(dst, src, params: DataCopyExtParams | DataCopyParams,
                padParams: DataCopyPadExtParams | DataCopyPadParams | None = None) -> None:
    """GM->UB (dst LocalTensor, src GlobalTensor) or UB->GM (dst GlobalTensor, src LocalTensor).

    ``params`` is a ``DataCopyExtParams`` or a ``DataCopyParams`` (uint16 fields checked);
    ``padParams`` a ``DataCopyPadExtParams`` or a ``DataCopyPadParams`` (uint8 paddings
    checked)."""
    _copy_blocks(dst, src, params, padParams, depth=3)


def _copy_blocks(dst, src, params: DataCopyExtParams | DataCopyParams,
                 padParams: DataCopyPadExtParams | DataCopyPadParams | None = None,
                 label: str = "", depth: int = 4) -> None:
    """The GM<->UB block transfer of ``DataCopyPad`` and of ``DataCopy(.., DataCopyParams)``
    (``label`` = the call the kernel made when it is not ``DataCopyPad``: its name in the
    trace and in messages; ``depth``: the kernel's frame above this one, for its line)."""
    call = label or "DataCopyPad"
    rec = program.current()
    if isinstance(params, DataCopyParams):
        params = _check_u16(params)
    if isinstance(padParams, DataCopyPadParams):
        _check_pad(padParams)
    count, length, s_stride, d_stride = _check(params)
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        src._check_bound(f"{call} GM->UB source")
        gm_span = count * length + max(count - 1, 0) * s_stride if count else 0
        ub_span = count * _up32(length) + max(count - 1, 0) * d_stride * 32 if count else 0
        rec.image.check_gm(src.name, src.base, gm_span, f"{call} GM->UB from '{src.name}'")
        ub = dst.operand(0, f"{call} GM->UB into '{dst.buf}'", nbytes=ub_span)
        gm = Operand(Space.GM, src.name, src.base, gm_span, src.dtype)
        rec.emit(Instr(Pipe.MTE2, Opcode.COPY_GM_TO_UB, dst=ub, src=(gm,), count=count,
                       nbytes=count * length, params=(count, length, s_stride, d_stride),
                       cache=src.cache, label=label), depth)
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        dst._check_bound(f"{call} UB->GM destination")
        ub_span = count * _up32(length) + max(count - 1, 0) * s_stride * 32 if count else 0
        gm_span = count * length + max(count - 1, 0) * d_stride if count else 0
        ub = src.operand(0, f"{call} UB->GM from '{src.buf}'", nbytes=ub_span)
        rec.image.check_gm(dst.name, dst.base, gm_span, f"{call} UB->GM into '{dst.name}'")
        gm = Operand(Space.GM, dst.name, dst.base, gm_span, dst.dtype)
        rec.emit(Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(ub,), count=count,
                       nbytes=count * length, params=(count, length, s_stride, d_stride),
                       cache=dst.cache, atomic=_atomic(rec, src.dtype), label=label), depth)
    else:
        raise KernelError(
            f"{call}: expected (LocalTensor, GlobalTensor) or (GlobalTensor, LocalTensor), "
            f"got ({type(dst).__name__}, {type(src).__name__})"
        )


def _data_copy_bytes(rec, dtype, calCount: int, what: str) -> int:
    """Bytes a ``DataCopy`` of ``calCount`` elements moves (whole 32-byte blocks only)."""
    count = int(calCount)
    if count < 0:
        raise KernelError(f"{what}: calCount {count} is negative")
    nbytes = count * dtype.itemsize
    if nbytes % 32:
        rec.hazard("misaligned", f"{what}: calCount {count} x {dtype.itemsize} B = {nbytes} B "
                   f"is not a multiple of 32 bytes; only {nbytes // 32 * 32} B are moved "
                   "(use DataCopyPad for unaligned lengths)")
    blocks = nbytes // 32
    if blocks > MAX_DATA_COPY_BLOCKS:
        raise KernelError(f"{what}: {blocks} blocks of 32 B exceed the DataCopyParams "
                          f"blockLen range [0, {MAX_DATA_COPY_BLOCKS}]")
    return blocks * 32


def _atomic(rec, dtype) -> str:
    """The atomic mode of a UB->GM copy of ``dtype`` elements: the core's (SetAtomicAdd)."""
    mode = rec.atomic
    kind, _, name = mode.rpartition(":")
    if mode and name != str(dtype):
        api = "SetAtomicMax" if kind == "max" else "SetAtomicAdd"
        raise KernelError(f"UB->GM copy of {dtype} after {api}<{name}>: the atomic "
                          "type must be the copied data's")
    return mode


_ATOMIC_TYPES = ("float32", "float16", "bfloat16", "int32", "int16", "int8")


def SetAtomicAdd(dtype) -> None:
    """``SetAtomicAdd<T>()``: later UB->GM copies of this core add their ``T`` values to GM
    (one rounding per element in ``T``) until ``SetAtomicNone``. Copies of several cores to
    the same GM bytes are then legal: each adds its values."""
    name = str(as_dtype(dtype))
    if name not in _ATOMIC_TYPES:
        raise KernelError(f"SetAtomicAdd<{name}>: atomic add is for {', '.join(_ATOMIC_TYPES)}")
    program.current().atomic = name


def SetAtomicMax(dtype) -> None:
    """``SetAtomicMax<T>()``: later UB->GM copies of this core keep the larger of their value
    and GM's, element by element, until ``SetAtomicNone``."""
    name = str(as_dtype(dtype))
    if name not in _ATOMIC_TYPES:
        raise KernelError(f"SetAtomicMax<{name}>: atomic max is for {', '.join(_ATOMIC_TYPES)}")
    program.current().atomic = f"max:{name}"


def SetAtomicNone() -> None:
    """``SetAtomicNone()``: later UB->GM copies overwrite GM again."""
    program.current().atomic = ""


_INIT_TYPES = ("float32", "float16", "int32", "uint32", "int16", "uint16")


def InitGlobalMemory(gmWorkspaceAddr: GlobalTensor, size: int, value) -> None:
    """``InitGlobalMemory<T>(gm, size, value)``: ``size`` elements of GM set to ``value``, on
    MTE3 (recorded as a UB->GM copy with no UB source, priced as one; the UB the library uses
    for it is why Ascend C allows the call only before any ``InitBuffer``)."""
    _init_gm("InitGlobalMemory", gmWorkspaceAddr, size, value)


# InitOutput: the library fills a UB buffer with Duplicate and copies it out, so any 16- or
# 32-bit element type Duplicate fills, bfloat16 included
_INIT_OUTPUT_TYPES = _INIT_TYPES + ("bfloat16",)


def InitOutput(gmWorkspaceAddr: GlobalTensor, size: int, value=0) -> None:
    """``InitOutput<T>(gm, size, value = 0)``: ``size`` elements of GM set to ``value``, priced
    as :func:`InitGlobalMemory`'s write. Unlike it, any 16- or 32-bit type (bfloat16 too: the
    library duplicates the value in UB and copies it out), and allowed after ``InitBuffer``
    (its UB is the stack space past the TPipe's buffers)."""
    _init_gm("InitOutput", gmWorkspaceAddr, size, value, _INIT_OUTPUT_TYPES, after_pipe=True)


def _init_gm(name: str, g: GlobalTensor, size: int, value,
             types: tuple[str, ...] = _INIT_TYPES, after_pipe: bool = False) -> None:
    rec = program.current()
    if not isinstance(g, GlobalTensor):
        raise KernelError(f"{name}: expected a GlobalTensor, got {g!r}")
    g._check_bound(name)
    if str(g.dtype) not in types:
        raise KernelError(f"{name}<{g.dtype}>: the element type must be one of "
                          f"{', '.join(types)}")
    if not after_pipe and (any(a.pipe == rec.ub.pipe for a in rec.ub.allocations)
                           or rec.ub.top):
        raise KernelError(f"{name}: only allowed before any InitBuffer of the core's TPipe "
                          "(the library uses the UB for it)")
    n = int(size)
    if n < 0:
        raise KernelError(f"{name}: negative size {n}")
    nbytes = n * g.dtype.itemsize
    rec.image.check_gm(g.name, g.base, nbytes, f"{name} of '{g.name}'")
    gm = Operand(Space.GM, g.name, g.base, nbytes, g.dtype)
    rec.emit(Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(), count=1, nbytes=nbytes,
                   params=(1, nbytes, 0, 0), label=name, scalar=float(value), cache=g.cache),
             3)


def _data_copy_params(dst, src, p: DataCopyParams) -> None:
    """``DataCopy(dst, src, DataCopyParams)``: blockCount blocks of blockLen x 32 bytes, the
    strides in 32-byte blocks on both sides (GM's converted to bytes for the copy)."""
    ext = _check_u16(p)
    length = int(ext.blockLen) * 32
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        _copy_blocks(dst, src, DataCopyExtParams(ext.blockCount, length,
                                                 int(ext.srcStride) * 32, int(ext.dstStride)),
                     label=DATA_COPY_LABEL)
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        _copy_blocks(dst, src, DataCopyExtParams(ext.blockCount, length, int(ext.srcStride),
                                                 int(ext.dstStride) * 32),
                     label=DATA_COPY_LABEL)
    elif isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        count = int(ext.blockCount)
        s_stride, d_stride = int(ext.srcStride), int(ext.dstStride)
        span = lambda stride: count * length + max(count - 1, 0) * stride * 32  # noqa: E731
        rec = program.current()
        rec.emit(Instr(Pipe.VECTOR, Opcode.DATA_COPY_UB_TO_UB,
                       dst=dst.operand(0, "DataCopy UB->UB dst", nbytes=span(d_stride)),
                       src=(src.operand(0, "DataCopy UB->UB src", nbytes=span(s_stride)),),
                       count=count * length // dst.dtype.itemsize, nbytes=count * length,
                       params=(count, length, s_stride, d_stride)), 3)
    else:
        raise KernelError(f"DataCopy: unsupported operand pair {type(dst).__name__} <- "
                          f"{type(src).__name__}")


def _ub_tensor(addr: int, what: str) -> LocalTensor:
    """The int32 LocalTensor at UB byte ``addr`` of the core's live buffers (what a raw
    ``__ubuf__`` pointer from ``GetPhyAddr`` points into)."""
    ub = program.current().ub
    for a in reversed(ub.allocations):
        if a.pipe == ub.pipe and a.addr <= int(addr) < a.end:
            return LocalTensor("int32", a.name, int(addr), a.end)
    raise KernelError(f"{what}: UB address {addr} is in no live buffer of this core")


def DataCopyPadGm2UBImpl(dstAddr: int, srcAddr, intriParams: DataCopyExtParams,
                         padParams: DataCopyPadExtParams | None = None) -> None:
    """The library's GM->UB ``DataCopyPad`` on raw addresses (``__ubuf__ int32_t*`` from
    ``LocalTensor.GetPhyAddr``, ``__gm__ int32_t*`` from ``GlobalTensor.GetPhyAddr``)."""
    g = GlobalTensor("int32")
    g.SetGlobalBuffer(srcAddr)
    DataCopyPad(_ub_tensor(dstAddr, "DataCopyPadGm2UBImpl"), g, intriParams, padParams)


def DataCopyPadUB2GMImpl(dstAddr, srcAddr: int, intriParams: DataCopyExtParams) -> None:
    """The library's UB->GM ``DataCopyPad`` on raw addresses (see DataCopyPadGm2UBImpl)."""
    g = GlobalTensor("int32")
    g.SetGlobalBuffer(dstAddr)
    DataCopyPad(g, _ub_tensor(srcAddr, "DataCopyPadUB2GMImpl"), intriParams)


def DataCopy(dst, src, calCount) -> None:
    """``DataCopy(dst, src, calCount)``: GM->UB, UB->GM or UB->UB, contiguous (see module);
    ``DataCopy(dst, src, DataCopyParams)``: blocks with 32-byte units and strides."""
    if isinstance(calCount, DataCopyParams):
        _data_copy_params(dst, src, calCount)
        return
    rec = program.current()
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        what = f"DataCopy GM->UB from '{src.name}' into '{dst.buf}'"
        src._check_bound("DataCopy GM->UB source")
        nbytes = _data_copy_bytes(rec, dst.dtype, calCount, what)
        rec.image.check_gm(src.name, src.base, nbytes, what)
        ub = dst.operand(0, what, nbytes=nbytes)
        gm = Operand(Space.GM, src.name, src.base, nbytes, src.dtype)
        rec.emit(Instr(Pipe.MTE2, Opcode.COPY_GM_TO_UB, dst=ub, src=(gm,), count=1,
                       nbytes=nbytes, params=(1, nbytes, 0, 0), label=DATA_COPY_LABEL,
                       cache=src.cache))
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        what = f"DataCopy UB->GM from '{src.buf}' into '{dst.name}'"
        dst._check_bound("DataCopy UB->GM destination")
        nbytes = _data_copy_bytes(rec, src.dtype, calCount, what)
        ub = src.operand(0, what, nbytes=nbytes)
        rec.image.check_gm(dst.name, dst.base, nbytes, what)
        gm = Operand(Space.GM, dst.name, dst.base, nbytes, dst.dtype)
        rec.emit(Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(ub,), count=1,
                       nbytes=nbytes, params=(1, nbytes, 0, 0), label=DATA_COPY_LABEL,
                       cache=dst.cache, atomic=_atomic(rec, src.dtype)))
    elif isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        what = f"DataCopy UB->UB from '{src.buf}' into '{dst.buf}'"
        nbytes = _data_copy_bytes(rec, dst.dtype, calCount, what)
        s = src.operand(0, what, nbytes=nbytes)
        d = dst.operand(0, what, nbytes=nbytes)
        rec.emit(Instr(Pipe.VECTOR, Opcode.DATA_COPY_UB_TO_UB, dst=d, src=(s,),
                       count=nbytes // dst.dtype.itemsize, nbytes=nbytes,
                       params=(1, nbytes, 0, 0)))
    else:
        raise KernelError(
            "DataCopy: expected (LocalTensor, GlobalTensor), (GlobalTensor, LocalTensor) or "
            f"(LocalTensor, LocalTensor), got ({type(dst).__name__}, {type(src).__name__})"
        )
