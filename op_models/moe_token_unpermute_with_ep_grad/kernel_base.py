"""Kernel port, common part of ``MoeTokenUnpermuteWithEpGrad`` (step "kernel port" of the flow).

The base class both AIV paths derive from: tiling fields, per-core start offsets, GM tensor
binding, and the fp32 reduction helpers (``BinaryAddFunc``, ``ReduceSumFunc``) of path B.

Provenance
----------
Upstream: github.com/hicann/ops-transformer, ``moe/moe_token_unpermute_with_ep_grad/op_kernel/``

* ``moe_token_unpermute_grad_base.h`` at commit ``c29bc1069d3252c641e2aa059ec88f392d3f05ac``
  ("V0");
* ``moe_token_unpermute_grad_base_with_ep.h`` at commit
  ``0d8dd3e0afdb858d04d9eaa98bac5f74698e9d7e`` ("V3": renamed header, same logic).

This is our own Python written from the project's operator specification (§4.2, §7.3) and a
side-by-side reading of the upstream header. Class, method, member and constant names, the
order of the members and the statement order follow upstream so the two can be compared by
eye; comments are ours.

Deviations from upstream
------------------------
1. Template parameters ``<OriT, IdxT, ProbT = OriT>`` are constructor arguments (numpy / ml_dtypes
   dtypes); ``sizeof(T)`` is ``dtype.itemsize``.
2. ``AlignUp`` / ``CeilDiv`` compute on Python ints; upstream's ``int32_t`` arguments never
   overflow for valid tilings (hidden chunks are far below 2^31).
3. (Withdrawn: the simulator's ``SetGlobalBuffer`` now binds a nullptr as upstream does; an
   access through such a tensor fails with a message naming it.)
4. The ``TPipe`` member is created in ``__init__`` (upstream: a member constructed with the
   object); the simulator tears it down at kernel end, as the C++ destructor does.
"""

from __future__ import annotations

from aicore_sim import as_dtype
from aicore_sim.ascendc import (
    GM_ADDR,
    Add,
    BlockReduceSum,
    DataCopyPadExtParams,
    GetBlockIdx,
    GlobalTensor,
    LocalTensor,
    TPipe,
    WholeReduceSum,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import TilingData

DOUBLE_BUFFER = 2
BUFFER_32B_CALNUM = 32 // 4  # fp32 elements in one 32-byte block
BLOCK_SIZE_512 = 512
BLOCK_SIZE_256 = 256
BLOCK_SIZE_32 = 32
FP32_ONE_REPEAT = 64
INDICES_PROBS_MAX_RESERVE_NUM = 512


class MoeTokenUnpermuteGradBase:
    """``MoeTokenUnpermuteGradBase<OriT, IdxT, ProbT>``: what both kernel paths share."""

    def __init__(self, OriT, IdxT, ProbT=None) -> None:
        if ProbT is None:
            ProbT = OriT  # template default ProbT = OriT
        self.OriT, self.IdxT, self.ProbT = as_dtype(OriT), as_dtype(IdxT), as_dtype(ProbT)
        self.pipe = TPipe()
        self.permutedTokensGm = GlobalTensor(OriT)
        self.unpermutedOutputDGm = GlobalTensor(OriT)
        self.sortedIndicesGm = GlobalTensor(IdxT)
        self.permutedTokensGradGm = GlobalTensor(OriT)
        self.probGm = GlobalTensor(ProbT)
        self.probGradGm = GlobalTensor(ProbT)

        self.tokensNum = 0
        self.topK = 0
        self.hiddenSize = 0
        self.formerCoreNum = 0
        self.tailCoreNum = 0
        self.tokenNumEachCore = 0
        self.tokenNumTailCore = 0
        self.rowIdMapEachCore = 0
        self.rowIdMapTailCore = 0
        self.inputReserveNum = 0
        self.indicesReserveNum = 0
        self.indicesReserveNumAlign = 0
        self.coreIndex = 0
        self.rowIdMapStartOffset = 0
        self.hiddenSizeAlign = 0
        self.hiddenSizeLoopTimes = 0
        self.hiddenSizeTail = 0
        self.numOutTokens = 0
        self.unpermutedOutputDStartOffset = 0
        self.inputTypeSize = 0
        self.rowIdMapTypeSize = 0
        self.probTypeSize = 0
        self.indicesReserveNumAlignFp32RepeatTimes = 0
        self.indicesReserveNumAlignFp32TailMask = 0
        self.indicesReserveNumAlignFp32TailOffset = 0
        self.hiddensizeAlignFp32RepeatTimes = 0
        self.hiddensizeAlignFp32TailMask = 0
        self.hiddensizeAlignFp32TailOffset = 0
        self.start = 0
        self.end = 0

        # no padding value: GM->UB copies only round each block up to 32 bytes
        self.rowIdMapPadParams = DataCopyPadExtParams(False, 0, 0, 0)
        self.inputPadParams = DataCopyPadExtParams(False, 0, 0, 0)
        self.probPadParams = DataCopyPadExtParams(False, 0, 0, 0)

    # -- small integer helpers ---------------------------------------------------------------

    def AlignUp(self, a: int, b: int) -> int:
        """``a`` rounded up to a multiple of ``b`` (``a`` itself when ``b`` is 0)."""
        if b == 0:
            return a
        return (a + b - 1) // b * b

    def CeilDiv(self, a: int, b: int) -> int:
        """``ceil(a / b)`` (``a`` itself when ``b`` is 0)."""
        if b == 0:
            return a
        return (a + b - 1) // b

    # -- fp32 reduction (spec §7.3) ------------------------------------------------------------

    def BinaryAddFunc(self, tmpBuffer: LocalTensor, hiddensizeLen: int, threshold: int,
                      offset: int) -> None:
        """Halve ``tmpBuffer`` by pairwise adds until it fits ``threshold``, then fold the part
        past ``offset`` onto the front (that last Add is issued even with a count of 0)."""
        totalLen = hiddensizeLen
        halfLen = self.AlignUp(self.CeilDiv(totalLen, 2), BUFFER_32B_CALNUM)
        while totalLen > threshold:
            Add(tmpBuffer, tmpBuffer, tmpBuffer[halfLen], totalLen - halfLen)
            totalLen = halfLen
            halfLen = self.AlignUp(self.CeilDiv(totalLen, 2), BUFFER_32B_CALNUM)
        Add(tmpBuffer, tmpBuffer, tmpBuffer[offset], totalLen - offset)

    def ReduceSumFunc(self, dstBuffer: LocalTensor, tmpBuffer: LocalTensor,
                      hiddensizeLen: int) -> None:
        """Sum ``hiddensizeLen`` fp32 values of ``tmpBuffer`` (destroyed) into ``dstBuffer[0]``.

        Long rows are first folded to 4096, 512 or 64 lanes, then block sums shrink them by 8
        per pass down to 8 lanes, and one 8-lane WholeReduceSum finishes. Rows shorter than 64
        take a single masked WholeReduceSum.
        """
        if hiddensizeLen >= 4096:
            self.BinaryAddFunc(tmpBuffer, hiddensizeLen, 8192, 4096)
            BlockReduceSum(tmpBuffer, tmpBuffer, 64, 64, 1, 1, 8)  # 4096 -> 512
            BlockReduceSum(tmpBuffer, tmpBuffer, 8, 64, 1, 1, 8)  # 512 -> 64
            BlockReduceSum(tmpBuffer, tmpBuffer, 1, 64, 1, 1, 8)  # 64 -> 8
            WholeReduceSum(dstBuffer, tmpBuffer, 8, 1, 1, 1, 8)  # 8 -> 1
        elif hiddensizeLen >= 512:
            self.BinaryAddFunc(tmpBuffer, hiddensizeLen, 1024, 512)
            BlockReduceSum(tmpBuffer, tmpBuffer, 8, 64, 1, 1, 8)  # 512 -> 64
            BlockReduceSum(tmpBuffer, tmpBuffer, 1, 64, 1, 1, 8)  # 64 -> 8
            WholeReduceSum(dstBuffer, tmpBuffer, 8, 1, 1, 1, 8)  # 8 -> 1
        elif hiddensizeLen >= 64:
            self.BinaryAddFunc(tmpBuffer, hiddensizeLen, 128, 64)
            BlockReduceSum(tmpBuffer, tmpBuffer, 1, 64, 1, 1, 8)  # 64 -> 8
            WholeReduceSum(dstBuffer, tmpBuffer, 8, 1, 1, 1, 8)  # 8 -> 1
        else:
            WholeReduceSum(dstBuffer, tmpBuffer, hiddensizeLen, 1, 1, 1, 8)  # masked, < 64 lanes

    # -- Init ------------------------------------------------------------------------------------

    def Init(self, permuted_tokens: GM_ADDR | None, unpermuted_tokens_grad: GM_ADDR | None,
             sorted_indices: GM_ADDR | None, probs: GM_ADDR | None,
             permuted_tokens_grad: GM_ADDR | None, probs_grad: GM_ADDR | None,
             tilingData: TilingData) -> None:
        """Copy the tiling fields, derive the fp32 Copy split points, bind GM, find this core's
        first token and first flat position (spec §3.5, §4.2)."""
        self.tokensNum = tilingData.tokensNum
        self.topK = tilingData.topK
        self.hiddenSize = tilingData.hiddenSize
        self.formerCoreNum = tilingData.formerCoreNum
        self.tailCoreNum = tilingData.tailCoreNum
        self.tokenNumEachCore = tilingData.tokenNumEachCore
        self.tokenNumTailCore = tilingData.tokenNumTailCore
        self.rowIdMapEachCore = tilingData.rowIdMapEachCore
        self.rowIdMapTailCore = tilingData.rowIdMapTailCore
        self.hiddenSizeAlign = tilingData.hiddenSizeAlign
        self.hiddenSizeLoopTimes = tilingData.hiddenSizeLoopTimes
        self.hiddenSizeTail = tilingData.hiddenSizeTail
        self.inputReserveNum = tilingData.inputReserveNum  # permuted rows per group (path B)
        self.indicesReserveNum = tilingData.indicesReserveNum  # flat positions per outer loop
        self.indicesReserveNumAlign = tilingData.indicesReserveNumAlign  # ... rounded to 32 B
        self.numOutTokens = tilingData.numOutTokens
        self.start = tilingData.start
        self.end = tilingData.end

        self.coreIndex = GetBlockIdx()
        self.inputTypeSize = self.OriT.itemsize
        self.rowIdMapTypeSize = self.IdxT.itemsize
        self.probTypeSize = self.ProbT.itemsize
        # fp32 Copy calls are split into full 64-lane repeats plus one masked tail repeat
        self.indicesReserveNumAlignFp32RepeatTimes = self.indicesReserveNumAlign // FP32_ONE_REPEAT
        self.indicesReserveNumAlignFp32TailMask = self.indicesReserveNumAlign % FP32_ONE_REPEAT
        self.indicesReserveNumAlignFp32TailOffset = (
            self.indicesReserveNumAlignFp32RepeatTimes * FP32_ONE_REPEAT
        )
        self.hiddensizeAlignFp32RepeatTimes = self.hiddenSizeAlign // FP32_ONE_REPEAT
        self.hiddensizeAlignFp32TailMask = self.hiddenSizeAlign % FP32_ONE_REPEAT
        self.hiddensizeAlignFp32TailOffset = self.hiddensizeAlignFp32RepeatTimes * FP32_ONE_REPEAT

        self.permutedTokensGm.SetGlobalBuffer(permuted_tokens)
        self.unpermutedOutputDGm.SetGlobalBuffer(unpermuted_tokens_grad)
        self.sortedIndicesGm.SetGlobalBuffer(sorted_indices)
        self.permutedTokensGradGm.SetGlobalBuffer(permuted_tokens_grad)
        self.probGm.SetGlobalBuffer(probs)
        self.probGradGm.SetGlobalBuffer(probs_grad)

        if self.coreIndex < self.formerCoreNum:
            self.rowIdMapStartOffset = self.coreIndex * self.rowIdMapEachCore
            self.unpermutedOutputDStartOffset = self.coreIndex * self.tokenNumEachCore
        else:
            self.rowIdMapStartOffset = (
                self.formerCoreNum * self.rowIdMapEachCore
                + (self.coreIndex - self.formerCoreNum) * self.rowIdMapTailCore
            )
            self.unpermutedOutputDStartOffset = (
                self.formerCoreNum * self.tokenNumEachCore
                + (self.coreIndex - self.formerCoreNum) * self.tokenNumTailCore
            )


__all__ = [
    "BLOCK_SIZE_256",
    "BLOCK_SIZE_32",
    "BLOCK_SIZE_512",
    "BUFFER_32B_CALNUM",
    "DOUBLE_BUFFER",
    "FP32_ONE_REPEAT",
    "INDICES_PROBS_MAX_RESERVE_NUM",
    "MoeTokenUnpermuteGradBase",
]
