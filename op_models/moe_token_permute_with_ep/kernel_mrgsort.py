"""The merge helpers of ``MoeTokenPermuteWithEp``'s multi-core sort: ``MoeMrgsort`` (GM lists
-> merged GM list of (score, index) structures) and ``MoeMrgsortOut`` (the last merge, which
extracts the indices and writes them as int32).

Both merge up to four sorted GM lists in rounds: each round copies at most
``oneLoopMaxElements`` structures of every list that still has some into UB, merges them with
``MrgSort`` in exhausted-suspension mode (the merge stops as soon as one of the loaded pieces
runs out, so what is written is final), advances each list by what the merge took from it
(``listSortedNums``), and writes the merged piece out. A single remaining list is copied.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``, ``moe/moe_token_permute_with_ep/op_kernel/``
``moe_mrgsort_with_ep.h`` and ``moe_mrgsort_out_with_ep.h``. Our own Python; class, method and
member names and the statement order follow upstream, comments are ours.

Deviations from upstream
------------------------
1. ``MoeMrgsortOut<T, T2>``'s template types are constructor arguments (both int32 here).
2. ``MrgSort<float, true>`` is ``MrgSort(..., isExhaustedSuspension=True)``; the uint16 /
   uint32 count arrays are Python lists.
3. ``MrgSortSrcList`` takes the same four tensors as upstream (unused slots repeat list 0).
4. The members and steps both upstream classes repeat word for word (``SetInput``,
   ``UpdateMrgParam``, ``UpdateSortInfo``, ``ClearCache``, the loads of ``CopyIn``, the merge
   of ``MrgsortCompute``, the list set-up of ``Init``, the round loop of ``Process``, which only
   ``MoeMrgsortOut`` runs with an ``Extract`` step) live once in a private base; each class
   keeps its own ``CopyIn`` / ``MrgsortCompute`` / ``CopyOut`` / ``Init`` with its own flags,
   in upstream's order.
"""

from __future__ import annotations

from aicore_sim import as_dtype
from aicore_sim.ascendc import (
    DataCopy,
    DataCopyPad,
    DataCopyParams,
    GetSortLen,
    GetSortOffset,
    GetTPipePtr,
    HardEvent,
    MrgSort,
    MrgSortSrcList,
    SetFlag,
    WaitFlag,
    float32,
    int32,
    uint32,
)
from aicore_sim.ascendc import Extract as _Extract
from op_models.moe_token_permute_with_ep.kernel_common import (
    MERGE_LIST_FOUR,
    MERGE_LIST_IDX_THREE,
    MERGE_LIST_IDX_TWO,
    MERGE_LIST_THREE,
    MERGE_LIST_TWO,
    ONE_REPEAT_SORT_NUM,
    Align,
    Ceil,
    Min,
)


class MoeMrgsortParam:
    """``MoeMrgsortParam``: elements of every list but the last, of the last, per round."""

    def __init__(self) -> None:
        self.perListElements = 0
        self.lastListElements = 0
        self.oneLoopMaxElements = 0


class _MergeRounds:
    """State and steps ``MoeMrgsort`` and ``MoeMrgsortOut`` share (upstream repeats them)."""

    def __init__(self) -> None:
        self.param: MoeMrgsortParam | None = None
        self.gmInputs: list = [None] * 4
        self.ubInputs: list = [None] * 4
        self.listNum = 0
        self.remainListNum = 0
        self.outOffset = 0
        self.offsets = [0] * 4
        self.listRemainElements = [0] * 4
        self.lengths = [0] * 4
        self.allRemainElements = 0
        self.curLoopSortedNum = 0
        self.validBitTail = 0
        self.elementCountListTail = [0] * 4
        self.listSortedNums = [0] * 4
        self.tmpUbInputs: list = [None] * 4

    EXTRACTS = False  # MoeMrgsortOut: split the merged structures (Extract) before CopyOut

    def Process(self) -> None:
        """The merge rounds, until every list is used up (upstream's ``Process`` of each
        class; only ``MoeMrgsortOut``'s has the ``Extract`` step)."""
        while self.allRemainElements > 0:
            self.CopyIn()
            self.UpdateMrgParam()
            self.MrgsortCompute()
            self.UpdateSortInfo()
            if self.EXTRACTS:
                self.Extract()
            self.CopyOut()
        self.ClearCache()

    def ClearCache(self) -> None:
        self.listNum = 0
        self.allRemainElements = 0
        self.outOffset = 0

    def SetInput(self, gmInput, ubInput) -> None:
        self.gmInputs[self.listNum] = gmInput
        self.ubInputs[self.listNum] = ubInput
        self.listNum += 1

    def UpdateMrgParam(self) -> None:
        if self.remainListNum == MERGE_LIST_TWO:
            self.elementCountListTail[MERGE_LIST_IDX_TWO] = 0
            self.elementCountListTail[MERGE_LIST_IDX_THREE] = 0
            self.validBitTail = 0b0011
        elif self.remainListNum == MERGE_LIST_THREE:
            self.elementCountListTail[MERGE_LIST_IDX_THREE] = 0
            self.validBitTail = 0b0111
        elif self.remainListNum == MERGE_LIST_FOUR:
            self.validBitTail = 0b1111
        else:
            self.validBitTail = 0b0001

    def _copy_in_lists(self) -> None:
        """The loads of CopyIn after its flag: a piece of every list that has some left."""
        self.remainListNum = 0
        j = 0
        for i in range(self.listNum):
            self.lengths[i] = Min(self.param.oneLoopMaxElements, self.listRemainElements[i])
            if self.lengths[i] > 0:
                DataCopy(self.ubInputs[i], self.gmInputs[i][self.offsets[i]],
                         Align(GetSortLen(float32, self.lengths[i]), float32.itemsize))
                self.tmpUbInputs[j] = self.ubInputs[i]
                self.elementCountListTail[j] = self.lengths[i]
                self.remainListNum += 1
                j += 1

    def _merge_into(self, dst) -> None:
        """MrgsortCompute after its flag: merge the loaded pieces into ``dst`` (or copy one)."""
        t = self.tmpUbInputs
        if self.remainListNum == MERGE_LIST_TWO:
            sortListTail = MrgSortSrcList(t[0], t[1], t[0], t[0])
        elif self.remainListNum == MERGE_LIST_THREE:
            sortListTail = MrgSortSrcList(t[0], t[1], t[MERGE_LIST_IDX_TWO], t[0])
        elif self.remainListNum == MERGE_LIST_FOUR:
            sortListTail = MrgSortSrcList(t[0], t[1], t[MERGE_LIST_IDX_TWO],
                                          t[MERGE_LIST_IDX_THREE])
        else:
            DataCopy(dst, t[0], Align(GetSortLen(float32, self.elementCountListTail[0]),
                                      float32.itemsize))
            self.listSortedNums[0] = self.elementCountListTail[0]
            return
        MrgSort(dst, sortListTail, self.elementCountListTail, self.listSortedNums,
                self.validBitTail, 1, isExhaustedSuspension=True)

    def UpdateSortInfo(self) -> None:
        self.curLoopSortedNum = 0
        j = 0
        for i in range(self.listNum):
            if self.lengths[i] > 0:
                self.listRemainElements[i] -= self.listSortedNums[j]
                self.allRemainElements -= self.listSortedNums[j]
                self.offsets[i] += GetSortOffset(float32, self.listSortedNums[j])
                self.curLoopSortedNum += self.listSortedNums[j]
                j += 1

    def _init_lists(self, param: MoeMrgsortParam) -> None:
        for i in range(self.listNum):
            self.offsets[i] = GetSortOffset(float32, param.perListElements * i)
            if i == self.listNum - 1:
                self.listRemainElements[i] = param.lastListElements
            else:
                self.listRemainElements[i] = param.perListElements
            self.allRemainElements += self.listRemainElements[i]


class MoeMrgsort(_MergeRounds):
    """``MoeMrgsort``: merged (score, index) structures back to GM."""

    def __init__(self) -> None:
        super().__init__()
        self.gmOutput = None
        self.ubOutput = None

    def SetOutput(self, gmOutput, ubOutput) -> None:
        self.gmOutput = gmOutput
        self.ubOutput = ubOutput

    def CopyIn(self) -> None:
        eventIdMte3ToMte2 = GetTPipePtr().FetchEventID(HardEvent.MTE3_MTE2)
        SetFlag(HardEvent.MTE3_MTE2, eventIdMte3ToMte2)
        WaitFlag(HardEvent.MTE3_MTE2, eventIdMte3ToMte2)
        self._copy_in_lists()

    def MrgsortCompute(self) -> None:
        eventIdMte2ToV = GetTPipePtr().FetchEventID(HardEvent.MTE2_V)
        SetFlag(HardEvent.MTE2_V, eventIdMte2ToV)
        WaitFlag(HardEvent.MTE2_V, eventIdMte2ToV)
        self._merge_into(self.ubOutput)

    def CopyOut(self) -> None:
        intriParams = DataCopyParams(1, GetSortLen(float32, self.curLoopSortedNum)
                                     * float32.itemsize, 0, 0)
        eventIdVToMte3 = GetTPipePtr().FetchEventID(HardEvent.V_MTE3)
        SetFlag(HardEvent.V_MTE3, eventIdVToMte3)
        WaitFlag(HardEvent.V_MTE3, eventIdVToMte3)
        DataCopyPad(self.gmOutput[self.outOffset], self.ubOutput, intriParams)
        self.outOffset += GetSortLen(float32, self.curLoopSortedNum)

    def Init(self, param: MoeMrgsortParam) -> None:
        self.param = param
        self.remainListNum = self.listNum
        self._init_lists(param)


class MoeMrgsortOut(_MergeRounds):
    """``MoeMrgsortOut<T, T2>``: the last merge; writes only the indices (as int32)."""

    def __init__(self, T, T2) -> None:
        super().__init__()
        self.T, self.T2 = as_dtype(T), as_dtype(T2)
        self.gmOutput1 = None
        self.gmOutput2 = None
        self.tempBuffer = None
        self.ubOutputCast2 = None
        self.ubOutput1 = None
        self.ubOutput2 = None
        self.ubOutputCast1 = None
        self.eventIdMte3ToMte2 = 0
        self.eventIdVToMte3 = 0
        self.eventIdMte2ToV = 0

    def SetOutput(self, gmOutput1, gmOutput2, ubOutput1, ubOutput2) -> None:
        self.gmOutput1 = gmOutput1
        self.ubOutput1 = ubOutput1
        self.ubOutputCast1 = ubOutput1.ReinterpretCast(self.T)
        self.gmOutput2 = gmOutput2
        self.ubOutput2 = ubOutput2.ReinterpretCast(uint32)
        self.ubOutputCast2 = ubOutput2.ReinterpretCast(int32)

    def SetBuffer(self, tempBuffer) -> None:
        self.tempBuffer = tempBuffer

    def CopyIn(self) -> None:
        SetFlag(HardEvent.MTE3_MTE2, self.eventIdMte3ToMte2)
        WaitFlag(HardEvent.MTE3_MTE2, self.eventIdMte3ToMte2)
        self._copy_in_lists()

    def MrgsortCompute(self) -> None:
        SetFlag(HardEvent.MTE2_V, self.eventIdMte2ToV)
        WaitFlag(HardEvent.MTE2_V, self.eventIdMte2ToV)
        self._merge_into(self.tempBuffer)

    EXTRACTS = True

    def Extract(self) -> None:
        _Extract(self.ubOutput1, self.ubOutput2, self.tempBuffer,
                 Ceil(self.curLoopSortedNum, ONE_REPEAT_SORT_NUM))

    def CopyOut(self) -> None:
        intriParams = DataCopyParams(1, self.curLoopSortedNum * int32.itemsize, 0, 0)
        SetFlag(HardEvent.V_MTE3, self.eventIdVToMte3)
        WaitFlag(HardEvent.V_MTE3, self.eventIdVToMte3)
        ubOutputCast = self.ubOutput2.ReinterpretCast(int32)
        DataCopyPad(self.gmOutput1[self.outOffset], ubOutputCast, intriParams)
        self.outOffset += self.curLoopSortedNum

    def Init(self, param: MoeMrgsortParam, tPipe) -> None:
        self.param = param
        self.allRemainElements = 0
        self.eventIdMte3ToMte2 = GetTPipePtr().FetchEventID(HardEvent.MTE3_MTE2)
        self.eventIdVToMte3 = GetTPipePtr().FetchEventID(HardEvent.V_MTE3)
        self.eventIdMte2ToV = GetTPipePtr().FetchEventID(HardEvent.MTE2_V)
        self._init_lists(param)



__all__ = ["MoeMrgsort", "MoeMrgsortOut", "MoeMrgsortParam"]
