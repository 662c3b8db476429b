"""Host tiling of ``MoeTokenUnpermuteWithEp`` (step "op tiling" of the flow).

Turns a case (input shapes, dtypes, attributes) and a platform into the 15-field tiling data,
the tiling key (0 no probs; 1 / 2 / 3 probs in fp32 / fp16 / bf16), the block dim and the
workspace size that a launch hands to the kernel port.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (full-history mirror
github.com/libochao-huawei/ops-transformer), commit
``5778144076def6311557939ab5cbfe8303f13e8f``:
``moe/moe_token_unpermute_with_ep/op_host/moe_token_unpermute_with_ep_tiling.{h,cpp}``; its
unit test ``tests/ut/op_host/test_moe_token_unpermute_with_ep_tiling.cpp`` at the same commit
is ported in ``tests/test_tiling.py`` (this package's).

This is our own Python, written from a side-by-side reading of the upstream source. Function
names, parameter structs, the order of the steps and the tiling-data field names follow
upstream so the two can be compared by eye; comments are ours.

Upstream's source computes two flavours with one function (``isUnpermute``): this operator's
``TilingMoeTokenUnpermuteWithEp`` passes ``isUnpermute = true``; ``false`` is the flavour
``MoeTokenPermuteWithEpGrad`` registers. That operator's tiling source at the same commit
(``moe/moe_token_permute_with_ep_grad/op_host/moe_token_permute_with_ep_grad_tiling.{h,cpp}``)
is this one with other names: the same parameter structs, checks, steps and 15 tiling-data
fields; only the compute function's name, its workspace (none) and its entries differ. So both
flavours are ported once, here (:func:`TilingSteps`), and
``op_models.moe_token_permute_with_ep_grad.tiling`` imports them.

Deviations from upstream
------------------------
1. The gert ``TilingContext`` is replaced by :class:`TilingContext` (inputs and attributes) plus
   an explicit platform adapter; results come back as a :class:`TilingResult`.
2. Where upstream dereferences a null pointer (a required input or the ``num_topk`` attribute
   missing) it would crash; we fail with rule ``null_desc`` / ``null_attr`` instead.
3. ``Init`` returns early (leaving every shape field at 0) when ``range`` does not have two
   values; upstream then logs an error and the tiling still *succeeds* with a block dim of 0.
   That is reproduced, with a warning in the result (the aclnn layer rejects such a range).
4. Signed 64-bit overflow is not modelled (Python integers); C truncating division and
   remainder, the ``int`` truncation of ``num_topk`` and the two's-complement ``AlignN`` of a
   negative size (a UB smaller than the 5120-byte reserve) are.
5. ``SetTilingKey`` with a probs dtype outside fp32 / fp16 / bf16 (``isUnpermute`` flavour)
   logs an error and keeps key 0 (upstream's behaviour, asserted by its UT); a warning is added
   to the result.
6. Logging is a list of messages in the result, not the CANN log.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from aicore_sim.ascendc import host
from aicore_sim.ascendc.host import (
    GRAPH_FAILED,
    GRAPH_SUCCESS,
    GetLengthByType,
    PlatformAdapter,
    RunContext,
    TilingResult,
    TilingStruct,
    c_div0,
    c_rem0,
    canonical_dtype,
    to_i32,
)
from aicore_sim.ascendc.platform_ascendc import CoreMemType
from op_models.moe_common import TilingPrepare

OP_TYPE = "MoeTokenUnpermuteWithEp"

# Constants of the upstream tiling header (same names).
FLOAT_DATA_SIZE = 4
MIN_BUFFER_NUM = 2
ALIGN_512 = 512
ALIGN_256 = 256
QUE_NUM = 2
CAST_NUM = 2
TILINGKEY_FLOAT = 1
TILINGKEY_FLOAT16 = 2
TILINGKEY_BF16 = 3
TILINGKEY_PROB_NONE = 0

# ... and of the tiling source.
UNPERMUTE_WITH_EP_INPUT_TOKENS = 0
UNPERMUTE_WITH_EP_INPUT_IDX = 1
UNPERMUTE_WITH_EP_INPUT_PROBS = 2
UNPERMUTE_WITH_EP_OUTPUT_TOKENS = 0
UNPERMUTE_WITH_EP_ARRT_TOPK = 0
UNPERMUTE_WITH_EP_ARRT_RANGE = 1
UNPERMUTE_WITH_EP_ARRT_PADDED_MODE = 2  # never read by the tiling
UNPERMUTE_WITH_EP_ARRT_RESTORE_SHAPE = 3  # never read by the tiling
RANGE_SIZE = 2
WORKSPACE_SIZE_WITH_M = 16
BYTE_SIZE_WITH_K = 1024
SYS_WORKSPACE_SIZE = WORKSPACE_SIZE_WITH_M * BYTE_SIZE_WITH_K * BYTE_SIZE_WITH_K
MAX_TOPK = 512  # checked by the isUnpermute flavour only
RESERVE_SPACE = 5120  # bytes kept for sorted_indices and probs (ComputeMaxHiddenSize)

# --------------------------------------------------------------------------------------------
# C integer semantics and dtypes
# --------------------------------------------------------------------------------------------


def AlignN(x: int, N: int) -> int:
    """``(x + N - 1) & ~(N - 1)``: round up to a power-of-two multiple, in int64 two's
    complement (a negative ``x`` stays negative: -603 -> -512)."""
    return (x + N - 1) & ~(N - 1)


safeMod, safeDiv = c_rem0, c_div0  # C ``%`` and ``/``, 0 for a zero divisor


def isFloatDtype(inputDtypeSize: int) -> bool:
    """True when the element size is that of ``DT_FLOAT`` (4 bytes)."""
    return inputDtypeSize == GetLengthByType("DT_FLOAT")


# --------------------------------------------------------------------------------------------
# Parameter structs and the tiling data
# --------------------------------------------------------------------------------------------


@dataclass
class CoreParam:
    maxCoreMemory: int = 0
    maxCoreNum: int = 0
    usedCoreNum: int = 0
    remainMemorySpace: int = 0
    bufferNum: int = 0
    tilingKey: int = 0


@dataclass
class InputParam:
    tokensNum: int = 0
    topK: int = 0
    hiddenSize: int = 0
    PermuteProbGradSize: int = 0
    totalLength: int = 0
    start: int = 0
    end: int = 0
    numOutTokens: int = 0
    tokensDtypeSize: int = 0
    indicesDtypeSize: int = 0
    probsDtypeSize: int = 0
    haveProbs: bool = False
    isUnpermute: bool = True


@dataclass
class TilingParam:
    length: int = 0
    num: int = 0
    remain: int = 0


@dataclass
class MoeTokenUnpermuteWithEpParam:
    """The intermediate record (upstream's permute-grad source keeps this struct name too)."""

    input: InputParam = field(default_factory=InputParam)
    hiddenTiling: TilingParam = field(default_factory=TilingParam)
    tokenTiling: TilingParam = field(default_factory=TilingParam)
    tokenPerCore: TilingParam = field(default_factory=TilingParam)
    core: CoreParam = field(default_factory=CoreParam)


@dataclass
class TilingData(TilingStruct):
    """``MoeTokenUnpermuteWithEpTilingData``: 15 int64 fields, upstream order and names (the
    permute grad's ``MoeTokenPermuteWithEpGradTilingData`` has the same fields); the kernel
    copies a 120-byte little-endian image (:meth:`to_bytes`)."""

    hidden_size: int = 0
    permuted_probs_grad_length: int = 0
    top_k: int = 0
    start: int = 0
    end: int = 0
    num_out_tokens: int = 0
    hidden_splited_length: int = 0
    hidden_splited_num: int = 0
    hidden_splited_remain: int = 0
    tokens_core_length: int = 0
    tokens_core_remain: int = 0
    tokens_splited_length: int = 0
    tokens_splited_num: int = 0
    tokens_splited_remain: int = 0
    buffer_num: int = 0


N_FIELDS = len(fields(TilingData))  # 15


class TilingContext(host.TilingContext):
    """The inputs of one tiling call (:class:`aicore_sim.ascendc.host.TilingContext`): inputs
    ``permuted_tokens``, ``sorted_indices``, ``probs``; attributes 0 ``num_topk``, 1 ``range``,
    2 ``padded_mode``, 3 ``restore_shape`` (``create``: ``num_topk`` 1 and ``padded_mode`` false
    unless given)."""

    OP_TYPE = OP_TYPE
    INPUTS = (("permuted_tokens", True), ("sorted_indices", True), ("probs", False))
    ATTRS = (("num_topk", "int"), ("range", "int_list"), ("padded_mode", "bool"),
             ("restore_shape", "int_list"))
    CREATE_DEFAULTS = {"num_topk": 1, "padded_mode": False}


class TilingRunContext(RunContext):
    """Mutable stand-in for ``gert::TilingContext`` during one call (generic accessors and
    logging: :class:`aicore_sim.ascendc.host.RunContext`)."""

    ctx: TilingContext
    platform: PlatformAdapter
    saved: TilingData | None


# --------------------------------------------------------------------------------------------
# The upstream steps
# --------------------------------------------------------------------------------------------


def ComputeUnitHSpace(inputDtypeSize: int, bufferNum: int) -> int:
    """UB bytes per hidden element: ``QUE_NUM + bufferNum - 1`` token buffers, plus two fp32
    cast buffers unless the tokens are fp32."""
    castNum = 0 if isFloatDtype(inputDtypeSize) else CAST_NUM
    return inputDtypeSize * (QUE_NUM + bufferNum - 1) + FLOAT_DATA_SIZE * castNum


def ComputeMaxHiddenSize(param: MoeTokenUnpermuteWithEpParam, bufferNum: int) -> int:
    """Largest 512-aligned hidden chunk that fits beside the 5120-byte index/probs reserve."""
    maxHiddenSize = safeDiv(param.core.maxCoreMemory - RESERVE_SPACE,
                            ComputeUnitHSpace(param.input.tokensDtypeSize, bufferNum))
    return AlignN(maxHiddenSize - ALIGN_512, ALIGN_512)


def MoeTokenUnpermuteWithEpInputParamCheck(context: TilingRunContext, isUnpermute: bool) -> int:
    """num_topk >= 1; both required inputs present; tokens 2-D; with probs: in the isUnpermute
    flavour 2-D with dim1 = num_topk, sorted_indices dim0 = probs dim0 x dim1, topK <= 512;
    else 1-D."""
    ctx = context.ctx
    names = ctx.INPUT_NAMES
    tokensShape = ctx.GetInputShape(0)
    indicesShape = ctx.GetInputShape(1)
    probsShape = ctx.GetInputShape(2)
    tmpTopK = context.attr(UNPERMUTE_WITH_EP_ARRT_TOPK)
    if tmpTopK is None:
        context.LogE("null_attr", "attribute num_topk (IR index 0) is absent; upstream "
                     "dereferences a null pointer here")
        return GRAPH_FAILED
    inputTopK = to_i32(int(tmpTopK))  # int inputTopK = *tmpTopK
    if inputTopK < 1:
        context.LogE("topk_min", f"num_topk must be at least 1, got {inputTopK} "
                     "(input num TopK cannot less than 1)")
        return GRAPH_FAILED
    if tokensShape is None or indicesShape is None:
        missing = names[0] if tokensShape is None else names[1]
        context.LogE("null_desc", f"{missing} is missing (permutedTokens or sortedIndices is "
                     "nullptr)")
        return GRAPH_FAILED
    if len(tokensShape) != 2:
        context.LogE("tokens_dim_num", f"{names[0]} must be 2-D, got shape "
                     f"{list(tokensShape)} ({len(tokensShape)} dims)")
        return GRAPH_FAILED
    if probsShape is not None:
        probsDimNum = len(probsShape)
        if isUnpermute:
            if probsDimNum != 2:
                context.LogE("probs_dim_num", f"probs must be 2-D, got shape "
                             f"{list(probsShape)} ({probsDimNum} dims)")
                return GRAPH_FAILED
            tokensNum, topK = probsShape[0], probsShape[1]
            totalLength = indicesShape[0] if indicesShape else 0
            if topK != inputTopK:
                context.LogE("topk_mismatch", f"num_topk {inputTopK} must equal probs dim1 "
                             f"{topK}")
                return GRAPH_FAILED
            if totalLength != tokensNum * topK:
                context.LogE("total_length", f"sorted_indices dim0 {totalLength} must equal "
                             f"probs dim0 x dim1 = {tokensNum} x {topK} = {tokensNum * topK}")
                return GRAPH_FAILED
            if topK > MAX_TOPK:
                context.LogE("topk_max", f"topK (probs dim1) must not exceed {MAX_TOPK}, "
                             f"got {topK}")
                return GRAPH_FAILED
        elif probsDimNum != 1:
            context.LogE("probs_dim_num", f"{names[2]} must be 1-D, got shape "
                         f"{list(probsShape)} ({probsDimNum} dims) (permutedProbsGrad's shape "
                         "is not 1D)")
            return GRAPH_FAILED
    return GRAPH_SUCCESS


def Init(context: TilingRunContext, topK: int, param: MoeTokenUnpermuteWithEpParam,
         isUnpermute: bool) -> None:
    """Platform limits, dtype sizes, the EP range and the shape fields (deviation 3)."""
    ascendPlaform = context.platform
    param.core.maxCoreNum = int(ascendPlaform.GetCoreNumAiv())
    param.core.maxCoreMemory = int(ascendPlaform.GetCoreMemSize(CoreMemType.UB))
    ctx = context.ctx
    tokensShape = ctx.GetInputShape(UNPERMUTE_WITH_EP_INPUT_TOKENS)
    sortedIndicesShape = ctx.GetInputShape(UNPERMUTE_WITH_EP_INPUT_IDX)
    probsShape = ctx.GetInputShape(UNPERMUTE_WITH_EP_INPUT_PROBS)
    assert tokensShape is not None and sortedIndicesShape is not None  # checked before

    param.input.tokensDtypeSize = GetLengthByType(
        ctx.GetInputTensor(UNPERMUTE_WITH_EP_INPUT_TOKENS).dtype)
    param.input.indicesDtypeSize = GetLengthByType(
        ctx.GetInputTensor(UNPERMUTE_WITH_EP_INPUT_IDX).dtype)
    param.input.isUnpermute = isUnpermute

    inputTopK = to_i32(int(context.attr(UNPERMUTE_WITH_EP_ARRT_TOPK)))
    rangePtr = context.attr(UNPERMUTE_WITH_EP_ARRT_RANGE)
    if rangePtr is not None:
        if len(rangePtr) != RANGE_SIZE:
            context.log.append(f"[E] {context.GetNodeName()}: the size of range only support 2")
            context.warnings.append(
                f"range has {len(rangePtr)} values, not 2: upstream's Init returns early, so "
                "every shape field stays 0 and the tiling succeeds with block dim 0")
            return
        param.input.start = int(rangePtr[0])
        param.input.end = int(rangePtr[1])
    else:
        param.input.start = 0
        param.input.end = 0

    param.input.numOutTokens = tokensShape[0]  # rows of the permuted tokens (or grad)
    param.input.hiddenSize = tokensShape[1]
    param.input.totalLength = sortedIndicesShape[0]  # N * K slots (tokens may hold fewer rows)
    if isUnpermute:
        if probsShape is not None:
            param.input.probsDtypeSize = GetLengthByType(
                ctx.GetInputTensor(UNPERMUTE_WITH_EP_INPUT_PROBS).dtype)
            param.input.haveProbs = True
            param.input.tokensNum = probsShape[0]
            param.input.topK = probsShape[1]
            param.input.PermuteProbGradSize = 0
        else:
            param.input.topK = inputTopK
            param.input.PermuteProbGradSize = 1
            param.input.haveProbs = False
            param.input.tokensNum = safeDiv(param.input.totalLength, param.input.topK)
    else:
        # the permute grad passes the attribute itself as topK, so only an attribute beyond
        # int32 (truncated in inputTopK) gives 1
        param.input.topK = topK if inputTopK == topK else 1
        param.input.PermuteProbGradSize = 1
        param.input.haveProbs = probsShape is not None
        param.input.tokensNum = safeDiv(param.input.totalLength, param.input.topK)


def SetCoreNum(param: MoeTokenUnpermuteWithEpParam) -> None:
    """One token per core at least: ``min(tokensNum, cores)`` cores."""
    if param.input.tokensNum < param.core.maxCoreNum:
        param.core.usedCoreNum = param.input.tokensNum
    else:
        param.core.usedCoreNum = param.core.maxCoreNum


def TilingHiddenSize(param: MoeTokenUnpermuteWithEpParam) -> None:
    """Whole rows when the 512-aligned row fits with double buffering, else chunks."""
    maxHiddenSize = ComputeMaxHiddenSize(param, MIN_BUFFER_NUM)
    if AlignN(param.input.hiddenSize, ALIGN_512) <= maxHiddenSize:
        param.hiddenTiling.length = param.input.hiddenSize
        param.hiddenTiling.remain = 0
        param.hiddenTiling.num = 1
    else:
        param.hiddenTiling.length = maxHiddenSize
        param.hiddenTiling.remain = safeMod(param.input.hiddenSize, maxHiddenSize)
        param.hiddenTiling.num = safeDiv(param.input.hiddenSize, maxHiddenSize)


def SetBufferNum(param: MoeTokenUnpermuteWithEpParam) -> None:
    """Deepest token queue (4 down to 2) whose chunk limit still holds the chosen chunk."""
    maxBufferNum = 4
    bufferNum = maxBufferNum
    while bufferNum > MIN_BUFFER_NUM and \
            param.hiddenTiling.length > ComputeMaxHiddenSize(param, bufferNum):
        bufferNum -= 1
    param.core.bufferNum = bufferNum


def ComputeRemainMemerySpace(param: MoeTokenUnpermuteWithEpParam) -> None:
    """UB left for indices and probs after the token buffers and 256 bytes."""
    param.core.remainMemorySpace = param.core.maxCoreMemory - AlignN(
        param.hiddenTiling.length, ALIGN_512) * ComputeUnitHSpace(
        param.input.tokensDtypeSize, param.core.bufferNum)
    param.core.remainMemorySpace -= ALIGN_256


def TilingToken(param: MoeTokenUnpermuteWithEpParam) -> None:
    """Tokens per core (the first ``remain`` cores get one more, in the kernel) and the
    per-loop token count whose indices (and probs, plus an fp32 copy) fit the rest of UB."""
    param.tokenPerCore.length = safeDiv(param.input.tokensNum, param.core.usedCoreNum)
    param.tokenPerCore.num = param.core.usedCoreNum
    param.tokenPerCore.remain = safeMod(param.input.tokensNum, param.core.usedCoreNum)

    unitTokenSpace = param.input.indicesDtypeSize
    if param.input.haveProbs and param.input.isUnpermute:
        unitTokenSpace += param.input.probsDtypeSize
        if not isFloatDtype(param.input.probsDtypeSize):
            unitTokenSpace += FLOAT_DATA_SIZE

    probIndiceSpace = param.tokenPerCore.length * param.input.topK * unitTokenSpace
    if param.core.remainMemorySpace >= probIndiceSpace:
        param.tokenTiling.length = param.tokenPerCore.length
        param.tokenTiling.remain = 0
        param.tokenTiling.num = 1
    else:
        maxTokenSize = safeDiv(param.core.remainMemorySpace, param.input.topK * unitTokenSpace)
        param.tokenTiling.length = maxTokenSize
        param.tokenTiling.remain = safeMod(param.tokenPerCore.length, maxTokenSize)
        param.tokenTiling.num = safeDiv(param.tokenPerCore.length, maxTokenSize)


def SetTilingKey(context: TilingRunContext, isUnpermute: bool,
                 param: MoeTokenUnpermuteWithEpParam) -> None:
    """0 without probs; the isUnpermute flavour 1 / 2 / 3 for probs in fp32 / fp16 / bf16
    (deviation 5), the other 1."""
    if param.input.haveProbs:
        if isUnpermute:
            dataTensor2Type = canonical_dtype(
                context.ctx.GetInputTensor(UNPERMUTE_WITH_EP_INPUT_PROBS).dtype)
            if dataTensor2Type == "DT_FLOAT":
                param.core.tilingKey = TILINGKEY_FLOAT
            elif dataTensor2Type == "DT_FLOAT16":
                param.core.tilingKey = TILINGKEY_FLOAT16
            elif dataTensor2Type == "DT_BF16":
                param.core.tilingKey = TILINGKEY_BF16
            else:
                context.log.append(f"[E] {context.GetNodeName()}: the data type of probs is "
                                   "incorrect")
                context.warnings.append(
                    f"probs dtype {dataTensor2Type} is not fp32/fp16/bf16: upstream logs an "
                    "error and keeps tiling key 0 (probs ignored)")
        else:
            param.core.tilingKey = 1
    else:
        param.core.tilingKey = TILINGKEY_PROB_NONE


def SetTilingData(context: TilingRunContext, param: MoeTokenUnpermuteWithEpParam) -> None:
    """Save the 15 fields and the block dim (``usedCoreNum``)."""
    context.saved = TilingData(
        hidden_size=param.input.hiddenSize,
        permuted_probs_grad_length=param.input.PermuteProbGradSize,
        top_k=param.input.topK,
        start=param.input.start,
        end=param.input.end,
        num_out_tokens=param.input.numOutTokens,
        hidden_splited_length=param.hiddenTiling.length,
        hidden_splited_num=param.hiddenTiling.num,
        hidden_splited_remain=param.hiddenTiling.remain,
        tokens_core_length=param.tokenPerCore.length,
        tokens_core_remain=param.tokenPerCore.remain,
        tokens_splited_length=param.tokenTiling.length,
        tokens_splited_num=param.tokenTiling.num,
        tokens_splited_remain=param.tokenTiling.remain,
        buffer_num=param.core.bufferNum,
    )
    context.SetBlockDim(param.core.usedCoreNum)


def DebugPrint(context: TilingRunContext, param: MoeTokenUnpermuteWithEpParam) -> None:
    context.LogD(f"coreNum: {param.core.usedCoreNum}, maxCoreMemory: "
                 f"{param.core.maxCoreMemory}, maxCoreNum: {param.core.maxCoreNum}, "
                 f"remainMemorySpace: {param.core.remainMemorySpace}, tilingKey: "
                 f"{param.core.tilingKey}, bufferNum: {param.core.bufferNum}")
    context.LogD(f"input: {param.input}")
    context.LogD(f"hiddenTiling: {param.hiddenTiling}, tokenTiling: {param.tokenTiling}, "
                 f"tokenPerCore: {param.tokenPerCore}")


def TilingSteps(context: TilingRunContext, topK: int, isUnpermute: bool
                ) -> tuple[int, MoeTokenUnpermuteWithEpParam | None]:
    """The body both operators' ``...TilingCompute`` share: checks, then Init / cores / hidden
    split / buffers / UB left / token split / key / save; no workspace."""
    param = MoeTokenUnpermuteWithEpParam()
    if MoeTokenUnpermuteWithEpInputParamCheck(context, isUnpermute) == GRAPH_FAILED:
        return GRAPH_FAILED, None
    Init(context, topK, param, isUnpermute)
    SetCoreNum(param)
    TilingHiddenSize(param)
    SetBufferNum(param)
    ComputeRemainMemerySpace(param)
    TilingToken(param)
    SetTilingKey(context, isUnpermute, param)
    SetTilingData(context, param)
    DebugPrint(context, param)
    context.SetTilingKey(param.core.tilingKey)
    return GRAPH_SUCCESS, param


def UnpermuteWithEpTilingCompute(context: TilingRunContext, topK: int, isUnpermute: bool
                                 ) -> tuple[int, MoeTokenUnpermuteWithEpParam | None]:
    """:func:`TilingSteps`, then the 16 MiB workspace."""
    status, param = TilingSteps(context, topK, isUnpermute)
    if status == GRAPH_SUCCESS:
        context.SetWorkspace([SYS_WORKSPACE_SIZE])
    return status, param


def RunTilingCompute(context: TilingContext, platform_ascendc: PlatformAdapter, compute: Any,
                     topK: int, isUnpermute: bool) -> TilingResult:
    """An entry's body: ``compute(context, topK, isUnpermute)`` (a ``...TilingCompute``) on the
    run context of ``context`` and the platform, and its result."""
    run = TilingRunContext(context, platform_ascendc)
    status, param = compute(run, topK, isUnpermute)
    return run.result(status, param)


def TilingMoeTokenUnpermuteWithEp(context: TilingContext, platform_ascendc: PlatformAdapter
                                  ) -> TilingResult:
    """Run the host tiling; never raises for a rejected case (see :class:`TilingResult`).

    ``platform_ascendc`` is anything with ``GetCoreNumAiv()`` and ``GetCoreMemSize(mem)``,
    normally ``aicore_sim.ascendc.PlatformAscendC(platform)``.
    """
    return RunTilingCompute(context, platform_ascendc, UnpermuteWithEpTilingCompute, -1, True)


tiling_func = TilingMoeTokenUnpermuteWithEp  # the entry under the project's generic name

# upstream's tiling-parse hook of this op: the EP ops' no-op, moe_common.TilingPrepare
TilingPrepareForMoeTokenUnpermuteWithEp = TilingPrepare


__all__ = [
    "GRAPH_FAILED", "GRAPH_SUCCESS", "N_FIELDS", "OP_TYPE", "SYS_WORKSPACE_SIZE", "AlignN",
    "ComputeMaxHiddenSize", "ComputeUnitHSpace", "GetLengthByType",
    "MoeTokenUnpermuteWithEpParam", "PlatformAdapter", "RunTilingCompute", "TilingContext",
    "TilingData",
    "TilingMoeTokenUnpermuteWithEp", "TilingPrepareForMoeTokenUnpermuteWithEp", "TilingResult",
    "TilingRunContext", "TilingSteps", "UnpermuteWithEpTilingCompute", "canonical_dtype",
    "tiling_func",
]
