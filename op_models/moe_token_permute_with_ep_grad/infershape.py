"""Shape and dtype inference of ``MoeTokenPermuteWithEpGrad``.

Upstream's infershape sets only ``token_grad``: 2-D, ``(grad.dim0 / num_topk, grad.dim1)``
(C truncating division), leaving ``probs_grad`` untouched; its dtype inference sets
``token_grad`` to the grad's dtype. Those are ported as
:func:`InferShapeForMoeTokenPermuteWithEpGrad` and
:func:`InferDataTypeForMoeTokenPermuteWithEpGrad`.

They are right only when every permuted row is present (``range`` = ``[0, N * K]``): with an
EP window the grad has ``end - start`` rows, not ``N * K``. The aclnn call, which upstream is
generated from the op definition and takes the caller's output tensors, never runs this
inference. :func:`infer_outputs` therefore gives the shapes the documentation of
``aclnnMoeTokenPermuteWithEpGrad`` prescribes and the kernel writes: ``token_grad``
``(N, H)`` with ``N = sorted_indices.shape[0] / num_topk`` in the grad's dtype and
``probs_grad`` ``(N, num_topk)`` in the probs' dtype (only with probs).

Provenance: in ``moe/moe_token_permute_with_ep_grad/``,
``op_host/moe_token_permute_with_ep_grad_infershape.cpp`` and
``docs/aclnnMoeTokenPermuteWithEpGrad.md`` at hicann/ops-transformer
``5778144076def6311557939ab5cbfe8303f13e8f`` (mirror libochao-huawei/ops-transformer); our own
Python. Deviation: ``num_topk`` 0 raises ``ValueError`` (upstream divides by zero).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aicore_sim.ascendc.host import c_div

__all__ = ["InferDataTypeForMoeTokenPermuteWithEpGrad", "InferShapeForMoeTokenPermuteWithEpGrad",
           "infer_outputs"]


def InferShapeForMoeTokenPermuteWithEpGrad(permuted_inputs_shape: Sequence[int], top_k: int
                                           ) -> tuple[tuple[int, int], tuple[()]]:
    """(``token_grad``, ``probs_grad``) shapes as upstream sets them (the second is left
    unset: ``()``)."""
    topk = int(top_k)
    if topk == 0:
        raise ValueError("num_topk is 0: upstream's infershape divides by it")
    tokens_num = c_div(int(permuted_inputs_shape[0]), topk)
    return (tokens_num, int(permuted_inputs_shape[1])), ()


def InferDataTypeForMoeTokenPermuteWithEpGrad(input_dtype: object) -> object:
    """``token_grad``'s dtype: the grad's."""
    return input_dtype


def infer_outputs(specs: Mapping[str, Any], attrs: Mapping[str, Any]
                  ) -> dict[str, tuple[tuple[int, ...], np.dtype] | None]:
    """``{output: (shape, dtype)}`` of the aclnn call (module docstring) from the inputs'
    ``(shape, dtype)`` and ``num_topk``; ``probs_grad`` is ``None`` without probs."""
    grad, idx, prb = (specs.get(k) for k in ("permuted_tokens_output_grad", "sorted_indices",
                                             "permuted_probs_output_grad"))
    if grad is None or idx is None:
        raise ValueError("permuted_tokens_output_grad and sorted_indices are required")
    K = int(attrs["num_topk"])
    if K < 1:
        raise ValueError(f"num_topk {K} must be at least 1")
    N = c_div(int(idx[0][0]), K)
    H = int(grad[0][1]) if len(grad[0]) > 1 else 0
    return {"token_grad": ((N, H), np.dtype(grad[1])),
            "probs_grad": None if prb is None else ((N, K), np.dtype(prb[1]))}
