"""The two sort kernels of ``MoeTokenPermuteWithEp``: ``MoeSortOneCore`` and ``MoeSortMultiCore``.

What they compute: the stable ascending order of ``N * K`` integer keys. The keys become fp32
(exact below 2**24, the tiling's SORT_LIMIT_LENGTH), are negated (the hardware sorts
descending), padded with -3.4e38 to a multiple of 32, and sorted with their positions as uint32
indices; the sorted indices are written out as int32. The kernel entry runs a sort twice: on the
expert ids (giving ``order``, the row each permuted slot comes from) and then on ``order``
itself (giving ``sorted_indices``, the slot each row goes to: the inverse permutation).

One core (tiling key 1 / 3 / 5 / 7): all keys in one UB, one full ``Sort``, ``Extract``, copy
out, ``SyncAll``. Several cores (2 / 4 / 6 / 8): each core sorts loops of at most
``oneLoopMaxElements`` keys into (score, index) structures in workspace (VBS), merges its own
loops four at a time (``OneCoreVMSProcess``), then ``SyncAll``; middle rounds merge the cores'
lists four at a time on several cores (VMS, a ``SyncAll`` per round); core 0 merges the last
(at most four) lists, extracting the indices as it goes (``SortOutProcess``), ``SyncAll``. Every
merge is a ``MoeMrgsort`` with exhausted suspension: how far each list advances depends on the
values merged, so these phases need a record with numerics (``api.NUMERIC_KEYS``).

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``, ``moe/moe_token_permute_with_ep/op_kernel/``
``moe_sort_base_with_ep.h`` (``MoeSortBase``), ``moe_sort_one_core_with_ep.h``,
``moe_sort_multi_core_with_ep.h``. Our own Python from a side-by-side reading: class, method and
member names and the statement order follow upstream; comments are ours.

Deviations from upstream
------------------------
1. Template parameters are constructor arguments: ``T`` (the key dtype, int32 or int64).
2. C++ reference arguments (``Concat``'s concat tensor) are rebound in place; a
   default-constructed ``LocalTensor<float>`` is ``LocalTensor(float32)``.
3. ``MrgSort``'s template flag ``isExhaustedSuspension`` is a keyword argument.
4. Unused members of upstream (``debugGm*``, ``expertForSourceRowGmB32``, ``tempBuffer``,
   ``sourceRowGm``, ``CleanWSCache``) are left out; ``expandDstToSrcRowGm`` (set, never used)
   is kept for the eye.
"""

from __future__ import annotations

from aicore_sim import as_dtype
from aicore_sim.ascendc import (
    CAST_ROUND,
    PIPE_V,
    Adds,
    ArithProgression,
    Cast,
    Concat,
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    DataCopyParams,
    Duplicate,
    Extract,
    GetBlockIdx,
    GetSortLen,
    GlobalTensor,
    LocalTensor,
    Muls,
    PipeBarrier,
    Sort,
    TBuf,
    TPipe,
    TPosition,
    TQue,
    float32,
    int32,
    int64,
    uint32,
)
from aicore_sim.ascendc import SyncAll as _AscendCSyncAll
from op_models.moe_token_permute_with_ep.kernel_common import (
    MIN_FP32,
    ONE_BLK_SIZE,
    ONE_REPEAT_SORT_NUM,
    Align,
    ArithProgressionSupportInt32,
    Ceil,
    DataCopyB64,
    Max,
)
from op_models.moe_token_permute_with_ep.kernel_mrgsort import (
    MoeMrgsort,
    MoeMrgsortOut,
    MoeMrgsortParam,
)

_UINT64_MAX = (1 << 64) - 1


def _tail_mask(duplicateNum: int) -> list[int]:
    """``mask[2]`` selecting lanes ``[duplicateNum, 32)`` of one repeat."""
    mask0 = (_UINT64_MAX << duplicateNum) & _UINT64_MAX
    mask0 = mask0 & (_UINT64_MAX >> ONE_REPEAT_SORT_NUM)
    return [mask0, 0]


class MoeSortBase:
    """Queues, buffers and sizes shared by the two sorts."""

    SYNC_GM_NUM = 2
    WORK_GM_NUM = 2
    DST_BLK_STRIDE = 1
    DST_REP_STRIDE = 8

    def __init__(self) -> None:
        self.pipe: TPipe | None = None
        self.sortDataCopyInQueue = TQue(TPosition.VECIN, 1, name="sortDataCopyInQueue")
        self.sortDataCopyOutQueue = TQue(TPosition.VECOUT, 1, name="sortDataCopyOutQueue")
        self.sortedBuffer = TBuf(TPosition.VECCALC, name="sortedBuffer")
        self.expandDstToSrcRowGm = GlobalTensor(int32)
        self.tileLength = 0
        self.bufferNum = 1
        self.totalLength = 0
        self.coreNum = 0

    def SyncAll(self) -> None:
        if self.coreNum == 1:
            return
        _AscendCSyncAll()


class MoeSortOneCore(MoeSortBase):
    """``MoeSortOneCore<T>``: every key in one UB on core 0."""

    def __init__(self, T) -> None:
        super().__init__()
        self.T = as_dtype(T)
        self.sortNum = 0
        self.indexBuffer = TBuf(TPosition.VECCALC, name="indexBuffer")
        self.indexLocal: LocalTensor | None = None
        self.expertForSourceRowGm = GlobalTensor(self.T)
        self.sortedExpertForSourceRowGm = GlobalTensor(int32)

    def CopyIn(self) -> None:
        """Keys into UB (int64 as 32-bit words), positions 0..n-1 as the indices."""
        T = self.T
        inLocal = self.sortDataCopyInQueue.AllocTensor(T)
        dataCopyParams = DataCopyExtParams(1, self.totalLength * T.itemsize, 0, 0, 0)
        dataCopyPadParams = DataCopyPadExtParams(False, 0, 0, 0)
        if T == int64:
            DataCopyB64(inLocal, self.expertForSourceRowGm, dataCopyParams, dataCopyPadParams)
        else:
            DataCopyPad(inLocal, self.expertForSourceRowGm, dataCopyParams, dataCopyPadParams)
        self.sortDataCopyInQueue.EnQue(inLocal)
        PipeBarrier(PIPE_V)
        ArithProgression(self.indexLocal, 0, 1, self.totalLength)
        PipeBarrier(PIPE_V)

    def SortCompute(self) -> None:
        """fp32 keys in place, negated, tail padded; Sort; Extract into the out queue."""
        inLocal = self.sortDataCopyInQueue.DeQue(self.T)
        expertForSourceRowLocal = inLocal[0]
        expertForSourceRowLocalFp32 = expertForSourceRowLocal.ReinterpretCast(float32)
        Cast(expertForSourceRowLocalFp32, expertForSourceRowLocal, CAST_ROUND, self.tileLength)
        PipeBarrier(PIPE_V)
        Muls(expertForSourceRowLocalFp32, expertForSourceRowLocalFp32, -1.0, self.tileLength)
        PipeBarrier(PIPE_V)

        duplicateNum = self.totalLength % ONE_REPEAT_SORT_NUM
        if duplicateNum > 0:
            duplicateIndex = self.totalLength - duplicateNum
            Duplicate(expertForSourceRowLocalFp32[duplicateIndex], MIN_FP32,
                      _tail_mask(duplicateNum), 1, self.DST_BLK_STRIDE, self.DST_REP_STRIDE)

        concatLocal = LocalTensor(float32)
        outLocal = self.sortDataCopyOutQueue.AllocTensor(float32)
        Concat(concatLocal, expertForSourceRowLocalFp32, outLocal,
               self.sortNum // ONE_REPEAT_SORT_NUM)
        sortedLocal = self.sortedBuffer.Get(float32, GetSortLen(float32, self.sortNum))
        sourceRowLocal = self.indexLocal.ReinterpretCast(uint32)
        Sort(sortedLocal, concatLocal, sourceRowLocal, outLocal,
             self.sortNum // ONE_REPEAT_SORT_NUM, True)

        sortedExpertForSourceRowLocal = outLocal[0]
        expandDstToSrcRowLocal = outLocal[self.sortNum].ReinterpretCast(uint32)
        Extract(sortedExpertForSourceRowLocal, expandDstToSrcRowLocal, sortedLocal,
                self.sortNum // ONE_REPEAT_SORT_NUM)
        self.sortDataCopyOutQueue.EnQue(outLocal)
        self.sortDataCopyInQueue.FreeTensor(inLocal)

    def CopyOut(self) -> None:
        """The sorted positions (int32) to GM."""
        outLocal = self.sortDataCopyOutQueue.DeQue(int32)
        intriParams = DataCopyParams(1, self.totalLength * int32.itemsize, 0, 0)
        DataCopyPad(self.sortedExpertForSourceRowGm, outLocal[self.sortNum], intriParams)
        self.sortDataCopyOutQueue.FreeTensor(outLocal)

    def Init(self, expertForSourceRow, sortedExpertForSourceRow, workspace, tilingData,
             tPipe: TPipe) -> None:
        self.tileLength = Align(tilingData.vbsComputeParamsOp.lastCorePerLoopElements,
                                int32.itemsize)
        self.sortNum = Ceil(self.tileLength, ONE_REPEAT_SORT_NUM) * ONE_REPEAT_SORT_NUM
        self.totalLength = tilingData.n * tilingData.topK
        self.coreNum = tilingData.coreNum
        self.pipe = tPipe

        self.expertForSourceRowGm.SetGlobalBuffer(expertForSourceRow, self.tileLength)
        self.sortedExpertForSourceRowGm.SetGlobalBuffer(sortedExpertForSourceRow,
                                                        self.tileLength)
        self.expandDstToSrcRowGm.SetGlobalBuffer(workspace, self.tileLength)

        kvFactor = 2  # key and value
        indexBufferSize = self.sortNum * int32.itemsize
        sortDataBufferSize = indexBufferSize * int64.itemsize // int32.itemsize
        buffSize = indexBufferSize * kvFactor
        self.pipe.InitBuffer(self.sortDataCopyInQueue, self.bufferNum, sortDataBufferSize)
        self.pipe.InitBuffer(self.indexBuffer, indexBufferSize)
        self.pipe.InitBuffer(self.sortDataCopyOutQueue, self.bufferNum, buffSize)
        self.pipe.InitBuffer(self.sortedBuffer, buffSize)
        self.indexLocal = self.indexBuffer.Get(int32)

    def Process(self) -> None:
        if GetBlockIdx() < 1:
            self.CopyIn()
            self.SortCompute()
            self.CopyOut()
        _AscendCSyncAll()


class MoeSortMultiCore(MoeSortBase):
    """``MoeSortMultiCore<T>``: VBS on ``needCoreNum`` cores, VMS rounds, sort-out on core 0."""

    MAX_MRGSORT_LIST = 4

    def __init__(self, T) -> None:
        super().__init__()
        self.T = as_dtype(T)
        self.BLOCK_DATA_NUM = ONE_BLK_SIZE // self.T.itemsize
        self.workspaceGms = [GlobalTensor(float32), GlobalTensor(float32)]
        self.vbsTilingData = None
        self.vmsTilingData = None
        self.sortOutTilingData = None
        self.mrgsorter = MoeMrgsort()
        self.mrgsortParam = MoeMrgsortParam()
        self.indexBuffer = TBuf(TPosition.VECCALC, name="indexBuffer")
        self.indexLocal: LocalTensor | None = None
        self.concatLocal: LocalTensor | None = None
        self.concatBuffer = TBuf(TPosition.VECCALC, name="concatBuffer")
        self.indexConcatBuffer = TBuf(TPosition.VECCALC, name="indexConcatBuffer")
        self.expertForSourceRowGm = GlobalTensor(self.T)
        self.sortedExpertForSourceRowGm = GlobalTensor(int32)
        self.expertForSourceRowLocalFp32: LocalTensor | None = None
        self.expertForSourceRow1 = None
        self.blockIdx = 0
        self.srcWsIndex = 0
        self.blockFactor = 0
        self.listNum = 0
        self.perListElements = 0
        self.lastListElements = 0
        self.sortTotalLength = 0
        self.sortCoreLoops = 0
        self.sortCoreLoopElements = 0
        self.sortCoreLastLoopElements = 0

    # -- VBS: sort each loop of this core's keys into workspace ------------------------------

    def VBSCopyIn(self, progress: int, size: int, sortNum: int) -> None:
        T = self.T
        inLocal = self.sortDataCopyInQueue.AllocTensor(T)
        inOffset = progress * self.sortCoreLoopElements
        dataCopyParams = DataCopyExtParams(1, size * T.itemsize, 0, 0, 0)
        dataCopyPadParams = DataCopyPadExtParams(False, 0, 0, 0)
        if T == int64:
            DataCopyB64(inLocal, self.expertForSourceRowGm[inOffset], dataCopyParams,
                        dataCopyPadParams)
        else:
            DataCopyPad(inLocal, self.expertForSourceRowGm[inOffset], dataCopyParams,
                        dataCopyPadParams)
        PipeBarrier(PIPE_V)
        self.sortDataCopyInQueue.EnQue(inLocal)

    def UBSortCompute(self, progress: int, size: int, sortNum: int) -> None:
        sortDataLocal = self.sortDataCopyInQueue.DeQue(self.T)
        self.expertForSourceRowLocalFp32 = self.concatLocal
        fp32 = self.expertForSourceRowLocalFp32
        Cast(fp32, sortDataLocal, CAST_ROUND, size)
        self.sortDataCopyInQueue.FreeTensor(sortDataLocal)
        PipeBarrier(PIPE_V)
        Muls(fp32, fp32, -1.0, sortNum)
        PipeBarrier(PIPE_V)

        duplicateNum = size % ONE_REPEAT_SORT_NUM
        if duplicateNum > 0:
            duplicateIndex = size - duplicateNum
            Duplicate(fp32[duplicateIndex], MIN_FP32, _tail_mask(duplicateNum), 1,
                      self.DST_BLK_STRIDE, self.DST_REP_STRIDE)
        PipeBarrier(PIPE_V)

        sortedLocal = self.sortedBuffer.Get(float32, GetSortLen(float32, sortNum))
        outLocal = self.sortDataCopyOutQueue.AllocTensor(float32)
        sourceRowLocal = self.indexLocal.ReinterpretCast(uint32)
        PipeBarrier(PIPE_V)
        Sort(outLocal, fp32, sourceRowLocal, sortedLocal, sortNum // ONE_REPEAT_SORT_NUM, True)
        self.sortDataCopyOutQueue.EnQue(outLocal)

    def VBSCopyOut(self, progress: int, size: int, sortNum: int) -> None:
        outLocal = self.sortDataCopyOutQueue.DeQue(float32)
        offset = (self.blockIdx * GetSortLen(float32, self.vbsTilingData.perCoreElements)
                  + GetSortLen(float32, progress * self.sortCoreLoopElements))
        DataCopy(self.workspaceGms[self.srcWsIndex][offset], outLocal,
                 Align(GetSortLen(float32, size), float32.itemsize))
        self.sortDataCopyOutQueue.FreeTensor(outLocal)

    # -- merges ------------------------------------------------------------------------------

    def InitMoeMrgSort(self, sorter: MoeMrgsort, listNum: int, coreOffset: int,
                       loopOffset: int) -> None:
        srcWsGm = self.workspaceGms[self.srcWsIndex][self.blockIdx * coreOffset + loopOffset]
        inLocal = self.sortedBuffer.Get(float32)
        outLocal = self.sortDataCopyOutQueue.AllocTensor(float32)
        for i in range(listNum):
            inLocalT = inLocal[GetSortLen(float32, self.sortOutTilingData.oneLoopMaxElements)
                               * i]
            sorter.SetInput(srcWsGm, inLocalT)
        dstWsGm = self.workspaceGms[1 - self.srcWsIndex][self.blockIdx * coreOffset
                                                        + loopOffset]
        sorter.SetOutput(dstWsGm, outLocal)
        self.sortDataCopyOutQueue.FreeTensor(outLocal)

    def InitMoeMrgSortOut(self, sorter: MoeMrgsortOut, listNum: int, coreOffset: int) -> None:
        srcWsGm = self.workspaceGms[self.srcWsIndex]
        inLocal = self.indexConcatBuffer.Get(float32)
        outLocal = self.sortDataCopyOutQueue.AllocTensor(float32)
        oneLoop = self.sortOutTilingData.oneLoopMaxElements
        for i in range(listNum):
            inLocalT = inLocal[GetSortLen(float32, oneLoop) * i]
            sorter.SetInput(srcWsGm, inLocalT)
        outLocalV = outLocal[oneLoop * self.MAX_MRGSORT_LIST]
        sorter.SetOutput(self.sortedExpertForSourceRowGm, self.sortedExpertForSourceRowGm,
                         outLocal, outLocalV)
        tempBuffer = self.sortedBuffer.Get(float32, GetSortLen(float32, oneLoop)
                                           * self.MAX_MRGSORT_LIST)
        sorter.SetBuffer(tempBuffer)
        self.sortDataCopyOutQueue.FreeTensor(outLocal)

    def OneCoreVMSProcess(self, listNum: int, perListElements: int,
                          lastListElements: int) -> None:
        """Merge this core's sorted loops four at a time until one list is left."""
        coreOffset = GetSortLen(float32, self.vbsTilingData.perCoreElements)
        self.mrgsortParam.oneLoopMaxElements = self.sortOutTilingData.oneLoopMaxElements
        M = self.MAX_MRGSORT_LIST
        while listNum >= 1:
            loops = (listNum + M - 1) // M
            remainListNum = listNum - (loops - 1) * M
            self.mrgsortParam.perListElements = perListElements
            self.mrgsortParam.lastListElements = perListElements
            loopOffset = GetSortLen(float32, self.mrgsortParam.perListElements * M)
            for loop in range(loops - 1):
                self.InitMoeMrgSort(self.mrgsorter, M, coreOffset, loop * loopOffset)
                self.mrgsorter.Init(self.mrgsortParam)
                self.mrgsorter.Process()
            self.mrgsortParam.perListElements = perListElements
            self.mrgsortParam.lastListElements = lastListElements
            self.InitMoeMrgSort(self.mrgsorter, remainListNum, coreOffset,
                                (loops - 1) * loopOffset)
            self.mrgsorter.Init(self.mrgsortParam)
            self.mrgsorter.Process()

            listNum = loops
            lastListElements = perListElements * (remainListNum - 1) + lastListElements
            perListElements = perListElements * M
            self.srcWsIndex = (self.srcWsIndex + 1) % self.WORK_GM_NUM
            if loops == 1:
                break

    def UBSortProcess(self, progress: int, size: int, sortNum: int) -> None:
        self.VBSCopyIn(progress, size, sortNum)
        self.UBSortCompute(progress, size, sortNum)
        self.VBSCopyOut(progress, size, sortNum)

    def VBSProcess(self) -> None:
        if self.blockIdx < self.vbsTilingData.needCoreNum:
            sortNum = Ceil(self.sortCoreLoopElements, ONE_REPEAT_SORT_NUM) * ONE_REPEAT_SORT_NUM
            ArithProgressionSupportInt32(int32, self.indexLocal,
                                         self.blockIdx * self.blockFactor, 1,
                                         self.sortCoreLoopElements)
            for loop in range(self.sortCoreLoops - 1):
                self.UBSortProcess(loop, self.sortCoreLoopElements, sortNum)
                PipeBarrier(PIPE_V)
                Adds(self.indexLocal, self.indexLocal, self.sortCoreLoopElements,
                     self.sortCoreLoopElements)
            sortNum = Ceil(self.sortCoreLastLoopElements, ONE_REPEAT_SORT_NUM) \
                * ONE_REPEAT_SORT_NUM
            self.UBSortProcess(self.sortCoreLoops - 1, self.sortCoreLastLoopElements, sortNum)
            self.OneCoreVMSProcess(self.sortCoreLoops, self.sortCoreLoopElements,
                                   self.sortCoreLastLoopElements)
        _AscendCSyncAll()

    def VMSProcess(self) -> None:
        """Middle rounds: the cores' lists merged four at a time on several cores."""
        M = self.MAX_MRGSORT_LIST
        currentStageNeedCoreNum = self.vmsTilingData.needCoreNum
        self.perListElements = self.vbsTilingData.perCoreElements
        self.lastListElements = self.vbsTilingData.lastCoreElements
        self.listNum = self.vbsTilingData.needCoreNum
        while self.listNum > M:
            currentStageNeedCoreNum = Ceil(self.listNum, M)
            coreOffset = GetSortLen(float32, self.perListElements * M)
            remainListNum = self.listNum - (currentStageNeedCoreNum - 1) * M
            if self.blockIdx < currentStageNeedCoreNum - 1:
                self.mrgsortParam.perListElements = self.perListElements
                self.mrgsortParam.lastListElements = self.perListElements
                self.mrgsortParam.oneLoopMaxElements = self.sortOutTilingData.oneLoopMaxElements
                self.InitMoeMrgSort(self.mrgsorter, M, coreOffset, 0)
                self.mrgsorter.Init(self.mrgsortParam)
                self.mrgsorter.Process()
            elif self.blockIdx == currentStageNeedCoreNum - 1:
                self.mrgsortParam.perListElements = self.perListElements
                self.mrgsortParam.lastListElements = self.lastListElements
                self.mrgsortParam.oneLoopMaxElements = self.sortOutTilingData.oneLoopMaxElements
                self.InitMoeMrgSort(self.mrgsorter, remainListNum, coreOffset, 0)
                self.mrgsorter.Init(self.mrgsortParam)
                self.mrgsorter.Process()
            self.listNum = currentStageNeedCoreNum
            currentStageNeedCoreNum = Ceil(self.listNum, M)
            self.srcWsIndex = (self.srcWsIndex + 1) % self.WORK_GM_NUM
            self.lastListElements = (self.perListElements * (remainListNum - 1)
                                     + self.lastListElements)
            self.perListElements = self.perListElements * M
            _AscendCSyncAll()

    def SortOutProcess(self) -> None:
        """Core 0: the last merge, writing the sorted positions (int32) to GM."""
        if self.blockIdx < 1:
            self.mrgsortParam.perListElements = self.perListElements
            self.mrgsortParam.lastListElements = self.lastListElements
            self.mrgsortParam.oneLoopMaxElements = self.sortOutTilingData.oneLoopMaxElements
            sorter = MoeMrgsortOut(int32, int32)
            self.InitMoeMrgSortOut(sorter, self.listNum,
                                   GetSortLen(float32, self.perListElements))
            sorter.Init(self.mrgsortParam, self.pipe)
            sorter.Process()
        _AscendCSyncAll()

    def Init(self, expertForSourceRow, sortedExpertForSourceRow, workspace, tilingData,
             tPipe: TPipe) -> None:
        self.expertForSourceRow1 = expertForSourceRow
        self.totalLength = tilingData.n * tilingData.topK
        self.coreNum = tilingData.coreNum
        self.vbsTilingData = tilingData.vbsComputeParamsOp
        self.vmsTilingData = tilingData.vmsMiddleComputeParamsOp
        self.sortOutTilingData = tilingData.sortOutComputeParamsOp

        self.blockIdx = GetBlockIdx()
        self.tileLength = self.vbsTilingData.perCorePerLoopElements
        self.sortTotalLength = self.vbsTilingData.perCoreElements
        if self.blockIdx == tilingData.vbsComputeParamsOp.needCoreNum - 1:
            self.tileLength = self.vbsTilingData.lastCorePerLoopElements
            self.sortTotalLength = self.vbsTilingData.lastCoreElements
            self.sortCoreLoops = self.vbsTilingData.lastCoreLoops
            self.sortCoreLoopElements = self.vbsTilingData.lastCorePerLoopElements
            self.sortCoreLastLoopElements = self.vbsTilingData.lastCoreLastLoopElements
            self.srcWsIndex = self.vbsTilingData.lastCoreWSindex
        else:
            self.sortCoreLoops = self.vbsTilingData.perCoreLoops
            self.sortCoreLoopElements = self.vbsTilingData.perCorePerLoopElements
            self.sortCoreLastLoopElements = self.vbsTilingData.perCoreLastLoopElements

        self.pipe = tPipe
        self.blockFactor = tilingData.vbsComputeParamsOp.perCoreElements
        self.expertForSourceRowGm.SetGlobalBuffer(
            expertForSourceRow + self.blockIdx * tilingData.vbsComputeParamsOp.perCoreElements
            * self.T.itemsize, self.sortTotalLength)
        self.sortedExpertForSourceRowGm.SetGlobalBuffer(sortedExpertForSourceRow,
                                                        self.totalLength)
        kvFactor = 2
        ws_len = Align(self.totalLength, int32.itemsize) * kvFactor  # floats per workspace
        self.workspaceGms[0].SetGlobalBuffer(workspace, ws_len)
        self.workspaceGms[1].SetGlobalBuffer(workspace + ws_len * float32.itemsize, ws_len)

        indexNum = Ceil(Max(self.sortOutTilingData.oneLoopMaxElements * self.MAX_MRGSORT_LIST,
                            self.sortCoreLoopElements),
                        ONE_REPEAT_SORT_NUM) * ONE_REPEAT_SORT_NUM
        indexBufferSize = indexNum * int32.itemsize
        sortDataBufferSize = indexNum * int64.itemsize
        bufferSize = indexBufferSize * kvFactor
        self.pipe.InitBuffer(self.sortDataCopyInQueue, self.bufferNum, sortDataBufferSize)
        self.pipe.InitBuffer(self.sortDataCopyOutQueue, self.bufferNum, bufferSize)
        self.pipe.InitBuffer(self.indexConcatBuffer, bufferSize)
        self.pipe.InitBuffer(self.sortedBuffer, bufferSize)
        indexConcatLocal = self.indexConcatBuffer.Get(int32)
        self.indexLocal = indexConcatLocal
        self.concatLocal = indexConcatLocal.ReinterpretCast(float32)[indexNum]

    def Process(self) -> None:
        self.VBSProcess()
        self.VMSProcess()
        self.SortOutProcess()


__all__ = ["MoeSortBase", "MoeSortMultiCore", "MoeSortOneCore"]
