"""Independent numpy golden of ``MoeTokenPermuteWithEpGrad`` (imports nothing from the simulator).

Inputs: ``grad`` (``R x H``, the gradient of the forward's ``permute_tokens``: row ``j`` is
permuted row ``start + j``), ``sorted_indices`` (``N * K`` int32: the permuted row of every
(token, slot)), optionally ``probs_grad_in`` (``R``, the gradient of ``permute_probs``), ``K``
and the EP window ``[start, end)``. For token ``i`` and slot ``k``, ``r = sorted_indices[i*K +
k]`` *counts* when ``start <= r < end``; its source row is ``r - start``.

* ``token_grad[i]``: the counted rows of ``grad`` summed in fp32 in ``k`` order (each one
  widened exactly to fp32; one fp32 rounding per addition). The sum starts as the ``k = 0``
  row when slot 0 counts, else as ``+0.0``, and an uncounted slot adds nothing (so a token
  whose only counted row is ``-0.0`` in slot 0 keeps ``-0.0``, in a later slot gets ``+0.0``).
  The fp32 sum is narrowed to the grad's dtype with round-to-nearest-even (none for fp32).
* ``probs_grad[i, k]``: ``probs_grad_in[r - start]`` when the slot counts, else ``0``: a copy,
  bit-exact in any dtype.

This is the kernel's arithmetic order, so the golden is bit-exact with the simulator. The
token sum is the forward unpermute's without probs (:mod:`op_models.moe_token_unpermute_with_ep
.golden`: upstream runs the same kernel class for both).
"""

from __future__ import annotations

import ml_dtypes  # noqa: F401 - registers bfloat16 with numpy (astype rounds to nearest even)
import numpy as np

from op_models.moe_token_unpermute_with_ep import golden as _unpermute

__all__ = ["golden", "golden_fp64"]



def _window(sorted_indices: np.ndarray, K: int, start: int, end: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """(row ids ``N x K`` as int64, counted mask ``N x K``)."""
    idx = np.asarray(sorted_indices).astype(np.int64).reshape(-1)
    N = idx.size // K
    idx = idx[:N * K].reshape(N, K)
    return idx, (idx >= start) & (idx < end)


def golden(grad: np.ndarray, sorted_indices: np.ndarray, probs_grad_in: np.ndarray | None,
           num_topk: int, start: int, end: int) -> dict[str, np.ndarray | None]:
    """``token_grad`` ``[N, H]`` in the grad's dtype and ``probs_grad`` ``[N, K]`` (``None``
    without ``probs_grad_in``); see the module docstring."""
    K = int(num_topk)
    token_grad = _unpermute.golden(grad, sorted_indices, None, K, int(start), int(end))
    probs_grad = None
    if probs_grad_in is not None:
        idx, ok = _window(sorted_indices, K, int(start), int(end))
        p = np.asarray(probs_grad_in).reshape(-1)
        probs_grad = np.zeros((idx.shape[0], K), dtype=p.dtype)
        probs_grad[ok] = p[idx[ok] - int(start)]
    return {"token_grad": token_grad, "probs_grad": probs_grad}


def golden_fp64(grad: np.ndarray, sorted_indices: np.ndarray, num_topk: int, start: int,
                end: int) -> np.ndarray:
    """``token_grad`` summed in float64 with no intermediate rounding (accuracy reference)."""
    return _unpermute.golden_fp64(grad, sorted_indices, None, num_topk, int(start), int(end))
