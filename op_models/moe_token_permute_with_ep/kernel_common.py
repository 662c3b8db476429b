"""Constants and helpers shared by the ``MoeTokenPermuteWithEp`` kernel port.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_permute_with_ep/op_kernel/moe_common.h`` (namespace ``MoeTokenPermuteWithEp``)
and the free functions of ``op_kernel/moe_sort_base_with_ep.h``. Our own Python; names follow
upstream, comments are ours.

Deviations from upstream
------------------------
1. Template type arguments are numpy / ml_dtypes dtypes passed as leading arguments;
   ``sizeof(T)`` is ``dtype.itemsize``.
2. ``DataCopyB64`` reads an int64 tensor through ``DataCopyPadGm2UBImpl`` on int32 pointers
   exactly as upstream; the pointers are ``GetPhyAddr()`` values (UB byte address, GM_ADDR).
"""

from __future__ import annotations

import numpy as np

from aicore_sim.ascendc import (
    MASK_PLACEHOLDER,
    PIPE_V,
    Adds,
    DataCopyPadGm2UBImpl,
    GetTPipePtr,
    HardEvent,
    PipeBarrier,
    ResetMask,
    SetFlag,
    SetVectorMask,
    UnaryRepeatParams,
    WaitFlag,
)

SPLIT_N = 0
SPLIT_K = 1
MIN_FP32 = float(np.float32(-3.4e38))  # the padding score: sorts after every real one
ONE_REPEAT_SORT_NUM = 32
BLOCK_BYTES = 32
INT32_ONE_BLOCK_NUM = 8
ASSIST_NUM = 256
ASSIST_INDEX_NUM = 32
MERGE_LIST_TWO = 2
MERGE_LIST_THREE = 3
MERGE_LIST_FOUR = 4
MERGE_LIST_IDX_TWO = 2
MERGE_LIST_IDX_THREE = 3

ONE_BLK_SIZE = 32  # bytes of one UB block (Ascend C constant)
ONE_REPEAT_BYTE_SIZE = 256  # bytes of one vector repeat (Ascend C constant)
DEFAULT_BLK_NUM = 8  # blocks of one repeat (Ascend C constant)
DEFAULT_REPEAT_STRIDE = 8  # blocks between repeats (Ascend C constant)


def Ceil(a: int, b: int) -> int:
    """``(a + b - 1) / b`` in C (0 for b = 0)."""
    if b == 0:
        return 0
    q = abs(a + b - 1) // abs(b)
    return q if (a + b - 1 >= 0) == (b > 0) else -q


def Align(elementNum: int, bytes_: int) -> int:
    """Elements of ``bytes_`` each, rounded up to a whole number of 32-byte blocks."""
    if bytes_ == 0:
        return 0
    return (elementNum * bytes_ + BLOCK_BYTES - 1) // BLOCK_BYTES * BLOCK_BYTES // bytes_


def AlignBytes(elementNum: int, bytes_: int) -> int:
    return (elementNum * bytes_ + BLOCK_BYTES - 1) // BLOCK_BYTES * BLOCK_BYTES


def Min(a, b):
    return b if a > b else a


def Max(a, b):
    return b if a < b else a


# --- free functions of moe_sort_base_with_ep.h ------------------------------------------------


def GetBaseArithProgressionSupportInt32(T, dstLocal, firstValue: int, diffValue: int,
                                        count: int) -> None:
    """``dst[i] = first + diff * i`` for ``count`` elements, one scalar store each."""
    for i in range(count):
        dstLocal.SetValue(i, int(firstValue) + int(diffValue) * i)


def ArithProgressionSupportInt32(T, dstLocal, firstValue: int, diffValue: int,
                                 count: int) -> None:
    """An int32 arithmetic progression: one block by scalar stores, doubled up to a repeat by
    masked ``Adds`` (block stride 1), then repeat by repeat (the tail repeat under a mask)."""
    addsParamsStride1 = UnaryRepeatParams(1, 1, 1, 1)
    addsParamsStride8 = UnaryRepeatParams(1, 1, DEFAULT_REPEAT_STRIDE, DEFAULT_REPEAT_STRIDE)
    BLOCK_NUM = ONE_BLK_SIZE // np.dtype(T).itemsize
    REPEAT_NUM = ONE_REPEAT_BYTE_SIZE // np.dtype(T).itemsize
    if count > BLOCK_NUM:
        GetBaseArithProgressionSupportInt32(T, dstLocal, firstValue, diffValue, BLOCK_NUM)
        eventIdSToV = GetTPipePtr().FetchEventID(HardEvent.S_V)
        SetFlag(HardEvent.S_V, eventIdSToV)
        WaitFlag(HardEvent.S_V, eventIdSToV)
        if count > REPEAT_NUM:
            SetVectorMask(T, 0, (1 << BLOCK_NUM) - 1)
            PipeBarrier(PIPE_V)
            for i in range(DEFAULT_BLK_NUM - 1):
                Adds(dstLocal[(i + 1) * BLOCK_NUM], dstLocal[i * BLOCK_NUM],
                     int(float(diffValue) * float(BLOCK_NUM)), MASK_PLACEHOLDER, 1,
                     addsParamsStride1, isSetMask=False)
                PipeBarrier(PIPE_V)
            repeat = count // REPEAT_NUM
            tail = count % REPEAT_NUM
            ResetMask()
            PipeBarrier(PIPE_V)
            for i in range(repeat - 1):
                Adds(dstLocal[(i + 1) * REPEAT_NUM], dstLocal[i * REPEAT_NUM],
                     int(float(diffValue) * float(REPEAT_NUM)), MASK_PLACEHOLDER, 1,
                     addsParamsStride8, isSetMask=False)
                PipeBarrier(PIPE_V)
            if tail > 0:
                tail_aligned = (tail + BLOCK_NUM - 1) // BLOCK_NUM * BLOCK_NUM
                SetVectorMask(T, tail_aligned)
                PipeBarrier(PIPE_V)
                Adds(dstLocal[repeat * REPEAT_NUM], dstLocal[(repeat - 1) * REPEAT_NUM],
                     int(float(diffValue) * float(REPEAT_NUM)), MASK_PLACEHOLDER, 1,
                     addsParamsStride8, isSetMask=False)
                PipeBarrier(PIPE_V)
        else:
            countAligned = (count + BLOCK_NUM - 1) // BLOCK_NUM * BLOCK_NUM
            repeat = countAligned // BLOCK_NUM
            SetVectorMask(T, 0, (1 << BLOCK_NUM) - 1)
            PipeBarrier(PIPE_V)
            for i in range(repeat - 1):
                Adds(dstLocal[(i + 1) * BLOCK_NUM], dstLocal[i * BLOCK_NUM],
                     int(float(diffValue) * float(BLOCK_NUM)), MASK_PLACEHOLDER, 1,
                     addsParamsStride1, isSetMask=False)
                PipeBarrier(PIPE_V)
    else:
        GetBaseArithProgressionSupportInt32(T, dstLocal, firstValue, diffValue, count)


def DataCopyB64(dstLocal, srcGlobal, dataCopyParams, padParams) -> None:
    """GM->UB copy of 64-bit data as 32-bit words (``blockLen`` is in bytes)."""
    DataCopyPadGm2UBImpl(dstLocal.GetPhyAddr(), srcGlobal.GetPhyAddr(), dataCopyParams,
                         padParams)
