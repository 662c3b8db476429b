"""Kernel port, path B of ``MoeTokenUnpermuteWithEpGrad``: ``probs`` given (tiling key 1).

Computes ``permuted_tokens_grad = grad * prob`` row by row and ``probs_grad`` as the fp32 dot
product of each grad row with its permuted token row, with manual double buffering over
``TBuf`` byte offsets and hard-coded event ids (spec §6).

Provenance
----------
Upstream: github.com/hicann/ops-transformer, ``moe/moe_token_unpermute_with_ep_grad/op_kernel/``

* ``moe_token_unpermute_grad_prob_not_none.h`` at commit
  ``c29bc1069d3252c641e2aa059ec88f392d3f05ac`` ("V0");
* ``moe_token_unpermute_grad_prob_not_none_with_ep.h`` at commit
  ``0d8dd3e0afdb858d04d9eaa98bac5f74698e9d7e`` ("V3": renamed header, same logic).

Our own Python from the operator specification (§6, §7) and a side-by-side reading of
upstream; class, method, member and local names, buffer order, event ids and the loop nesting
follow upstream, comments are ours. The instruction sequence is exactly upstream's, including
the fp32 ``Copy`` calls whose mask or repeat is 0 (documented no-ops on A2/A3, still issued),
the two ``PipeBarrier<PIPE_V>`` per group, the never-used V->MTE2 ids 0/1 and the MTE3->V
ids 0/1 shared by both output buffers.

Deviations from upstream
------------------------
1. Template parameters ``<OriT, IdxT, ProbT>`` are constructor arguments;
   ``if constexpr (IsSameType<T, float>)`` is a run-time test on the dtype.
2. The two scalar stack arrays ``indicesArray`` (512 x int64) and ``probsArray`` (512 x fp32)
   are Python lists; their accesses cost nothing in the replay (upstream: scalar data memory
   behind the DCache). ``probsArray`` holds the numpy float32 values, so the Muls scalar is the
   exact fp32 value.
3. ``GetValue`` returns numpy scalars from the functional image; indices become Python ints.
4. ``SetFlag`` / ``WaitFlag`` / ``PipeBarrier`` are looked up as module attributes at call time,
   so a test can wrap them (e.g. to drop one flag pair and show that the checker notices). The
   port itself calls them exactly as upstream does.
5. The unused ``inQueueRowIdMapLocal`` member is kept for the diff but never assigned.
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    CAST_NONE,
    CAST_RINT,
    EVENT_ID0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
    GM_ADDR,
    PIPE_V,
    Add,
    Cast,
    Copy,
    CopyRepeatParams,
    DataCopyExtParams,
    DataCopyPad,
    Duplicate,
    HardEvent,
    LocalTensor,
    Mul,
    Muls,
    PipeBarrier,
    SetFlag,
    TBuf,
    TPosition,
    WaitFlag,
    float32,
)
from op_models.moe_token_unpermute_with_ep_grad.kernel_base import (
    BLOCK_SIZE_256,
    DOUBLE_BUFFER,
    INDICES_PROBS_MAX_RESERVE_NUM,
    MoeTokenUnpermuteGradBase,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import TilingData


def _repeat_params() -> CopyRepeatParams:
    """The ``{1, 1, 8, 8}`` repeat parameters of every fp32 Copy: contiguous blocks."""
    return CopyRepeatParams(1, 1, 8, 8)


class MoeTokenUnpermuteGradProbNotNone(MoeTokenUnpermuteGradBase):
    """``MoeTokenUnpermuteGradProbNotNone<OriT, IdxT, ProbT>`` (spec §6.3)."""

    def __init__(self, OriT, IdxT, ProbT) -> None:
        super().__init__(OriT, IdxT, ProbT)
        self.inQueueProb = TBuf(TPosition.VECCALC, name="inQueueProb")
        self.inQueueUnpermuted = TBuf(TPosition.VECCALC, name="inQueueUnpermuted")
        self.inQueuePermutedTokens = TBuf(TPosition.VECCALC, name="inQueuePermutedTokens")
        self.outQueuePermutedTokensGrad = TBuf(TPosition.VECCALC,
                                               name="outQueuePermutedTokensGrad")
        self.outQueueProbGrad = TBuf(TPosition.VECCALC, name="outQueueProbGrad")

        self.tmpBufferPermutedTokensCast = TBuf(TPosition.VECCALC,
                                                name="tmpBufferPermutedTokensCast")
        self.tmpBufferReserve = TBuf(TPosition.VECCALC, name="tmpBufferReserve")
        self.tmpBufferUnpermutedCast = TBuf(TPosition.VECCALC, name="tmpBufferUnpermutedCast")
        self.tmpBufferProbCast = TBuf(TPosition.VECCALC, name="tmpBufferProbCast")
        self.tmpBufferProbGradCast = TBuf(TPosition.VECCALC, name="tmpBufferProbGradCast")
        self.tmpBufferPermutedTokensGrad = TBuf(TPosition.VECCALC,
                                                name="tmpBufferPermutedTokensGrad")
        self.tmpBufferProbGradReduceSum = TBuf(TPosition.VECCALC,
                                               name="tmpBufferProbGradReduceSum")

        self.inQueueUnpermutedLocal: LocalTensor | None = None
        self.inQueuePermutedTokensLocal: LocalTensor | None = None
        self.inQueueProbLocal: LocalTensor | None = None
        self.inQueueRowIdMapLocal: LocalTensor | None = None
        self.tmpBufferPermutedTokensFp32: LocalTensor | None = None
        self.tmpBufferUnpermutedFp32: LocalTensor | None = None
        self.tmpBufferProbFp32: LocalTensor | None = None
        self.tmpBufferProbGradFp32: LocalTensor | None = None
        self.tmpBufferPermutedTokensGradFp32: LocalTensor | None = None
        self.tmpBufferProbGradReduceSumFp32: LocalTensor | None = None
        self.permutedTokensGradLocal: LocalTensor | None = None
        self.probGradLocal: LocalTensor | None = None

        self.copyParams = DataCopyExtParams(1, 0, 0, 0, 0)
        self.pingPongFlagIndices = 0
        self.pingPongFlagProbs = 0
        self.pingPongFlagUnpermute = 0
        self.pingPongFlagPermuteToken = 0
        self.pingPongFlagPermuteTokenGrad = 0
        self.pingPongFlagProbsGrad = 0
        self.eventIdIndicesVMte2 = EVENT_ID0  # ids 0/1: reserved for indices, never waited on
        self.eventIdProbsVMte2 = EVENT_ID2  # ids 2/3: probs slots
        self.eventIdUnpermuteVMte2 = EVENT_ID4  # ids 4/5: grad chunk slots
        self.eventIdPermuteTokenVMte2 = EVENT_ID6  # ids 6/7: permuted-row slots
        self.eventIdVMte3 = EVENT_ID0  # ids 0/1: both output buffers (shared)

        # scalar-side copies of this outer loop's indices and fp32 probs (deviation 2)
        self.indicesArray: list[int] = [0] * INDICES_PROBS_MAX_RESERVE_NUM
        self.probsArray: list = [0.0] * INDICES_PROBS_MAX_RESERVE_NUM

    def Init(self, permuted_tokens: GM_ADDR | None, unpermuted_tokens_grad: GM_ADDR | None,
             sorted_indices: GM_ADDR | None, probs: GM_ADDR | None,
             permuted_tokens_grad: GM_ADDR | None, probs_grad: GM_ADDR | None,
             tilingData: TilingData) -> None:
        """Base init, then the twelve UB buffers in upstream order (spec §6.1)."""
        super().Init(permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs,
                     permuted_tokens_grad, probs_grad, tilingData)
        # two slots each, ping-pong by byte offset
        self.pipe.InitBuffer(self.inQueueUnpermuted,
                             DOUBLE_BUFFER * self.hiddenSizeAlign * self.inputTypeSize)
        self.pipe.InitBuffer(
            self.inQueuePermutedTokens,
            DOUBLE_BUFFER * (self.inputReserveNum * self.hiddenSizeAlign) * self.inputTypeSize)
        self.pipe.InitBuffer(self.inQueueProb,
                             DOUBLE_BUFFER * self.indicesReserveNumAlign * self.probTypeSize)
        self.pipe.InitBuffer(self.outQueueProbGrad,
                             DOUBLE_BUFFER * self.indicesReserveNumAlign * self.probTypeSize)
        self.pipe.InitBuffer(self.outQueuePermutedTokensGrad,
                             DOUBLE_BUFFER * self.hiddenSizeAlign * self.inputTypeSize)

        # fp32 work buffers
        self.pipe.InitBuffer(self.tmpBufferPermutedTokensCast, self.hiddenSizeAlign * 4)
        self.pipe.InitBuffer(self.tmpBufferReserve, BLOCK_SIZE_256)
        self.pipe.InitBuffer(self.tmpBufferUnpermutedCast, self.hiddenSizeAlign * 4)
        self.pipe.InitBuffer(self.tmpBufferProbGradReduceSum, self.indicesReserveNumAlign * 4)

        self.pipe.InitBuffer(self.tmpBufferProbCast, self.indicesReserveNumAlign * 4)
        self.pipe.InitBuffer(self.tmpBufferProbGradCast, self.indicesReserveNumAlign * 4)
        self.pipe.InitBuffer(self.tmpBufferPermutedTokensGrad, self.hiddenSizeAlign * 4)

    def Process(self) -> None:
        """Outer loop over chunks of E flat positions; per hidden chunk, per token, per group
        of R experts: load R permuted rows, then per expert write its permuted-grad chunk and
        reduce its probs-grad partial (spec §6.3)."""
        isOriFp32 = self.OriT == float32
        isProbFp32 = self.ProbT == float32
        indicesEachLoop = self.indicesReserveNum  # a multiple of topK
        inputEachLoop = self.inputReserveNum
        indicesLoopTimes = 0
        indicesLastLoop = 0
        indicesNumEachCore = 0
        topKInIndicesLastLoopTimes = 0
        topKInIndicesEachLoopTimes = 0
        permuteInTopKLoopTimes = 0
        if self.coreIndex < self.formerCoreNum:
            indicesNumEachCore = self.rowIdMapEachCore
        else:
            indicesNumEachCore = self.rowIdMapTailCore
        indicesLoopTimes = (indicesNumEachCore + indicesEachLoop - 1) // indicesEachLoop
        indicesLastLoop = indicesNumEachCore - indicesEachLoop * (indicesLoopTimes - 1)
        topKInIndicesLastLoopTimes = indicesLastLoop // self.topK
        topKInIndicesEachLoopTimes = indicesEachLoop // self.topK
        permuteInTopKLoopTimes = self.topK // self.inputReserveNum  # groups per token
        del inputEachLoop, topKInIndicesLastLoopTimes, topKInIndicesEachLoopTimes  # unused

        self.tmpBufferProbFp32 = self.tmpBufferProbCast.Get(float32)
        self.tmpBufferProbGradReduceSumFp32 = self.tmpBufferProbGradReduceSum.Get(float32)
        self.tmpBufferUnpermutedFp32 = self.tmpBufferUnpermutedCast.Get(float32)
        self.tmpBufferPermutedTokensGradFp32 = self.tmpBufferPermutedTokensGrad.Get(float32)
        self.tmpBufferPermutedTokensFp32 = self.tmpBufferPermutedTokensCast.Get(float32)
        self.tmpBufferProbGradFp32 = self.tmpBufferProbGradCast.Get(float32)

        # every buffer starts free: pre-set all V->MTE2 ids and the two MTE3->V ids
        SetFlag(HardEvent.V_MTE2, EVENT_ID0)
        SetFlag(HardEvent.V_MTE2, EVENT_ID1)
        SetFlag(HardEvent.V_MTE2, EVENT_ID2)
        SetFlag(HardEvent.V_MTE2, EVENT_ID3)
        SetFlag(HardEvent.V_MTE2, EVENT_ID4)
        SetFlag(HardEvent.V_MTE2, EVENT_ID5)
        SetFlag(HardEvent.V_MTE2, EVENT_ID6)
        SetFlag(HardEvent.V_MTE2, EVENT_ID7)
        SetFlag(HardEvent.MTE3_V, EVENT_ID0)
        SetFlag(HardEvent.MTE3_V, EVENT_ID1)
        for indicesLoop in range(indicesLoopTimes):
            indicesNumLoop = (
                indicesLastLoop if indicesLoop == indicesLoopTimes - 1 else indicesEachLoop
            )
            indicesLoopOffset = indicesLoop * indicesEachLoop
            loopOffset = self.rowIdMapStartOffset + indicesLoopOffset
            # this loop's indices, read one by one from GM by the scalar unit
            for i in range(indicesNumLoop):
                self.indicesArray[i] = int(self.sortedIndicesGm.GetValue(loopOffset + i))

            # probs in (slot = pingPongFlagProbs, ids 3 / 2), widened to fp32
            self.eventIdProbsVMte2 = EVENT_ID2 if self.pingPongFlagProbs else EVENT_ID3
            WaitFlag(HardEvent.V_MTE2, self.eventIdProbsVMte2)
            self.inQueueProbLocal = self.inQueueProb.GetWithOffset(
                self.ProbT, self.indicesReserveNumAlign,
                self.indicesReserveNumAlign * self.probTypeSize * self.pingPongFlagProbs)
            self.copyParams.blockLen = indicesNumLoop * self.probTypeSize
            DataCopyPad(self.inQueueProbLocal, self.probGm[loopOffset], self.copyParams,
                        self.probPadParams)
            SetFlag(HardEvent.MTE2_V, self.eventIdProbsVMte2)
            WaitFlag(HardEvent.MTE2_V, self.eventIdProbsVMte2)
            if isProbFp32:
                Copy(self.tmpBufferProbFp32, self.inQueueProbLocal, 64,
                     self.indicesReserveNumAlignFp32RepeatTimes, _repeat_params())
                Copy(self.tmpBufferProbFp32[self.indicesReserveNumAlignFp32TailOffset],
                     self.inQueueProbLocal[self.indicesReserveNumAlignFp32TailOffset],
                     self.indicesReserveNumAlignFp32TailMask, 1, _repeat_params())
            else:
                Cast(self.tmpBufferProbFp32, self.inQueueProbLocal, CAST_NONE, indicesNumLoop)
            SetFlag(HardEvent.V_MTE2, self.eventIdProbsVMte2)
            self.pingPongFlagProbs = 1 - self.pingPongFlagProbs
            # scalar reads of UB right after a V write: relies on auto-sync (spec §4.6)
            for i in range(indicesNumLoop):
                self.probsArray[i] = self.tmpBufferProbFp32.GetValue(i)

            # probs-grad accumulator over hidden chunks
            Duplicate(self.tmpBufferProbGradReduceSumFp32, 0.0, self.indicesReserveNumAlign)
            for hiddensizeLoop in range(self.hiddenSizeLoopTimes):
                hiddensizeLoopNum = (
                    self.hiddenSizeTail
                    if hiddensizeLoop == self.hiddenSizeLoopTimes - 1
                    else self.hiddenSizeAlign
                )
                hiddensizeLoopOffset = hiddensizeLoop * self.hiddenSizeAlign
                topKInIndicesLoopTimes = indicesNumLoop // self.topK
                for topKInIndicesLoop in range(topKInIndicesLoopTimes):
                    # grad chunk of this token in (slot = pingPongFlagUnpermute, ids 5 / 4)
                    unpermutedIndex = indicesLoopOffset // self.topK + topKInIndicesLoop
                    unpermutedOutputDloopOffset = (
                        (self.unpermutedOutputDStartOffset + unpermutedIndex) * self.hiddenSize
                        + hiddensizeLoopOffset
                    )
                    self.eventIdUnpermuteVMte2 = (
                        EVENT_ID4 if self.pingPongFlagUnpermute else EVENT_ID5
                    )
                    WaitFlag(HardEvent.V_MTE2, self.eventIdUnpermuteVMte2)
                    self.inQueueUnpermutedLocal = self.inQueueUnpermuted.GetWithOffset(
                        self.OriT, self.hiddenSizeAlign,
                        self.hiddenSizeAlign * self.inputTypeSize * self.pingPongFlagUnpermute)
                    self.copyParams.blockLen = hiddensizeLoopNum * self.inputTypeSize
                    DataCopyPad(self.inQueueUnpermutedLocal,
                                self.unpermutedOutputDGm[unpermutedOutputDloopOffset],
                                self.copyParams, self.inputPadParams)
                    SetFlag(HardEvent.MTE2_V, self.eventIdUnpermuteVMte2)
                    WaitFlag(HardEvent.MTE2_V, self.eventIdUnpermuteVMte2)
                    if isOriFp32:
                        Copy(self.tmpBufferUnpermutedFp32, self.inQueueUnpermutedLocal, 64,
                             self.hiddensizeAlignFp32RepeatTimes, _repeat_params())
                        Copy(self.tmpBufferUnpermutedFp32[self.hiddensizeAlignFp32TailOffset],
                             self.inQueueUnpermutedLocal[self.hiddensizeAlignFp32TailOffset],
                             self.hiddensizeAlignFp32TailMask, 1, _repeat_params())
                    else:
                        Cast(self.tmpBufferUnpermutedFp32, self.inQueueUnpermutedLocal,
                             CAST_NONE, hiddensizeLoopNum)
                    SetFlag(HardEvent.V_MTE2, self.eventIdUnpermuteVMte2)
                    self.pingPongFlagUnpermute = 1 - self.pingPongFlagUnpermute

                    for permuteInTopKLoop in range(permuteInTopKLoopTimes):
                        # R permuted rows in (slot = pingPongFlagPermuteToken, ids 7 / 6);
                        # rows outside the window are zero-filled by V instead
                        self.eventIdPermuteTokenVMte2 = (
                            EVENT_ID6 if self.pingPongFlagPermuteToken else EVENT_ID7
                        )
                        WaitFlag(HardEvent.V_MTE2, self.eventIdPermuteTokenVMte2)
                        PipeBarrier(PIPE_V)
                        inputLoopStartOffset = (
                            topKInIndicesLoop * self.topK
                            + permuteInTopKLoop * self.inputReserveNum
                        )
                        for inputLoop in range(self.inputReserveNum):
                            inputLoopOffset = self.indicesArray[inputLoopStartOffset + inputLoop]
                            self.inQueuePermutedTokensLocal = (
                                self.inQueuePermutedTokens.GetWithOffset(
                                    self.OriT, self.inputReserveNum * self.hiddenSizeAlign,
                                    (self.inputReserveNum * self.hiddenSizeAlign)
                                    * self.inputTypeSize * self.pingPongFlagPermuteToken))
                            if (self.start <= inputLoopOffset < self.end
                                    and inputLoopOffset < self.numOutTokens):
                                self.copyParams.blockLen = hiddensizeLoopNum * self.inputTypeSize
                                DataCopyPad(
                                    self.inQueuePermutedTokensLocal[
                                        inputLoop * self.hiddenSizeAlign],
                                    self.permutedTokensGm[
                                        (inputLoopOffset - self.start) * self.hiddenSize
                                        + hiddensizeLoopOffset],
                                    self.copyParams, self.inputPadParams)
                            else:
                                Duplicate(
                                    self.inQueuePermutedTokensLocal[
                                        inputLoop * self.hiddenSizeAlign],
                                    0, self.hiddenSizeAlign)
                        PipeBarrier(PIPE_V)
                        SetFlag(HardEvent.MTE2_V, self.eventIdPermuteTokenVMte2)

                        WaitFlag(HardEvent.MTE2_V, self.eventIdPermuteTokenVMte2)
                        for permuteLoop in range(self.inputReserveNum):
                            # permuted_tokens_grad chunk of this expert
                            indicesIndex = inputLoopStartOffset + permuteLoop
                            inputGradOffset = self.indicesArray[indicesIndex]
                            if (self.start <= inputGradOffset < self.end
                                    and inputGradOffset < self.numOutTokens):
                                Muls(self.tmpBufferPermutedTokensGradFp32,
                                     self.tmpBufferUnpermutedFp32,
                                     self.probsArray[indicesIndex], hiddensizeLoopNum)
                            else:
                                Duplicate(self.tmpBufferPermutedTokensGradFp32, 0.0,
                                          self.hiddenSizeAlign)
                            # output slot = pingPongFlagPermuteTokenGrad, ids 1 / 0
                            self.eventIdVMte3 = (
                                EVENT_ID0 if self.pingPongFlagPermuteTokenGrad else EVENT_ID1
                            )
                            WaitFlag(HardEvent.MTE3_V, self.eventIdVMte3)
                            self.permutedTokensGradLocal = (
                                self.outQueuePermutedTokensGrad.GetWithOffset(
                                    self.OriT, self.hiddenSizeAlign,
                                    self.hiddenSizeAlign * self.inputTypeSize
                                    * self.pingPongFlagPermuteTokenGrad))
                            if isOriFp32:
                                Copy(self.permutedTokensGradLocal,
                                     self.tmpBufferPermutedTokensGradFp32, 64,
                                     self.hiddensizeAlignFp32RepeatTimes, _repeat_params())
                                Copy(self.permutedTokensGradLocal[
                                         self.hiddensizeAlignFp32TailOffset],
                                     self.tmpBufferPermutedTokensGradFp32[
                                         self.hiddensizeAlignFp32TailOffset],
                                     self.hiddensizeAlignFp32TailMask, 1, _repeat_params())
                            else:
                                Cast(self.permutedTokensGradLocal,
                                     self.tmpBufferPermutedTokensGradFp32, CAST_RINT,
                                     hiddensizeLoopNum)
                            SetFlag(HardEvent.V_MTE3, self.eventIdVMte3)
                            WaitFlag(HardEvent.V_MTE3, self.eventIdVMte3)
                            self.copyParams.blockLen = hiddensizeLoopNum * self.inputTypeSize
                            if (self.start <= inputGradOffset < self.end
                                    and inputGradOffset < self.numOutTokens):
                                DataCopyPad(
                                    self.permutedTokensGradGm[
                                        (inputGradOffset - self.start) * self.hiddenSize
                                        + hiddensizeLoopOffset],
                                    self.permutedTokensGradLocal, self.copyParams)
                            SetFlag(HardEvent.MTE3_V, self.eventIdVMte3)
                            self.pingPongFlagPermuteTokenGrad = (
                                1 - self.pingPongFlagPermuteTokenGrad
                            )

                            # probs_grad partial: widen the permuted row, multiply, reduce
                            if isOriFp32:
                                Copy(self.tmpBufferPermutedTokensFp32,
                                     self.inQueuePermutedTokensLocal[
                                         permuteLoop * self.hiddenSizeAlign], 64,
                                     self.hiddensizeAlignFp32RepeatTimes, _repeat_params())
                                Copy(self.tmpBufferPermutedTokensFp32[
                                         self.hiddensizeAlignFp32TailOffset],
                                     self.inQueuePermutedTokensLocal[
                                         permuteLoop * self.hiddenSizeAlign
                                         + self.hiddensizeAlignFp32TailOffset],
                                     self.hiddensizeAlignFp32TailMask, 1, _repeat_params())
                            else:
                                Cast(self.tmpBufferPermutedTokensFp32,
                                     self.inQueuePermutedTokensLocal[
                                         permuteLoop * self.hiddenSizeAlign],
                                     CAST_NONE, hiddensizeLoopNum)
                            Mul(self.tmpBufferPermutedTokensFp32, self.tmpBufferPermutedTokensFp32,
                                self.tmpBufferUnpermutedFp32, hiddensizeLoopNum)
                            self.ReduceSumFunc(self.tmpBufferProbGradFp32[indicesIndex],
                                               self.tmpBufferPermutedTokensFp32,
                                               hiddensizeLoopNum)
                        SetFlag(HardEvent.V_MTE2, self.eventIdPermuteTokenVMte2)
                        self.pingPongFlagPermuteToken = 1 - self.pingPongFlagPermuteToken
                # accumulate this hidden chunk's partial sums
                Add(self.tmpBufferProbGradReduceSumFp32, self.tmpBufferProbGradReduceSumFp32,
                    self.tmpBufferProbGradFp32, indicesNumLoop)

            # probs_grad out (slot = pingPongFlagProbsGrad, ids 1 / 0, shared with the rows)
            self.eventIdVMte3 = EVENT_ID0 if self.pingPongFlagProbsGrad else EVENT_ID1
            WaitFlag(HardEvent.MTE3_V, self.eventIdVMte3)
            self.probGradLocal = self.outQueueProbGrad.GetWithOffset(
                self.ProbT, self.indicesReserveNumAlign,
                self.indicesReserveNumAlign * self.probTypeSize * self.pingPongFlagProbsGrad)
            if isProbFp32:
                Copy(self.probGradLocal, self.tmpBufferProbGradReduceSumFp32, 64,
                     self.indicesReserveNumAlignFp32RepeatTimes, _repeat_params())
                Copy(self.probGradLocal[self.indicesReserveNumAlignFp32TailOffset],
                     self.tmpBufferProbGradReduceSumFp32[
                         self.indicesReserveNumAlignFp32TailOffset],
                     self.indicesReserveNumAlignFp32TailMask, 1, _repeat_params())
            else:
                Cast(self.probGradLocal, self.tmpBufferProbGradReduceSumFp32, CAST_RINT,
                     indicesNumLoop)
            SetFlag(HardEvent.V_MTE3, self.eventIdVMte3)
            WaitFlag(HardEvent.V_MTE3, self.eventIdVMte3)
            self.copyParams.blockLen = indicesNumLoop * self.probTypeSize
            DataCopyPad(self.probGradGm[loopOffset], self.probGradLocal, self.copyParams)
            SetFlag(HardEvent.MTE3_V, self.eventIdVMte3)
            self.pingPongFlagProbsGrad = 1 - self.pingPongFlagProbsGrad
        # consume every pre-set / last set flag before the kernel ends
        WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID1)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID2)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID3)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID4)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID5)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID6)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID7)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID1)


__all__ = ["MoeTokenUnpermuteGradProbNotNone"]
