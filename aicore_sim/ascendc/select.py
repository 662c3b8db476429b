"""Compare, CompareScalar, Select, GatherMask, And, Or, ShiftLeft, ShiftRight: bit masks and
what is built on them.

A compare writes one bit per element into a uint8 tensor, element ``i`` at bit ``i % 8`` of
byte ``i // 8`` (the lowest bit first). ``Select`` picks per element by such a mask;
``GatherMask`` keeps the elements whose pattern bit is set, packed to the front of ``dst``,
and returns how many it kept (Ascend C's ``rsvdCnt`` out-argument). Count forms only; the
mask + repeat forms are not modelled yet. Numerics: ``semantics.py``; costs: the cost file.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from aicore_sim.ascendc.args import element_count, expect_struct
from aicore_sim.ascendc.tensors import LocalTensor
from aicore_sim.sim import program
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Pipe


class CMPMODE(Enum):
    """``CMPMODE``: the comparison of Compare / CompareScalar."""

    LT = 0
    GT = 1
    EQ = 2
    LE = 3
    GE = 4
    NE = 5


class SELMODE(Enum):
    """``SELMODE``: what Select chooses between."""

    VSEL_CMPMASK_SPR = 0
    VSEL_TENSOR_SCALAR_MODE = 1
    VSEL_TENSOR_TENSOR_MODE = 2


@dataclass
class GatherMaskParams:
    """``GatherMaskParams``: src0BlockStride, repeatTimes, src0RepeatStride, src1RepeatStride."""

    src0BlockStride: int = 1
    repeatTimes: int = 1
    src0RepeatStride: int = 8
    src1RepeatStride: int = 1


def _mask_tensor(t: LocalTensor, n: int, what: str):
    if t.dtype.kind not in "ui":
        raise KernelError(f"{what}: the bit mask must be an integer tensor, not {t.dtype}")
    return t.operand(0, what, nbytes=-(-n // 8), align=0)


def CompareScalar(dst: LocalTensor, src0: LocalTensor, src1Scalar, cmpMode: CMPMODE,
                  count: int) -> None:
    """Bit ``i`` of ``dst`` = ``src0[i] <cmpMode> src1Scalar`` for ``count`` elements."""
    _compare(dst, src0, None, src1Scalar, cmpMode, count, "CompareScalar")


def Compare(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, cmpMode: CMPMODE,
            count: int) -> None:
    """Bit ``i`` of ``dst`` = ``src0[i] <cmpMode> src1[i]`` for ``count`` elements."""
    _compare(dst, src0, src1, 0.0, cmpMode, count, "Compare")


def _compare(dst, src0, src1, scalar, mode, count, what) -> None:
    if not isinstance(mode, CMPMODE):
        raise KernelError(f"{what}: expected a CMPMODE, got {mode!r}")
    n = element_count(count, what)
    if src1 is not None and src1.dtype != src0.dtype:
        raise KernelError(f"{what}: src0 {src0.dtype} and src1 {src1.dtype} differ")
    srcs = (src0.operand(n, f"{what} src0"),)
    if src1 is not None:
        srcs += (src1.operand(n, f"{what} src1"),)
    rec = program.current()
    op = Opcode.COMPARE if src1 is not None else Opcode.COMPARE_SCALAR
    rec.emit(Instr(Pipe.VECTOR, op, dst=_mask_tensor(dst, n, f"{what} dst"), src=srcs, count=n,
                   scalar=float(scalar), params=(mode.value,)), 3)


def Select(dst: LocalTensor, selMask: LocalTensor, src0: LocalTensor, src1, selMode: SELMODE,
           count: int) -> None:
    """``dst[i] = src0[i]`` where bit ``i`` of ``selMask`` is set, else ``src1[i]``
    (VSEL_TENSOR_TENSOR_MODE) or the scalar ``src1`` (VSEL_TENSOR_SCALAR_MODE)."""
    if not isinstance(selMode, SELMODE) or selMode is SELMODE.VSEL_CMPMASK_SPR:
        raise KernelError(f"Select: mode {selMode!r} is not modelled (tensor-tensor and "
                          "tensor-scalar are)")
    n = element_count(count, "Select")
    if dst.dtype != src0.dtype:
        raise KernelError(f"Select: dst {dst.dtype} and src0 {src0.dtype} differ")
    tensor = selMode is SELMODE.VSEL_TENSOR_TENSOR_MODE
    srcs = (src0.operand(n, "Select src0"), _mask_tensor(selMask, n, "Select selMask"))
    scalar = 0.0
    if tensor:
        if not isinstance(src1, LocalTensor) or src1.dtype != dst.dtype:
            raise KernelError("Select: VSEL_TENSOR_TENSOR_MODE needs src1 a tensor of dst's type")
        srcs += (src1.operand(n, "Select src1"),)
    else:
        scalar = float(src1)
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.SELECT, dst=dst.operand(n, "Select dst"), src=srcs,
                   count=n, scalar=scalar, params=(selMode.value,)))


def GatherMask(dst: LocalTensor, src0: LocalTensor, src1Pattern: LocalTensor, reduceMode: bool,
               mask: int, gatherMaskParams: GatherMaskParams, rsvdCnt: int = 0) -> int:
    """Counter mode (``reduceMode`` true): of the first ``mask`` elements of ``src0``, those
    whose bit is set in ``src1Pattern`` (uint16 for 16-bit data, uint32 for 32-bit), packed
    to the front of ``dst``. Returns the number kept (``rsvdCnt``), from the functional
    image (so it is known only when the record computes numbers)."""
    if not reduceMode:
        raise KernelError("GatherMask: reduceMode = false (normal mode) is not modelled")
    if not isinstance(src1Pattern, LocalTensor):
        raise KernelError("GatherMask: built-in patterns (an int src1Pattern) are not modelled")
    if src1Pattern.dtype.itemsize != src0.dtype.itemsize or src1Pattern.dtype.kind != "u":
        raise KernelError(f"GatherMask: the pattern of {src0.dtype} data must be "
                          f"uint{8 * src0.dtype.itemsize}, not {src1Pattern.dtype}")
    if dst.dtype.itemsize != src0.dtype.itemsize:
        raise KernelError(f"GatherMask: dst {dst.dtype} and src0 {src0.dtype} differ in size")
    expect_struct(gatherMaskParams, GatherMaskParams, "GatherMask")
    if int(gatherMaskParams.src0BlockStride) != 1:
        raise KernelError("GatherMask: src0BlockStride other than 1 is not modelled")
    n = element_count(mask, "GatherMask")
    rec = program.current()
    pattern = src1Pattern.operand(0, "GatherMask pattern", nbytes=-(-n // 8), align=0)
    source = src0.operand(n, "GatherMask src0")
    # the kept elements are written from dst[0]: at most n of them
    rec.emit(Instr(Pipe.VECTOR, Opcode.GATHER_MASK, dst=dst.operand(n, "GatherMask dst"),
                   src=(source, pattern), count=n))
    ub = rec.ub_bytes
    bits = np.unpackbits(ub[pattern.addr:pattern.addr + pattern.nbytes], bitorder="little")[:n]
    return int(bits.sum())


def _bitwise(op: Opcode, name: str, dst: LocalTensor, src0: LocalTensor, src1: LocalTensor,
             count: int) -> None:
    if not dst.dtype == src0.dtype == src1.dtype or dst.dtype.kind not in "ui":
        raise KernelError(f"{name}: operands must be one integer type ({dst.dtype}, "
                          f"{src0.dtype}, {src1.dtype})")
    n = element_count(count, name)
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(n, f"{name} dst"),
                   src=(src0.operand(n, f"{name} src0"), src1.operand(n, f"{name} src1")),
                   count=n), 3)


def And(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int) -> None:
    """Bitwise ``src0 & src1`` (count form, integer tensors)."""
    _bitwise(Opcode.AND, "And", dst, src0, src1, count)


def Or(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, count: int) -> None:
    """Bitwise ``src0 | src1`` (count form, integer tensors)."""
    _bitwise(Opcode.OR, "Or", dst, src0, src1, count)


def _shift(op: Opcode, name: str, dst: LocalTensor, src: LocalTensor, scalarValue,
           count: int) -> None:
    if dst.dtype != src.dtype or dst.dtype.kind not in "ui":
        raise KernelError(f"{name}: dst and src must be one integer type ({dst.dtype}, "
                          f"{src.dtype})")
    n = element_count(count, name)
    shift = int(scalarValue)
    if not 0 <= shift < 8 * dst.dtype.itemsize:
        raise KernelError(f"{name}: shift {shift} outside [0, {8 * dst.dtype.itemsize})")
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, op, dst=dst.operand(n, f"{name} dst"),
                   src=(src.operand(n, f"{name} src"),), count=n, scalar=float(shift)), 3)


def ShiftLeft(dst: LocalTensor, src: LocalTensor, scalarValue, count: int) -> None:
    """``src << scalarValue`` element-wise (count form; bits shifted out are lost)."""
    _shift(Opcode.SHIFT_LEFT, "ShiftLeft", dst, src, scalarValue, count)


def ShiftRight(dst: LocalTensor, src: LocalTensor, scalarValue, count: int) -> None:
    """``src >> scalarValue`` element-wise (count form; arithmetic for signed types)."""
    _shift(Opcode.SHIFT_RIGHT, "ShiftRight", dst, src, scalarValue, count)


def DataCacheCleanAndInvalid(*args, **kwargs) -> None:
    """``DataCacheCleanAndInvalid<T, mode, ...>(gm)``: write back and drop the scalar data
    cache's lines of ``gm``. The simulator keeps no dirty scalar lines (scalar writes go
    to UB), so it changes nothing here and records no instruction (not charged)."""
    return None


__all__ = ["CMPMODE", "SELMODE", "And", "Compare", "CompareScalar", "DataCacheCleanAndInvalid",
           "GatherMask", "GatherMaskParams", "Or", "Select", "ShiftLeft", "ShiftRight"]
