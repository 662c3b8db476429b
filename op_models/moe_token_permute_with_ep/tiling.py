"""Host tiling of ``MoeTokenPermuteWithEp`` (step "op tiling" of the flow).

Turns a case (input and output shapes, dtypes, the ``range`` / ``num_out_tokens`` /
``padded_mode`` attributes) and a platform into the 46-field tiling data (a 5-field head and
four nested structs: the sort (VBS), middle merge (VMS), sort-out and index-copy parameters),
the tiling key, the block dim and the workspace size the kernel port is launched with.

Tiling keys: 1 sort on one core / 2 sort on several cores (merge sort); + 2 when one token row
does not fit twice in UB (the "split D" index copy: each row in chunks); + 4 when the EP
window keeps fewer rows than ``N * K`` (``numOutTokens != totalLength``: the index copy tests
every row id against the window). So 1..8.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (full-history mirror
github.com/libochao-huawei/ops-transformer), commit
``5778144076def6311557939ab5cbfe8303f13e8f``:
``moe/moe_token_permute_with_ep/op_host/moe_token_permute_with_ep_tiling.{h,cpp}`` and
``op_host/moe_token_permute_tiling_base.h``; the ``TilingBaseClass::DoTiling`` step order from
``common/include/op_host/tiling_base.h``. Its unit test
``tests/ut/op_host/test_moe_token_permute_with_ep_tiling.cpp`` at the same commit is ported in
``tests/test_tiling.py`` (this package's).

This is our own Python, written from a side-by-side reading of the upstream source. Class,
method, member and struct field names and the order of the steps follow upstream so the two
can be compared by eye; comments are ours.

Deviations from upstream
------------------------
1. The gert ``TilingContext`` is :class:`TilingContext` (inputs, outputs, attributes) plus an
   explicit platform adapter; results come back as a :class:`TilingResult` (never raises for a
   rejected case; ``raise_for_status`` gives the host layer's ``TilingError``).
2. Where upstream dereferences a null pointer (a required input, an output shape, the
   ``num_out_tokens`` attribute without ``range``, or the ``padded_mode`` attribute missing) it
   would crash; we fail with rule ``null_desc`` / ``null_attr`` instead.
3. ``ge::GetSizeByDataType`` is the shared host table (:func:`GetLengthByType`): 0 bytes for a
   dtype outside it.
4. Signed 64-bit overflow is not modelled (Python integers); C truncating division and
   remainder are, and ``CeilLog4`` uses the same ``ceil(log(x) / log(4))`` in doubles.
5. ``SetScheduleMode(1)`` (exclusive use of every core, needed by the SyncAll of the kernel) is
   recorded in the result's log only; the simulator always launches the block dim on free
   cores.
6. Logging is a list of messages in the result, not the CANN log.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from aicore_sim.ascendc import host
from aicore_sim.ascendc.host import (
    GRAPH_FAILED,
    GRAPH_SUCCESS,
    GetLengthByType,
    PlatformAdapter,
    RunContext,
    TilingResult,
    TilingStruct,
    c_ceil_div0,
    c_div,
    c_div0,
    c_rem0,
)
from aicore_sim.ascendc.platform_ascendc import CoreMemType
from op_models.moe_common import TilingPrepare

OP_TYPE = "MoeTokenPermuteWithEp"

# Constants of the upstream tiling source (same names; the unused ones are kept for the eye).
SPLIT_N = 0
SPLIT_K = 1
SPLIT_ACTIVATE_ROW = 2
NUM_TWO = 2
NUM_THREE = 3
NUM_FOUR = 4
MRG_LIST_NUM = 4
SORT32_ALIGN_ELEMENT = 32
ONE_BLOCK_BYTE = 32
USED_SIZE = 96  # bytes kept back for the probs output staging and alignment
DIM_ONE = 1
DIM_TWO = 2
SIZE_16 = 16
SIZE_31 = 31
LENGTH_1024 = 1024
MAX_COLS_ONE_LOOP = 16376
ASSIST_NUM = 256
SPLIT_K_THRESHOLD = 512
MAX_INDICES_NUM = 512
INT32_DTYPE_SIZE = 4
DATA_MOVE_ALIGN = 512
BUFFER_NUM = 2
MAX_BLOCK_COUNT = 4095
SORT_ONE_CORE_MODE = 1
SORT_MULTI_CORE_MODE = 2
ENABLE_NUMOUTTOKENS = 4
SPILT_D_MODE = 2
SORT_LIMIT_LENGTH = 16777215
SORT_WORK_SPACE_NUM = 2
PROBS_SPACE_SCALE = 2
RANGE_SIZE = 2
PERMUTE_WITH_EP_INPUT_TOKENS = 0
PERMUTE_WITH_EP_INPUT_IDX = 1
PERMUTE_WITH_EP_INPUT_PROBS = 2
PERMUTE_WITH_EP_OUTPUT_TOKENS = 0
PERMUTE_WITH_EP_OUTPUT_IDX = 1
PERMUTE_WITH_EP_OUTPUT_PROBS = 2
PERMUTE_WITH_EP_ARRT_RANGE = 0
PERMUTE_WITH_EP_ARRT_NUM_OUT_TOKENS = 1
PERMUTE_WITH_EP_ARRT_PADDED_MODE = 2

_INPUT_NAMES = ("tokens", "indices", "probs")
_OUTPUT_NAMES = ("permute_tokens", "sorted_indices", "permute_probs")


# --------------------------------------------------------------------------------------------
# The helpers of the upstream anonymous namespace (C integer semantics)
# --------------------------------------------------------------------------------------------


# ``(a + b - 1) / b``, ``a / b`` and ``a % b`` in C, 0 for a zero divisor
GetCeilInt, GetDiv, GetRem = c_ceil_div0, c_div0, c_rem0


def FloorAlign(a: int, b: int) -> int:
    return c_div(a, b) * b if b != 0 else a


def UpAlign(a: int, b: int) -> int:
    return c_div(a + b - 1, b) * b if b != 0 else a


def CeilLog4(x: int) -> int:
    """``ceil(log(x) / log(4))`` computed in doubles, as upstream."""
    return int(math.ceil(math.log(x) / math.log(NUM_FOUR)))


def VmsLoops(x: int) -> int:
    """Which of the two sort workspaces holds the result after merging ``x`` sorted lists four
    at a time (0 or 1): the parity of the number of merge rounds, at least one."""
    srcWsIndex = 0
    while x >= 1:
        x = c_div(x + NUM_FOUR - 1, NUM_FOUR)
        srcWsIndex = (srcWsIndex + 1) % SORT_WORK_SPACE_NUM
        if x == 1:
            break
    return srcWsIndex


# --------------------------------------------------------------------------------------------
# The tiling data (upstream struct and field names and order)
# --------------------------------------------------------------------------------------------


@dataclass
class PermuteVBSComputeTilingEPData(TilingStruct):
    needCoreNum: int = 0
    perCoreElements: int = 0
    perCoreLoops: int = 0
    perCorePerLoopElements: int = 0
    perCoreLastLoopElements: int = 0
    lastCoreElements: int = 0
    lastCoreLoops: int = 0
    lastCorePerLoopElements: int = 0
    lastCoreLastLoopElements: int = 0
    oneLoopMaxElements: int = 0
    lastCoreWSindex: int = 0


@dataclass
class PermuteVMSMiddleComputeTilingEPData(TilingStruct):
    needCoreNum: int = 0


@dataclass
class PermuteSortOutComputeTilingEPData(TilingStruct):
    oneLoopMaxElements: int = 0


@dataclass
class IndexMixCopyComputeTilingData(TilingStruct):
    needCoreNum: int = 0
    frontCoreNum: int = 0
    tailCoreNum: int = 0
    coreCalcNum: int = 0
    coreCalcTail: int = 0
    oneTokenBtypeSize: int = 0
    oneProbBtypeSize: int = 0
    onceIndicesTokenMoveTimes: int = 0
    onceUbTokenNums: int = 0
    onceIndicesTokenNums: int = 0
    onceIndices: int = 0
    oneTokenlastMove: int = 0
    oneTokenOnceMove: int = 0
    oneTokenMoveTimes: int = 0
    frontCoreLoop: int = 0
    frontCoreLastTokenNums: int = 0
    tailCoreLoop: int = 0
    tailCoreLastTokenNums: int = 0
    tailLastonceIndicesTokenMoveTimes: int = 0
    tailLastIndicesLastTokenNums: int = 0
    frontLastonceIndicesTokenMoveTimes: int = 0
    frontLastIndicesLastTokenNums: int = 0
    numOutTokens: int = 0
    start: int = 0
    end: int = 0
    tokenUB: int = 0
    indicesUB: int = 0
    probsUB: int = 0


_STRUCTS = (PermuteVBSComputeTilingEPData, PermuteVMSMiddleComputeTilingEPData,
            PermuteSortOutComputeTilingEPData, IndexMixCopyComputeTilingData)
N_FIELDS = 5 + sum(len(fields(s)) for s in _STRUCTS)  # 46


@dataclass
class TilingData(TilingStruct):
    """``MoeTokenPermuteWithEpTilingData``: 46 int64 values, upstream order and names (the
    kernel copies a 368-byte little-endian image, :meth:`to_bytes`)."""

    coreNum: int = 0
    n: int = 0
    cols: int = 0
    colsAlign: int = 0
    topK: int = 0
    vbsComputeParamsOp: PermuteVBSComputeTilingEPData = field(
        default_factory=PermuteVBSComputeTilingEPData)
    vmsMiddleComputeParamsOp: PermuteVMSMiddleComputeTilingEPData = field(
        default_factory=PermuteVMSMiddleComputeTilingEPData)
    sortOutComputeParamsOp: PermuteSortOutComputeTilingEPData = field(
        default_factory=PermuteSortOutComputeTilingEPData)
    indexCopyComputeParamsOp: IndexMixCopyComputeTilingData = field(
        default_factory=IndexMixCopyComputeTilingData)

    @classmethod
    def from_list(cls, values: Sequence[int]) -> TilingData:
        vals = [int(v) for v in values]
        if len(vals) != N_FIELDS:
            raise ValueError(f"TilingData needs {N_FIELDS} values, got {len(vals)}")
        head, pos = vals[:5], 5
        subs = []
        for s in _STRUCTS:
            k = len(fields(s))
            subs.append(s(*vals[pos:pos + k]))
            pos += k
        return cls(*head, *subs)


# --------------------------------------------------------------------------------------------
# Context
# --------------------------------------------------------------------------------------------


class TilingContext(host.TilingContext):
    """The inputs of one tiling call (:class:`aicore_sim.ascendc.host.TilingContext`): inputs
    ``tokens``, ``indices``, ``probs``; outputs ``permute_tokens``, ``sorted_indices``,
    ``permute_probs``; attributes 0 ``range``, 1 ``num_out_tokens``, 2 ``padded_mode``
    (``create``: ``num_out_tokens`` 0 and ``padded_mode`` false unless given)."""

    OP_TYPE = OP_TYPE
    INPUTS = tuple((name, name != "probs") for name in _INPUT_NAMES)
    OUTPUTS = _OUTPUT_NAMES
    ATTRS = (("range", "int_list"), ("num_out_tokens", "int"), ("padded_mode", "bool"))
    CREATE_DEFAULTS = {"num_out_tokens": 0, "padded_mode": False}


def _shape_size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# --------------------------------------------------------------------------------------------
# MoeTokenPermuteWithEpTilingBase
# --------------------------------------------------------------------------------------------


@dataclass
class CoreParams:
    frontCoreNum: int = 1
    tailCoreNum: int = 1
    numBlocks: int = 1
    coreCalcNum: int = 1
    coreCalcTail: int = 1


@dataclass
class UBParams:
    ubLeft: int = 1
    oneTokenBtypeSize: int = 1
    oneTokenBtypeSizeAlign32: int = 1
    oneTokenlastMove: int = 1
    oneTokenOnceMove: int = 1
    oneTokenMoveTimes: int = 1
    onceIndicesTokenMoveTimes: int = 1
    onceUbTokenNums: int = 1
    onceIndicesTokenNums: int = 1
    onceIndices: int = 1
    tokenUB: int = 1
    indicesUB: int = 1
    probsUB: int = 1
    oneProbBtypeSize: int = 1


@dataclass
class LoopParams:
    frontCoreLoop: int = 1
    frontCoreLastTokenNums: int = 1
    tailCoreLoop: int = 1
    tailCoreLastTokenNums: int = 1
    tailLastonceIndicesTokenMoveTimes: int = 1
    tailLastIndicesLastTokenNums: int = 1
    frontLastonceIndicesTokenMoveTimes: int = 1
    frontLastIndicesLastTokenNums: int = 1


class MoeTokenPermuteWithEpTilingBase:
    """The upstream tiling class: its seven ``TilingBaseClass`` steps and private helpers."""

    def __init__(self, context: RunContext) -> None:
        self.context_ = context
        self.tilingKey_ = 0
        self.workspaceSize_ = 0
        self.numBlocks = 0  # aicoreParams_.numBlocks
        self.ubSize = 0  # aicoreParams_.ubSize
        self.aivNum = 0
        self.realCoreNumAiv = 0
        self.inputDimNum = 0
        self.numOutTokens = 0
        self.start = 0
        self.end = 0
        self.totalLength = 0
        self.activateNum = 0
        self.tokenBtypeSize = 0
        self.indicesBtypeSize = 0
        self.probsBtypeSize = 0
        self.sortLoopMaxElement = 0
        self.mrgSortListMaxElement = 1024
        self.paddedMode = False
        self.opName = OP_TYPE
        self.moeTokenPermuteWithEpTilingData = TilingData()

    # -- TilingBaseClass::DoTiling ---------------------------------------------------------

    def DoTiling(self) -> int:
        for step in (self.GetShapeAttrsInfo, self.GetPlatformInfo):
            if step() != GRAPH_SUCCESS:
                return GRAPH_FAILED
        for step in (self.DoOpTiling, self.DoLibApiTiling, self.GetWorkspaceSize,
                     self.PostTiling):
            if step() != GRAPH_SUCCESS:
                return GRAPH_FAILED
        self.context_.SetTilingKey(self.GetTilingKey())
        return GRAPH_SUCCESS

    def IsCapable(self) -> bool:
        return True

    # -- 1. platform -------------------------------------------------------------------------

    def GetPlatformInfo(self) -> int:
        """One core when ``indices`` has at most 32 elements, else every AIV core; UB rounded
        down to 32 bytes."""
        ascendcPlatform = self.context_.platform
        indicesPtr = self.context_.ctx.GetInputTensor(1)
        if indicesPtr is None:
            self.context_.LogE("null_desc", "fail to get input [indices]")
            return GRAPH_FAILED
        if _shape_size(indicesPtr.shape) <= SORT32_ALIGN_ELEMENT:
            self.aivNum = 1
        else:
            self.aivNum = int(ascendcPlatform.GetCoreNumAiv())
        self.realCoreNumAiv = int(ascendcPlatform.GetCoreNumAiv())
        self.numBlocks = self.aivNum
        ubSizePlatForm = int(ascendcPlatform.GetCoreMemSize(CoreMemType.UB))
        self.ubSize = FloorAlign(ubSizePlatForm, ONE_BLOCK_BYTE)
        self.moeTokenPermuteWithEpTilingData.coreNum = self.aivNum
        return GRAPH_SUCCESS

    # -- 2. shapes and attributes ------------------------------------------------------------

    def CheckOutputIndicesAndToken(self, indicesShape: tuple[int, ...], cols: int,
                                   tokensShape: tuple[int, ...]) -> int:
        ctx = self.context_
        if len(indicesShape) != DIM_ONE:
            ctx.LogE("out_indices_dim_num", "The dim number of Output sort_indices should be 1 "
                     f"(got shape {list(indicesShape)}).")
            return GRAPH_FAILED
        if indicesShape[0] != self.totalLength:
            ctx.LogE("out_indices_size", "The size of Output sort_indices should be "
                     f"[{self.totalLength}] (got {indicesShape[0]}).")
            return GRAPH_FAILED
        if cols != self.moeTokenPermuteWithEpTilingData.cols:
            ctx.LogE("out_hidden_size", "The hidden_size of output permuteTokens should be "
                     f"{self.moeTokenPermuteWithEpTilingData.cols} but got {cols}.")
            return GRAPH_FAILED
        if tokensShape[0] != self.numOutTokens:
            ctx.LogE("out_tokens_num", "The dim 0 of output permuteTokens should be "
                     f"{self.numOutTokens} but got {tokensShape[0]}.")
            return GRAPH_FAILED
        return GRAPH_SUCCESS

    def CheckOutputShape(self) -> int:
        ctx = self.context_
        tokensShape = ctx.ctx.GetOutputShape(PERMUTE_WITH_EP_OUTPUT_TOKENS)
        IndicesShape = ctx.ctx.GetOutputShape(PERMUTE_WITH_EP_OUTPUT_IDX)
        if tokensShape is None or IndicesShape is None:
            missing = "permute_tokens" if tokensShape is None else "sorted_indices"
            ctx.LogE("null_desc", f"output {missing} is missing (OP_CHECK_NULL)")
            return GRAPH_FAILED
        tokensDimNnum = len(tokensShape)
        if tokensDimNnum < DIM_TWO:
            ctx.LogE("out_tokens_dim_num", "The dim number of Output permute_tokens should be "
                     f"greater than 1 but got [{tokensDimNnum}].")
            return GRAPH_FAILED
        cols = _shape_size(tokensShape[1:])
        ret = self.CheckOutputIndicesAndToken(IndicesShape, cols, tokensShape)
        if ret != GRAPH_SUCCESS:
            return ret
        probsTensor = ctx.ctx.GetOptionalInputTensor(PERMUTE_WITH_EP_OUTPUT_PROBS)
        if probsTensor is not None:
            probsShape = ctx.ctx.GetOutputShape(PERMUTE_WITH_EP_OUTPUT_PROBS)
            if probsShape is None:
                ctx.LogE("null_desc", "output permute_probs is missing (OP_CHECK_NULL)")
                return GRAPH_FAILED
            if len(probsShape) != DIM_ONE:
                ctx.LogE("out_probs_dim_num", "The dim number of output permuteProbs should be "
                         f"1 (got shape {list(probsShape)}).")
                return GRAPH_FAILED
            if probsShape[0] != self.numOutTokens:
                ctx.LogE("out_probs_size", "The size of output permuteProbs should be "
                         f"[{self.numOutTokens}] but got [{probsShape[0]}].")
                return GRAPH_FAILED
        return GRAPH_SUCCESS

    def CheckAndGetAttrsInfo(self) -> int:
        ctx = self.context_
        rangePtr = ctx.attr(PERMUTE_WITH_EP_ARRT_RANGE)
        numOutTokensPtr = ctx.attr(PERMUTE_WITH_EP_ARRT_NUM_OUT_TOKENS)
        paddedModePtr = ctx.attr(PERMUTE_WITH_EP_ARRT_PADDED_MODE)
        if rangePtr is not None:
            if len(rangePtr) != RANGE_SIZE:
                ctx.LogE("range_size", f"the size of range only support 2 (got {len(rangePtr)})")
                return GRAPH_FAILED
            self.start = int(rangePtr[0])
            self.end = int(rangePtr[1])
        else:
            if numOutTokensPtr is None:
                ctx.LogE("null_attr", "neither range nor num_out_tokens is set; upstream "
                         "dereferences a null pointer here")
                return GRAPH_FAILED
            self.start = 0
            self.end = int(numOutTokensPtr)
        if paddedModePtr is None:
            ctx.LogE("null_attr", "attribute padded_mode (IR index 2) is absent; upstream "
                     "dereferences a null pointer here")
            return GRAPH_FAILED
        self.paddedMode = bool(paddedModePtr)
        if self.paddedMode:
            ctx.LogE("padded_mode", "Currently only support padded_mode is false")
            return GRAPH_FAILED
        return GRAPH_SUCCESS

    def CheckInputShape(self) -> int:
        ctx = self.context_
        tokensShape = ctx.ctx.GetInputShape(PERMUTE_WITH_EP_INPUT_TOKENS)
        IndicesShape = ctx.ctx.GetInputShape(PERMUTE_WITH_EP_INPUT_IDX)
        if tokensShape is None or IndicesShape is None:
            missing = "tokens" if tokensShape is None else "indices"
            ctx.LogE("null_desc", f"input {missing} is missing; upstream dereferences a null "
                     "pointer here")
            return GRAPH_FAILED
        probsTensor = ctx.ctx.GetOptionalInputTensor(PERMUTE_WITH_EP_INPUT_PROBS)
        indicesDimNum = len(IndicesShape)
        if indicesDimNum not in (DIM_TWO, DIM_ONE):
            ctx.LogE("indices_dim_num", "The dim number of indices should be 2 or 1 but got "
                     f"[{indicesDimNum}].")
            return GRAPH_FAILED
        if len(tokensShape) < 1 or tokensShape[0] != IndicesShape[0]:
            ctx.LogE("tokens_indices_dim0", f"Input token's dim 0 [{tokensShape[:1]}] should "
                     f"be same with indices' dim 0 [{IndicesShape[0]}].")
            return GRAPH_FAILED
        if probsTensor is not None:
            probsShape = probsTensor.shape
            probsDimNum = len(probsShape)
            if probsDimNum not in (DIM_TWO, DIM_ONE):
                ctx.LogE("probs_dim_num", "The dim number of probs should be 2 or 1 but got "
                         f"[{probsDimNum}].")
                return GRAPH_FAILED
            if indicesDimNum != probsDimNum:
                ctx.LogE("probs_indices_dim_num", f"The dim number of probs [{probsDimNum}] "
                         f"should be equal to indices [{indicesDimNum}].")
                return GRAPH_FAILED
            if tokensShape[0] != probsShape[0]:
                ctx.LogE("tokens_probs_dim0", f"Input token's dim 0 [{tokensShape[0]}] should "
                         f"be same with probs' dim 0 [{probsShape[0]}].")
                return GRAPH_FAILED
            if probsDimNum == DIM_TWO and IndicesShape[1] != probsShape[1]:
                ctx.LogE("indices_probs_dim1", f"Input indices' dim 1 [{IndicesShape[1]}] "
                         f"should be same with probs' dim 1 [{probsShape[1]}].")
                return GRAPH_FAILED
        return GRAPH_SUCCESS

    def CheckAttrsInfosAndInputShape(self) -> int:
        ret = self.CheckAndGetAttrsInfo()
        if ret != GRAPH_SUCCESS:
            return ret
        return self.CheckInputShape()

    def GetShapeAttrsInfo(self) -> int:
        """Checks, dtype sizes, ``cols`` / ``colsAlign``, ``n``, ``topK``, the sort length, the
        EP window and ``numOutTokens``, then the output shapes."""
        ctx = self.context_
        self.opName = ctx.GetNodeName()
        ctx.LogD("MoeTokenPermuteWithEp Tiling initing.")
        ret = self.CheckAttrsInfosAndInputShape()
        if ret != GRAPH_SUCCESS:
            return ret
        tokensShape = ctx.ctx.GetInputShape(PERMUTE_WITH_EP_INPUT_TOKENS)
        IndicesShape = ctx.ctx.GetInputShape(PERMUTE_WITH_EP_INPUT_IDX)
        probsTensor = ctx.ctx.GetOptionalInputTensor(PERMUTE_WITH_EP_INPUT_PROBS)

        self.tokenBtypeSize = GetLengthByType(ctx.ctx.GetInputTensor(0).dtype)
        self.indicesBtypeSize = GetLengthByType(ctx.ctx.GetInputTensor(1).dtype)
        self.probsBtypeSize = 0 if probsTensor is None else GetLengthByType(probsTensor.dtype)

        td = self.moeTokenPermuteWithEpTilingData
        cols = _shape_size(tokensShape[1:])
        td.cols = cols
        tokenOneBlockNum = GetDiv(ONE_BLOCK_BYTE, self.tokenBtypeSize)
        colsAlign = GetCeilInt(cols, tokenOneBlockNum) * tokenOneBlockNum
        td.n = IndicesShape[0]
        td.colsAlign = colsAlign

        topK = 1 if len(IndicesShape) == 1 else IndicesShape[1]
        if topK > MAX_INDICES_NUM or topK < 1:
            ctx.LogE("topk_range", f"Input indices's dim 1 [{topK}] should be in (0, "
                     f"[{MAX_INDICES_NUM}]].")
            return GRAPH_FAILED
        td.topK = topK
        self.totalLength = td.n * td.topK
        if self.totalLength >= SORT_LIMIT_LENGTH:
            ctx.LogE("sort_limit", f"The elements num of indices [{self.totalLength}] should be "
                     f"less than [{SORT_LIMIT_LENGTH}].")
            return GRAPH_FAILED
        if (self.start < 0 or self.start > self.totalLength or self.end < 0
                or self.end > self.totalLength):
            ctx.LogE("range_bounds", f"The start [{self.start}] and end [{self.end}] should be "
                     f"in [0, {self.totalLength}].")
            return GRAPH_FAILED
        numOutTokens = self.end - self.start
        numOutTokens = numOutTokens + self.totalLength if numOutTokens <= 0 else numOutTokens
        numOutTokens = min(numOutTokens, self.totalLength)
        self.numOutTokens = max(numOutTokens, 0)
        return self.CheckOutputShape()

    # -- 3. the tiling -----------------------------------------------------------------------

    def DoOpTiling(self) -> int:
        # the sort's per-loop element budget: UB less one block per core, over 32 bytes an
        # element (4 sort buffers of 8 bytes), rounded down to the 32-element sort repeat
        self.sortLoopMaxElement = (c_div(c_div(self.ubSize - self.aivNum * ONE_BLOCK_BYTE,
                                               NUM_FOUR * NUM_TWO * NUM_FOUR),
                                         SORT32_ALIGN_ELEMENT) * SORT32_ALIGN_ELEMENT)
        self.Tiling4VBSCompute()
        self.Tiling4VMSMiddleCompute()
        self.Tiling4SortOutCompute()
        self.Tiling4IndexCopyCompute()
        self.ShowTilingData()
        return GRAPH_SUCCESS

    def DoLibApiTiling(self) -> int:
        return GRAPH_SUCCESS

    def GetTilingKey(self) -> int:
        return self.tilingKey_

    def GetWorkspaceSize(self) -> int:
        """Two fp32 (score, index) sort buffers of ``totalLength`` each, 64 bytes of sync room
        per core, and the 16 MiB system workspace."""
        sortWorkspaceSize = 4 * self.totalLength * NUM_TWO * NUM_TWO
        coreSyncWorkspaceSize = (self.moeTokenPermuteWithEpTilingData.coreNum
                                 * SORT32_ALIGN_ELEMENT * NUM_TWO)
        self.workspaceSize_ = (sortWorkspaceSize + coreSyncWorkspaceSize
                               + SIZE_16 * LENGTH_1024 * LENGTH_1024)
        return GRAPH_SUCCESS

    def PostTiling(self) -> int:
        ctx = self.context_
        ctx.SetBlockDim(self.aivNum)
        ctx.LogD("SetScheduleMode(1): the kernel synchronises all cores (SyncAll)")
        ctx.SetWorkspace([self.workspaceSize_])
        ctx.saved = TilingData.from_list(self.moeTokenPermuteWithEpTilingData.as_list())
        return GRAPH_SUCCESS

    def Tinlig4VBSOneCoreCompute(self, tilingData: PermuteVBSComputeTilingEPData) -> None:
        tilingData.needCoreNum = 1
        tilingData.perCoreElements = self.totalLength
        tilingData.perCoreLoops = 1
        tilingData.perCorePerLoopElements = tilingData.perCoreElements
        tilingData.perCoreLastLoopElements = tilingData.perCoreElements
        tilingData.lastCoreElements = tilingData.perCoreElements
        tilingData.lastCoreLoops = 1
        tilingData.lastCorePerLoopElements = tilingData.perCoreElements
        tilingData.lastCoreLastLoopElements = tilingData.perCoreElements

    def Tinlig4VBSMultiCoreCompute(self, tilingData: PermuteVBSComputeTilingEPData) -> None:
        """Cores: a power of four (at most the AIV count), then elements per core rounded to
        32 (up when the last core would otherwise take more than a rounded-up share)."""
        totalLength, sortLoopMaxElement = self.totalLength, self.sortLoopMaxElement
        needCoreNum = GetCeilInt(totalLength, sortLoopMaxElement)
        needCoreNum = int(4 ** CeilLog4(needCoreNum))
        needCoreNum = min(needCoreNum, self.aivNum)

        perCoreElements = GetDiv(totalLength, needCoreNum)
        alineFloorPerCoreElements = perCoreElements - perCoreElements % SORT32_ALIGN_ELEMENT
        lastCoreElement = totalLength - (needCoreNum - 1) * alineFloorPerCoreElements
        alineCeilPerCoreElements = (perCoreElements + SORT32_ALIGN_ELEMENT
                                    - perCoreElements % SORT32_ALIGN_ELEMENT)
        if lastCoreElement > alineCeilPerCoreElements:
            perCoreElements = alineCeilPerCoreElements
            needCoreNum = GetCeilInt(totalLength, perCoreElements)
        else:
            perCoreElements = alineFloorPerCoreElements

        tilingData.needCoreNum = needCoreNum
        tilingData.perCoreElements = perCoreElements
        tilingData.perCoreLoops = GetCeilInt(tilingData.perCoreElements, sortLoopMaxElement)
        tilingData.perCorePerLoopElements = min(tilingData.perCoreElements, sortLoopMaxElement)
        tilingData.perCoreLastLoopElements = (
            tilingData.perCoreElements
            - (tilingData.perCoreLoops - 1) * tilingData.perCorePerLoopElements)
        tilingData.lastCoreElements = (totalLength
                                       - (tilingData.needCoreNum - 1) * tilingData.perCoreElements)
        tilingData.lastCoreLoops = GetCeilInt(tilingData.lastCoreElements, sortLoopMaxElement)
        tilingData.lastCorePerLoopElements = min(tilingData.lastCoreElements, sortLoopMaxElement)
        tilingData.lastCoreLastLoopElements = (
            tilingData.lastCoreElements
            - (tilingData.lastCoreLoops - 1) * tilingData.lastCorePerLoopElements)
        tilingData.lastCoreWSindex = abs(VmsLoops(tilingData.lastCoreLoops)
                                         - VmsLoops(tilingData.perCoreLoops))

    def Tiling4VBSCompute(self) -> None:
        if self.totalLength <= self.sortLoopMaxElement:
            self.tilingKey_ = SORT_ONE_CORE_MODE
        else:
            self.tilingKey_ = SORT_MULTI_CORE_MODE
        tilingData = self.moeTokenPermuteWithEpTilingData.vbsComputeParamsOp
        tilingData.oneLoopMaxElements = self.sortLoopMaxElement
        if self.GetTilingKey() == 1:
            self.Tinlig4VBSOneCoreCompute(tilingData)
            return
        self.Tinlig4VBSMultiCoreCompute(tilingData)

    def Tiling4VMSMiddleCompute(self) -> None:
        """Middle merge rounds only when more than four sorted lists come out of the VBS."""
        vbsComputeTilingData = self.moeTokenPermuteWithEpTilingData.vbsComputeParamsOp
        tilingData = self.moeTokenPermuteWithEpTilingData.vmsMiddleComputeParamsOp
        if vbsComputeTilingData.needCoreNum <= MRG_LIST_NUM:
            tilingData.needCoreNum = 0
            return
        tilingData.needCoreNum = GetCeilInt(vbsComputeTilingData.needCoreNum, MRG_LIST_NUM)

    def Tiling4SortOutCompute(self) -> None:
        self.moeTokenPermuteWithEpTilingData.sortOutComputeParamsOp.oneLoopMaxElements = \
            self.mrgSortListMaxElement

    def CalculateCoreParams(self, coreParams: CoreParams, tokenNums: int) -> None:
        """Tokens over every AIV core: the first ``frontCoreNum`` take ``ceil`` of the share,
        the rest ``floor``."""
        real = self.realCoreNumAiv
        coreParams.frontCoreNum = GetRem(tokenNums, real) if GetRem(tokenNums, real) != 0 \
            else real
        coreParams.tailCoreNum = 0 if tokenNums <= real else real - coreParams.frontCoreNum
        coreParams.numBlocks = coreParams.frontCoreNum + coreParams.tailCoreNum
        coreParams.coreCalcNum = GetCeilInt(tokenNums, real)
        coreParams.coreCalcTail = GetDiv(tokenNums, real)

    def CalculateUBParams(self, ubParams: UBParams, topK: int, cols: int) -> None:
        """Whole rows (two buffers of ``onceUbTokenNums`` rows, indices and probs for several
        such groups) when two rows fit, else the split-D layout (rows in chunks, 512 indices
        per loop; tiling key + 2)."""
        ubSize = self.ubSize
        ubParams.ubLeft = ubSize - PROBS_SPACE_SCALE * MAX_INDICES_NUM * INT32_DTYPE_SIZE \
            - ONE_BLOCK_BYTE
        ubParams.oneTokenBtypeSize = cols * self.tokenBtypeSize
        ubParams.oneProbBtypeSize = self.probsBtypeSize
        ubParams.oneTokenBtypeSizeAlign32 = UpAlign(ubParams.oneTokenBtypeSize, ONE_BLOCK_BYTE)

        if ubParams.ubLeft >= BUFFER_NUM * ubParams.oneTokenBtypeSizeAlign32:
            ubParams.onceUbTokenNums = GetDiv(
                ubSize - USED_SIZE,
                ubParams.oneTokenBtypeSizeAlign32 * BUFFER_NUM
                + PROBS_SPACE_SCALE * topK * BUFFER_NUM * INT32_DTYPE_SIZE)
            ubParams.onceUbTokenNums = min(ubParams.onceUbTokenNums, MAX_BLOCK_COUNT)
            TopKUbLeft = (ubSize - USED_SIZE
                          - ubParams.onceUbTokenNums * ubParams.oneTokenBtypeSizeAlign32
                          * BUFFER_NUM)
            # probs get as much UB as the int32 indices, hence the factor 2
            ubParams.onceIndicesTokenMoveTimes = GetDiv(
                TopKUbLeft,
                PROBS_SPACE_SCALE * ubParams.onceUbTokenNums * topK * INT32_DTYPE_SIZE)
            ubParams.onceIndicesTokenNums = (ubParams.onceIndicesTokenMoveTimes
                                             * ubParams.onceUbTokenNums)
            ubParams.onceIndices = ubParams.onceIndicesTokenNums * topK
            ubParams.tokenUB = ubParams.onceUbTokenNums * ubParams.oneTokenBtypeSizeAlign32
            ubParams.indicesUB = UpAlign(ubParams.onceIndices * INT32_DTYPE_SIZE, ONE_BLOCK_BYTE)
            ubParams.probsUB = ubParams.indicesUB
        else:
            ubParams.onceIndicesTokenNums = GetDiv(MAX_INDICES_NUM, topK)
            ubParams.onceIndices = ubParams.onceIndicesTokenNums * topK
            ubParams.oneTokenOnceMove = GetDiv(
                FloorAlign(GetDiv(ubParams.ubLeft, BUFFER_NUM), DATA_MOVE_ALIGN),
                self.tokenBtypeSize)
            ubParams.oneTokenMoveTimes = GetCeilInt(cols, ubParams.oneTokenOnceMove)
            ubParams.oneTokenlastMove = cols - (ubParams.oneTokenMoveTimes - 1) \
                * ubParams.oneTokenOnceMove
            self.tilingKey_ = self.tilingKey_ + SPILT_D_MODE
            ubParams.tokenUB = ubParams.oneTokenOnceMove * self.tokenBtypeSize
            ubParams.indicesUB = MAX_INDICES_NUM * INT32_DTYPE_SIZE
            ubParams.probsUB = ubParams.indicesUB

    def CalculateLoopParams(self, loopParams: LoopParams, coreParams: CoreParams,
                            onceIndicesTokenNums: int, onceUbTokenNums: int) -> None:
        lp = loopParams
        lp.frontCoreLoop = GetCeilInt(coreParams.coreCalcNum, onceIndicesTokenNums)
        lp.frontCoreLastTokenNums = (coreParams.coreCalcNum
                                     - (lp.frontCoreLoop - 1) * onceIndicesTokenNums)
        lp.tailCoreLoop = GetCeilInt(coreParams.coreCalcTail, onceIndicesTokenNums)
        lp.tailCoreLastTokenNums = (coreParams.coreCalcTail
                                    - (lp.tailCoreLoop - 1) * onceIndicesTokenNums)
        lp.tailLastonceIndicesTokenMoveTimes = GetCeilInt(lp.tailCoreLastTokenNums,
                                                          onceUbTokenNums)
        lp.tailLastIndicesLastTokenNums = (
            lp.tailCoreLastTokenNums
            - (lp.tailLastonceIndicesTokenMoveTimes - 1) * onceUbTokenNums)
        lp.frontLastonceIndicesTokenMoveTimes = GetCeilInt(lp.frontCoreLastTokenNums,
                                                           onceUbTokenNums)
        lp.frontLastIndicesLastTokenNums = (
            lp.frontCoreLastTokenNums
            - (lp.frontLastonceIndicesTokenMoveTimes - 1) * onceUbTokenNums)

    def SetTilingDataFinalParams(self, tilingData: IndexMixCopyComputeTilingData,
                                 coreParams: CoreParams, ubParams: UBParams,
                                 loopParams: LoopParams) -> None:
        tilingData.tokenUB = ubParams.tokenUB
        tilingData.indicesUB = ubParams.indicesUB
        tilingData.probsUB = ubParams.probsUB

        tilingData.needCoreNum = coreParams.numBlocks
        tilingData.frontCoreNum = coreParams.frontCoreNum
        tilingData.tailCoreNum = coreParams.tailCoreNum
        tilingData.coreCalcNum = coreParams.coreCalcNum
        tilingData.coreCalcTail = coreParams.coreCalcTail

        for name in ("oneTokenBtypeSize", "oneProbBtypeSize", "onceIndicesTokenMoveTimes",
                     "onceUbTokenNums", "onceIndicesTokenNums", "onceIndices",
                     "oneTokenlastMove", "oneTokenOnceMove", "oneTokenMoveTimes"):
            setattr(tilingData, name, getattr(ubParams, name))
        for name in ("frontCoreLoop", "frontCoreLastTokenNums", "tailCoreLoop",
                     "tailCoreLastTokenNums", "tailLastonceIndicesTokenMoveTimes",
                     "tailLastIndicesLastTokenNums", "frontLastonceIndicesTokenMoveTimes",
                     "frontLastIndicesLastTokenNums"):
            setattr(tilingData, name, getattr(loopParams, name))

    def Tiling4IndexCopyCompute(self) -> None:
        td = self.moeTokenPermuteWithEpTilingData
        tilingData = td.indexCopyComputeParamsOp
        tokenNums, topK, cols = td.n, td.topK, td.cols
        if self.numOutTokens != tokenNums * topK:
            self.tilingKey_ = self.tilingKey_ + ENABLE_NUMOUTTOKENS
        tilingData.numOutTokens = self.numOutTokens
        tilingData.start = self.start
        tilingData.end = self.end

        coreParams = CoreParams()
        self.CalculateCoreParams(coreParams, tokenNums)
        ubParams = UBParams()
        self.CalculateUBParams(ubParams, topK, cols)
        loopParams = LoopParams()
        self.CalculateLoopParams(loopParams, coreParams, ubParams.onceIndicesTokenNums,
                                 ubParams.onceUbTokenNums)
        self.SetTilingDataFinalParams(tilingData, coreParams, ubParams, loopParams)
        self.aivNum = max(self.aivNum, coreParams.numBlocks)

    def ShowTilingData(self) -> None:
        td = self.moeTokenPermuteWithEpTilingData
        self.context_.LogD(f"indexCopyCTilingData is {td.indexCopyComputeParamsOp}")
        self.context_.LogD(f"PermuteVBSComputeTilingEPData is {td.vbsComputeParamsOp}")
        self.context_.LogD("PermuteVMSMiddleComputeTilingEPData is needCoreNum:"
                           f"{td.vmsMiddleComputeParamsOp.needCoreNum}")
        self.context_.LogD(f"moeTokenPermuteWithEpTilingData is coreNum:{td.coreNum}, "
                           f"n:{td.n}, cols:{td.cols}, colsAlign:{td.colsAlign}, k:{td.topK}")
        self.context_.LogD("PermuteSortOutComputeTilingEPData is oneLoopMaxElements:"
                           f"{td.sortOutComputeParamsOp.oneLoopMaxElements}")


def TilingForMoeTokenPermuteWithEp(context: TilingContext, platform_ascendc: PlatformAdapter
                                   ) -> TilingResult:
    """Run the host tiling; never raises for a rejected case (see :class:`TilingResult`).

    ``platform_ascendc`` is anything with ``GetCoreNumAiv()`` and ``GetCoreMemSize(mem)``,
    normally ``aicore_sim.ascendc.PlatformAscendC(platform)``.
    """
    run = RunContext(context, platform_ascendc)
    tiling = MoeTokenPermuteWithEpTilingBase(run)
    status = tiling.DoTiling()
    return run.result(status, tiling)


tiling_func = TilingForMoeTokenPermuteWithEp  # the entry under the project's generic name

# upstream's tiling-parse hook of this op: the EP ops' no-op, moe_common.TilingPrepare
TilingPrepareForMoeTokenPermuteWithEp = TilingPrepare


__all__ = [
    "GRAPH_FAILED", "GRAPH_SUCCESS", "N_FIELDS", "OP_TYPE", "CeilLog4", "GetLengthByType",
    "IndexMixCopyComputeTilingData", "MoeTokenPermuteWithEpTilingBase",
    "PermuteSortOutComputeTilingEPData", "PermuteVBSComputeTilingEPData",
    "PermuteVMSMiddleComputeTilingEPData", "PlatformAdapter", "TilingContext", "TilingData",
    "TilingForMoeTokenPermuteWithEp", "TilingPrepareForMoeTokenPermuteWithEp", "TilingResult",
    "VmsLoops", "tiling_func",
]
