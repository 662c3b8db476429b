"""ATK system-test records of ``aclnnMoeTokenPermuteWithEpGrad`` -> operator calls.

Place in the flow: the case, built the way upstream's ST executor
(``tests/st/aclnnMoeTokenPermuteWithEpGrad/executor_aclnnMoeTokenPermuteWithEpGrad.py`` at
hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f``) builds it from an ATK
record (read by :mod:`aicore_sim.verify.atk`):

* the record's ``tokens`` ``[N, H]`` and ``probs`` ``[N * topK]`` describe the *forward's*
  inputs, ``indices`` ``[N * topK]`` its expert ids (integers in the record's
  ``range_values``), ``topK`` the K, ``rangeOptional`` the EP window ``[start, end)``;
* the executor runs the forward permute (``order`` = the stable argsort of the ids, rows
  ``order[start:end]``) and feeds this operator gradients of ones: the grad is ``ones(end -
  start, H)`` in the tokens dtype, ``sorted_indices`` = the stable argsort of ``order``
  (int32), the probs grad ``ones(end - start)`` (every record lists probs); ``padded_mode``
  false;
* expectation (:func:`executor_expected`, torch's autograd of ``index_select``): each token's
  gradient is the number of its slots in the window (an integer: exact in bf16), each slot's
  probs gradient 1 in the window, else 0, as ``(N, K)``. The simulator's output is exact
  against it; the records' standard is ATK ``vector_fused`` (``threshold`` here, as the other
  ATK readers).

Values: expert ids drawn with numpy's generator seeded by the record's index (upstream seeds
its own; the draws differ, the construction is the same); the forward's token and probs
values never reach this operator (its gradients are ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from op_models import moe_routing
from op_models.moe_common import RecordError, atk_float_dtype, atk_tensors, atk_topk

__all__ = ["ACLNN_NAME", "RecordError", "executor_expected", "record_call"]

ACLNN_NAME = "MoeTokenPermuteWithEpGrad"


def _int_pair(v: Any, name: str) -> tuple[int, int]:
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float))
                                                   and not isinstance(x, bool) for x in v):
        return int(v[0]), int(v[1])
    raise RecordError(f"{name}: {v!r}: expected two numbers (rule atk_range)")


def record_call(tensors: dict[str, Any], attrs: dict[str, Any], seed: int) -> dict[str, Any]:
    """What to run for one record: ``{"n", "hidden", "topk", "dtype", "range", "probs",
    "make_inputs", "expected"}``; ``make_inputs()`` builds the operator's inputs,
    ``expected(inputs)`` the executor's golden."""
    tok, ids = atk_tensors(tensors, "tokens", "indices")
    if len(tok.shape) != 2 or len(ids.shape) != 1:
        raise RecordError(f"tokens.shape {list(tok.shape)} / indices.shape {list(ids.shape)}: "
                          "expected [N, H] / [N*topK] (rule atk_shape)")
    dt = atk_float_dtype("tokens", tok)
    topk = atk_topk("topK", attrs.get("topK"))
    total = int(ids.shape[0])
    if total % topk or total // topk != int(tok.shape[0]):
        raise RecordError(f"indices length {total} must be tokens dim 0 {tok.shape[0]} x "
                          f"topK {topk} (rule atk_shape)")
    n, hidden = total // topk, int(tok.shape[1])
    start, end = _int_pair(attrs.get("rangeOptional"), "rangeOptional")
    if not 0 <= start < end <= total:
        raise RecordError(f"rangeOptional [{start}, {end}]: expected 0 <= start < end <= "
                          f"{total} (rule atk_attr)")
    if attrs.get("padded_mode"):
        raise RecordError("padded_mode true: not supported (rule atk_attr)")
    ilo, ihi = _int_pair(ids.range_values, "indices.range_values")
    probs = tensors.get("probs")
    with_probs = probs is not None and probs.shape == (total,)
    dtype = np.dtype(dt)

    def make_inputs() -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        expert = rng.integers(ilo, ihi, size=total, endpoint=False)
        return {"permuted_tokens_output_grad": np.ones((end - start, hidden), dtype),
                "sorted_indices": moe_routing.slots(expert)[1],
                "permuted_probs_output_grad": np.ones(end - start, dtype) if with_probs
                else None}

    def expected(inputs: dict[str, Any]) -> dict[str, np.ndarray | None]:
        return executor_expected(inputs["sorted_indices"], n, topk, hidden, start, end, dtype,
                                 with_probs)

    return {"n": n, "hidden": hidden, "topk": topk, "dtype": dtype, "range": (start, end),
            "probs": with_probs, "make_inputs": make_inputs, "expected": expected}


def executor_expected(sorted_indices: np.ndarray, n: int, topk: int, hidden: int, start: int,
                      end: int, dtype: np.dtype, with_probs: bool
                      ) -> dict[str, np.ndarray | None]:
    """The executor's autograd with gradients of ones: ``index_select``'s backward adds one
    per kept permuted row to its token (``order[r] // topK``) and to its slot."""
    order = np.empty(n * topk, dtype=np.int64)
    order[np.asarray(sorted_indices, dtype=np.int64)] = np.arange(n * topk)
    kept = order[start:end]
    counts = np.bincount(kept // topk, minlength=n).astype(np.float32)
    token_grad = np.repeat(counts[:, None], hidden, axis=1).astype(dtype)
    probs_grad = None
    if with_probs:
        slot = np.zeros(n * topk, dtype=np.float32)
        slot[kept] = 1
        probs_grad = slot.reshape(n, topk).astype(dtype)
    return {"token_grad": token_grad, "probs_grad": probs_grad}
