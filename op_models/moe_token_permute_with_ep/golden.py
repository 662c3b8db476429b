"""Independent numpy golden of ``MoeTokenPermuteWithEp`` (imports nothing from the simulator).

With ``K`` = ``indices.shape[1]`` (1 for 1-D indices) and ``T = N * K`` slots:

* ``order`` = the stable ascending argsort of the flattened expert ids (slot of each permuted
  row); ``sorted_indices`` = the stable argsort of ``order`` (int32): the permuted row of each
  slot (the inverse permutation);
* the kept rows: ``numOutTokens = end - start``, plus ``T`` when that is <= 0, clipped to
  ``[0, T]`` (the operator's infershape and tiling); when ``numOutTokens == T`` every row is
  kept and ``start`` is not applied (the kernel writes row ``sorted_indices[q]``); otherwise
  rows ``[start, start + numOutTokens)`` are kept and written from row 0;
* ``permute_tokens[r] = tokens[order[r0 + r] // K]`` and ``permute_probs[r] =
  probs.flat[order[r0 + r]]`` (``r0`` = 0 or ``start``): pure copies, bit-exact in any dtype.

Rows of a window reaching past ``T`` (``start + numOutTokens > T``, only for a range with
``start > end``) are never written by the kernel; :func:`golden` marks them in ``written``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["golden", "num_out_tokens", "permutation"]


def num_out_tokens(start: int, end: int, total: int) -> int:
    """Rows the operator keeps for ``range = [start, end]`` and ``total`` slots."""
    n = end - start
    n = n + total if n <= 0 else n
    return max(min(n, total), 0)


def permutation(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``order``, ``sorted_indices`` int32) of the flattened expert ids."""
    flat = np.asarray(indices).reshape(-1).astype(np.int64)
    order = np.argsort(flat, kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return order, inverse.astype(np.int32)


def golden(tokens: np.ndarray, indices: np.ndarray, probs: np.ndarray | None,
           start: int, end: int) -> dict[str, np.ndarray | None]:
    """``permute_tokens``, ``sorted_indices``, ``permute_probs`` (None without probs) and
    ``written`` (bool per output row)."""
    K = 1 if np.ndim(indices) == 1 else int(np.shape(indices)[1])
    order, sorted_indices = permutation(indices)
    total = order.size
    n_out = num_out_tokens(int(start), int(end), total)
    r0 = 0 if n_out == total else int(start)
    rows = np.arange(r0, r0 + n_out)
    written = rows < total
    src = order[rows[written]]
    hidden = tokens.reshape(tokens.shape[0], -1).shape[1]
    out = np.zeros((n_out, hidden), tokens.dtype)
    out[written] = tokens.reshape(tokens.shape[0], -1)[src // K]
    p_out = None
    if probs is not None:
        p_out = np.zeros(n_out, probs.dtype)
        p_out[written] = np.asarray(probs).reshape(-1)[src]
    return {"permute_tokens": out, "sorted_indices": sorted_indices, "permute_probs": p_out,
            "written": written}
