"""Vector-pipe APIs: Cast, Copy, Duplicate, Muls, Mul, Add, BlockReduceSum, WholeReduceSum.

Count-mode calls take an element count; the mask + repeat forms take a lane mask, a repeat
count (<= 255) and block / repeat strides in 32-byte blocks, as in Ascend C. ``Add`` has both:
``Add(dst, src0, src1, count)`` and ``Add(dst, src0, src1, mask, repeatTime,
BinaryRepeatParams(...))``; the mask is the normal (continuous) mode, the leading ``mask``
lanes of every repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aicore_sim import program
from aicore_sim.ascendc.tensors import LocalTensor
from aicore_sim.errors import KernelError
from aicore_sim.isa import Instr, Opcode, Pipe, RoundMode
from aicore_sim.semantics import validate_cast

CAST_NONE = RoundMode.CAST_NONE
CAST_RINT = RoundMode.CAST_RINT
MAX_REPEAT = 255


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


def _binary_repeat_params(p: BinaryRepeatParams, what: str) -> tuple[int, ...]:
    """(dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep), each checked to fit a uint8."""
    if not isinstance(p, BinaryRepeatParams):
        raise KernelError(f"{what}: expected BinaryRepeatParams, got {p!r}")
    names = ("dstBlkStride", "src0BlkStride", "src1BlkStride", "dstRepStride",
             "src0RepStride", "src1RepStride")
    out = tuple(int(getattr(p, n)) for n in names)
    for n, v in zip(names, out):
        if not 0 <= v <= 255:
            raise KernelError(f"{what}: BinaryRepeatParams.{n} {v} outside the uint8 range "
                              "[0, 255]")
    return out


def _count(count: int, what: str) -> int:
    count = int(count)
    if count < 0:
        raise KernelError(f"{what}: negative count {count}")
    return count


def _span(t: LocalTensor, mask: int, repeat: int, blk: int, rep: int) -> int:
    """Bytes from the first to one past the last active lane of a mask + repeat access."""
    if mask == 0 or repeat == 0:
        return 0
    per_block = 32 // t.dtype.itemsize
    last_lane = mask - 1
    last = (repeat - 1) * rep * 32 + (last_lane // per_block) * blk * 32
    return last + (last_lane % per_block + 1) * t.dtype.itemsize


def _repeat_args(mask: int, repeat: int, dtype: np.dtype, what: str) -> tuple[int, int]:
    mask, repeat = int(mask), int(repeat)
    lanes = 256 // dtype.itemsize
    if not 0 <= mask <= lanes:
        raise KernelError(f"{what}: mask {mask} outside [0, {lanes}] for {dtype}")
    if not 0 <= repeat <= MAX_REPEAT:
        raise KernelError(f"{what}: repeatTime {repeat} outside [0, {MAX_REPEAT}]")
    return mask, repeat


def Cast(dst: LocalTensor, src: LocalTensor, roundMode: RoundMode, count: int) -> None:
    n = _count(count, "Cast")
    why = validate_cast(src.dtype, dst.dtype, roundMode)
    if why:
        raise KernelError(why)
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.CAST, dst=dst.operand(n, "Cast dst"),
                   src=(src.operand(n, "Cast src"),), count=n, round_mode=roundMode))


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


def Duplicate(dst: LocalTensor, scalarValue, count: int) -> None:
    n = _count(count, "Duplicate")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.DUPLICATE, dst=dst.operand(n, "Duplicate dst"), count=n,
                   scalar=float(scalarValue)))


def Muls(dst: LocalTensor, src: LocalTensor, scalarValue, count: int) -> None:
    n = _count(count, "Muls")
    if dst.dtype != src.dtype:
        raise KernelError(f"Muls: dst {dst.dtype} and src {src.dtype} differ")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.MULS, dst=dst.operand(n, "Muls dst"),
                   src=(src.operand(n, "Muls src"),), count=n, scalar=float(scalarValue)))


def _binary(op: Opcode, name: str, dst: LocalTensor, a: LocalTensor, b: LocalTensor,
            count: int) -> None:
    n = _count(count, name)
    if not dst.dtype == a.dtype == b.dtype:
        raise KernelError(f"{name}: operand dtypes differ ({dst.dtype}, {a.dtype}, {b.dtype})")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(n, f"{name} dst"),
                   src=(a.operand(n, f"{name} src0"), b.operand(n, f"{name} src1")), count=n),
             3)  # the kernel line is above Mul / Add, which call this


def Mul(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int) -> None:
    _binary(Opcode.MUL, "Mul", dst, src0, src1, count)


def _binary_repeat(op: Opcode, name: str, dst: LocalTensor, a: LocalTensor, b: LocalTensor,
                   mask: int, repeatTime: int, repeatParams: BinaryRepeatParams) -> None:
    if not dst.dtype == a.dtype == b.dtype:
        raise KernelError(f"{name}: operand dtypes differ ({dst.dtype}, {a.dtype}, {b.dtype})")
    mask, repeat = _repeat_args(mask, repeatTime, dst.dtype, name)
    params = _binary_repeat_params(repeatParams, name)
    d_blk, a_blk, b_blk, d_rep, a_rep, b_rep = params
    rec = program.current()
    d = dst.operand(0, f"{name} dst", nbytes=_span(dst, mask, repeat, d_blk, d_rep))
    s0 = a.operand(0, f"{name} src0", nbytes=_span(a, mask, repeat, a_blk, a_rep))
    s1 = b.operand(0, f"{name} src1", nbytes=_span(b, mask, repeat, b_blk, b_rep))
    rec.emit(Instr(Pipe.VECTOR, op, dst=d, src=(s0, s1), mask=mask, repeat=repeat,
                   count=mask * repeat, params=params), 3)


def Add(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, *args) -> None:
    """``Add(dst, src0, src1, count)`` or ``Add(dst, src0, src1, mask, repeatTime,
    repeatParams)`` (mask + repeat form: ``mask`` leading lanes of each of ``repeatTime``
    repeats, strides from the :class:`BinaryRepeatParams`)."""
    if len(args) == 1:
        _binary(Opcode.ADD, "Add", dst, src0, src1, args[0])
    elif len(args) == 3:
        _binary_repeat(Opcode.ADD, "Add", dst, src0, src1, *args)
    else:
        raise KernelError("Add: expected (dst, src0, src1, count) or (dst, src0, src1, mask, "
                          f"repeatTime, repeatParams), got {3 + len(args)} arguments")


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
