"""Kernel entry of ``MoeTokenPermuteWithEp``: dispatch on the tiling key, three phases.

What ``launch`` runs once per AIV core (``GENERAL_OP_IMPL`` of upstream): sort the expert ids
(``indices``, int32 or int64) into ``sorted_indices`` (the source slot of every permuted row),
destroy the pipe, sort those int32 values again into ``sorted_indices`` (now the permuted row of
every slot), destroy that pipe, then copy every token row (and prob) to its permuted rows. Key
1 / 3 / 5 / 7 sort on one core, 2 / 4 / 6 / 8 on several; 3 / 4 / 7 / 8 copy rows in chunks
(split D); 5-8 keep only the rows of the EP window.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_permute_with_ep/op_kernel/moe_token_permute_with_ep.cpp``. Our own Python;
comments are ours.

Deviations from upstream
------------------------
1. ``tiling`` is a :class:`~op_models.moe_token_permute_with_ep.tiling.TilingData` object, not
   a GM address of 368 serialised bytes; ``GET_TILING_DATA`` becomes a copy.
2. The compile-time choices are arguments: ``tilingKey`` (``TILING_KEY_IS``) and the dtype
   macros ``DTYPE_TOKENS`` / ``DTYPE_INDICES`` / ``DTYPE_PROBS`` (upstream's defaults bf16 /
   int64 / bf16 when not given).
3. The ``g_coreType == AIC`` early return has no counterpart: only vector cores are simulated.
"""

from __future__ import annotations

from aicore_sim.ascendc import GM_ADDR, GetUserWorkspace, TPipe, bfloat16, int32, int64
from op_models.moe_token_permute_with_ep.kernel_index_copy import (
    MoeindexCopyOp,
    MoeindexCopySpiltDOp,
)
from op_models.moe_token_permute_with_ep.kernel_sort import MoeSortMultiCore, MoeSortOneCore
from op_models.moe_token_permute_with_ep.tiling import TilingData

# tiling key -> (first sort class, second sort class, index-copy class, ifNumOutTokens)
_KEYS = {
    1: (MoeSortOneCore, MoeSortOneCore, MoeindexCopyOp, False),
    3: (MoeSortOneCore, MoeSortOneCore, MoeindexCopySpiltDOp, False),
    2: (MoeSortMultiCore, MoeSortMultiCore, MoeindexCopyOp, False),
    4: (MoeSortMultiCore, MoeSortMultiCore, MoeindexCopySpiltDOp, False),
    5: (MoeSortOneCore, MoeSortOneCore, MoeindexCopyOp, True),
    7: (MoeSortOneCore, MoeSortOneCore, MoeindexCopySpiltDOp, True),
    6: (MoeSortMultiCore, MoeSortMultiCore, MoeindexCopyOp, True),
    8: (MoeSortMultiCore, MoeSortMultiCore, MoeindexCopySpiltDOp, True),
}


def moe_token_permute_with_ep(
    tokens: GM_ADDR | None,
    indices: GM_ADDR | None,
    probs: GM_ADDR | None,
    permuteTokens: GM_ADDR | None,
    sortedIndices: GM_ADDR | None,
    permuteProbs: GM_ADDR | None,
    workspace: GM_ADDR | None,
    tiling: TilingData,
    tilingKey: int = 1,
    DTYPE_TOKENS=bfloat16,
    DTYPE_INDICES=int64,
    DTYPE_PROBS=bfloat16,
) -> None:
    """The ``__global__`` kernel: one core's share of the three phases."""
    tilingData = TilingData.from_list(tiling.as_list())  # GET_TILING_DATA: a private copy
    if workspace is None:
        return
    userWS = GetUserWorkspace(workspace)
    if userWS is None:
        return
    t = tilingData
    sortPipe = TPipe()
    if tilingKey not in _KEYS:
        return  # no TILING_KEY_IS branch matches: the kernel does nothing
    sortClass1, sortClass2, indexCopyClass, ifNumOutTokens = _KEYS[tilingKey]
    # GENERAL_OP_IMPL
    op = sortClass1(DTYPE_INDICES)
    op.Init(indices, sortedIndices, userWS, t, sortPipe)
    op.Process()
    sortPipe.Destroy()
    op2 = sortClass2(int32)
    sortPipe2 = TPipe()
    op2.Init(sortedIndices, sortedIndices, userWS, t, sortPipe2)
    op2.Process()
    sortPipe2.Destroy()
    MoeindexCopyPipe = TPipe()
    indexCopyOp = indexCopyClass(DTYPE_TOKENS, DTYPE_PROBS, ifNumOutTokens)
    indexCopyOp.Init(tokens, probs, sortedIndices, permuteTokens, permuteProbs, t,
                     MoeindexCopyPipe)
    indexCopyOp.Process()


__all__ = ["moe_token_permute_with_ep"]
