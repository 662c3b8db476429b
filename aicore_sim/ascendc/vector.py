"""Vector-pipe APIs: Cast, Copy, Duplicate, the element-wise binary (Add, Sub, Mul, Div, Max,
Min), vector-scalar (Muls, Adds, Maxs, Mins) and unary (Exp, Abs, Relu, Sqrt) calls,
BlockReduceSum and WholeReduceSum.

Count-mode calls take an element count; the mask + repeat forms take a lane mask, a repeat
count (<= 255) and block / repeat strides in 32-byte blocks, as in Ascend C:
``Add(dst, src0, src1, count)`` or ``Add(dst, src0, src1, mask, repeatTime,
BinaryRepeatParams(...))``; ``Adds(dst, src, scalar, count)`` or ``Adds(dst, src, scalar,
mask, repeatTime, UnaryRepeatParams(...))``; ``Exp(dst, src, count)`` or ``Exp(dst, src,
mask, repeatTime, UnaryRepeatParams(...))``; ``Duplicate(dst, scalar, count)`` or
``Duplicate(dst, scalar, mask, repeatTime, dstBlockStride, dstRepeatStride)``. The mask is the
normal (continuous) mode, the leading ``mask`` lanes of every repeat; the bit-mask form
(``uint64_t mask[2]``) and the global mask state (``SetVectorMask``, ``isSetMask = false``)
are not modelled yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from aicore_sim.ascendc.args import element_count, expect_struct, unsigned_fields
from aicore_sim.ascendc.tensors import LocalTensor
from aicore_sim.sim import program
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Pipe, RoundMode
from aicore_sim.sim.semantics import validate_cast

CAST_NONE = RoundMode.CAST_NONE
CAST_RINT = RoundMode.CAST_RINT
CAST_ROUND = RoundMode.CAST_ROUND
CAST_FLOOR = RoundMode.CAST_FLOOR
CAST_CEIL = RoundMode.CAST_CEIL
CAST_TRUNC = RoundMode.CAST_TRUNC
CAST_ODD = RoundMode.CAST_ODD
MAX_REPEAT = 255
_INT32, _FLOAT16 = np.dtype(np.int32), np.dtype(np.float16)  # SetDeqScale's cast


@dataclass
class UnaryRepeatParams:
    """``UnaryRepeatParams``: block strides inside a repeat and repeat strides, in 32-byte
    blocks, of dst and src (each a ``uint8_t``)."""

    dstBlkStride: int = 1
    srcBlkStride: int = 1
    dstRepStride: int = 8
    srcRepStride: int = 8


@dataclass
class CopyRepeatParams:
    """``CopyRepeatParams``: dstStride, srcStride (blocks), dstRepeatSize, srcRepeatSize."""

    dstStride: int = 1
    srcStride: int = 1
    dstRepeatSize: int = 8
    srcRepeatSize: int = 8


@dataclass
class BinaryRepeatParams:
    """``BinaryRepeatParams``: block strides inside a repeat and repeat strides, in 32-byte
    blocks, of dst, src0 and src1 (each a ``uint8_t``)."""

    dstBlkStride: int = 1
    src0BlkStride: int = 1
    src1BlkStride: int = 1
    dstRepStride: int = 8
    src0RepStride: int = 8
    src1RepStride: int = 8


# the element types WholeReduceMax and Sigmoid take
_HALF_OR_FLOAT = (np.dtype(np.float16), np.dtype(np.float32))


def _binary_repeat_params(p: BinaryRepeatParams, what: str) -> tuple[int, ...]:
    """(dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep), each checked to fit a uint8."""
    expect_struct(p, BinaryRepeatParams, what)
    return unsigned_fields(p, ("dstBlkStride", "src0BlkStride", "src1BlkStride",
                               "dstRepStride", "src0RepStride", "src1RepStride"), 8, what)


def _unary_repeat_params(p: UnaryRepeatParams, what: str) -> tuple[int, ...]:
    """(dstBlk, srcBlk, dstRep, srcRep), each checked to fit a uint8."""
    expect_struct(p, UnaryRepeatParams, what)
    return unsigned_fields(p, ("dstBlkStride", "srcBlkStride", "dstRepStride", "srcRepStride"),
                           8, what)


def _span(t: LocalTensor, mask: int, repeat: int, blk: int, rep: int) -> int:
    """Bytes from the first to one past the last active lane of a mask + repeat access."""
    if mask == 0 or repeat == 0:
        return 0
    per_block = 32 // t.dtype.itemsize
    last_lane = mask - 1
    last = (repeat - 1) * rep * 32 + (last_lane // per_block) * blk * 32
    return last + (last_lane % per_block + 1) * t.dtype.itemsize


MASK_PLACEHOLDER = 0  # the mask argument of an isSetMask = false call (ignored)


def SetVectorMask(dtype, *mask) -> None:
    """``SetVectorMask<T>(len)`` or ``SetVectorMask<T>(maskHigh, maskLow)`` (normal mode):
    the lanes every later ``isSetMask=False`` call uses, until ``ResetMask``. A bit mask must
    be a run of leading lanes (the only patterns modelled); it records no instruction (the
    guide states 1 cycle, not charged)."""
    lanes = 256 // as_dtype(dtype).itemsize
    if len(mask) == 1:
        n = int(mask[0])
    elif len(mask) == 2:
        bits = (int(mask[0]) << 64) | int(mask[1])
        n = bits.bit_length()
        if bits != (1 << n) - 1:
            raise KernelError(f"SetVectorMask: bit mask {bits:#x} is not a run of leading lanes "
                              "(only those are modelled)")
    else:
        raise KernelError("SetVectorMask: expected (len) or (maskHigh, maskLow)")
    if not 0 < n <= lanes:
        raise KernelError(f"SetVectorMask: {n} lanes outside [1, {lanes}] for {as_dtype(dtype)}")
    program.current().vector_mask = n


def ResetMask() -> None:
    """``ResetMask()``: every lane again for ``isSetMask=False`` calls."""
    program.current().vector_mask = 0


def SetDeqScale(scale) -> None:
    """``SetDeqScale(half scale)``: later int32 -> half casts multiply by ``scale`` (the
    device's dequantising conversion)."""
    program.current().deq_scale = float(np.float16(scale))


def _mask_of(mask: int, dtype: np.dtype, isSetMask: bool) -> int:
    """The lanes a mask + repeat call uses: its own mask, or the core's (``isSetMask``
    false: SetVectorMask's, every lane after ResetMask)."""
    if isSetMask:
        return mask
    return program.current().vector_mask or 256 // dtype.itemsize


def _repeat_args(mask: int, repeat: int, dtype: np.dtype, what: str) -> tuple[int, int]:
    mask, repeat = int(mask), int(repeat)
    lanes = 256 // dtype.itemsize
    if not 0 <= mask <= lanes:
        raise KernelError(f"{what}: mask {mask} outside [0, {lanes}] for {dtype}")
    if not 0 <= repeat <= MAX_REPEAT:
        raise KernelError(f"{what}: repeatTime {repeat} outside [0, {MAX_REPEAT}]")
    return mask, repeat


def Cast(dst: LocalTensor, src: LocalTensor, roundMode: RoundMode, count: int) -> None:
    n = element_count(count, "Cast")
    if not isinstance(roundMode, RoundMode):
        raise KernelError(f"Cast: expected a RoundMode, got {roundMode!r}")
    why = validate_cast(src.dtype, dst.dtype, roundMode)
    if why:
        raise KernelError(why)
    rec = program.current()
    deq = rec.deq_scale if src.dtype == _INT32 and dst.dtype == _FLOAT16 else 0.0
    rec.emit(Instr(Pipe.VECTOR, Opcode.CAST, dst=dst.operand(n, "Cast dst"),
                   src=(src.operand(n, "Cast src"),), count=n, round_mode=roundMode,
                   scalar=deq))


def Copy(dst: LocalTensor, src: LocalTensor, mask: int, repeatTime: int,
         repeatParams: CopyRepeatParams) -> None:
    if dst.dtype.itemsize != src.dtype.itemsize:
        raise KernelError(f"Copy: dtypes {src.dtype} and {dst.dtype} differ in size")
    mask, repeat = _repeat_args(mask, repeatTime, src.dtype, "Copy")
    p = repeatParams
    params = (int(p.dstStride), int(p.srcStride), int(p.dstRepeatSize), int(p.srcRepeatSize))
    rec = program.current()
    dspan = _span(dst, mask, repeat, params[0], params[2])
    sspan = _span(src, mask, repeat, params[1], params[3])
    rec.emit(Instr(Pipe.VECTOR, Opcode.COPY, dst=dst.operand(0, "Copy dst", nbytes=dspan),
                   src=(src.operand(0, "Copy src", nbytes=sspan),), mask=mask, repeat=repeat,
                   count=mask * repeat, params=params))


def _lane_run(mask, dtype: np.dtype, what: str) -> tuple[int, int]:
    """``[lo, hi)``: the lanes of a bit mask ``uint64_t mask[2]`` (``mask[0]`` lanes 0-63,
    ``mask[1]`` lanes 64-127), which must be one run of consecutive lanes (the only patterns
    modelled)."""
    if len(mask) != 2:
        raise KernelError(f"{what}: a bit mask is uint64_t mask[2], got {len(mask)} words")
    lanes = 256 // dtype.itemsize
    bits = (int(mask[1]) << 64) | int(mask[0])
    if bits == 0:
        return 0, 0
    lo = (bits & -bits).bit_length() - 1
    hi = bits.bit_length()
    if bits != ((1 << hi) - 1) ^ ((1 << lo) - 1):
        raise KernelError(f"{what}: bit mask {bits:#x} is not one run of consecutive lanes "
                          "(only those are modelled)")
    if hi > lanes:
        raise KernelError(f"{what}: bit mask sets lane {hi - 1}, past the {lanes} lanes of "
                          f"{dtype}")
    return lo, hi


def Duplicate(dst: LocalTensor, scalarValue, *args) -> None:
    """``Duplicate(dst, scalar, count)`` or ``Duplicate(dst, scalar, mask, repeatTime,
    dstBlockStride, dstRepeatStride)`` with ``mask`` a lane count or a bit mask
    ``[mask0, mask1]`` (one run of consecutive lanes, e.g. the tail lanes of a repeat)."""
    rec = program.current()
    if len(args) == 1:
        n = element_count(args[0], "Duplicate")
        rec.emit(Instr(Pipe.VECTOR, Opcode.DUPLICATE, dst=dst.operand(n, "Duplicate dst"),
                       count=n, scalar=float(scalarValue)))
        return
    if len(args) != 4:
        raise KernelError("Duplicate: expected (dst, scalar, count) or (dst, scalar, mask, "
                          f"repeatTime, dstBlockStride, dstRepeatStride), got {2 + len(args)} "
                          "arguments")
    lo = 0
    mask = args[0]
    if isinstance(mask, (list, tuple, np.ndarray)):
        lo, mask = _lane_run(mask, dst.dtype, "Duplicate")
    mask, repeat = _repeat_args(mask, args[1], dst.dtype, "Duplicate")
    blk, rep = int(args[2]), int(args[3])
    for name, v in (("dstBlockStride", blk), ("dstRepeatStride", rep)):
        if not 0 <= v <= 255:
            raise KernelError(f"Duplicate: {name} {v} outside the uint8 range [0, 255]")
    d = dst.operand(0, "Duplicate dst", nbytes=_span(dst, mask, repeat, blk, rep))
    # params: (dstBlkStride, dstRepStride) for leading lanes; a bit mask adds its first lane
    params = (blk, rep) if lo == 0 else (blk, rep, lo)
    rec.emit(Instr(Pipe.VECTOR, Opcode.DUPLICATE, dst=d, mask=mask, repeat=repeat,
                   count=(mask - lo) * repeat, scalar=float(scalarValue), params=params))


def _one_source(op: Opcode, name: str, dst: LocalTensor, src: LocalTensor, scalar, args,
                isSetMask: bool = True) -> None:
    """A one-source call (``scalar`` None: unary) in its count or mask + repeat form."""
    if dst.dtype != src.dtype:
        raise KernelError(f"{name}: dst {dst.dtype} and src {src.dtype} differ")
    value = 0.0 if scalar is None else float(scalar)
    rec = program.current()
    if len(args) == 1:
        n = element_count(args[0], name)
        rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(n, f"{name} dst"),
                       src=(src.operand(n, f"{name} src"),), count=n, scalar=value), 3)
        return
    if len(args) != 3:
        form = "dst, src" if scalar is None else "dst, src, scalarValue"
        raise KernelError(f"{name}: expected ({form}, count) or ({form}, mask, repeatTime, "
                          "UnaryRepeatParams)")
    mask, repeat = _repeat_args(_mask_of(args[0], dst.dtype, isSetMask), args[1], dst.dtype,
                                name)
    params = _unary_repeat_params(args[2], name)
    d_blk, s_blk, d_rep, s_rep = params
    d = dst.operand(0, f"{name} dst", nbytes=_span(dst, mask, repeat, d_blk, d_rep))
    s = src.operand(0, f"{name} src", nbytes=_span(src, mask, repeat, s_blk, s_rep))
    rec.emit(Instr(Pipe.VECTOR, op, dst=d, src=(s,), mask=mask, repeat=repeat,
                   count=mask * repeat, scalar=value, params=params), 3)


def _one_source_api(op: Opcode, name: str, what: str, scalar: bool):
    """The public function ``name``: ``what`` through :func:`_one_source` (``scalar``: it takes
    a ``scalarValue`` after ``src``)."""
    if scalar:
        def api(dst: LocalTensor, src: LocalTensor, scalarValue, *args,
                isSetMask: bool = True) -> None:
            _one_source(op, name, dst, src, scalarValue, args, isSetMask)
    else:
        def api(dst: LocalTensor, src: LocalTensor, *args, isSetMask: bool = True) -> None:
            _one_source(op, name, dst, src, None, args, isSetMask)
    api.__name__ = api.__qualname__ = name
    api.__doc__ = f"``{what}`` (count or mask + repeat form)."
    return api


Muls = _one_source_api(Opcode.MULS, "Muls", "dst = src * scalar", True)
Adds = _one_source_api(Opcode.ADDS, "Adds", "dst = src + scalar", True)
Maxs = _one_source_api(Opcode.MAXS, "Maxs", "dst = max(src, scalar)", True)
Mins = _one_source_api(Opcode.MINS, "Mins", "dst = min(src, scalar)", True)
Exp = _one_source_api(Opcode.EXP, "Exp", "dst = e ** src", False)
Abs = _one_source_api(Opcode.ABS, "Abs", "dst = |src|", False)
Relu = _one_source_api(Opcode.RELU, "Relu", "dst = max(src, 0)", False)
Sqrt = _one_source_api(Opcode.SQRT, "Sqrt", "dst = sqrt(src)", False)


def _binary(op: Opcode, name: str, dst: LocalTensor, a: LocalTensor, b: LocalTensor,
            count: int) -> None:
    n = element_count(count, name)
    if not dst.dtype == a.dtype == b.dtype:
        raise KernelError(f"{name}: operand dtypes differ ({dst.dtype}, {a.dtype}, {b.dtype})")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(n, f"{name} dst"),
                   src=(a.operand(n, f"{name} src0"), b.operand(n, f"{name} src1")), count=n),
             4)  # the kernel line: above Add (or Sub, ...) and _two_sources, which call this




def _binary_repeat(op: Opcode, name: str, dst: LocalTensor, a: LocalTensor, b: LocalTensor,
                   mask: int, repeatTime: int, repeatParams: BinaryRepeatParams,
                   isSetMask: bool = True) -> None:
    if not dst.dtype == a.dtype == b.dtype:
        raise KernelError(f"{name}: operand dtypes differ ({dst.dtype}, {a.dtype}, {b.dtype})")
    mask, repeat = _repeat_args(_mask_of(mask, dst.dtype, isSetMask), repeatTime, dst.dtype,
                                name)
    params = _binary_repeat_params(repeatParams, name)
    d_blk, a_blk, b_blk, d_rep, a_rep, b_rep = params
    rec = program.current()
    d = dst.operand(0, f"{name} dst", nbytes=_span(dst, mask, repeat, d_blk, d_rep))
    s0 = a.operand(0, f"{name} src0", nbytes=_span(a, mask, repeat, a_blk, a_rep))
    s1 = b.operand(0, f"{name} src1", nbytes=_span(b, mask, repeat, b_blk, b_rep))
    rec.emit(Instr(Pipe.VECTOR, op, dst=d, src=(s0, s1), mask=mask, repeat=repeat,
                   count=mask * repeat, params=params), 4)


def _two_sources(op: Opcode, name: str, dst: LocalTensor, src0: LocalTensor,
                 src1: LocalTensor, args: tuple, isSetMask: bool = True) -> None:
    """``name(dst, src0, src1, count)`` or ``name(dst, src0, src1, mask, repeatTime,
    repeatParams)`` (mask + repeat form: ``mask`` leading lanes of each of ``repeatTime``
    repeats, strides from the :class:`BinaryRepeatParams`)."""
    if len(args) == 1:
        _binary(op, name, dst, src0, src1, args[0])
    elif len(args) == 3:
        _binary_repeat(op, name, dst, src0, src1, *args, isSetMask)
    else:
        raise KernelError(f"{name}: expected (dst, src0, src1, count) or (dst, src0, src1, "
                          f"mask, repeatTime, repeatParams), got {3 + len(args)} arguments")


def _two_sources_api(op: Opcode, name: str, what: str, note: str = ""):
    """The public function ``name``: ``what`` through :func:`_two_sources`."""
    def api(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, *args,
            isSetMask: bool = True) -> None:
        _two_sources(op, name, dst, src0, src1, args, isSetMask)
    api.__name__ = api.__qualname__ = name
    api.__doc__ = f"``{what}`` (count or mask + repeat form{note})."
    return api


Add = _two_sources_api(Opcode.ADD, "Add", "dst = src0 + src1")
Sub = _two_sources_api(Opcode.SUB, "Sub", "dst = src0 - src1")
Mul = _two_sources_api(Opcode.MUL, "Mul", "dst = src0 * src1")
Div = _two_sources_api(Opcode.DIV, "Div", "dst = src0 / src1", "; IEEE division")
Max = _two_sources_api(Opcode.MAX, "Max", "dst = max(src0, src1)")
Min = _two_sources_api(Opcode.MIN, "Min", "dst = min(src0, src1)")


def ArithProgression(dstLocal: LocalTensor, firstValue, diffValue, count: int) -> None:
    """``dst[i] = firstValue + i * diffValue`` for ``count`` elements."""
    n = element_count(count, "ArithProgression")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.ARITH_PROGRESSION,
                   dst=dstLocal.operand(n, "ArithProgression dst"), count=n,
                   scalar=float(firstValue), params=(float(diffValue),)))


def CreateVecIndex(dst: LocalTensor, firstValue, calCount: int) -> None:
    """``dst[i] = firstValue + i`` for ``calCount`` elements (count form)."""
    n = element_count(calCount, "CreateVecIndex")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.ARITH_PROGRESSION,
                   dst=dst.operand(n, "CreateVecIndex dst"), count=n, scalar=float(firstValue),
                   params=(1.0,), label="CreateVecIndex"))


def _reduce(op: Opcode, name: str, dst: LocalTensor, src: LocalTensor, tmp: LocalTensor,
            count: int, calIndex: bool) -> None:
    n = element_count(count, name)
    if dst.dtype != src.dtype or src.dtype.kind != "f" and "bfloat16" not in str(src.dtype):
        raise KernelError(f"{name}: dst and src must be the same float type "
                          f"({dst.dtype}, {src.dtype})")
    if not isinstance(tmp, LocalTensor):
        raise KernelError(f"{name}: sharedTmpBuffer must be a LocalTensor")
    out = 2 if calIndex else 1
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(out, f"{name} dst", align=0),
                   src=(src.operand(n, f"{name} src"),), count=n,
                   params=(int(bool(calIndex)),)), 3)


def ReduceSum(dst: LocalTensor, src: LocalTensor, sharedTmpBuffer: LocalTensor,
              count: int) -> None:
    """Level-2 ``ReduceSum``: the sum of ``count`` elements into ``dst[0]`` (semantics.py)."""
    _reduce(Opcode.REDUCE_SUM, "ReduceSum", dst, src, sharedTmpBuffer, count, False)


def ReduceMax(dst: LocalTensor, src: LocalTensor, sharedTmpBuffer: LocalTensor, count: int,
              calIndex: bool = False) -> None:
    """Level-2 ``ReduceMax``: the largest of ``count`` elements into ``dst[0]`` and, with
    ``calIndex``, its first index into ``dst[1]`` (semantics.py)."""
    _reduce(Opcode.REDUCE_MAX, "ReduceMax", dst, src, sharedTmpBuffer, count, calIndex)


class ReduceOrder(Enum):
    """``ReduceOrder``: what WholeReduceMax writes per repeat."""

    ORDER_VALUE_INDEX = 0
    ORDER_INDEX_VALUE = 1
    ORDER_ONLY_VALUE = 2
    ORDER_ONLY_INDEX = 3


def WholeReduceMax(dst: LocalTensor, src: LocalTensor, mask: int, repeatTime: int,
                   dstRepStride: int, srcBlkStride: int, srcRepStride: int,
                   order: ReduceOrder = ReduceOrder.ORDER_VALUE_INDEX, *,
                   isSetMask: bool = True) -> None:
    """The largest active lane of every repeat and its index inside the repeat (the first
    one), written in ``order`` (semantics.py); ``dstRepStride`` counts in what one repeat
    writes (value and index: 2 elements; value: 1; index: 4 bytes)."""
    if dst.dtype != src.dtype or src.dtype not in _HALF_OR_FLOAT:
        raise KernelError(f"WholeReduceMax: dst and src must be the same half / float type "
                          f"({dst.dtype}, {src.dtype})")
    if not isinstance(order, ReduceOrder):
        raise KernelError(f"WholeReduceMax: expected a ReduceOrder, got {order!r}")
    mask, repeat = _repeat_args(_mask_of(mask, src.dtype, isSetMask), repeatTime, src.dtype,
                                "WholeReduceMax")
    rec = program.current()
    sspan = _span(src, mask, repeat, int(srcBlkStride), int(srcRepStride))
    unit = {0: 2 * dst.dtype.itemsize, 1: 2 * dst.dtype.itemsize, 2: dst.dtype.itemsize,
            3: 4}[order.value]
    written = 4 if order is ReduceOrder.ORDER_ONLY_INDEX else unit
    dspan = ((repeat - 1) * int(dstRepStride) * unit + written) if repeat else 0
    rec.emit(Instr(Pipe.VECTOR, Opcode.WHOLE_REDUCE_MAX,
                   dst=dst.operand(0, "WholeReduceMax dst", nbytes=dspan,
                                   align=dst.dtype.itemsize),
                   src=(src.operand(0, "WholeReduceMax src", nbytes=sspan),), mask=mask,
                   repeat=repeat, count=mask * repeat,
                   params=(int(dstRepStride), int(srcBlkStride), int(srcRepStride),
                           order.value)))


@dataclass
class BrcbRepeatParams:
    """``BrcbRepeatParams``: dstBlkStride, dstRepStride (32-byte blocks)."""

    dstBlkStride: int = 1
    dstRepStride: int = 8


def Brcb(dst: LocalTensor, src: LocalTensor, repeatTime: int,
         repeatParams: BrcbRepeatParams | tuple) -> None:
    """Each repeat: 8 consecutive source elements, element j broadcast over destination
    block j."""
    p = BrcbRepeatParams(*repeatParams) if isinstance(repeatParams, tuple) else repeatParams
    expect_struct(p, BrcbRepeatParams, "Brcb")
    if dst.dtype != src.dtype or dst.dtype.itemsize not in (2, 4):
        raise KernelError(f"Brcb: dst and src must be one 16- or 32-bit type ({dst.dtype}, "
                          f"{src.dtype})")
    repeat = int(repeatTime)
    if not 0 <= repeat <= MAX_REPEAT:
        raise KernelError(f"Brcb: repeatTime {repeat} outside [0, {MAX_REPEAT}]")
    blk, rep = int(p.dstBlkStride), int(p.dstRepStride)
    if repeat == 0:
        return
    dspan = ((repeat - 1) * rep + 7 * blk + 1) * 32
    per_block = 32 // dst.dtype.itemsize
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.BRCB, dst=dst.operand(0, "Brcb dst", nbytes=dspan),
                   src=(src.operand(repeat * 8, "Brcb src", align=0),), repeat=repeat,
                   count=repeat * 8 * per_block, params=(blk, rep)))


def BlockReduceSum(dst: LocalTensor, src: LocalTensor, repeatTime: int, mask: int,
                   dstRepStride: int, srcBlkStride: int, srcRepStride: int) -> None:
    """Sum of each 32-byte block of every repeat (adjacent-pair tree), 8 results per repeat."""
    mask, repeat = _repeat_args(mask, repeatTime, src.dtype, "BlockReduceSum")
    rec = program.current()
    sspan = _span(src, mask, repeat, int(srcBlkStride), int(srcRepStride))
    dspan = ((repeat - 1) * int(dstRepStride) * 8 + 8) * dst.dtype.itemsize if repeat else 0
    rec.emit(Instr(Pipe.VECTOR, Opcode.BLOCK_REDUCE_SUM,
                   dst=dst.operand(0, "BlockReduceSum dst", nbytes=dspan, align=0),
                   src=(src.operand(0, "BlockReduceSum src", nbytes=sspan),), mask=mask,
                   repeat=repeat, count=mask * repeat,
                   params=(int(dstRepStride), int(srcBlkStride), int(srcRepStride))))


def WholeReduceSum(dst: LocalTensor, src: LocalTensor, mask: int, repeatTime: int,
                   dstRepStride: int, srcBlkStride: int, srcRepStride: int) -> None:
    """Sum of the active lanes of every repeat (adjacent-pair tree), one result per repeat."""
    mask, repeat = _repeat_args(mask, repeatTime, src.dtype, "WholeReduceSum")
    rec = program.current()
    sspan = _span(src, mask, repeat, int(srcBlkStride), int(srcRepStride))
    dspan = ((repeat - 1) * int(dstRepStride) + 1) * dst.dtype.itemsize if repeat else 0
    rec.emit(Instr(Pipe.VECTOR, Opcode.WHOLE_REDUCE_SUM,
                   dst=dst.operand(0, "WholeReduceSum dst", nbytes=dspan,
                                   align=dst.dtype.itemsize),
                   src=(src.operand(0, "WholeReduceSum src", nbytes=sspan),), mask=mask,
                   repeat=repeat, count=mask * repeat,
                   params=(int(dstRepStride), int(srcBlkStride), int(srcRepStride))))


def Gather(dst: LocalTensor, src: LocalTensor, srcOffset: LocalTensor, srcBaseAddr: int,
           count: int) -> None:
    """``dst[i]`` = the element of ``src`` at byte ``srcBaseAddr + srcOffset[i]`` (uint32 byte
    offsets from the start of ``src``), for ``count`` elements; every address must lie in
    ``src``'s buffer."""
    n = element_count(count, "Gather")
    if dst.dtype.itemsize != src.dtype.itemsize:
        raise KernelError(f"Gather: dst {dst.dtype} and src {src.dtype} differ in size")
    if srcOffset.dtype != np.dtype(np.uint32):
        raise KernelError(f"Gather: srcOffset must be uint32, not {srcOffset.dtype}")
    rec = program.current()
    offs = srcOffset.operand(n, "Gather srcOffset")
    at = rec.ub_bytes[offs.addr:offs.addr + 4 * n].view(np.uint32).astype(np.int64)
    span = src.limit - src.addr
    if n and (int(at.max()) + int(srcBaseAddr) + src.dtype.itemsize > span
              or int(srcBaseAddr) < 0 or (at % src.dtype.itemsize).any()):
        raise KernelError(f"Gather: an offset leaves src's buffer '{src.buf}' ({span} bytes "
                          "from src) or is not a multiple of the element size")
    rec.emit(Instr(Pipe.VECTOR, Opcode.GATHER, dst=dst.operand(n, "Gather dst"),
                   src=(src.operand(0, "Gather src", nbytes=span), offs), count=n,
                   params=(int(srcBaseAddr),)))


def Sigmoid(dst: LocalTensor, src: LocalTensor, *args) -> None:
    """``Sigmoid(dst, src[, sharedTmpBuffer], calCount)``: ``1 / (1 + e^-src)`` in fp32."""
    if len(args) not in (1, 2):
        raise KernelError("Sigmoid: expected (dst, src[, sharedTmpBuffer], calCount)")
    if dst.dtype != src.dtype or src.dtype not in _HALF_OR_FLOAT:
        raise KernelError(f"Sigmoid: dst and src must be one half / float type ({dst.dtype}, "
                          f"{src.dtype})")
    n = element_count(args[-1], "Sigmoid")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.SIGMOID, dst=dst.operand(n, "Sigmoid dst"),
                   src=(src.operand(n, "Sigmoid src"),), count=n))


def PairReduceSum(dst: LocalTensor, src: LocalTensor, repeatTime: int, mask: int,
                  dstRepStride: int, srcBlkStride: int, srcRepStride: int, *,
                  isSetMask: bool = True) -> None:
    """The sum of each adjacent pair of active lanes of every repeat (semantics.py)."""
    if dst.dtype != src.dtype:
        raise KernelError(f"PairReduceSum: dst {dst.dtype} and src {src.dtype} differ")
    mask, repeat = _repeat_args(_mask_of(mask, src.dtype, isSetMask), repeatTime, src.dtype,
                                "PairReduceSum")
    rec = program.current()
    sspan = _span(src, mask, repeat, int(srcBlkStride), int(srcRepStride))
    half = (mask + 1) // 2 * dst.dtype.itemsize
    dspan = ((repeat - 1) * int(dstRepStride) * 128 + half) if repeat else 0
    rec.emit(Instr(Pipe.VECTOR, Opcode.PAIR_REDUCE_SUM,
                   dst=dst.operand(0, "PairReduceSum dst", nbytes=dspan, align=0),
                   src=(src.operand(0, "PairReduceSum src", nbytes=sspan),), mask=mask,
                   repeat=repeat, count=mask * repeat,
                   params=(int(dstRepStride), int(srcBlkStride), int(srcRepStride))))
