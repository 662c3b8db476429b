"""Host tiling of ``MoeTokenUnpermuteWithEpGrad`` (step "op tiling" of the flow).

Turns a case (input shapes, dtypes, attributes) and a platform into the 19-field tiling data,
the tiling key, the block dim and the workspace sizes that a launch hands to the kernel port.

Provenance
----------
Upstream: github.com/hicann/ops-transformer,
``moe/moe_token_unpermute_with_ep_grad/op_host/moe_token_unpermute_with_ep_grad_tiling.{h,cpp}``.

* Target behaviour ("V3"): tiling at commit ``6b18be490757f18e42a401373ee48efb50ab2181``; its unit
  test ``tests/ut/op_host/test_moe_token_unpermute_with_ep_grad_tiling.cpp`` at the same commit
  (20 cases) is ported in ``tests/test_tiling.py`` (this package's).
* Also read: the older tiling and unit test at ``c29bc1069d3252c641e2aa059ec88f392d3f05ac``
  ("V0", 13 cases), whose arithmetic is the same.

This is our own Python, written from the project's operator specification and a side-by-side
reading of the upstream source. Function names, the order of the checks and the tiling-data
field names follow upstream so the two can be compared by eye; comments are ours.

Deviations from upstream
------------------------
1. The gert ``TilingContext`` is replaced by :class:`TilingContext` (inputs and attributes) plus
   an explicit platform adapter argument; results come back as a :class:`TilingResult` instead
   of being written into the context.
2. Where upstream dereferences a null pointer (a required input missing, or an input descriptor
   fetched by a shifted instance index when ``permuted_tokens`` is absent, spec §9 #6) it would
   crash; we return a failure with rule ``null_desc`` instead.
3. An attribute of the wrong kind at an index (e.g. an int where ``range`` is read as a list) is
   reinterpreted memory upstream; we fail with rule ``attr_type`` instead.
4. Signed 64-bit overflow (undefined behaviour in C++, only reachable with absurd shapes) is not
   modelled: Python integers do not overflow there. Unsigned 64-bit wrap *is* modelled wherever
   upstream's arithmetic is unsigned (the UB expressions), as is truncating signed division.
5. A division by zero (upstream: a trap) becomes a failure; it is unreachable for valid K.
6. The ``#if (__NPU_ARCH__ == 3510)`` empty-tensor block is host code guarded by a device-arch
   macro, so A2/A3 host builds do not contain it. It runs here only when the caller passes
   ``host_npu_arch=3510``; by default it is skipped, as on A2/A3.
7. The range-size bug (spec §9 #3) is reproduced: the tiling succeeds with ``numOutTokens``,
   ``start`` and ``end`` left at 0 and the block dim never set (``block_dim is None``). A
   warning is added to the result.
8. For an intra-core split failure upstream logs the misleading range error; we report the split
   rule as the error and keep upstream's message in the log.
9. Logging is a list of messages in the result, not the CANN log.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aicore_sim.ascendc import host
from aicore_sim.ascendc.host import (
    GRAPH_FAILED,  # non-zero, which matters for bug §9 #3
    GRAPH_SUCCESS,
    GetLengthByType,
    PlatformAdapter,
    RunContext,
    TilingResult,
    TilingStruct,
    c_ceil_div0,
    c_div,
    c_div0,
    c_rem,
    c_rem0,
    canonical_dtype,
    to_i64,
    to_u64,
)
from aicore_sim.ascendc.platform_ascendc import CoreMemType
from op_models.moe_common import TilingPrepare

OP_TYPE = "MoeTokenUnpermuteWithEpGrad"

# Constants of the upstream tiling (same names). The uint32 ones take part in unsigned maths.
BLOCK_SIZE_32 = 32  # uint32
BLOCK_SIZE_512 = 512  # uint32
BUFFER_NUM = 2  # uint32
INDICES_RESERVE_MAX_NUM = 256  # int64
INPUT_UNPERMUTEDOUTPUTD_IDX = 0
INPUT_ROWIDMAP_IDX = 1
INPUT_PERMUTED_TOKENS_IDX = 2
INPUT_PROB_IDX = 3
ATTR_PADDEDMODE_IDX = 0
ATTR_RESTORESHAPE_IDX = 1  # never read by the tiling
ATTR_RANGE_IDX = 2
ATTR_TOPKNUM_IDX = 3
DIM_0 = 0
DIM_1 = 1
DIM_NUM_ONE = 1
DIM_NUM_TWO = 2
EP_RANGE_SIZE = 2
MAX_TOPK = 512
FP32_TYPE_LENGTH = 4  # uint32 sizeof(float)
SYS_WORKSPACE_SIZE = 16 * 1024 * 1024

# Tiling keys the host produces (10 and 11 are reserved for padded mode; never produced).
TILING_KEY_PROB_NONE = 0
TILING_KEY_PROB_NOT_NONE = 1

_MASK32 = (1 << 32) - 1

_REQUIRED_INPUTS = (True, True, False, False)  # IR order: grad, sorted_indices, permuted, probs
_INPUT_NAMES = ("unpermuted_tokens_grad", "sorted_indices", "permuted_tokens", "probs")


# --------------------------------------------------------------------------------------------
# C integer semantics
# --------------------------------------------------------------------------------------------


_u64, _i64, _cdiv, _crem = to_u64, to_i64, c_div, c_rem


def AlignUp(num: int, rnd: int) -> int:
    """Round ``num`` up to a multiple of ``rnd`` (int64 maths); 0 when ``rnd`` is 0."""
    return 0 if rnd == 0 else _cdiv(num + rnd - 1, rnd) * rnd


def AlignDown(num: int, rnd: int) -> int:
    """Round ``num`` down (toward zero) to a multiple of ``rnd``; 0 when ``rnd`` is 0."""
    return 0 if rnd == 0 else _cdiv(num, rnd) * rnd


# ceiling division, truncating division and C remainder in int64 maths, 0 for a zero divisor
CeilDiv, GetDiv, GetRem = c_ceil_div0, c_div0, c_rem0


def GetGreatestDivisor(num: int, div: int) -> int:
    """Largest divisor of ``num`` that is not above ``div`` (``div`` counts down from itself)."""
    while _crem(num, div) != 0:
        div -= 1
    return div


# --------------------------------------------------------------------------------------------
# Tiling data and the context model
# --------------------------------------------------------------------------------------------


@dataclass
class TilingData(TilingStruct):
    """``MoeTokenUnpermuteWithEpGradTilingData``: 19 int64 fields, upstream order and names."""

    tokensNum: int = 0
    topK: int = 0
    hiddenSize: int = 0
    numOutTokens: int = 0
    formerCoreNum: int = 0
    tailCoreNum: int = 0
    tokenNumEachCore: int = 0
    tokenNumTailCore: int = 0
    rowIdMapEachCore: int = 0
    rowIdMapTailCore: int = 0
    hiddenSizeAlign: int = 0
    hiddenSizeLoopTimes: int = 0
    hiddenSizeTail: int = 0
    inputReserveNum: int = 0
    indicesReserveNum: int = 0
    indicesReserveNumAlign: int = 0
    totalUbSize: int = 0
    start: int = 0
    end: int = 0

    def to_bytes(self) -> bytes:
        """The 152-byte little-endian image the kernel copies (19 × int64, wrapped)."""
        return struct.pack("<19q", *(_i64(v) for v in self.as_list()))


class TilingContext(host.TilingContext):
    """The inputs of one tiling call, read through gert's getters
    (:class:`aicore_sim.ascendc.host.TilingContext`): inputs ``unpermuted_tokens_grad``,
    ``sorted_indices``, ``permuted_tokens``, ``probs`` (the last two optional: an absent one
    owns no instance index); attributes 0 ``padded_mode`` bool, 1 ``restore_shape`` list,
    2 ``range`` list, 3 ``topk_num`` int, read by index exactly as upstream reads them, so a
    case that lists attributes positionally (as upstream's UT does) sees the same quirks.
    ``create`` sets ``padded_mode`` false unless given; the aclnn API always passes
    ``padded_mode`` and ``topk_num`` and substitutes the IR defaults ({1, 1}, {-1, -1}) for
    null arrays: pass those values to model an aclnn call."""

    OP_TYPE = OP_TYPE
    INPUTS = tuple(zip(_INPUT_NAMES, _REQUIRED_INPUTS))
    ATTRS = (("padded_mode", "bool"), ("restore_shape", "list"), ("range", "list"),
             ("topk_num", "int"))
    CREATE_DEFAULTS = {"padded_mode": False}


# --------------------------------------------------------------------------------------------
# The run context: inputs + platform + what the tiling writes back
# --------------------------------------------------------------------------------------------


class _AttrTypeError(Exception):
    def __init__(self, index: int, expected: str, value: object) -> None:
        super().__init__(f"attribute at IR index {index} is {value!r}, not {expected}")
        self.index = index


class _RunContext(RunContext):
    """Mutable stand-in for ``gert::TilingContext`` during one call (private); the generic
    accessors and logging are :class:`aicore_sim.ascendc.host.RunContext`."""

    ctx: TilingContext
    platform: PlatformAdapter
    saved: TilingData | None

    def SaveTiling(self, tiling: TilingData) -> None:
        self.saved = TilingData.from_list(tiling.as_list())

    def GetAttrPointer(self, index: int, kind: str) -> Any:
        """Typed attribute read by IR index: ``None`` when absent (or the set is null)."""
        attrs = self.ctx.attrs
        if attrs is None or index not in attrs or attrs[index] is None:
            return None
        value = attrs[index]
        if kind == "bool" and not isinstance(value, bool):
            raise _AttrTypeError(index, "a bool", value)
        if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise _AttrTypeError(index, "an int", value)
        if kind == "list":
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise _AttrTypeError(index, "a list of int", value)
            return [int(v) for v in value]
        return value

    def result(self, status: int, param: Any = None) -> TilingResult:
        """:meth:`RunContext.result`; a tiling that never set its key has key 0."""
        if self.tiling_key is None:
            self.tiling_key = 0
        return super().result(status, param)


def _ub_size(platform: PlatformAdapter) -> int:
    """``GetCoreMemSize(UB)`` as the ``uint64_t`` upstream stores it in."""
    return _u64(int(platform.GetCoreMemSize(CoreMemType.UB)))


def _core_num(platform: PlatformAdapter) -> int:
    """``GetCoreNumAiv()`` as the ``uint32_t`` upstream stores it in."""
    return int(platform.GetCoreNumAiv()) & _MASK32


# --------------------------------------------------------------------------------------------
# Inter-core split
# --------------------------------------------------------------------------------------------


def MoeTokenUnpermuteWithEpGradInitSplitInfo(context: _RunContext, tiling: TilingData) -> None:
    """Spread the N tokens over all AIV cores: the first ``N mod cores`` get one more."""
    tokensNum = tiling.tokensNum
    topK = tiling.topK
    ascendcPlatform = context.GetPlatformInfo()
    totalCoreNum = _core_num(ascendcPlatform)
    ubSize = _i64(_ub_size(ascendcPlatform))

    tokenNumTailCore = GetDiv(tokensNum, totalCoreNum)
    formerCoreNum = GetRem(tokensNum, totalCoreNum)
    tokenNumEachCore = tokenNumTailCore if formerCoreNum == 0 else tokenNumTailCore + 1
    tailCoreNum = totalCoreNum - formerCoreNum
    tiling.formerCoreNum = formerCoreNum
    tiling.tailCoreNum = tailCoreNum
    tiling.tokenNumEachCore = tokenNumEachCore
    tiling.tokenNumTailCore = tokenNumTailCore
    tiling.rowIdMapEachCore = tokenNumEachCore * topK
    tiling.rowIdMapTailCore = tokenNumTailCore * topK
    tiling.totalUbSize = ubSize


# --------------------------------------------------------------------------------------------
# Intra-core split
# --------------------------------------------------------------------------------------------


def CoreSplitInfoProbIsNone(
    context: _RunContext,
    tiling: TilingData,
    inputTypeLength: int,
    rowIdMapTypeLength: int,
    totalUbSize: int,
) -> bool:
    """Path A (no probs): fill UB with row-id + token-row double buffers; split H if needed."""
    hiddenSize = tiling.hiddenSize
    inputBlockAlignEleNum = BLOCK_SIZE_32 // inputTypeLength  # uint32
    rowIdMapBlockAlignEleNum = BLOCK_SIZE_32 // rowIdMapTypeLength  # uint32
    topK = tiling.topK

    # Whole hidden row, padded to one 32-byte block of the token dtype.
    hiddenSizeAlign = AlignUp(hiddenSize, inputBlockAlignEleNum)

    # Tokens per loop: (uint64 ub - 64) / int64 per-token bytes of both double buffers. The
    # int64 divisor converts to uint64, so this is an unsigned division that wraps for ub < 64.
    denom = BUFFER_NUM * (hiddenSizeAlign * inputTypeLength + topK * rowIdMapTypeLength)
    if _u64(denom) == 0:
        context.LogD("path A: per-token byte count is 0 (upstream would trap)")
        return False
    indicesReserveNum = _i64(_u64(totalUbSize - BLOCK_SIZE_32 * BUFFER_NUM) // _u64(denom))
    indicesReserveNum = max(indicesReserveNum * topK, topK)
    # Below MAX_TOPK round up to whole 32-byte blocks of indices, otherwise round down.
    if indicesReserveNum < MAX_TOPK:
        indicesReserveNum = AlignUp(indicesReserveNum, rowIdMapBlockAlignEleNum)
    else:
        indicesReserveNum = AlignDown(indicesReserveNum, rowIdMapBlockAlignEleNum)
    if indicesReserveNum <= 0:
        context.LogD(f"path A: indicesReserveNum {indicesReserveNum} <= 0")
        return False

    # Widest hidden chunk that fits next to the index buffers (unsigned numerator again).
    tokensPerLoop = _cdiv(indicesReserveNum, topK)
    denom = BUFFER_NUM * inputTypeLength * tokensPerLoop
    if _u64(denom) == 0:
        context.LogD("path A: tokens per loop is 0 (upstream would trap)")
        return False
    hiddenSizeTmpMax = _i64(
        _u64(totalUbSize - indicesReserveNum * BUFFER_NUM * rowIdMapTypeLength) // _u64(denom)
    )
    if hiddenSizeTmpMax < hiddenSizeAlign:
        hiddenSizeAlign = AlignDown(hiddenSizeTmpMax, inputBlockAlignEleNum)
    if hiddenSizeAlign == 0:
        context.LogD("path A: hiddenSizeAlign == 0 (UB too small for one 32-byte chunk)")
        return False

    tiling.inputReserveNum = indicesReserveNum
    tiling.indicesReserveNum = indicesReserveNum
    tiling.indicesReserveNumAlign = indicesReserveNum

    hiddenSizeLoopTimes = _cdiv(hiddenSize + hiddenSizeAlign - 1, hiddenSizeAlign)
    tiling.hiddenSizeAlign = hiddenSizeAlign
    tiling.hiddenSizeLoopTimes = hiddenSizeLoopTimes
    tiling.hiddenSizeTail = hiddenSize - (hiddenSizeLoopTimes - 1) * hiddenSizeAlign
    return True


def CoreSplitInfoProbIsNotNoneHelper(
    context: _RunContext,
    indicesReserveNum: int,
    inputReserveNum: int,
    hiddenSizeLoopTimes: int,
    hiddenSizeAlign: int,
    tiling: TilingData,
) -> bool:
    """Final zero check of path B and the store of its first four results."""
    if indicesReserveNum == 0 or inputReserveNum == 0:
        context.LogD("path B: indicesReserveNum == 0 or inputReserveNum == 0")
        return False
    tiling.hiddenSizeAlign = hiddenSizeAlign
    tiling.hiddenSizeLoopTimes = hiddenSizeLoopTimes
    tiling.inputReserveNum = inputReserveNum
    tiling.indicesReserveNum = indicesReserveNum
    return True


def CoreSplitInfoProbIsNotNone(
    context: _RunContext,
    tiling: TilingData,
    inputTypeLength: int,
    probTypeLength: int,
    totalUbSize: int,
) -> bool:
    """Path B (probs given): positions per loop, permuted rows per group, hidden split."""
    hiddenSize = tiling.hiddenSize
    topK = tiling.topK

    inputBlock512AlignEleNum = BLOCK_SIZE_512 // inputTypeLength  # uint32
    hiddenSizeAlign = AlignUp(hiddenSize, inputBlock512AlignEleNum)
    indicesReserveNumMax = tiling.tokenNumEachCore * topK
    # At most 256 flat positions per loop (whole tokens), or one token when K > 256.
    if topK <= INDICES_RESERVE_MAX_NUM:
        indicesReserveNum = min(indicesReserveNumMax, AlignDown(INDICES_RESERVE_MAX_NUM, topK))
    else:
        indicesReserveNum = topK

    inputBlock32AlignEleNum = BLOCK_SIZE_32 // probTypeLength  # uint32
    indicesReserveNumAlign = AlignUp(indicesReserveNum, inputBlock32AlignEleNum)

    # Bytes left for permuted rows once every other buffer is placed; computed in uint64,
    # reinterpreted as int64, then divided (truncating) by one double-buffered row.
    fixedBytes = (
        BUFFER_NUM * probTypeLength * indicesReserveNumAlign * 2
        + indicesReserveNumAlign * FP32_TYPE_LENGTH * 3
        + 256
    )
    perHiddenBytes = (BUFFER_NUM * inputTypeLength * 2 + 3 * FP32_TYPE_LENGTH) * hiddenSizeAlign
    rowBytes = BUFFER_NUM * inputTypeLength * hiddenSizeAlign
    if rowBytes == 0:
        context.LogD("path B: permuted row size is 0 (upstream would trap)")
        return False
    inputReserveNumMax = _cdiv(_i64(totalUbSize - fixedBytes - perHiddenBytes), rowBytes)

    inputReserveNum = 1
    hiddenSizeLoopTimes = 1
    if inputReserveNumMax < 1:
        # Not even one full row fits: split the hidden dim, one permuted row per group.
        context.LogD("path B: hidden size needs to be split")
        hiddenSizeLoopMax = _i64(
            _u64(totalUbSize - fixedBytes)
            // (3 * BUFFER_NUM * inputTypeLength + 3 * FP32_TYPE_LENGTH)
        )
        hiddenSizeLoopMax = AlignDown(hiddenSizeLoopMax, inputBlock512AlignEleNum)
        if hiddenSizeLoopMax == 0:
            context.LogD("path B: hiddenSizeLoopMax == 0 (UB too small for one 512-byte chunk)")
            return False
        hiddenSizeLoopTimes = _cdiv(hiddenSize + hiddenSizeLoopMax - 1, hiddenSizeLoopMax)
        hiddenSize = hiddenSize - (hiddenSizeLoopTimes - 1) * hiddenSizeLoopMax  # tail
        hiddenSizeAlign = hiddenSizeLoopMax
    else:
        # Whole rows fit: the group size is the largest divisor of K that fits.
        context.LogD("path B: hidden size is not split")
        inputReserveNumMax = min(inputReserveNumMax, topK)
        if inputReserveNumMax == 0:
            context.LogD("path B: inputReserveNumMax == 0")
            return False
        inputReserveNum = GetGreatestDivisor(topK, inputReserveNumMax)
    if not CoreSplitInfoProbIsNotNoneHelper(
        context, indicesReserveNum, inputReserveNum, hiddenSizeLoopTimes, hiddenSizeAlign, tiling
    ):
        return False
    tiling.hiddenSizeTail = hiddenSize
    tiling.indicesReserveNumAlign = indicesReserveNumAlign
    return True


def MoeTokenUnpermuteWithEpGradCoreSplitInfo(context: _RunContext, tiling: TilingData) -> int:
    """Pick path A or B from the presence of probs and run its intra-core split."""
    tokensTypeLength = _DescTypeLength(context, INPUT_PERMUTED_TOKENS_IDX, "permuted_tokens")
    if tokensTypeLength is None:
        return GRAPH_FAILED

    probTensor = context.ctx.GetOptionalInputTensor(INPUT_PROB_IDX)
    probTypeLength = tokensTypeLength
    if probTensor is not None:
        probTypeLength = _DescTypeLength(context, INPUT_PROB_IDX, "probs",
                                         " because permuted_tokens is absent")
        if probTypeLength is None:
            return GRAPH_FAILED

    rowIdMapDesc = context.ctx.GetInputDesc(INPUT_ROWIDMAP_IDX)
    rowIdMapTypeLength = 0 if rowIdMapDesc is None else GetLengthByType(rowIdMapDesc.dtype)
    if tokensTypeLength == 0 or rowIdMapTypeLength == 0 or probTypeLength == 0:
        context.LogE(
            "dtype_length",
            "byte length of a dtype is 0 (tokens "
            f"{tokensTypeLength}, sorted_indices {rowIdMapTypeLength}, probs {probTypeLength}): "
            "unsupported or unknown dtype",
        )
        return GRAPH_FAILED

    totalUbSize = _ub_size(context.GetPlatformInfo())
    if probTensor is None:  # path A
        split, secondTypeLength, rule, how = (CoreSplitInfoProbIsNone, rowIdMapTypeLength,
                                              "split_prob_none", "without")
    else:  # path B
        split, secondTypeLength, rule, how = (CoreSplitInfoProbIsNotNone, probTypeLength,
                                              "split_prob_not_none", "with")
    if not split(context, tiling, tokensTypeLength, secondTypeLength, totalUbSize):
        context.LogE(
            rule,
            f"intra-core split {how} probs failed for UB {totalUbSize} bytes "
            f"({context.log[-1][4:] if context.log else 'no detail'})",
        )
        return GRAPH_FAILED
    return GRAPH_SUCCESS


def _DescTypeLength(context: _RunContext, index: int, name: str, why: str = "") -> int | None:
    """``GetLengthByType`` of input ``index``'s dtype; ``None`` (a ``null_desc`` failure logged)
    where its descriptor is missing (upstream dereferences the null pointer)."""
    desc = context.ctx.GetInputDesc(index)
    if desc is None:
        context.LogE(
            "null_desc",
            f"input descriptor at instance index {index} ({name}) is missing{why}; upstream "
            "dereferences a null pointer here",
        )
        return None
    return GetLengthByType(desc.dtype)


# --------------------------------------------------------------------------------------------
# Range, save, key
# --------------------------------------------------------------------------------------------


def SetStartEndInfoForTiling4MoeTokenUnpermuteWithEpGrad(
    context: _RunContext, tiling: TilingData, totalNum: int, numOutTokens: int
) -> bool:
    """Both splits, then the EP range window; False on any failure.

    Upstream declares this function ``bool`` but returns ``GRAPH_FAILED`` (non-zero, so *true*)
    for a range of size != 2: the call then "succeeds" without setting the window or the
    block dim. That bug is reproduced.
    """
    MoeTokenUnpermuteWithEpGradInitSplitInfo(context, tiling)
    context.LogD("inter-core split finished")
    if MoeTokenUnpermuteWithEpGradCoreSplitInfo(context, tiling) != GRAPH_SUCCESS:
        return False
    context.LogD("intra-core split finished")
    totalCoreNum = _core_num(context.GetPlatformInfo())
    epRange = context.GetAttrPointer(ATTR_RANGE_IDX, "list")
    start = 0
    end = totalNum
    if epRange is not None:
        if len(epRange) != EP_RANGE_SIZE:
            context.log.append(f"[E] {context.GetNodeName()}: the size of range only support 2")
            context.warnings.append(
                f"range has {len(epRange)} values, not 2: upstream returns GRAPH_FAILED from a "
                "bool function (read as true), so numOutTokens/start/end stay 0 and the block "
                "dim is never set"
            )
            return bool(GRAPH_FAILED)
        # The exact pair {-1, -1} (aclnn's default for a null range) means "no range".
        isRangeNone = epRange[0] == -1 and epRange[1] == -1
        if not isRangeNone:
            start, end = epRange[0], epRange[1]
            end = end + totalNum if end < 0 else end
            start = start + totalNum if start < 0 else start
            end = max(min(end, totalNum), 0)
            start = max(min(start, totalNum), 0)
            if end < start:
                context.LogE(
                    "range_order",
                    f"range {list(epRange)} normalises to start {start} > end {end} "
                    f"(T = {totalNum}); range[1] must not be less than range[0]",
                )
                return False
    if start != 0:
        numOutTokens = end
    tiling.numOutTokens = numOutTokens
    tiling.start = start
    tiling.end = end
    context.SetBlockDim(totalCoreNum)
    return True


def SetInfoForTiling4MoeTokenUnpermuteWithEpGrad(context: _RunContext, tiling: TilingData) -> int:
    """Save the tiling data, the 16 MiB system workspace and the tiling key."""
    context.SaveTiling(tiling)
    context.SetWorkspace([SYS_WORKSPACE_SIZE])
    try:
        paddedMode = context.GetAttrPointer(ATTR_PADDEDMODE_IDX, "bool")
    except _AttrTypeError as exc:
        context.LogE("attr_type", str(exc))
        return GRAPH_FAILED
    if context.ctx.GetAttrs() is None or paddedMode is None:
        context.LogE("padded_mode_missing", "attribute padded_mode (IR index 0) is absent")
        return GRAPH_FAILED
    context.LogD(f"paddedMode: {paddedMode}")
    paddedModeKey = 0
    probKey = 0 if context.ctx.GetOptionalInputTensor(INPUT_PROB_IDX) is None else 1
    tilingKey = paddedModeKey * 10 + probKey
    context.SetTilingKey(tilingKey)
    context.LogD(f"tilingKey: {tilingKey}")
    return GRAPH_SUCCESS


# --------------------------------------------------------------------------------------------
# Shape checks and the entry point
# --------------------------------------------------------------------------------------------


def SetTilingForTiling4MoeTokenUnpermuteWithEpGrad(
    context: _RunContext, unpermutedOutputDShape: tuple[int, ...], host_npu_arch: int | None
) -> int:
    """Attribute and shape checks (V3 order), then the splits, the range and the save."""
    ctx = context.ctx
    tiling = TilingData()
    probTensor = ctx.GetOptionalInputTensor(INPUT_PROB_IDX)
    permutedTokensTensor = ctx.GetOptionalInputTensor(INPUT_PERMUTED_TOKENS_IDX)
    permutedTokensShape = None
    if permutedTokensTensor is not None:
        permutedTokensShape = ctx.GetOptionalInputShape(INPUT_PERMUTED_TOKENS_IDX)
    probShape = None if probTensor is None else ctx.GetOptionalInputShape(INPUT_PROB_IDX)
    if ctx.GetAttrs() is None:
        context.LogE("null_attrs", "the attribute set is null")
        return GRAPH_FAILED

    if len(unpermutedOutputDShape) != DIM_NUM_TWO:
        context.LogE(
            "grad_dim_num",
            "unpermuted_tokens_grad must be 2-D, got shape "
            f"{list(unpermutedOutputDShape)} ({len(unpermutedOutputDShape)} dims)",
        )
        return GRAPH_FAILED
    tokensNum = unpermutedOutputDShape[DIM_0]
    hiddenSize = unpermutedOutputDShape[DIM_1]

    try:
        paddedMode = context.GetAttrPointer(ATTR_PADDEDMODE_IDX, "bool")
        if paddedMode is None:
            context.LogE("padded_mode_missing", "attribute padded_mode (IR index 0) is absent")
            return GRAPH_FAILED
        if paddedMode:
            context.LogE(
                "padded_mode_true", "padded_mode must be false (padded mode is unsupported)"
            )
            return GRAPH_FAILED
        topKAttr = context.GetAttrPointer(ATTR_TOPKNUM_IDX, "int")
    except _AttrTypeError as exc:
        context.LogE("attr_type", str(exc))
        return GRAPH_FAILED

    topK = 1 if topKAttr is None else topKAttr
    shouldCheckTotalNum = topKAttr is not None

    rowMap = ctx.GetInputShape(INPUT_ROWIDMAP_IDX)
    if rowMap is None:
        context.LogE("null_shape", "sorted_indices shape is null (input missing)")
        return GRAPH_FAILED
    if len(rowMap) != DIM_NUM_ONE:
        context.LogE(
            "indices_dim_num",
            f"sorted_indices must be 1-D, got shape {list(rowMap)} ({len(rowMap)} dims)",
        )
        return GRAPH_FAILED

    if probShape is not None:
        if len(probShape) != DIM_NUM_TWO:
            context.LogE(
                "probs_dim_num",
                f"probs must be 2-D, got shape {list(probShape)} ({len(probShape)} dims)",
            )
            return GRAPH_FAILED
        if probShape[DIM_0] != tokensNum:
            context.LogE(
                "probs_dim0",
                f"probs dim0 {probShape[DIM_0]} must equal tokensNum "
                f"(unpermuted_tokens_grad dim0) {tokensNum}",
            )
            return GRAPH_FAILED
        topK = probShape[DIM_1]
        shouldCheckTotalNum = True
    if topK <= 0 or topK > MAX_TOPK:
        source = "probs dim1" if probShape is not None else "topk_num"
        context.LogE("topk_range", f"topK ({source}) must be in [1, {MAX_TOPK}], got {topK}")
        return GRAPH_FAILED

    totalNum = rowMap[DIM_0]
    if shouldCheckTotalNum and totalNum != tokensNum * topK:
        context.LogE(
            "total_num",
            f"sorted_indices dim0 {totalNum} must equal tokensNum * topK = "
            f"{tokensNum} * {topK} = {tokensNum * topK}",
        )
        return GRAPH_FAILED

    numOutTokens = rowMap[DIM_0]
    if permutedTokensShape is not None:
        if len(permutedTokensShape) != DIM_NUM_TWO:
            context.LogE(
                "permuted_dim_num",
                f"permuted_tokens must be 2-D, got shape {list(permutedTokensShape)}",
            )
            return GRAPH_FAILED
        if permutedTokensShape[DIM_0] != totalNum:
            context.LogE(
                "permuted_dim0",
                f"permuted_tokens dim0 {permutedTokensShape[DIM_0]} must equal sorted_indices "
                f"dim0 {totalNum}",
            )
            return GRAPH_FAILED
        if permutedTokensShape[DIM_1] != hiddenSize:
            context.LogE(
                "permuted_dim1",
                f"permuted_tokens dim1 {permutedTokensShape[DIM_1]} must equal hiddenSize "
                f"{hiddenSize}",
            )
            return GRAPH_FAILED
        numOutTokens = permutedTokensShape[DIM_0]

    tiling.tokensNum = tokensNum
    tiling.topK = topK
    tiling.hiddenSize = hiddenSize
    hasZero = tokensNum == 0 or topK == 0 or hiddenSize == 0 or numOutTokens == 0
    if host_npu_arch == 3510 and hasZero:
        # Only in a host build for arch 3510 (see deviation 6): empty launch, no split.
        context.LogD("input shape has 0, skip tiling")
        context.SetBlockDim(_core_num(context.GetPlatformInfo()))
        context.SaveTiling(tiling)
        context.SetWorkspace([0])
        return GRAPH_SUCCESS
    if hasZero:
        context.LogE(
            "zero_shape",
            f"input shape has 0 (tokensNum {tokensNum}, topK {topK}, hiddenSize {hiddenSize}, "
            f"numOutTokens {numOutTokens}); empty tensors are unsupported",
        )
        return GRAPH_FAILED
    if topK > MAX_TOPK:
        context.LogE("topk_max", f"topK must not exceed {MAX_TOPK}, got {topK}")
        return GRAPH_FAILED

    try:
        ok = SetStartEndInfoForTiling4MoeTokenUnpermuteWithEpGrad(
            context, tiling, totalNum, numOutTokens
        )
    except _AttrTypeError as exc:
        context.LogE("attr_type", str(exc))
        return GRAPH_FAILED
    if not ok:
        # Upstream prints this message for every failure inside the call above.
        context.log.append(
            f"[E] {context.GetNodeName()}: rangeOptional[1] should not less than rangeOptional[0]"
        )
        return GRAPH_FAILED

    return SetInfoForTiling4MoeTokenUnpermuteWithEpGrad(context, tiling)


def Tiling4MoeTokenUnpermuteWithEpGrad(
    context: TilingContext,
    platform_ascendc: PlatformAdapter,
    *,
    host_npu_arch: int | None = None,
) -> TilingResult:
    """Run the V3 host tiling. Never raises for a rejected case: see :class:`TilingResult`.

    ``platform_ascendc`` is anything with ``GetCoreNumAiv()`` and ``GetCoreMemSize(mem_type)``,
    normally ``aicore_sim.ascendc.platform_ascendc.PlatformAscendC(platform)``.
    ``host_npu_arch`` models the host build's ``__NPU_ARCH__`` macro (deviation 6).
    """
    run = _RunContext(context, platform_ascendc)
    run.LogD("tiling start")
    unpermutedOutputDShape = context.GetInputShape(INPUT_UNPERMUTEDOUTPUTD_IDX)
    permutedTokensDesc = context.GetOptionalInputDesc(INPUT_PERMUTED_TOKENS_IDX)
    unpermutedOutputDDesc = context.GetInputDesc(INPUT_UNPERMUTEDOUTPUTD_IDX)
    if permutedTokensDesc is not None:
        if unpermutedOutputDDesc is None:
            run.LogE("null_desc", "unpermuted_tokens_grad descriptor is missing")
            return run.result(GRAPH_FAILED)
        permDtype = canonical_dtype(permutedTokensDesc.dtype)
        gradDtype = canonical_dtype(unpermutedOutputDDesc.dtype)
        if permDtype != gradDtype:
            run.LogE(
                "dtype_mismatch",
                f"permuted_tokens dtype {permDtype} must be the same as unpermuted_tokens_grad "
                f"dtype {gradDtype}",
            )
            return run.result(GRAPH_FAILED)

    if unpermutedOutputDShape is None:
        run.LogE("null_shape", "unpermuted_tokens_grad shape is null (input missing)")
        return run.result(GRAPH_FAILED)

    status = SetTilingForTiling4MoeTokenUnpermuteWithEpGrad(
        run, unpermutedOutputDShape, host_npu_arch
    )
    if status == GRAPH_SUCCESS:
        idx = context.GetInputDesc(INPUT_ROWIDMAP_IDX)
        if idx is not None and canonical_dtype(idx.dtype) == "DT_INT64":
            run.warnings.append(
                "sorted_indices is INT64: the tiling accepts it but the kernel reads int32 "
                "(aclnn rejects it with 161002)"
            )
        run.LogD("tiling end")
    return run.result(status)


tiling_func = Tiling4MoeTokenUnpermuteWithEpGrad  # the entry under the project's generic name


def tiling_or_raise(
    context: TilingContext,
    platform_ascendc: PlatformAdapter,
    *,
    host_npu_arch: int | None = None,
) -> TilingResult:
    """Like :func:`tiling_func` but raises the host layer's ``TilingError`` when the tiling
    fails."""
    return tiling_func(context, platform_ascendc, host_npu_arch=host_npu_arch).raise_for_status()


# upstream's tiling-parse hook of this op: the EP ops' no-op, moe_common.TilingPrepare
TilingPrepare4MoeTokenUnpermuteWithEpGrad = TilingPrepare


__all__ = [
    "GRAPH_FAILED",
    "GRAPH_SUCCESS",
    "OP_TYPE",
    "SYS_WORKSPACE_SIZE",
    "TILING_KEY_PROB_NONE",
    "TILING_KEY_PROB_NOT_NONE",
    "GetLengthByType",
    "PlatformAdapter",
    "TilingContext",
    "TilingData",
    "TilingPrepare4MoeTokenUnpermuteWithEpGrad",
    "TilingResult",
    "Tiling4MoeTokenUnpermuteWithEpGrad",
    "canonical_dtype",
    "tiling_func",
    "tiling_or_raise",
]
