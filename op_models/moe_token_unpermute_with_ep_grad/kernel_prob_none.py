"""Kernel port, path A of ``MoeTokenUnpermuteWithEpGrad``: no ``probs`` (tiling key 0).

A pure row scatter: for every accepted flat position ``q`` the grad row of token ``q // K`` is
written to local row ``sorted_indices[q] - start`` of ``permuted_tokens_grad``, chunk by hidden
chunk. Only MTE2, MTE3 and the scalar unit work; the V pipe merely relays the row-id queue's
implicit flags (spec §5).

Provenance
----------
Upstream: github.com/hicann/ops-transformer, ``moe/moe_token_unpermute_with_ep_grad/op_kernel/``

* ``moe_token_unpermute_grad_prob_none.h`` at commit
  ``c29bc1069d3252c641e2aa059ec88f392d3f05ac`` ("V0");
* ``moe_token_unpermute_grad_prob_none_with_ep.h`` at commit
  ``0d8dd3e0afdb858d04d9eaa98bac5f74698e9d7e`` ("V3": renamed header, same logic).

Our own Python from the operator specification (§5) and a side-by-side reading of upstream;
class, method, member and local names and the loop nesting follow upstream, comments are ours.

Deviations from upstream
------------------------
1. Template parameters ``<OriT, IdxT>`` are constructor arguments.
2. ``EnQue<VECIN, VECOUT, T>`` / ``DeQue<VECIN, VECOUT, T>`` take their positions as trailing
   arguments (the simulator's ``TQueBind`` signature); they select nothing the queue does not
   already know.
3. The ``uint16_t`` loop count ``indicesLoopNum`` is masked to 16 bits and the ``uint32_t``
   hidden-chunk values are plain ints: the wrap is reproduced but never reached with A2/A3 UB
   sizes (spec §3.11, §9 #8).
4. ``GetValue`` returns a numpy scalar from the functional image; it is turned into a Python int
   (upstream: an implicit ``IdxT`` to ``int64_t`` conversion).
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    GM_ADDR,
    DataCopyExtParams,
    DataCopyPad,
    LocalTensor,
    TPosition,
    TQue,
    TQueBind,
)
from op_models.moe_token_unpermute_with_ep_grad.kernel_base import (
    BLOCK_SIZE_32,
    DOUBLE_BUFFER,
    MoeTokenUnpermuteGradBase,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import TilingData


class MoeTokenUnpermuteGradProbNone(MoeTokenUnpermuteGradBase):
    """``MoeTokenUnpermuteGradProbNone<OriT, IdxT>``: queue-driven row copy (spec §5.2)."""

    def __init__(self, OriT, IdxT) -> None:
        super().__init__(OriT, IdxT)
        # grad rows in, permuted-grad rows out of the same buffer: MTE2 -> MTE3 queue
        self.inOutque = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1, name="inOutque")
        # sorted_indices chunk, 2 buffers deep: MTE2 -> V queue
        self.inQueueRowIdMap = TQue(TPosition.VECIN, DOUBLE_BUFFER, name="inQueueRowIdMap")
        self.inOutLocal: LocalTensor | None = None
        self.inQueueRowIdMapLocal: LocalTensor | None = None
        self.copyParams = DataCopyExtParams(0, 0, 0, 0, 0)

    def Init(self, permuted_tokens: GM_ADDR | None, unpermuted_tokens_grad: GM_ADDR | None,
             sorted_indices: GM_ADDR | None, probs: GM_ADDR | None,
             permuted_tokens_grad: GM_ADDR | None, probs_grad: GM_ADDR | None,
             tilingData: TilingData) -> None:
        """Base init, then the two queues (row ids first, data second; spec §5.1)."""
        super().Init(permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs,
                     permuted_tokens_grad, probs_grad, tilingData)
        self.pipe.InitBuffer(self.inQueueRowIdMap, DOUBLE_BUFFER,
                             self.indicesReserveNum * self.rowIdMapTypeSize)
        self.pipe.InitBuffer(
            self.inOutque, DOUBLE_BUFFER,
            (self.inputReserveNum // self.topK * self.hiddenSizeAlign) * self.inputTypeSize)

    def Process(self) -> None:
        """Outer loop over chunks of whole tokens' flat positions, inner loop over hidden
        chunks; one MTE3 row copy per accepted position (spec §5.2)."""
        indicesEachLoop = self.indicesReserveNum // self.topK * self.topK
        indicesLoopTimes = 0
        indicesLastLoop = 0
        indicesCoreNum = 0
        if self.coreIndex < self.formerCoreNum:
            indicesLoopTimes = (self.rowIdMapEachCore + indicesEachLoop - 1) // indicesEachLoop
            indicesLastLoop = self.rowIdMapEachCore - indicesEachLoop * (indicesLoopTimes - 1)
            indicesCoreNum = self.rowIdMapEachCore
        else:
            indicesLoopTimes = (self.rowIdMapTailCore + indicesEachLoop - 1) // indicesEachLoop
            indicesLastLoop = self.rowIdMapTailCore - indicesEachLoop * (indicesLoopTimes - 1)
            indicesCoreNum = self.rowIdMapTailCore
        del indicesCoreNum  # computed but unused upstream as well
        inputBlockNum = BLOCK_SIZE_32 // self.inputTypeSize

        for indicesLoopTime in range(indicesLoopTimes):
            # kept in a 16-bit variable upstream (deviation 3)
            indicesLoopNum = (
                indicesLastLoop if indicesLoopTime == indicesLoopTimes - 1 else indicesEachLoop
            ) & 0xFFFF
            rowIdMapLoopOffset = self.rowIdMapStartOffset + indicesLoopTime * indicesEachLoop
            # the row ids of this outer loop: one block of indicesLoopNum int32
            self.inQueueRowIdMapLocal = self.inQueueRowIdMap.AllocTensor(self.IdxT)
            self.copyParams.blockCount = 1
            self.copyParams.blockLen = indicesLoopNum * self.rowIdMapTypeSize
            self.copyParams.srcStride = 0
            DataCopyPad(self.inQueueRowIdMapLocal, self.sortedIndicesGm[rowIdMapLoopOffset],
                        self.copyParams, self.rowIdMapPadParams)
            self.inQueueRowIdMap.EnQue(self.inQueueRowIdMapLocal)
            self.inQueueRowIdMapLocal = self.inQueueRowIdMap.DeQue(self.IdxT)

            for hiddenLoop in range(self.hiddenSizeLoopTimes):
                hiddenLoopNum = (
                    self.hiddenSizeTail
                    if hiddenLoop == self.hiddenSizeLoopTimes - 1
                    else self.hiddenSizeAlign
                )
                hiddenLoopBlockLen = hiddenLoopNum * self.inputTypeSize
                hiddenLoopOffset = hiddenLoop * self.hiddenSizeAlign
                # the grad rows of this loop's tokens, one hidden chunk: strided multi-block copy
                self.inOutLocal = self.inOutque.AllocTensor(self.OriT)
                self.copyParams.blockCount = indicesLoopNum // self.topK
                self.copyParams.blockLen = hiddenLoopBlockLen
                self.copyParams.srcStride = (self.hiddenSize - hiddenLoopNum) * self.inputTypeSize
                unpermutedOutputDOffset = (
                    rowIdMapLoopOffset // self.topK * self.hiddenSize + hiddenLoopOffset
                )
                DataCopyPad(self.inOutLocal, self.unpermutedOutputDGm[unpermutedOutputDOffset],
                            self.copyParams, self.inputPadParams)
                self.inOutque.EnQue(self.inOutLocal, TPosition.VECIN, TPosition.VECOUT)
                self.inOutLocal = self.inOutque.DeQue(self.OriT, TPosition.VECIN,
                                                      TPosition.VECOUT)

                # write each accepted position's row; UB rows are padded to 32 bytes
                self.copyParams.blockCount = 1
                self.copyParams.srcStride = 0
                hiddenSizeUbAlign = (hiddenLoopNum + inputBlockNum - 1) // inputBlockNum \
                    * inputBlockNum
                for index in range(indicesLoopNum):
                    # scalar read of UB: relies on the compiler's auto-sync (spec §4.6)
                    offset = int(self.inQueueRowIdMapLocal.GetValue(index))
                    permutedTokensGradOffset = (
                        (offset - self.start) * self.hiddenSize + hiddenLoopOffset
                    )
                    inOutOffset = index // self.topK * hiddenSizeUbAlign
                    if self.start <= offset < self.end and offset < self.numOutTokens:
                        DataCopyPad(self.permutedTokensGradGm[permutedTokensGradOffset],
                                    self.inOutLocal[inOutOffset], self.copyParams)
                self.inOutque.FreeTensor(self.inOutLocal)
            self.inQueueRowIdMap.FreeTensor(self.inQueueRowIdMapLocal)


__all__ = ["MoeTokenUnpermuteGradProbNone"]
