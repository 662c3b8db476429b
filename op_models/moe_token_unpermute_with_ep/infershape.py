"""Shape and dtype inference of ``MoeTokenUnpermuteWithEp`` (upstream infershape).

``unpermuted_tokens`` is ``[tokens_num, permuted_tokens.shape[1]]`` in the dtype of
``permuted_tokens``; ``tokens_num`` is ``probs.shape[0]`` when probs is given, else
``sorted_indices.shape[0] / num_topk`` (C integer division).

Provenance: ``moe/moe_token_unpermute_with_ep/op_host/moe_token_unpermute_with_ep_infershape.cpp``
at hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f`` (mirror
libochao-huawei/ops-transformer); our own Python. Deviation: a ``num_topk`` of 0 (a division by
zero upstream) raises ``ValueError``; upstream's InferShape performs no other check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aicore_sim.ascendc.host import c_div

__all__ = ["InferDataTypeForMoeTokenUnpermuteWithEp", "InferShapeForMoeTokenUnpermuteWithEp",
           "infer_outputs"]


def InferShapeForMoeTokenUnpermuteWithEp(permuted_tokens_shape: Sequence[int],
                                         sorted_indices_shape: Sequence[int],
                                         probs_shape: Sequence[int] | None,
                                         num_topk: int) -> tuple[int, int]:
    """The output shape (2-D)."""
    if probs_shape is None:
        if int(num_topk) == 0:
            raise ValueError("num_topk is 0: the output row count sorted_indices.shape[0] / "
                             "num_topk is undefined")
        tokens_num = c_div(int(sorted_indices_shape[0]), int(num_topk))
    else:
        tokens_num = int(probs_shape[0])
    return (tokens_num, int(permuted_tokens_shape[1]))


def InferDataTypeForMoeTokenUnpermuteWithEp(permuted_tokens_dtype: np.dtype) -> np.dtype:
    """The output dtype: that of ``permuted_tokens``."""
    return np.dtype(permuted_tokens_dtype)


def infer_outputs(specs: Mapping[str, Any], attrs: Mapping[str, Any]) -> dict[str, tuple]:
    """``{"unpermuted_tokens": (shape, dtype)}`` from the inputs' ``(shape, dtype)`` and the
    attributes (``num_topk``)."""
    tok, idx, prb = (specs.get(k) for k in ("permuted_tokens", "sorted_indices", "probs"))
    shape = InferShapeForMoeTokenUnpermuteWithEp(tok[0], idx[0], None if prb is None else prb[0],
                                                 int(attrs["num_topk"]))
    return {"unpermuted_tokens": (shape, InferDataTypeForMoeTokenUnpermuteWithEp(tok[1]))}
