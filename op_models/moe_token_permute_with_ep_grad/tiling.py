"""Host tiling of ``MoeTokenPermuteWithEpGrad`` (step "op tiling" of the flow).

Turns a case (input shapes and dtypes, the ``num_topk`` / ``range`` attributes) and a platform
into the 15-field tiling data, the tiling key (0 no ``permuted_probs_output_grad``, 1 with it),
the block dim and the (absent) workspace that a launch hands to the kernel port.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (full-history mirror
github.com/libochao-huawei/ops-transformer), commit
``5778144076def6311557939ab5cbfe8303f13e8f``:
``moe/moe_token_permute_with_ep_grad/op_host/moe_token_permute_with_ep_grad_tiling.{h,cpp}``.
Its unit test ``tests/ut/op_host/test_moe_token_permute_with_ep_grad_tiling.cpp`` at the same
commit is ported in ``tests/test_permute_grad_tiling.py``.

This is our own Python, written from a side-by-side reading of the upstream source. Function
names, parameter structs, the order of the steps and the tiling-data field names follow
upstream so the two can be compared by eye; comments are ours.

The upstream source computes two flavours with one function,
``PermuteWithEpGradTilingCompute(context, topK, isUnpermute)``: the registered tiling of this
operator, ``Tiling4MoeTokenPermuteWithEpGrad``, passes ``isUnpermute = false`` and the
``num_topk`` attribute as ``topK``; ``TilingMoeTokenPermuteWithEpGrad`` (declared and defined
upstream but not registered) passes ``isUnpermute = true`` and ``-1``. Both are ported.

Deviations from upstream
------------------------
1. The gert ``TilingContext`` is :class:`TilingContext` (inputs and attributes) plus an
   explicit platform adapter; results come back as a :class:`TilingResult` (never raises for a
   rejected case; ``raise_for_status`` gives the :class:`TilingError`).
2. Where upstream dereferences a null pointer (the ``num_topk`` attribute missing) it would
   crash; we fail with rule ``null_attr`` instead. A missing required input fails with rule
   ``null_desc`` (upstream's own check).
3. ``Init`` returns early when ``range`` does not have two values, leaving every shape field at
   0; upstream then logs an error and the tiling still *succeeds*, with key 0 and block dim 0.
   That is reproduced, with a warning in the result (the aclnn layer refuses to launch it).
4. Signed 64-bit overflow is not modelled (Python integers); C truncating division and
   remainder, the ``int`` truncation of ``num_topk`` and the two's-complement ``AlignN`` of a
   negative size (a UB smaller than the 5120-byte reserve) are.
5. The upstream tiling never sets a workspace size; ``workspace`` is the empty list (the aclnn
   layer reports 0 bytes and the kernel receives no workspace).
6. ``SetTilingKey`` with an unknown probs dtype (``isUnpermute`` flavour only) logs an error and
   keeps key 0, as upstream; a warning is added to the result.
7. Logging is a list of messages in the result, not the CANN log.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field, fields
from typing import Any

from aicore_sim.ascendc.host import (
    GetLengthByType,
    PlatformAdapter,
    RunContext,
    TensorDesc,
    TilingError,
    TilingResult,
    c_div,
    c_rem,
    canonical_dtype,
    to_i32,
)
from aicore_sim.ascendc.platform_ascendc import CoreMemType

OP_TYPE = "MoeTokenPermuteWithEpGrad"

GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF

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

# ... and of the tiling source (their names keep upstream's "UNPERMUTE" prefix).
UNPERMUTE_WITH_EP_INPUT_TOKENS = 0
UNPERMUTE_WITH_EP_INPUT_IDX = 1
UNPERMUTE_WITH_EP_INPUT_PROBS = 2
UNPERMUTE_WITH_EP_OUTPUT_TOKENS = 0
UNPERMUTE_WITH_EP_ARRT_TOPK = 0
UNPERMUTE_WITH_EP_ARRT_RANGE = 1
ATTR_PADDED_MODE = 2  # IR index of padded_mode; the tiling never reads it
RANGE_SIZE = 2
MAX_TOPK = 512  # checked by the isUnpermute flavour only
RESERVE_SPACE = 5120  # bytes kept for sorted_indices and probs (ComputeMaxHiddenSize)

_INPUT_NAMES = ("permuted_tokens_output_grad", "sorted_indices", "permuted_probs_output_grad")


# --------------------------------------------------------------------------------------------
# The static helpers of the upstream source (C integer semantics)
# --------------------------------------------------------------------------------------------


def AlignN(x: int, N: int) -> int:
    """``(x + N - 1) & ~(N - 1)`` in int64 two's complement (a negative ``x`` stays
    negative: -603 -> -512)."""
    return (x + N - 1) & ~(N - 1)


def safeMod(a: int, b: int) -> int:
    """C remainder (sign of the dividend); 0 for a zero divisor."""
    return 0 if b == 0 else c_rem(a, b)


def safeDiv(a: int, b: int) -> int:
    """C truncating division; 0 for a zero divisor."""
    return 0 if b == 0 else c_div(a, b)


def isFloatDtype(inputDtypeSize: int) -> bool:
    """True when the element size is that of ``DT_FLOAT`` (4 bytes)."""
    return inputDtypeSize == GetLengthByType("DT_FLOAT")


# --------------------------------------------------------------------------------------------
# Parameter structs (upstream names) and the tiling data
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
    """The intermediate record (upstream keeps the forward unpermute's struct name)."""

    input: InputParam = field(default_factory=InputParam)
    hiddenTiling: TilingParam = field(default_factory=TilingParam)
    tokenTiling: TilingParam = field(default_factory=TilingParam)
    tokenPerCore: TilingParam = field(default_factory=TilingParam)
    core: CoreParam = field(default_factory=CoreParam)


@dataclass
class TilingData:
    """``MoeTokenPermuteWithEpGradTilingData``: 15 int64 fields, upstream order and names."""

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

    def as_list(self) -> list[int]:
        """The 15 values in serialisation order."""
        return list(astuple(self))

    def as_dict(self) -> dict[str, int]:
        """Field name -> value, in serialisation order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def flat_dict(self) -> dict[str, int]:
        """Same as :meth:`as_dict` (the struct is flat); the op model's generic name."""
        return self.as_dict()

    def to_string(self) -> str:
        """The values as the upstream UT harness prints them (each followed by a space)."""
        return "".join(f"{v} " for v in self.as_list())

    def to_bytes(self) -> bytes:
        """The 120-byte little-endian image the kernel copies (15 x int64)."""
        return struct.pack("<15q", *self.as_list())

    @classmethod
    def from_list(cls, values: Sequence[int]) -> TilingData:
        if len(values) != len(fields(cls)):
            raise ValueError(f"TilingData needs {len(fields(cls))} values, got {len(values)}")
        return cls(*(int(v) for v in values))


N_FIELDS = len(fields(TilingData))  # 15


@dataclass(frozen=True)
class TilingContext:
    """The inputs of one tiling call.

    ``inputs`` in IR order (``permuted_tokens_output_grad``, ``sorted_indices``,
    ``permuted_probs_output_grad``; ``None`` = absent). ``attrs`` maps the IR attribute index
    to its value (0 ``num_topk``, 1 ``range``, 2 ``padded_mode``); a missing key is an absent
    attribute. The tiling reads no output.
    """

    inputs: tuple[TensorDesc | None, ...]
    attrs: Mapping[int, Any] = field(default_factory=dict)
    node_name: str = OP_TYPE

    def __post_init__(self) -> None:
        if len(self.inputs) > len(_INPUT_NAMES):
            raise ValueError(f"{OP_TYPE} has {len(_INPUT_NAMES)} inputs, got {len(self.inputs)}")
        padded = tuple(self.inputs) + (None,) * (len(_INPUT_NAMES) - len(self.inputs))
        object.__setattr__(self, "inputs", padded)
        object.__setattr__(self, "attrs", dict(self.attrs))

    @classmethod
    def create(
        cls,
        permuted_tokens_output_grad: TensorDesc | None,
        sorted_indices: TensorDesc | None,
        permuted_probs_output_grad: TensorDesc | None = None,
        *,
        num_topk: int | None = 1,
        range: Sequence[int] | None = (0, 0),  # noqa: A002 - the operator's attribute name
        padded_mode: bool | None = False,
    ) -> TilingContext:
        """Named attributes at their IR indices (defaults: the IR's); ``None`` leaves one
        absent."""
        attrs: dict[int, Any] = {}
        if num_topk is not None:
            attrs[UNPERMUTE_WITH_EP_ARRT_TOPK] = int(num_topk)
        if range is not None:
            attrs[UNPERMUTE_WITH_EP_ARRT_RANGE] = [int(v) for v in range]
        if padded_mode is not None:
            attrs[ATTR_PADDED_MODE] = bool(padded_mode)
        return cls((permuted_tokens_output_grad, sorted_indices, permuted_probs_output_grad),
                   attrs)

    def GetInputTensor(self, index: int) -> TensorDesc | None:
        return self.inputs[index] if 0 <= index < len(self.inputs) else None

    def GetInputShape(self, index: int) -> tuple[int, ...] | None:
        desc = self.GetInputTensor(index)
        return None if desc is None else desc.shape


class _RunContext(RunContext):
    """Mutable stand-in for ``gert::TilingContext`` during one call (generic accessors and
    logging: :class:`aicore_sim.ascendc.host.RunContext`)."""

    ctx: TilingContext
    saved: TilingData | None

    def result(self, status: int, param: MoeTokenUnpermuteWithEpParam | None) -> TilingResult:
        if status != GRAPH_SUCCESS:
            rule, msg = self.errors[0] if self.errors else ("unknown", "tiling failed")
            return TilingResult("failed", error=f"{OP_TYPE} tiling failed [{rule}]: {msg}",
                                rule=rule, warnings=tuple(self.warnings), log=tuple(self.log))
        return TilingResult("success", self.tiling_key, self.saved, list(self.workspace),
                            self.block_dim, warnings=tuple(self.warnings), log=tuple(self.log),
                            param=param)


# --------------------------------------------------------------------------------------------
# The upstream steps
# --------------------------------------------------------------------------------------------


def ComputeUnitHSpace(inputDtypeSize: int, bufferNum: int) -> int:
    """UB bytes per hidden element: ``QUE_NUM + bufferNum - 1`` buffers of the input dtype,
    plus two fp32 buffers unless the dtype is 4 bytes wide."""
    castNum = 0 if isFloatDtype(inputDtypeSize) else CAST_NUM
    return inputDtypeSize * (QUE_NUM + bufferNum - 1) + FLOAT_DATA_SIZE * castNum


def ComputeMaxHiddenSize(param: MoeTokenUnpermuteWithEpParam, bufferNum: int) -> int:
    """Largest 512-aligned hidden chunk that fits beside the 5120-byte reserve (upstream sizes
    the reserve for 512 slots of indices and probs), one 512 step below the quotient."""
    maxHiddenSize = safeDiv(param.core.maxCoreMemory - RESERVE_SPACE,
                            ComputeUnitHSpace(param.input.tokensDtypeSize, bufferNum))
    return AlignN(maxHiddenSize - ALIGN_512, ALIGN_512)


def MoeTokenUnpermuteWithEpInputParamCheck(context: _RunContext, isUnpermute: bool) -> int:
    """``num_topk >= 1``; both required inputs present; the grad 2-D; with probs: 1-D (this
    operator), or 2-D with ``dim1 == num_topk``, ``dim0 x dim1`` slots and ``topK <= 512``
    (the isUnpermute flavour)."""
    ctx = context.ctx
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
        missing = "permuted_tokens_output_grad" if tokensShape is None else "sorted_indices"
        context.LogE("null_desc", f"{missing} is missing (permutedTokens or sortedIndices is "
                     "nullptr)")
        return GRAPH_FAILED
    if len(tokensShape) != 2:
        context.LogE("tokens_dim_num", "permuted_tokens_output_grad must be 2-D, got shape "
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
            context.LogE("probs_dim_num", "permuted_probs_output_grad must be 1-D, got shape "
                         f"{list(probsShape)} ({probsDimNum} dims) (permutedProbsGrad's shape "
                         "is not 1D)")
            return GRAPH_FAILED
    return GRAPH_SUCCESS


def Init(context: _RunContext, topK: int, param: MoeTokenUnpermuteWithEpParam,
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

    param.input.numOutTokens = tokensShape[0]  # rows of the permuted grad
    param.input.hiddenSize = tokensShape[1]
    param.input.totalLength = sortedIndicesShape[0]  # N * K slots
    if isUnpermute:
        if probsShape is not None:
            param.input.probsDtypeSize = GetLengthByType(
                ctx.GetInputTensor(UNPERMUTE_WITH_EP_INPUT_PROBS).dtype)
            param.input.tokensNum = probsShape[0]
            param.input.topK = probsShape[1]
        else:
            param.input.topK = inputTopK
            param.input.tokensNum = safeDiv(param.input.totalLength, param.input.topK)
        param.input.PermuteProbGradSize = 1 if probsShape is None else 0
    else:
        # this operator: topK is the attribute itself, so only an attribute beyond int32
        # (truncated in inputTopK) gives 1
        param.input.topK = topK if inputTopK == topK else 1
        param.input.PermuteProbGradSize = 1
        param.input.tokensNum = safeDiv(param.input.totalLength, param.input.topK)
    param.input.haveProbs = probsShape is not None


def SetCoreNum(param: MoeTokenUnpermuteWithEpParam) -> None:
    """At least one token per core: ``min(tokensNum, cores)`` cores."""
    if param.input.tokensNum < param.core.maxCoreNum:
        param.core.usedCoreNum = param.input.tokensNum
    else:
        param.core.usedCoreNum = param.core.maxCoreNum


def TilingHiddenSize(param: MoeTokenUnpermuteWithEpParam) -> None:
    """Whole rows when the 512-aligned row fits with two buffers, else chunks of the limit."""
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
    """Deepest input queue (4 down to 2) whose chunk limit still holds the chosen chunk."""
    maxBufferNum = 4
    bufferNum = maxBufferNum
    while bufferNum > MIN_BUFFER_NUM and \
            param.hiddenTiling.length > ComputeMaxHiddenSize(param, bufferNum):
        bufferNum -= 1
    param.core.bufferNum = bufferNum


def ComputeRemainMemerySpace(param: MoeTokenUnpermuteWithEpParam) -> None:
    """UB left for the per-loop indices after the hidden buffers and 256 bytes."""
    param.core.remainMemorySpace = param.core.maxCoreMemory - AlignN(
        param.hiddenTiling.length, ALIGN_512) * ComputeUnitHSpace(
        param.input.tokensDtypeSize, param.core.bufferNum)
    param.core.remainMemorySpace -= ALIGN_256


def TilingToken(param: MoeTokenUnpermuteWithEpParam) -> None:
    """Tokens per core (the first ``remain`` cores get one more, in the kernel) and the tokens
    per loop whose K indices (plus, in the isUnpermute flavour, probs and their fp32 copy)
    fit in the rest of UB."""
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


def SetTilingKey(context: _RunContext, isUnpermute: bool,
                 param: MoeTokenUnpermuteWithEpParam) -> None:
    """0 without probs; this operator 1 with them; the isUnpermute flavour 1 / 2 / 3 for
    probs in fp32 / fp16 / bf16 (deviation 6)."""
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
                    "error and keeps tiling key 0")
        else:
            param.core.tilingKey = 1
    else:
        param.core.tilingKey = 0


def SetTilingData(context: _RunContext, param: MoeTokenUnpermuteWithEpParam) -> None:
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


def DebugPrint(context: _RunContext, param: MoeTokenUnpermuteWithEpParam) -> None:
    context.LogD(f"coreNum: {param.core.usedCoreNum}, maxCoreMemory: "
                 f"{param.core.maxCoreMemory}, maxCoreNum: {param.core.maxCoreNum}, "
                 f"remainMemorySpace: {param.core.remainMemorySpace}, tilingKey: "
                 f"{param.core.tilingKey}, bufferNum: {param.core.bufferNum}")
    context.LogD(f"input: {param.input}")
    context.LogD(f"hiddenTiling: {param.hiddenTiling}, tokenTiling: {param.tokenTiling}, "
                 f"tokenPerCore: {param.tokenPerCore}")


def PermuteWithEpGradTilingCompute(context: _RunContext, topK: int, isUnpermute: bool
                                   ) -> tuple[int, MoeTokenUnpermuteWithEpParam | None]:
    """Checks, then Init / cores / hidden split / buffers / UB left / token split / key /
    save; no workspace (deviation 5)."""
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


def Tiling4MoeTokenPermuteWithEpGrad(context: TilingContext, platform_ascendc: PlatformAdapter
                                     ) -> TilingResult:
    """The registered tiling: ``topK`` = the ``num_topk`` attribute, ``isUnpermute`` false.
    Never raises for a rejected case (see :class:`TilingResult`).

    ``platform_ascendc`` is anything with ``GetCoreNumAiv()`` and ``GetCoreMemSize(mem)``,
    normally ``aicore_sim.ascendc.PlatformAscendC(platform)``.
    """
    run = _RunContext(context, platform_ascendc)
    top_k = run.attr(UNPERMUTE_WITH_EP_ARRT_TOPK)
    if top_k is None:
        run.LogE("null_attr", "attribute num_topk (IR index 0) is absent; upstream "
                 "dereferences a null pointer here")
        return run.result(GRAPH_FAILED, None)
    status, param = PermuteWithEpGradTilingCompute(run, int(top_k), False)
    return run.result(status, param)


def TilingMoeTokenPermuteWithEpGrad(context: TilingContext, platform_ascendc: PlatformAdapter
                                    ) -> TilingResult:
    """The other entry of the upstream source (not registered): ``topK`` -1, ``isUnpermute``
    true, i.e. the forward unpermute's arithmetic without its workspace."""
    run = _RunContext(context, platform_ascendc)
    status, param = PermuteWithEpGradTilingCompute(run, -1, True)
    return run.result(status, param)


def tiling_func(context: TilingContext, platform_ascendc: PlatformAdapter) -> TilingResult:
    """Alias of :func:`Tiling4MoeTokenPermuteWithEpGrad` under the project's generic name."""
    return Tiling4MoeTokenPermuteWithEpGrad(context, platform_ascendc)


def TilingPrepareForMoeTokenPermuteWithEpGrad(compile_info: object = None) -> int:
    """The tiling-parse hook: a no-op with an empty compile-info struct, as upstream."""
    del compile_info
    return GRAPH_SUCCESS


__all__ = [
    "GRAPH_FAILED", "GRAPH_SUCCESS", "N_FIELDS", "OP_TYPE", "AlignN", "ComputeMaxHiddenSize",
    "ComputeUnitHSpace", "GetLengthByType", "MoeTokenUnpermuteWithEpParam",
    "PermuteWithEpGradTilingCompute", "PlatformAdapter", "TensorDesc",
    "Tiling4MoeTokenPermuteWithEpGrad", "TilingContext", "TilingData", "TilingError",
    "TilingMoeTokenPermuteWithEpGrad", "TilingPrepareForMoeTokenPermuteWithEpGrad",
    "TilingResult", "tiling_func",
]
