"""The index-copy kernels of ``MoeTokenPermuteWithEp``: ``MoeindexCopyOp`` (whole rows) and
``MoeindexCopySpiltDOp`` (rows in chunks, when two rows do not fit in UB).

After the sorts, ``sorted_indices[q]`` is the permuted row of slot ``q = token * K + k``. Each
core takes a contiguous range of tokens (the first ``frontCoreNum`` cores ``coreCalcNum`` each,
the others ``coreCalcTail``), loads their slot ids (and probs) in loops, and for every slot reads
its row id with the scalar unit and copies the token's row to ``permute_tokens[id - start]``
(and its prob to ``permute_probs[id - start]``) when ``start <= id < start + numOutTokens``
(``ifNumOutTokens``, tiling key + 4), or to ``permute_tokens[id]`` unconditionally when every
row is kept. Whole rows: several rows per GM->UB copy (each row 32-byte aligned in UB), one
UB->GM copy per kept slot. Split D: one row at a time in chunks of ``oneTokenOnceMove``
elements, each chunk copied out once per kept slot.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``, ``moe/moe_token_permute_with_ep/op_kernel/``
``moe_index_copy_with_ep.h`` and ``moe_index_copy_spilt_d_with_ep.h``. Our own Python; class,
method and member names and the statement order (every SetFlag / WaitFlag / PipeBarrier)
follow upstream, comments are ours.

Deviations from upstream
------------------------
1. Template parameters ``<T, probsT, ifNumOutTokens>`` are constructor arguments.
2. ``GetValue`` of an int32 index is a numpy scalar, used as a Python int.
3. ``srcProbsGm.GetPhyAddr() == nullptr`` is ``GetPhyAddr() is None``.
4. Upstream behaviour kept as is, though it looks unintended: in the split-D kernel
   ``CopyOutProbs(innerLoop)`` reads slots ``innerLoop .. innerLoop + K - 1`` of the loop
   (``offset = progress``), not the slots of token ``innerLoop`` (``innerLoop * K ..``). Each
   (row id, prob) pair it reads belongs together, so every prob it writes is at its right
   place, but with K > 1 the slots ``L + K - 1 ..`` of a loop of L tokens are never written
   (``permute_probs`` keeps what the buffer held there). The golden does not model this; the
   tests assert it (this package's tests/test_kernel.py).
5. What the two upstream classes repeat word for word (the members, the head of ``Init``,
   the window test, the staged copy-out of one prob, the copy-out of one chunk to every slot
   of a token) is written once in a private base / helpers; the statements and their order
   are upstream's.
"""

from __future__ import annotations

from aicore_sim import as_dtype
from aicore_sim.ascendc import (
    PIPE_MTE2,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    GetBlockIdx,
    GetBlockNum,
    GetTPipePtr,
    GlobalTensor,
    HardEvent,
    PipeBarrier,
    SetFlag,
    TPosition,
    TQue,
    TQueBind,
    WaitFlag,
    int32,
)
from aicore_sim.ascendc import SyncAll as _AscendCSyncAll


class _IndexCopyBase:
    """Members and ``Init`` both upstream classes share word for word (one private base)."""

    INDICES_QUEUE_POSITION = TPosition.VECOUT

    def __init__(self, T, probsT, ifNumOutTokens: bool) -> None:
        self.T, self.probsT = as_dtype(T), as_dtype(probsT)
        self.ifNumOutTokens = bool(ifNumOutTokens)
        self.pipe = None
        self.copyInQueue = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1, name="copyInQueue")
        self.copyProbsInQueue = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1,
                                         name="copyProbsInQueue")
        self.probsTmpBuffer = TQue(TPosition.VECOUT, 1, name="probsTmpBuffer")
        self.srcGm = GlobalTensor(self.T)
        self.dstGm = GlobalTensor(self.T)
        self.srcProbsGm = GlobalTensor(self.probsT)
        self.dstProbsGm = GlobalTensor(self.probsT)
        self.probsLocal = None
        self.probsTmpLocal = None
        self.indicesGm = GlobalTensor(int32)
        self.indicesLocal = None
        self.indexCopyTilingData = None
        for name in ("cols", "colsAlign", "topK", "needCoreNum", "frontCoreNum", "tailCoreNum",
                     "coreCalcNum", "oneTokenBtypeSize", "oneProbBtypeSize",
                     "onceIndicesTokenMoveTimes", "onceUbTokenNums", "onceIndicesTokenNums",
                     "onceIndices", "oneTokenlastMove", "oneTokenOnceMove", "oneTokenMoveTimes",
                     "CoreLoop", "CoreLastTokenNums", "LastonceIndicesTokenMoveTimes",
                     "LastIndicesLastTokenNums", "numOutTokens", "start", "end",
                     "onceIndicesTokenOffset", "onceUbTokenCols", "onceUbIndicesCols",
                     "onceUbProbsCols", "coreNum", "blockIdx", "totalLength", "onceIndicesNums",
                     "onceProbsNums"):
            setattr(self, name, 0)
        self.indicesCopyParams = DataCopyExtParams()
        self.indicesCopyLastParams = DataCopyExtParams()
        self.tokenCopyParams = DataCopyExtParams()
        self.tokenCopyLastParams = DataCopyExtParams()
        self.tokenCopyOutParams = DataCopyExtParams()
        self.probsCopyParams = DataCopyExtParams()
        self.probsCopyLastParams = DataCopyExtParams()
        self.probsCopyOutParams = DataCopyExtParams()
        self.padParams = DataCopyPadExtParams(False, 0, 0, 0)
        self.indicesPadParams = DataCopyPadExtParams(False, 0, 0, 0)
        self.probsPadParams = DataCopyPadExtParams(False, 0, 0, 0)

    def SyncAll(self) -> None:
        if self.coreNum == 1:
            return
        _AscendCSyncAll()

    def _in_window(self, indicesValue: int) -> bool:
        return self.start <= indicesValue < self.start + self.numOutTokens

    def _init_fields(self, src, srcProbs, indices, dst, dstProbs, tilingData, tPipe) -> None:
        """The part of ``Init`` before the queues, identical in both classes."""
        blockNum = GetBlockNum()
        del blockNum  # read and unused upstream
        self.pipe = tPipe
        self.blockIdx = GetBlockIdx()
        self.cols = tilingData.cols
        self.colsAlign = tilingData.colsAlign
        self.topK = tilingData.topK
        ic = tilingData.indexCopyComputeParamsOp
        self.indexCopyTilingData = ic
        self.coreNum = ic.needCoreNum
        self.totalLength = ic.numOutTokens * tilingData.cols
        self.needCoreNum = ic.needCoreNum
        self.frontCoreNum = ic.frontCoreNum
        self.tailCoreNum = ic.tailCoreNum
        self.coreCalcNum = ic.coreCalcNum
        self.oneTokenBtypeSize = ic.oneTokenBtypeSize
        self.oneProbBtypeSize = ic.oneProbBtypeSize
        self.onceIndicesTokenMoveTimes = ic.onceIndicesTokenMoveTimes
        self.onceUbTokenNums = ic.onceUbTokenNums
        self.onceIndicesTokenNums = ic.onceIndicesTokenNums
        self.onceIndices = ic.onceIndices
        self.oneTokenlastMove = ic.oneTokenlastMove
        self.oneTokenOnceMove = ic.oneTokenOnceMove
        self.oneTokenMoveTimes = ic.oneTokenMoveTimes
        self.numOutTokens = ic.numOutTokens
        self.start = ic.start
        self.end = ic.end
        if self.blockIdx > self.frontCoreNum - 1:
            self.coreCalcNum = ic.coreCalcTail
            self.LastonceIndicesTokenMoveTimes = ic.tailLastonceIndicesTokenMoveTimes
            self.LastIndicesLastTokenNums = ic.tailLastIndicesLastTokenNums
            self.CoreLoop = ic.tailCoreLoop
            self.CoreLastTokenNums = ic.tailCoreLastTokenNums
            offset = (ic.coreCalcNum * self.frontCoreNum
                      + (self.blockIdx - self.frontCoreNum) * ic.coreCalcTail)
        else:
            self.coreCalcNum = ic.coreCalcNum
            self.LastonceIndicesTokenMoveTimes = ic.frontLastonceIndicesTokenMoveTimes
            self.LastIndicesLastTokenNums = ic.frontLastIndicesLastTokenNums
            self.CoreLoop = ic.frontCoreLoop
            self.CoreLastTokenNums = ic.frontCoreLastTokenNums
            offset = self.coreCalcNum * self.blockIdx
        srcoffset = offset * self.cols
        indicesoffset = offset * self.topK
        probsoffset = indicesoffset
        self.onceUbTokenCols = self.onceUbTokenNums * self.cols
        self.onceUbIndicesCols = self.onceUbTokenNums * self.topK
        self.onceUbProbsCols = self.onceUbIndicesCols

        self.srcGm.SetGlobalBuffer(src + srcoffset * self.T.itemsize, self.coreCalcNum * self.cols)
        self.indicesGm.SetGlobalBuffer(indices + indicesoffset * int32.itemsize,
                                       self.coreCalcNum * self.topK)
        self.dstGm.SetGlobalBuffer(dst, self.numOutTokens * self.cols)
        if srcProbs is not None:
            self.srcProbsGm.SetGlobalBuffer(srcProbs + probsoffset * self.probsT.itemsize,
                                            self.coreCalcNum * self.topK)
        else:
            self.srcProbsGm.SetGlobalBuffer(None)
        return None

    def _copy_out_prob(self, indicesValue: int, offset: int, dataCopyExtParams,
                       dst_index: int) -> None:
        """One prob to GM through the 32-byte staging buffer, with its two scalar flags."""
        SetFlag(HardEvent.MTE3_S, self.probsMte3ToS)
        WaitFlag(HardEvent.MTE3_S, self.probsMte3ToS)
        self.probsTmpLocal.SetValue(0, self.probsLocal.GetValue(offset))
        SetFlag(HardEvent.S_MTE3, self.probsSToMte3)
        WaitFlag(HardEvent.S_MTE3, self.probsSToMte3)
        DataCopyPad(self.dstProbsGm[dst_index], self.probsTmpLocal, dataCopyExtParams)


class MoeindexCopyOp(_IndexCopyBase):
    """``MoeindexCopyOp<T, probsT, ifNumOutTokens>``: whole rows, several per copy."""

    def __init__(self, T, probsT, ifNumOutTokens: bool) -> None:
        super().__init__(T, probsT, ifNumOutTokens)
        self.indicesBuffer = TQue(TPosition.VECOUT, 1, name="indicesBuffer")
        self.indicesMte2ToS = self.indicesSToMte2 = 0
        self.probsMte3ToS = self.probsSToMte3 = 0

    def CopyIn(self, Offset: int, dataCopyExtParams, dataCopyPadExtParams) -> None:
        inLocal = self.copyInQueue.AllocTensor(self.T)
        DataCopyPad(inLocal, self.srcGm[Offset], dataCopyExtParams, dataCopyPadExtParams)
        self.copyInQueue.EnQue(inLocal)

    def CopyInProbs(self, progress: int, dataCopyExtParams, dataCopyPadExtParams) -> None:
        self.probsLocal = self.copyProbsInQueue.AllocTensor(self.probsT)
        if self.srcProbsGm.GetPhyAddr() is None:
            return
        DataCopyPad(self.probsLocal, self.srcProbsGm[progress * self.onceProbsNums],
                    dataCopyExtParams, dataCopyPadExtParams)
        self.copyProbsInQueue.EnQue(self.probsLocal)
        self.copyProbsInQueue.DeQue(self.probsT)

    def CopyInIndices(self, progress: int, dataCopyExtParams, dataCopyPadExtParams) -> None:
        self.indicesLocal = self.indicesBuffer.AllocTensor(int32)
        DataCopyPad(self.indicesLocal, self.indicesGm[progress * self.onceIndicesNums],
                    dataCopyExtParams, dataCopyPadExtParams)

    def CopyOut(self, innerLoop: int, outTokenNum: int, dataCopyExtParams,
                dataCopyPadExtParams) -> None:
        inLocal = self.copyInQueue.DeQue(self.T)
        offset = innerLoop * self.onceUbIndicesCols
        for tokensId in range(outTokenNum):
            for _topKId in range(self.topK):
                if self.ifNumOutTokens:
                    indicesValue = int(self.indicesLocal.GetValue(offset))
                    if self._in_window(indicesValue):
                        DataCopyPad(self.dstGm[(indicesValue - self.start) * self.cols],
                                    inLocal[tokensId * self.colsAlign], dataCopyExtParams)
                else:
                    DataCopyPad(self.dstGm[int(self.indicesLocal.GetValue(offset)) * self.cols],
                                inLocal[tokensId * self.colsAlign], dataCopyExtParams)
                offset += 1
        self.copyInQueue.FreeTensor(inLocal)

    def CopyOutProbs(self, innerLoop: int, outTokenNum: int, dataCopyExtParams,
                     dataCopyPadExtParams) -> None:
        if self.srcProbsGm.GetPhyAddr() is None:
            return
        self.probsTmpLocal = self.probsTmpBuffer.AllocTensor(self.probsT)
        offset = innerLoop * self.onceUbIndicesCols
        for _tokensId in range(outTokenNum):
            for _topKId in range(self.topK):
                indicesValue = int(self.indicesLocal.GetValue(offset))
                if self.ifNumOutTokens:
                    if self._in_window(indicesValue):
                        self._copy_out_prob(indicesValue, offset, dataCopyExtParams,
                                            indicesValue - self.start)
                else:
                    self._copy_out_prob(indicesValue, offset, dataCopyExtParams, indicesValue)
                offset += 1
        self.probsTmpBuffer.FreeTensor(self.probsTmpLocal)

    def Init(self, src, srcProbs, indices, dst, dstProbs, tilingData, tPipe) -> None:
        self._init_fields(src, srcProbs, indices, dst, dstProbs, tilingData, tPipe)
        ic = self.indexCopyTilingData
        self.dstProbsGm.SetGlobalBuffer(dstProbs, self.numOutTokens)
        self.pipe.InitBuffer(self.copyInQueue, 2, ic.tokenUB)
        self.pipe.InitBuffer(self.indicesBuffer, 1, ic.indicesUB)
        self.pipe.InitBuffer(self.copyProbsInQueue, 1, ic.probsUB)
        self.pipe.InitBuffer(self.probsTmpBuffer, 1, 32)
        self.onceIndicesNums = self.onceIndicesTokenNums * self.topK
        self.onceProbsNums = self.onceIndicesNums
        self.indicesCopyParams = DataCopyExtParams(1, self.onceIndicesNums * int32.itemsize,
                                                   0, 0, 0)
        self.indicesCopyLastParams = DataCopyExtParams(
            1, self.CoreLastTokenNums * self.topK * int32.itemsize, 0, 0, 0)
        self.probsCopyParams = DataCopyExtParams(1, self.onceProbsNums * self.oneProbBtypeSize,
                                                 0, 0, 0)
        self.probsCopyLastParams = DataCopyExtParams(
            1, self.CoreLastTokenNums * self.topK * self.oneProbBtypeSize, 0, 0, 0)
        self.probsCopyOutParams = DataCopyExtParams(1, self.oneProbBtypeSize, 0, 0, 0)
        self.tokenCopyParams = DataCopyExtParams(self.onceUbTokenNums, self.oneTokenBtypeSize,
                                                 0, 0, 0)
        self.tokenCopyLastParams = DataCopyExtParams(self.LastIndicesLastTokenNums,
                                                     self.oneTokenBtypeSize, 0, 0, 0)
        self.tokenCopyOutParams = DataCopyExtParams(1, self.oneTokenBtypeSize, 0, 0, 0)
        self.indicesMte2ToS = GetTPipePtr().FetchEventID(HardEvent.MTE2_S)
        self.indicesSToMte2 = GetTPipePtr().FetchEventID(HardEvent.S_MTE2)
        self.probsMte3ToS = GetTPipePtr().FetchEventID(HardEvent.MTE3_S)
        self.probsSToMte3 = GetTPipePtr().FetchEventID(HardEvent.S_MTE3)

    def Process(self) -> None:
        outoffset = 0
        outProbsOffset = 0
        self.onceIndicesTokenOffset = self.onceIndicesTokenNums * self.cols
        if self.blockIdx < self.indexCopyTilingData.needCoreNum:
            for outLoop in range(self.CoreLoop - 1):
                self.CopyInIndices(outLoop, self.indicesCopyParams, self.indicesPadParams)
                self.CopyInProbs(outLoop, self.probsCopyParams, self.probsPadParams)
                SetFlag(HardEvent.MTE2_S, self.indicesMte2ToS)
                WaitFlag(HardEvent.MTE2_S, self.indicesMte2ToS)
                for innerLoop in range(self.onceIndicesTokenMoveTimes):
                    self.CopyIn(outoffset, self.tokenCopyParams, self.padParams)
                    self.CopyOut(innerLoop, self.onceUbTokenNums, self.tokenCopyOutParams,
                                 self.padParams)
                    self.CopyOutProbs(innerLoop, self.onceUbTokenNums, self.probsCopyOutParams,
                                      self.probsPadParams)
                    outoffset += self.onceUbTokenCols
                    outProbsOffset += self.onceUbProbsCols
                self.copyProbsInQueue.FreeTensor(self.probsLocal)
                self.indicesBuffer.FreeTensor(self.indicesLocal)
                SetFlag(HardEvent.S_MTE2, self.indicesSToMte2)
                WaitFlag(HardEvent.S_MTE2, self.indicesSToMte2)
            self.CopyInIndices(self.CoreLoop - 1, self.indicesCopyLastParams,
                               self.indicesPadParams)
            self.CopyInProbs(self.CoreLoop - 1, self.probsCopyLastParams, self.probsPadParams)
            SetFlag(HardEvent.MTE2_S, self.indicesMte2ToS)
            WaitFlag(HardEvent.MTE2_S, self.indicesMte2ToS)
            for innerLoop in range(self.LastonceIndicesTokenMoveTimes - 1):
                self.CopyIn(outoffset, self.tokenCopyParams, self.padParams)
                self.CopyOut(innerLoop, self.onceUbTokenNums, self.tokenCopyOutParams,
                             self.padParams)
                self.CopyOutProbs(innerLoop, self.onceUbTokenNums, self.probsCopyOutParams,
                                  self.probsPadParams)
                outoffset += self.onceUbTokenCols
                outProbsOffset += self.onceUbProbsCols
            self.CopyIn(outoffset, self.tokenCopyLastParams, self.padParams)
            self.CopyOut(self.LastonceIndicesTokenMoveTimes - 1, self.LastIndicesLastTokenNums,
                         self.tokenCopyOutParams, self.padParams)
            self.CopyOutProbs(self.LastonceIndicesTokenMoveTimes - 1,
                              self.LastIndicesLastTokenNums, self.probsCopyOutParams,
                              self.probsPadParams)
            self.copyProbsInQueue.FreeTensor(self.probsLocal)
            self.indicesBuffer.FreeTensor(self.indicesLocal)


class MoeindexCopySpiltDOp(_IndexCopyBase):
    """``MoeindexCopySpiltDOp<T, probsT, ifNumOutTokens>``: one row at a time, in chunks."""

    def __init__(self, T, probsT, ifNumOutTokens: bool) -> None:
        super().__init__(T, probsT, ifNumOutTokens)
        self.indicesQueue = TQue(TPosition.VECIN, 1, name="indicesQueue")
        self.indicesSToMte2 = self.indicesMte2ToV = 0
        self.probsMte3ToS = self.probsSToMte3 = 0

    def _chunk_out(self, inLocal, progress: int, chunk: int, params) -> None:
        """Chunk ``chunk`` of token ``progress``'s row to every kept slot of the token."""
        indicesOffset = progress * self.topK
        for topKId in range(self.topK):
            indicesValue = int(self.indicesLocal.GetValue(indicesOffset + topKId))
            if self.ifNumOutTokens:
                if self._in_window(indicesValue):
                    DataCopyPad(self.dstGm[(indicesValue - self.start) * self.cols
                                           + chunk * self.oneTokenOnceMove], inLocal, params)
            else:
                DataCopyPad(self.dstGm[indicesValue * self.cols + chunk * self.oneTokenOnceMove],
                            inLocal, params)

    def CopyInAndOut(self, Offset: int, progress: int) -> None:
        for inner in range(self.oneTokenMoveTimes - 1):
            inLocal = self.copyInQueue.AllocTensor(self.T)
            DataCopyPad(inLocal, self.srcGm[Offset + inner * self.oneTokenOnceMove],
                        self.tokenCopyParams, self.padParams)
            self.copyInQueue.EnQue(inLocal)
            self.copyInQueue.DeQue(self.T)
            self._chunk_out(inLocal, progress, inner, self.tokenCopyParams)
            self.copyInQueue.FreeTensor(inLocal)
        inLocal = self.copyInQueue.AllocTensor(self.T)
        DataCopyPad(inLocal, self.srcGm[Offset + (self.oneTokenMoveTimes - 1)
                                        * self.oneTokenOnceMove],
                    self.tokenCopyLastParams, self.padParams)
        self.copyInQueue.EnQue(inLocal)
        self.copyInQueue.DeQue(self.T)
        self._chunk_out(inLocal, progress, self.oneTokenMoveTimes - 1, self.tokenCopyLastParams)
        self.copyInQueue.FreeTensor(inLocal)

    def CopyInIndices(self, progress: int, dataCopyExtParams) -> None:
        self.indicesLocal = self.indicesQueue.AllocTensor(int32)
        DataCopyPad(self.indicesLocal, self.indicesGm[progress * self.onceIndicesNums],
                    dataCopyExtParams, self.indicesPadParams)

    def CopyInProbs(self, progress: int, dataCopyExtParams) -> None:
        self.probsLocal = self.copyProbsInQueue.AllocTensor(self.probsT)
        if self.srcProbsGm.GetPhyAddr() is None:
            return
        DataCopyPad(self.probsLocal, self.srcProbsGm[progress * self.onceProbsNums],
                    dataCopyExtParams, self.probsPadParams)
        self.copyProbsInQueue.EnQue(self.probsLocal)
        self.copyProbsInQueue.DeQue(self.probsT)

    def CopyOutProbs(self, progress: int, dataCopyExtParams) -> None:
        if self.srcProbsGm.GetPhyAddr() is None:
            return
        self.probsTmpLocal = self.probsTmpBuffer.AllocTensor(self.probsT)
        offset = progress  # upstream: the loop's token number, not token * K (deviation 4)
        for _topKId in range(self.topK):
            indicesValue = int(self.indicesLocal.GetValue(offset))
            if self.ifNumOutTokens:
                if self._in_window(indicesValue):
                    self._copy_out_prob(indicesValue, offset, dataCopyExtParams,
                                        indicesValue - self.start)
            else:
                self._copy_out_prob(indicesValue, offset, dataCopyExtParams, indicesValue)
            offset += 1
        self.probsTmpBuffer.FreeTensor(self.probsTmpLocal)

    def Init(self, src, srcProbs, indices, dst, dstProbs, tilingData, tPipe) -> None:
        self._init_fields(src, srcProbs, indices, dst, dstProbs, tilingData, tPipe)
        ic = self.indexCopyTilingData
        self.dstProbsGm.SetGlobalBuffer(dstProbs, self.numOutTokens * self.topK)
        self.pipe.InitBuffer(self.copyInQueue, 2, ic.tokenUB)
        self.pipe.InitBuffer(self.indicesQueue, 1, ic.indicesUB)
        self.pipe.InitBuffer(self.copyProbsInQueue, 1, ic.probsUB)
        self.pipe.InitBuffer(self.probsTmpBuffer, 1, 32)
        self.onceIndicesNums = self.onceIndicesTokenNums * self.topK
        self.onceProbsNums = self.onceIndicesNums
        self.indicesCopyParams = DataCopyExtParams(1, self.onceIndicesNums * int32.itemsize,
                                                   0, 0, 0)
        self.indicesCopyLastParams = DataCopyExtParams(
            1, self.CoreLastTokenNums * self.topK * int32.itemsize, 0, 0, 0)
        self.probsCopyParams = DataCopyExtParams(1, self.onceProbsNums * self.oneProbBtypeSize,
                                                 0, 0, 0)
        self.probsCopyLastParams = DataCopyExtParams(
            1, self.CoreLastTokenNums * self.topK * self.oneProbBtypeSize, 0, 0, 0)
        self.probsCopyOutParams = DataCopyExtParams(1, self.oneProbBtypeSize, 0, 0, 0)
        self.tokenCopyParams = DataCopyExtParams(1, self.oneTokenOnceMove * self.T.itemsize,
                                                 0, 0, 0)
        self.tokenCopyLastParams = DataCopyExtParams(1, self.oneTokenlastMove * self.T.itemsize,
                                                     0, 0, 0)
        self.tokenCopyOutParams = DataCopyExtParams(1, self.oneTokenBtypeSize, 0, 0, 0)
        self.indicesMte2ToV = GetTPipePtr().FetchEventID(HardEvent.MTE2_V)
        self.indicesSToMte2 = GetTPipePtr().FetchEventID(HardEvent.S_MTE2)
        self.probsMte3ToS = GetTPipePtr().FetchEventID(HardEvent.MTE3_S)
        self.probsSToMte3 = GetTPipePtr().FetchEventID(HardEvent.S_MTE3)

    def Process(self) -> None:
        offset = 0
        self.onceIndicesTokenOffset = self.onceIndicesTokenNums * self.cols
        if self.blockIdx < self.indexCopyTilingData.needCoreNum:
            for outLoop in range(self.CoreLoop - 1):
                self.CopyInIndices(outLoop, self.indicesCopyParams)
                self.CopyInProbs(outLoop, self.probsCopyParams)
                PipeBarrier(PIPE_MTE2)
                for innerLoop in range(self.onceIndicesTokenNums):
                    self.CopyInAndOut(offset, innerLoop)
                    self.CopyOutProbs(innerLoop, self.probsCopyOutParams)
                    offset += self.cols
                self.copyProbsInQueue.FreeTensor(self.probsLocal)
                self.indicesQueue.FreeTensor(self.indicesLocal)
                SetFlag(HardEvent.S_MTE2, self.indicesSToMte2)
                WaitFlag(HardEvent.S_MTE2, self.indicesSToMte2)
            self.CopyInIndices(self.CoreLoop - 1, self.indicesCopyLastParams)
            self.CopyInProbs(self.CoreLoop - 1, self.probsCopyLastParams)
            PipeBarrier(PIPE_MTE2)
            for innerLoop in range(self.CoreLastTokenNums):
                self.CopyInAndOut(offset, innerLoop)
                self.CopyOutProbs(innerLoop, self.probsCopyOutParams)
                offset += self.cols
            self.copyProbsInQueue.FreeTensor(self.probsLocal)
            self.indicesQueue.FreeTensor(self.indicesLocal)


__all__ = ["MoeindexCopyOp", "MoeindexCopySpiltDOp"]
