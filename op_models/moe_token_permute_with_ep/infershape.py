"""Shape and dtype inference of ``MoeTokenPermuteWithEp`` (upstream infershape).

``sorted_indices`` is 1-D of ``N * K`` (``K`` = 1 for 1-D indices; -1 when that product is not
positive); ``permute_tokens`` is ``tokens``' shape with dim 0 = the rows kept: ``end - start``
when ``start < end``, else ``N * K + end - start``, clipped to ``[0, N * K]`` (``[start, end]`` =
``range``, or ``[0, num_out_tokens]`` without it); ``permute_probs`` is 1-D of the same rows
(its shape is left to the aclnn layer upstream; the docs give it). Dtypes: tokens', int32,
probs'.

Provenance: ``moe/moe_token_permute_with_ep/op_host/moe_token_permute_with_ep_infershape.cpp``
at hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f`` (mirror
libochao-huawei/ops-transformer); our own Python. Deviations: an indices rank other than 1 or 2
raises ``ValueError`` (upstream returns GRAPH_FAILED); ``permute_probs``' shape is set here
(upstream's InferShape leaves it untouched).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["InferDataType4MoeTokenPermuteWithEp", "InferShape4MoeTokenPermuteWithEp",
           "infer_outputs"]

NEG_ONE = -1


def InferShape4MoeTokenPermuteWithEp(x_shape: Sequence[int], indices_shape: Sequence[int],
                                     range_: Sequence[int] | None, num_out_tokens: int = 0
                                     ) -> tuple[tuple[int, ...], tuple[int], tuple[int]]:
    """(``permute_tokens``, ``sorted_indices``, ``permute_probs``) shapes."""
    dims = len(indices_shape)
    if dims not in (1, 2):
        raise ValueError(f"The dim of indices should be 1 or 2, but got {dims}.")
    topK = 1 if dims == 1 else int(indices_shape[1])
    N = int(indices_shape[0])
    sortedIndicesLen = topK * N if topK * N > 0 else NEG_ONE
    if range_ is not None:
        start, end = int(range_[0]), int(range_[1])
    else:
        start, end = 0, int(num_out_tokens)
    permute = tuple(int(d) for d in x_shape)
    if sortedIndicesLen != NEG_ONE:
        outTokens = sortedIndicesLen + (end - start) if start >= end else end - start
        outTokens = max(min(outTokens, sortedIndicesLen), 0)
        permute = (outTokens,) + permute[1:]
    return permute, (sortedIndicesLen,), (permute[0],)


def InferDataType4MoeTokenPermuteWithEp(x_dtype: np.dtype, probs_dtype: np.dtype | None
                                        ) -> tuple[np.dtype, np.dtype, np.dtype | None]:
    return (np.dtype(x_dtype), np.dtype(np.int32),
            None if probs_dtype is None else np.dtype(probs_dtype))


def infer_outputs(specs: Mapping[str, Any], attrs: Mapping[str, Any]) -> dict[str, tuple | None]:
    """``{output: (shape, dtype)}`` from the inputs' ``(shape, dtype)`` and the attributes
    (``range``, ``num_out_tokens``); ``permute_probs`` is ``None`` without probs."""
    tok, idx, prb = (specs.get(k) for k in ("tokens", "indices", "probs"))
    rng = attrs["range"]
    s_tok, s_idx, s_prb = InferShape4MoeTokenPermuteWithEp(
        tok[0], idx[0], None if rng is None else [int(v) for v in rng],
        int(attrs["num_out_tokens"]))
    d_tok, d_idx, d_prb = InferDataType4MoeTokenPermuteWithEp(tok[1], prb and prb[1])
    return {"permute_tokens": (s_tok, d_tok), "sorted_indices": (s_idx, d_idx),
            "permute_probs": None if prb is None else (s_prb, d_prb)}
