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
commit is ported in ``tests/test_tiling.py`` (this package's).

The upstream source is the forward unpermute's tiling source with other names: the same
constants, parameter structs (``MoeTokenUnpermuteWithEpParam``), checks and steps, and a tiling
struct with the same 15 fields. It computes two flavours with one function,
``PermuteWithEpGradTilingCompute(context, topK, isUnpermute)``: the registered tiling of this
operator, ``Tiling4MoeTokenPermuteWithEpGrad``, passes ``isUnpermute = false`` and the
``num_topk`` attribute as ``topK``; ``TilingMoeTokenPermuteWithEpGrad`` (declared and defined
upstream but not registered) passes ``isUnpermute = true`` and ``-1``. Both are ported. The
shared steps have one port, :mod:`op_models.moe_token_unpermute_with_ep.tiling` (its deviations
2 to 6 apply here), which this module imports; what is this operator's own is here: its input
names and attributes, the compute function without a workspace, and the entries.

This is our own Python, written from a side-by-side reading of the upstream source; comments
are ours.

Deviations from upstream
------------------------
1. The gert ``TilingContext`` is :class:`TilingContext` (inputs and attributes) plus an
   explicit platform adapter; results come back as a :class:`TilingResult` (never raises for a
   rejected case; ``raise_for_status`` gives the host layer's ``TilingError``).
2. Where upstream dereferences a null pointer (the ``num_topk`` attribute missing) it would
   crash; we fail with rule ``null_attr`` instead.
3. The upstream tiling never sets a workspace size; ``workspace`` is the empty list (the aclnn
   layer reports 0 bytes and the kernel receives no workspace).
"""

from __future__ import annotations

from aicore_sim.ascendc.host import (
    GetLengthByType,
    PlatformAdapter,
    TilingResult,
)
from op_models.moe_common import TilingPrepare
from op_models.moe_token_unpermute_with_ep import tiling as _shared
from op_models.moe_token_unpermute_with_ep.tiling import (
    GRAPH_FAILED,
    GRAPH_SUCCESS,
    MAX_TOPK,
    N_FIELDS,
    UNPERMUTE_WITH_EP_ARRT_TOPK,
    AlignN,
    ComputeMaxHiddenSize,
    ComputeUnitHSpace,
    MoeTokenUnpermuteWithEpParam,
    RunTilingCompute,
    TilingData,
    TilingRunContext,
    TilingSteps,
)

OP_TYPE = "MoeTokenPermuteWithEpGrad"


class TilingContext(_shared.TilingContext):
    """The inputs of one tiling call: inputs ``permuted_tokens_output_grad``,
    ``sorted_indices``, ``permuted_probs_output_grad``; attributes 0 ``num_topk``, 1 ``range``,
    2 ``padded_mode`` (the forward's first three, at the same indices; ``create``: the IR's
    defaults unless given). The tiling reads no output."""

    OP_TYPE = OP_TYPE
    INPUTS = (("permuted_tokens_output_grad", True), ("sorted_indices", True),
              ("permuted_probs_output_grad", False))
    ATTRS = _shared.TilingContext.ATTRS[:3]
    CREATE_DEFAULTS = {"num_topk": 1, "range": (0, 0), "padded_mode": False}


def PermuteWithEpGradTilingCompute(context: TilingRunContext, topK: int, isUnpermute: bool
                                   ) -> tuple[int, MoeTokenUnpermuteWithEpParam | None]:
    """The shared steps (checks, Init / cores / hidden split / buffers / UB left / token split /
    key / save); no workspace (deviation 3)."""
    return TilingSteps(context, topK, isUnpermute)


def Tiling4MoeTokenPermuteWithEpGrad(context: TilingContext, platform_ascendc: PlatformAdapter
                                     ) -> TilingResult:
    """The registered tiling: ``topK`` = the ``num_topk`` attribute, ``isUnpermute`` false.
    Never raises for a rejected case (see :class:`TilingResult`).

    ``platform_ascendc`` is anything with ``GetCoreNumAiv()`` and ``GetCoreMemSize(mem)``,
    normally ``aicore_sim.ascendc.PlatformAscendC(platform)``.
    """
    run = TilingRunContext(context, platform_ascendc)
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
    return RunTilingCompute(context, platform_ascendc, PermuteWithEpGradTilingCompute, -1, True)


tiling_func = Tiling4MoeTokenPermuteWithEpGrad  # the entry under the project's generic name

# upstream's tiling-parse hook of this op: the EP ops' no-op, moe_common.TilingPrepare
TilingPrepareForMoeTokenPermuteWithEpGrad = TilingPrepare


__all__ = [
    "GRAPH_FAILED", "GRAPH_SUCCESS", "MAX_TOPK", "N_FIELDS", "OP_TYPE", "AlignN",
    "ComputeMaxHiddenSize", "ComputeUnitHSpace", "GetLengthByType",
    "MoeTokenUnpermuteWithEpParam", "PermuteWithEpGradTilingCompute", "PlatformAdapter",
    "Tiling4MoeTokenPermuteWithEpGrad", "TilingContext", "TilingData",
    "TilingMoeTokenPermuteWithEpGrad", "TilingPrepareForMoeTokenPermuteWithEpGrad",
    "TilingResult", "tiling_func",
]
