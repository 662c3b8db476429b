"""Sort, MrgSort, Concat, Extract, GetSortLen, GetSortOffset: the A2/A3 sort APIs.

On A2/A3 a sorted element is an 8-byte structure, the score in its low bytes (float: 4 bytes;
half: 2 bytes and 2 reserved) and its uint32 index in the high 4 (Ascend C "layout one").
``Sort<T, isFullSort>`` sorts 32 elements per repeat, descending by score; full sort orders all
``repeatTimes x 32`` of them. Equal scores keep their input order (Ascend C: of two equal
scores the one with the smaller position comes first). ``MrgSort`` merges up to four sorted
lists, equal scores from the earlier list first. ``Concat`` prepares the scores for ``Sort``
(on A2/A3 a plain copy of 16 elements per repeat); ``Extract`` splits sorted structures back
into scores and indices (32 per repeat). Numerics: ``semantics.py``; costs: the cost file's
``[vector.linear.Sort]`` / ``MrgSort`` / ``Extract`` entries (documented assumptions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aicore_sim import program
from aicore_sim.ascendc.tensors import LocalTensor
from aicore_sim.errors import KernelError
from aicore_sim.isa import Instr, Opcode, Pipe

SORT_BYTES = 8  # bytes of one sorted (score, index) structure on A2/A3
SORT_REPEAT = 32  # elements Sort orders per repeat (A2/A3)
CONCAT_REPEAT = 16  # elements Concat prepares per repeat


_SCORE_TYPES = (np.dtype(np.float32), np.dtype(np.float16))
_INDEX_TYPE = np.dtype(np.uint32)


def _score_type(t: LocalTensor, what: str) -> None:
    if t.dtype not in _SCORE_TYPES:
        raise KernelError(f"{what}: scores must be float or half, not {t.dtype}")


def _index_type(t: LocalTensor, what: str) -> None:
    if t.dtype != _INDEX_TYPE:
        raise KernelError(f"{what}: the index tensor must be uint32, not {t.dtype}")


def _elements(repeatTimes: int, per_repeat: int, what: str) -> int:
    """Elements of ``repeatTimes`` repeats of ``per_repeat``; repeatTimes is 8 bits."""
    if not 0 <= int(repeatTimes) <= 255:
        raise KernelError(f"{what}: repeatTimes {repeatTimes} outside [0, 255]")
    return int(repeatTimes) * per_repeat


def GetSortLen(dtype, elemCount: int) -> int:
    """``GetSortLen<T>(elemCount)``: elements of ``T`` that ``elemCount`` sorted structures
    take (8 bytes each)."""
    from aicore_sim.dtypes import as_dtype

    return int(elemCount) * SORT_BYTES // as_dtype(dtype).itemsize


def GetSortOffset(dtype, elemOffset: int) -> int:
    """``GetSortOffset<T>(elemOffset)``: the offset, in elements of ``T``, of sorted structure
    number ``elemOffset``."""
    return GetSortLen(dtype, elemOffset)


def Concat(concatLocal: LocalTensor, srcLocal: LocalTensor, tmpLocal: LocalTensor,
           repeatTimes: int) -> None:
    """``Concat``: ``repeatTimes x 16`` scores into the layout ``Sort`` reads (a copy on
    A2/A3, recorded as a UB->UB DataCopy on the vector pipe)."""
    _score_type(srcLocal, "Concat")
    if concatLocal.dtype != srcLocal.dtype:
        raise KernelError("Concat: concat and src types differ")
    n = _elements(repeatTimes, CONCAT_REPEAT, "Concat")
    if n == 0:
        return
    nbytes = n * srcLocal.dtype.itemsize
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.DATA_COPY_UB_TO_UB,
                   dst=concatLocal.operand(n, "Concat concat"),
                   src=(srcLocal.operand(n, "Concat src"),), count=n, nbytes=nbytes,
                   params=(1, nbytes, 0, 0), label="Concat"))


def Sort(dstLocal: LocalTensor, concatLocal: LocalTensor, indexLocal: LocalTensor,
         tmpLocal: LocalTensor, repeatTimes: int, isFullSort: bool = True) -> None:
    """``Sort<T, isFullSort>(dst, concat, index, tmp, repeatTimes)``: ``repeatTimes x 32``
    scores with their uint32 indices, descending, into sorted structures."""
    _score_type(concatLocal, "Sort")
    _index_type(indexLocal, "Sort")
    if dstLocal.dtype != concatLocal.dtype:
        raise KernelError("Sort: dst and concat types differ")
    n = _elements(repeatTimes, SORT_REPEAT, "Sort")
    if n == 0:
        return
    rec = program.current()
    rec.emit(Instr(Pipe.VECTOR, Opcode.SORT,
                   dst=dstLocal.operand(0, "Sort dst", nbytes=n * SORT_BYTES),
                   src=(concatLocal.operand(n, "Sort concat"), indexLocal.operand(n, "Sort index")),
                   count=n, params=(int(bool(isFullSort)),)))


def Sort32(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, repeatTime: int) -> None:
    """``Sort32(dst, scores, indices, repeatTime)``: each group of 32 scores with their uint32
    indices sorted on its own, descending (``Sort`` without full sort, without Concat)."""
    Sort(dst, src0, src1, dst, repeatTime, False)


@dataclass
class MrgSortSrcList:
    """``MrgSortSrcList<T>(src1, src2, src3, src4)``: the sorted lists to merge."""

    src1: LocalTensor | None = None
    src2: LocalTensor | None = None
    src3: LocalTensor | None = None
    src4: LocalTensor | None = None


@dataclass
class MrgSort4Info:
    """``MrgSort4Info(elementLengths, ifExhaustedSuspension, validBit, repeatTimes)``."""

    elementLengths: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    ifExhaustedSuspension: bool = False
    validBit: int = 0b1111
    repeatTimes: int = 1


_VALID = {0b0011: 2, 0b0111: 3, 0b1111: 4}


def MrgSort(dstLocal: LocalTensor, sortList: MrgSortSrcList, params: MrgSort4Info) -> None:
    """``MrgSort<T>(dst, srcList, info)``: merge 2, 3 or 4 sorted lists (``validBit`` 0b11,
    0b111, 0b1111) of ``elementLengths`` structures into ``dst``, descending. Only one repeat
    and no exhausted suspension are modelled."""
    _score_type(dstLocal, "MrgSort")
    k = _VALID.get(int(params.validBit))
    if k is None:
        raise KernelError(f"MrgSort: validBit {params.validBit:#b} must be 0b11, 0b111 or "
                          "0b1111")
    if params.ifExhaustedSuspension:
        raise KernelError("MrgSort: ifExhaustedSuspension = true is not modelled (its "
                          "consumed counts, GetMrgSortResult, are not)")
    if int(params.repeatTimes) != 1:
        raise KernelError(f"MrgSort: repeatTimes {params.repeatTimes} is not modelled (only 1)")
    lists = [sortList.src1, sortList.src2, sortList.src3, sortList.src4][:k]
    lengths = [int(x) for x in list(params.elementLengths)[:k]]
    if any(t is None for t in lists):
        raise KernelError(f"MrgSort: validBit names {k} lists but the MrgSortSrcList has fewer")
    if any(not 0 <= n <= 4095 for n in lengths):
        raise KernelError(f"MrgSort: elementLengths {lengths} outside [0, 4095]")
    total = sum(lengths)
    rec = program.current()
    src = tuple(t.operand(0, f"MrgSort src{j + 1}", nbytes=n * SORT_BYTES)
                for j, (t, n) in enumerate(zip(lists, lengths)))
    rec.emit(Instr(Pipe.VECTOR, Opcode.MRG_SORT,
                   dst=dstLocal.operand(0, "MrgSort dst", nbytes=total * SORT_BYTES), src=src,
                   count=total, params=tuple(lengths)))


def Extract(dstValueLocal: LocalTensor, dstIndexLocal: LocalTensor, sortedLocal: LocalTensor,
            repeatTimes: int) -> None:
    """``Extract(dstValue, dstIndex, sorted, repeatTimes)``: ``repeatTimes x 32`` sorted
    structures back into scores and uint32 indices (two vector instructions)."""
    _score_type(sortedLocal, "Extract")
    if dstValueLocal.dtype != sortedLocal.dtype:
        raise KernelError("Extract: dstValue and sorted types differ")
    _index_type(dstIndexLocal, "Extract")
    n = _elements(repeatTimes, SORT_REPEAT, "Extract")
    if n == 0:
        return
    rec = program.current()
    src = sortedLocal.operand(0, "Extract sorted", nbytes=n * SORT_BYTES)
    rec.emit(Instr(Pipe.VECTOR, Opcode.EXTRACT, dst=dstValueLocal.operand(n, "Extract value"),
                   src=(src,), count=n, params=(0,)))
    rec.emit(Instr(Pipe.VECTOR, Opcode.EXTRACT, dst=dstIndexLocal.operand(n, "Extract index"),
                   src=(src,), count=n, params=(1,)))


__all__ = ["Concat", "Extract", "GetSortLen", "GetSortOffset", "MrgSort", "MrgSort4Info",
           "MrgSortSrcList", "Sort", "Sort32"]
