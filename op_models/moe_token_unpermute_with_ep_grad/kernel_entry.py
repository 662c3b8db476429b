"""Kernel entry of ``MoeTokenUnpermuteWithEpGrad``: dispatch on the tiling key and dtypes.

What ``launch`` runs once per AIV core. It copies the tiling data, then runs the path-A class
(key 0 or 10, no ``probs``) or the path-B class (key 1 or 11, ``probs`` given) with the template
dtypes the binary would have been compiled for (spec §4.1).

Provenance
----------
Upstream: github.com/hicann/ops-transformer,
``moe/moe_token_unpermute_with_ep_grad/op_kernel/moe_token_unpermute_with_ep_grad.cpp`` at
commit ``c29bc1069d3252c641e2aa059ec88f392d3f05ac`` ("V0"); the V3 kernel at
``0d8dd3e0afdb858d04d9eaa98bac5f74698e9d7e`` includes the renamed ``*_with_ep.h`` headers and
has the same logic. Our own Python; comments are ours.

Deviations from upstream
------------------------
1. ``tiling`` is a :class:`~op_models.moe_token_unpermute_with_ep_grad.tiling.TilingData`
   object, not a GM address of 152 serialised bytes; ``GET_TILING_DATA`` becomes a field copy.
2. The compile-time choices become arguments: ``tilingKey`` (``TILING_KEY_IS``),
   ``DTYPE_PERMUTED_TOKENS`` (``OriT``) and ``DTYPE_PROBS`` (``ProbT``; ``None`` models a binary
   built without the probs dtype macro, in which key 1/11 selects nothing).
3. ``GetUserWorkspace(workspace)`` is computed upstream and never used; the simulator passes no
   workspace (``None``), so the call is left out.
4. ``IdxT`` is hard-coded to int32 as upstream.
"""

from __future__ import annotations

from aicore_sim.ascendc import GM_ADDR, int32
from op_models.moe_token_unpermute_with_ep_grad.kernel_prob_none import (
    MoeTokenUnpermuteGradProbNone,
)
from op_models.moe_token_unpermute_with_ep_grad.kernel_prob_not_none import (
    MoeTokenUnpermuteGradProbNotNone,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import TilingData


def moe_token_unpermute_with_ep_grad(
    unpermuted_tokens_grad: GM_ADDR | None,
    sorted_indices: GM_ADDR | None,
    permuted_tokens: GM_ADDR | None,
    probs: GM_ADDR | None,
    permuted_tokens_grad: GM_ADDR | None,
    probs_grad: GM_ADDR | None,
    workspace: GM_ADDR | None,
    tiling: TilingData,
    tilingKey: int = 0,
    DTYPE_PERMUTED_TOKENS=None,
    DTYPE_PROBS=None,
) -> None:
    """The ``__global__`` kernel: run one core's share of the operator."""
    tilingData = TilingData.from_list(tiling.as_list())  # GET_TILING_DATA: a private copy
    del workspace  # deviation 3
    if DTYPE_PERMUTED_TOKENS is None:
        raise ValueError("moe_token_unpermute_with_ep_grad: DTYPE_PERMUTED_TOKENS is required")
    # key 0: no probs; 10: the same with padded mode (the host never produces it)
    if tilingKey in (0, 10):
        moeTokenUnpermuteGradProbNoneOp = MoeTokenUnpermuteGradProbNone(
            DTYPE_PERMUTED_TOKENS, int32)
        moeTokenUnpermuteGradProbNoneOp.Init(
            permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs, permuted_tokens_grad,
            probs_grad, tilingData)
        moeTokenUnpermuteGradProbNoneOp.Process()
    # key 1: with probs; 11: the same with padded mode; compiled only with a probs dtype
    if DTYPE_PROBS is not None and tilingKey in (1, 11):
        moeTokenUnpermuteGradProbNotNoneOp = MoeTokenUnpermuteGradProbNotNone(
            DTYPE_PERMUTED_TOKENS, int32, DTYPE_PROBS)
        moeTokenUnpermuteGradProbNotNoneOp.Init(
            permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs, permuted_tokens_grad,
            probs_grad, tilingData)
        moeTokenUnpermuteGradProbNotNoneOp.Process()


__all__ = ["moe_token_unpermute_with_ep_grad"]
