"""ATK system-test records of ``aclnnMoeTokenUnpermuteWithEpGrad`` -> operator calls.

Place in the flow: the case, built the way upstream's ST executor builds it from an ATK record
(read by :mod:`aicore_sim.verify.atk`). Upstream's executor overrides most of the record:

* an int32 expert id per token (shape ``[N, topk]``) drawn uniformly in ``[0, N)``; ``origin``
  = the stable argsort of the flattened ids becomes ``sorted_indices``; the permuted tokens
  are the original token rows gathered at ``argsort(origin) // topk``
  (:func:`~.cases.upstream_st_inputs`);
* ``probs`` is ``None`` (the record's probs entry is ignored) and ``range = (0, N * topk)`` is
  passed explicitly (the record's one-element range and restore_shape are ignored);
* expectation: fp32 zeros, row ``origin[i]`` receives grad row ``i // topk``, cast to the tokens
  dtype (:func:`~.cases.upstream_st_expected`); compared by md5 (bit-exact). The second output
  is a dummy on both sides, so only ``permuted_tokens_grad`` is compared.

Values: the record's tensors are drawn with numpy's generator seeded by the record's index in
the file (upstream seeds its own generator; the draws differ, the construction is the same).
Only bf16 tokens are built (all upstream records are bf16).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import dtypes
from op_models.moe_common import RecordError, atk_tensors, atk_topk
from op_models.moe_token_unpermute_with_ep_grad.cases import (
    DTYPES,
    upstream_st_expected,
    upstream_st_inputs,
)

__all__ = ["ACLNN_NAME", "record_call"]

ACLNN_NAME = "MoeTokenUnpermuteWithEpGrad"
_GRAD = "unpermutedTokensGrad"


def record_call(tensors: dict[str, Any], attrs: dict[str, Any], seed: int) -> dict[str, Any]:
    """What to run for one record (tensors / attrs as :class:`~aicore_sim.verify.atk.AtkRecord`).

    Returns ``{"n", "hidden", "topk", "dtype", "input_specs", "range", "topk_num",
    "make_inputs", "expected"}``: ``make_inputs()`` builds the inputs, ``expected(inputs)``
    returns ``{"permuted_tokens_grad": array}``.
    """
    g, = atk_tensors(tensors, _GRAD)
    if len(g.shape) != 2:
        raise RecordError(f"{_GRAD}.shape {list(g.shape)}: expected [N, H] (rule atk_shape)")
    dt = "bfloat16" if dtypes.float_dtype(g.dtype) == dtypes.bfloat16 else None
    if dt is None:
        raise RecordError(f"{_GRAD}.dtype {g.dtype}: only bf16 records are built, as "
                          f"upstream's (rule atk_dtype)")
    n, hidden = int(g.shape[0]), int(g.shape[1])
    topk = atk_topk("topk_num", attrs.get("topk_num", 1))
    T = n * topk
    bf16 = DTYPES[dt]
    specs = {
        "unpermuted_tokens_grad": ((n, hidden), bf16),
        "sorted_indices": ((T,), np.dtype(np.int32)),
        "permuted_tokens": ((T, hidden), bf16),
        "probs": None,
    }

    def make_inputs() -> dict[str, np.ndarray | None]:
        return upstream_st_inputs(n, hidden, seed, topk)

    def expected(inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray | None]:
        return {"permuted_tokens_grad": upstream_st_expected(inputs), "probs_grad": None}

    return {"n": n, "hidden": hidden, "topk": topk, "dtype": dt, "input_specs": specs,
            "range": (0, T), "topk_num": topk, "make_inputs": make_inputs,
            "expected": expected}
