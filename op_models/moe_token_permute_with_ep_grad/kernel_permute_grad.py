"""Kernel port of ``MoeTokenPermuteWithEpGrad`` (step "kernel port" of the flow): the class.

The kernel entry runs ``KernelMoeTokenUnpermuteWithEp<T1, T2, T3, PROBS, ISTOKEN>`` twice:
the token pass (``ISTOKEN = true``, ``T1`` = the grad dtype: ``token_grad[i]`` = the fp32 sum
of the rows ``r - start`` of ``permuted_tokens_output_grad`` over the slots whose row id ``r``
lies in the EP window) and, with probs, the probs pass (``ISTOKEN = false``, ``T1`` = the probs
dtype: ``probs_grad[i*K + k]`` = element ``r - start`` of ``permuted_probs_output_grad``, or 0
outside the window). ``PROBS`` (the forward's probs multiplier) is false in both.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_permute_with_ep_grad/op_kernel/moe_token_permute_with_ep_grad.h``. That header
is the forward unpermute's class, line for line; only the name of the tiling struct ``Init``
takes differs (``MoeTokenPermuteWithEpGradTilingData``, the same 15 fields). So the class has
one port, :mod:`op_models.moe_token_unpermute_with_ep.kernel_unpermute` (its header lists the
deviations), imported here under upstream's name; both passes run that code.
"""

from __future__ import annotations

from op_models.moe_token_unpermute_with_ep.kernel_unpermute import KernelMoeTokenUnpermuteWithEp

__all__ = ["KernelMoeTokenUnpermuteWithEp"]
