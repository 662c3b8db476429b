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

from aicore_sim.ascendc.tensors import LocalTensor
from aicore_sim.sim import program, semantics
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Pipe

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
    from aicore_sim.sim.dtypes import as_dtype

    return int(elemCount) * SORT_BYTES // as_dtype(dtype).itemsize


def GetSortOffset(dtype, elemOffset: int) -> int:
    """``GetSortOffset<T>(elemOffset)``: the offset, in elements of ``T``, of sorted structure
    number ``elemOffset``."""
    return GetSortLen(dtype, elemOffset)


def Concat(concatLocal: LocalTensor, srcLocal: LocalTensor, tmpLocal: LocalTensor,
           repeatTimes: int) -> LocalTensor:
    """``Concat(concatLocal, src, tmp, repeatTimes)``: on A2/A3 (``__CCE_AICORE__ >= 220``)
    ``Sort`` reads the scores where they are, so Concat only makes ``concatLocal`` refer to
    ``srcLocal`` (the library assigns the reference: ``concatLocal = srcLocal``) and issues no
    instruction. ``concatLocal`` (possibly a default-constructed ``LocalTensor(dtype)``) is
    rebound in place, as the C++ reference argument is; it is also returned."""
    _score_type(srcLocal, "Concat")
    if concatLocal.dtype != srcLocal.dtype:
        raise KernelError("Concat: concat and src types differ")
    _elements(repeatTimes, CONCAT_REPEAT, "Concat")
    concatLocal.buf, concatLocal.addr, concatLocal.limit = (srcLocal.buf, srcLocal.addr,
                                                            srcLocal.limit)
    if getattr(srcLocal, "size", None) is not None:
        concatLocal.size = srcLocal.size
    elif getattr(concatLocal, "size", None) is not None:
        del concatLocal.size
    return concatLocal


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


def MrgSort(dstLocal: LocalTensor, sortList: MrgSortSrcList, *args,
            isExhaustedSuspension: bool = False) -> None:
    """``MrgSort<T>(dst, srcList, info)`` or ``MrgSort<T, isExhaustedSuspension>(dst, srcList,
    elementCountList, sortedNum, validBit, repeatTime)``: merge 2, 3 or 4 sorted lists
    (``validBit`` 0b11, 0b111, 0b1111) of ``elementLengths`` structures into ``dst``,
    descending, equal scores from the earlier list first. Only one repeat is modelled.

    Exhausted suspension (``info.ifExhaustedSuspension`` or the template flag of the six-argument
    form): the merge stops as soon as one list has been fully written to ``dst``. The
    six-argument form then fills ``sortedNum[0..3]`` with the structures taken from each list
    (the library reads them from the VMS4_SR register, 16 bits a list on A2/A3, right after
    the instruction). The counts come from the functional image, so a record without numerics
    refuses the form: its lists would hold stale values.
    """
    sortedNum = None
    if len(args) == 1:
        params = args[0]
        if not isinstance(params, MrgSort4Info):
            raise KernelError(f"MrgSort: expected MrgSort4Info, got {params!r}")
        exhausted = bool(params.ifExhaustedSuspension)
        validBit, repeatTimes = int(params.validBit), int(params.repeatTimes)
        elementLengths = list(params.elementLengths)
    elif len(args) == 4:
        elementLengths, sortedNum, validBit, repeatTimes = args
        validBit, repeatTimes = int(validBit), int(repeatTimes)
        exhausted = bool(isExhaustedSuspension)
        if exhausted and (sortedNum is None or len(sortedNum) < 4):
            raise KernelError("MrgSort: sortedNum must have room for 4 counts")
    else:
        raise KernelError("MrgSort: expected (dst, srcList, MrgSort4Info) or (dst, srcList, "
                          "elementCountList, sortedNum, validBit, repeatTime)")
    _score_type(dstLocal, "MrgSort")
    k = _VALID.get(validBit)
    if k is None:
        raise KernelError(f"MrgSort: validBit {validBit:#b} must be 0b11, 0b111 or 0b1111")
    if repeatTimes != 1:
        raise KernelError(f"MrgSort: repeatTimes {repeatTimes} is not modelled (only 1)")
    lists = [sortList.src1, sortList.src2, sortList.src3, sortList.src4][:k]
    lengths = [int(x) for x in list(elementLengths)[:k]]
    if any(t is None for t in lists):
        raise KernelError(f"MrgSort: validBit names {k} lists but the MrgSortSrcList has fewer")
    if any(not 0 <= n <= 4095 for n in lengths):
        raise KernelError(f"MrgSort: elementLengths {lengths} outside [0, 4095]")
    rec = program.current()
    src = tuple(t.operand(0, f"MrgSort src{j + 1}", nbytes=n * SORT_BYTES)
                for j, (t, n) in enumerate(zip(lists, lengths)))
    taken = lengths
    if exhausted:
        if Opcode.MRG_SORT not in rec.effects:
            raise KernelError("MrgSort with exhausted suspension: the counts it returns depend "
                              "on the merged values, which a timing-only record does not "
                              "compute (launch with numerics)")
        taken = semantics.mrg_sort_taken(src, lengths, rec.ub_bytes, dstLocal.dtype)
    total = sum(taken)
    rec.emit(Instr(Pipe.VECTOR, Opcode.MRG_SORT,
                   dst=dstLocal.operand(0, "MrgSort dst", nbytes=total * SORT_BYTES), src=src,
                   count=total, params=(*lengths, int(exhausted))))
    if sortedNum is not None and exhausted:
        # the scalar unit reads VMS4_SR once the merge has finished (ASSUMPTION: the register
        # read waits for the vector instruction; charged as one scalar UB read)
        dep = (Pipe.VECTOR, rec.pipe_index[-1])
        op = dstLocal.operand(0, "GetMrgSortResult", nbytes=min(total, 1) * SORT_BYTES)
        rec.emit(Instr(Pipe.SCALAR, Opcode.GET_VALUE_UB, src=(op,), nbytes=op.nbytes, dep=dep,
                       label="GetMrgSortResult"))
        for j in range(4):
            sortedNum[j] = taken[j] if j < k else 0


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
