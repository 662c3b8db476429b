"""ATK system-test records of ``aclnnMoeTokenUnpermuteWithEp`` -> operator calls.

Place in the flow: the case, built the way upstream's ST executor
(``tests/st/aclnnMoeTokenUnpermuteWithEp/executor_aclnnMoeTokenUnpermuteWithEp.py``) builds it
from an ATK record (read by :mod:`aicore_sim.verify.atk`):

* ``topk`` = the record's ``probs`` dim 1 (every record lists probs), else ``topKOptional``;
  ``N`` = ``sorted_indices`` length / ``topk``; the record's ``permutedTokens`` entry describes
  the original tokens ``[N, H]``;
* the ``sorted_indices`` values (integers in the record's ``range_values``) are expert ids
  ``[N, topk]``; ``order`` = their stable argsort; the operator gets ``sorted_indices =
  argsort(order)`` (int32), ``permuted_tokens`` = the token rows at
  ``order[range[0]:range[1]] // topk``, ``probs = None`` (the executor drops them),
  ``num_topk = topk`` and the record's two-value ``rangeOptional``; ``padded_mode`` false;
  the record's ``restore_shape`` is passed and ignored;
* expectation (:func:`executor_expected`): zeros ``[N, H]`` in the tokens dtype; for each
  window row ``r`` in order, row ``order[range[0] + r] // topk`` receives ``permuted[r]`` by a
  scatter-add *in the tokens dtype* (each add rounded to bf16), so the simulator (fp32
  accumulation, one rounding) agrees within a tolerance, not bit for bit. The records' standard
  is ATK ``vector_fused``; :data:`STANDARD` is the tolerance used for it here.

Values: drawn with numpy's generator seeded by the record's index (upstream seeds its own; the
draws differ, the construction is the same): tokens uniform in the record's ``range_values``,
expert ids uniform integers in its ``sorted_indices.range_values``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from op_models import moe_routing
from op_models.moe_common import RecordError, atk_float_dtype, atk_tensors, atk_topk

__all__ = ["ACLNN_NAME", "STANDARD", "RecordError", "executor_expected", "record_call"]

ACLNN_NAME = "MoeTokenUnpermuteWithEp"
# vector_fused-style tolerance (see README): the CANN single-benchmark float threshold of
# aicore_sim/verify/standards.py (bf16: mean relative error < 2^-7, max < 10 x 2^-7); it is
# what ``aicore-sim verify`` applies to a record whose standard is not md5
STANDARD = "threshold"


def _range_pair(v: Any, name: str) -> tuple[float, float]:
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return float(v[0]), float(v[1])
    raise RecordError(f"{name}.range_values {v!r}: expected [low, high] (rule atk_range)")


def record_call(tensors: dict[str, Any], attrs: dict[str, Any], seed: int) -> dict[str, Any]:
    """What to run for one record: ``{"n", "hidden", "topk", "dtype", "range", "num_topk",
    "restore_shape", "make_inputs", "expected"}``; ``make_inputs()`` builds the operator's
    inputs, ``expected(inputs)`` returns the executor's golden."""
    tok, ids = atk_tensors(tensors, "permutedTokens", "sorted_indices")
    if len(tok.shape) != 2 or len(ids.shape) != 1:
        raise RecordError(f"permutedTokens.shape {list(tok.shape)} / sorted_indices.shape "
                          f"{list(ids.shape)}: expected [N, H] / [N*topk] (rule atk_shape)")
    dt = atk_float_dtype("permutedTokens", tok)
    probs = tensors.get("probs")
    topk = atk_topk("topKOptional", int(probs.shape[1]) if probs is not None
                    and len(probs.shape) == 2 else attrs.get("topKOptional"))
    total = int(ids.shape[0])
    if total % topk:
        raise RecordError(f"sorted_indices length {total} is not a multiple of topk {topk} "
                          "(rule atk_shape)")
    n, hidden = total // topk, int(tok.shape[1])
    rng_attr = attrs.get("rangeOptional")
    if not (isinstance(rng_attr, list) and len(rng_attr) == 2
            and all(isinstance(x, int) for x in rng_attr)):
        raise RecordError(f"rangeOptional {rng_attr!r}: expected two integers "
                          "(rule atk_attr)")
    start, end = rng_attr
    if not 0 <= start <= end <= total:
        raise RecordError(f"rangeOptional {rng_attr}: expected 0 <= start <= end <= "
                          f"{total} (rule atk_attr)")
    lo, hi = _range_pair(tok.range_values, "permutedTokens")
    ilo, ihi = _range_pair(ids.range_values, "sorted_indices")
    dtype = np.dtype(dt)

    def make_inputs() -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        tokens = (rng.random((n, hidden), dtype=np.float32) * np.float32(hi - lo)
                  + np.float32(lo)).astype(dtype)
        expert = rng.integers(int(ilo), int(ihi), size=total, endpoint=False)
        order, sorted_indices = moe_routing.slots(expert)
        permuted = np.ascontiguousarray(tokens[order[start:end] // topk])
        return {"permuted_tokens": permuted, "sorted_indices": sorted_indices, "probs": None,
                "order": order}

    def expected(inputs: dict[str, Any]) -> np.ndarray:
        return executor_expected(inputs["permuted_tokens"], inputs["order"], n, topk, start)

    return {"n": n, "hidden": hidden, "topk": topk, "dtype": dtype, "range": (start, end),
            "num_topk": topk, "restore_shape": attrs.get("restore_shape"),
            "make_inputs": make_inputs, "expected": expected}


def executor_expected(permuted: np.ndarray, order: np.ndarray, n: int, topk: int,
                      start: int) -> np.ndarray:
    """Upstream executor's golden: a scatter-add in the tokens dtype, window rows in order."""
    out = np.zeros((n, permuted.shape[1]), dtype=permuted.dtype)
    dest = order[start:start + permuted.shape[0]] // topk
    # rows reaching the same token are added in window order: rank = occurrence number
    rank = np.zeros(dest.size, dtype=np.int64)
    seen: dict[int, int] = {}
    for r, d in enumerate(dest.tolist()):
        rank[r] = seen.get(d, 0)
        seen[d] = rank[r] + 1
    for j in range(int(rank.max(initial=-1)) + 1):
        sel = np.flatnonzero(rank == j)
        out[dest[sel]] = (out[dest[sel]].astype(np.float32)
                          + permuted[sel].astype(np.float32)).astype(out.dtype)
    return out

