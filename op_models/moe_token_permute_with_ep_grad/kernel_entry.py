"""Kernel entry of ``MoeTokenPermuteWithEpGrad``: dispatch on the tiling key.

What ``launch`` runs once per AIV core (``GENERAL_OP_IMPL`` of upstream): the token pass
``KernelMoeTokenUnpermuteWithEp<T, int32, T, false, true>`` on the grad into ``token_grad``;
with tiling key 1 (probs present) the pipe is then destroyed and the probs pass
``KernelMoeTokenUnpermuteWithEp<P, int32, P, false, false>`` runs on a fresh ``TPipe``, from
``permuted_probs_output_grad`` into ``probs_grad``.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_permute_with_ep_grad/op_kernel/moe_token_permute_with_ep_grad.cpp``. Our own
Python; comments are ours.

Deviations from upstream
------------------------
1. ``tiling`` is a :class:`~op_models.moe_token_permute_with_ep_grad.tiling.TilingData`
   object, not a GM address of 120 serialised bytes; ``GET_TILING_DATA`` becomes a field copy.
2. The compile-time choices are arguments: ``tilingKey`` (``TILING_KEY_IS``),
   ``DTYPE_PERMUTED_TOKENS_OUTPUT_GRAD`` and ``DTYPE_PERMUTED_PROBS_OUTPUT_GRAD`` (the latter
   defaults to the former, as the upstream macro does).
3. ``workspace`` is not used by the kernel (the tiling asks for none) and may be ``None``.
"""

from __future__ import annotations

from aicore_sim.ascendc import GM_ADDR, TPipe, bfloat16, int32
from op_models.moe_token_permute_with_ep_grad.kernel_permute_grad import (
    KernelMoeTokenUnpermuteWithEp,
)
from op_models.moe_token_permute_with_ep_grad.tiling import TilingData


def GENERAL_OP_IMPL(opClass, tokenDtype, probsDtype, haveProbs: bool, args: dict,
                    t_pipe: TPipe) -> None:
    """The macro: the token pass, then (``haveProbs``) the probs pass on a new pipe."""
    op1 = opClass(tokenDtype, int32, tokenDtype, False, True)
    op1.Init(args["permuted_output_grad"], args["sorted_indices"], None, args["token_grad"],
             args["tiling_data"], t_pipe)
    op1.Process()
    if haveProbs:
        t_pipe.Destroy()
        t_probs_pipe = TPipe()
        op2 = opClass(probsDtype, int32, probsDtype, False, False)
        op2.Init(args["permuted_probs_output_grad"], args["sorted_indices"], None,
                 args["probs_grad"], args["tiling_data"], t_probs_pipe)
        op2.Process()


def moe_token_permute_with_ep_grad(
    permuted_output_grad: GM_ADDR | None,
    sorted_indices: GM_ADDR | None,
    permuted_probs_output_grad: GM_ADDR | None,
    token_grad: GM_ADDR | None,
    probs_grad: GM_ADDR | None,
    workspace: GM_ADDR | None,
    tiling: TilingData,
    tilingKey: int = 0,
    DTYPE_PERMUTED_TOKENS_OUTPUT_GRAD=bfloat16,
    DTYPE_PERMUTED_PROBS_OUTPUT_GRAD=None,
) -> None:
    """The ``__global__`` kernel: run one core's share of the operator."""
    tiling_data = TilingData.from_list(tiling.as_list())  # GET_TILING_DATA: a private copy
    del workspace
    probsDtype = (DTYPE_PERMUTED_TOKENS_OUTPUT_GRAD if DTYPE_PERMUTED_PROBS_OUTPUT_GRAD is None
                  else DTYPE_PERMUTED_PROBS_OUTPUT_GRAD)
    args = {"permuted_output_grad": permuted_output_grad, "sorted_indices": sorted_indices,
            "permuted_probs_output_grad": permuted_probs_output_grad,
            "token_grad": token_grad, "probs_grad": probs_grad, "tiling_data": tiling_data}
    t_pipe = TPipe()
    if tilingKey == 0:
        GENERAL_OP_IMPL(KernelMoeTokenUnpermuteWithEp, DTYPE_PERMUTED_TOKENS_OUTPUT_GRAD,
                        probsDtype, False, args, t_pipe)
    elif tilingKey == 1:
        GENERAL_OP_IMPL(KernelMoeTokenUnpermuteWithEp, DTYPE_PERMUTED_TOKENS_OUTPUT_GRAD,
                        probsDtype, True, args, t_pipe)
    # no other TILING_KEY_IS branch: the kernel does nothing


__all__ = ["GENERAL_OP_IMPL", "moe_token_permute_with_ep_grad"]
