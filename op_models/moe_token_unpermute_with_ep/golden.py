"""Independent numpy golden of ``MoeTokenUnpermuteWithEp`` (imports nothing from the simulator).

For every output token ``i`` and ``k = 0 .. K-1`` in order, with ``q = i*K + k`` and
``r = sorted_indices[q]``: the term is accepted when ``start <= r < end`` and, with probs,
``probs[i, k] != 0`` (a term whose prob is exactly zero is *skipped*, as upstream's kernel does:
it never reads that row, so a NaN or inf in it does not reach the output). An accepted term is
``float32(permuted_tokens[r - start]) * float32(probs[i, k])`` (one fp32 rounding; no product
without probs). The accumulator starts as the ``k = 0`` term when that term is accepted, else as
``+0.0``, and each further accepted term is added in fp32 (one rounding per add), in ``k`` order.
The result is narrowed to the tokens dtype with round-to-nearest-even (none for fp32).

This is the kernel's arithmetic order, so the golden is bit-exact with the simulator.
"""

from __future__ import annotations

import ml_dtypes  # noqa: F401 - registers bfloat16 with numpy (astype RNE)
import numpy as np

__all__ = ["golden", "golden_fp64"]

_TOKENS_PER_BLOCK = 4096  # output tokens per pass (bounds the fp32 scratch)


def _accepted(idx: np.ndarray, p: np.ndarray | None, start: int, end: int) -> np.ndarray:
    ok = (idx >= start) & (idx < end)
    if p is not None:
        ok &= p != 0
    return ok


def golden(permuted_tokens: np.ndarray, sorted_indices: np.ndarray, probs: np.ndarray | None,
           num_topk: int, start: int, end: int) -> np.ndarray:
    """``unpermuted_tokens`` ``[N, H]`` in the tokens dtype (see module docstring)."""
    K = int(probs.shape[1]) if probs is not None else int(num_topk)
    idx_all = np.asarray(sorted_indices).astype(np.int64).reshape(-1, K)
    N, H = idx_all.shape[0], permuted_tokens.shape[1]
    out = np.empty((N, H), dtype=permuted_tokens.dtype)
    p_all = None if probs is None else np.asarray(probs).astype(np.float32).reshape(N, K)
    for t0 in range(0, N, _TOKENS_PER_BLOCK):
        t1 = min(N, t0 + _TOKENS_PER_BLOCK)
        acc = np.zeros((t1 - t0, H), dtype=np.float32)
        for k in range(K):
            idx = idx_all[t0:t1, k]
            p = None if p_all is None else p_all[t0:t1, k]
            ok = _accepted(idx, p, start, end)
            if not ok.any():
                continue
            rows = permuted_tokens[idx[ok] - start].astype(np.float32)
            if p is not None:
                rows = rows * p[ok][:, None]
            if k == 0:
                acc[ok] = rows
            else:
                acc[ok] = acc[ok] + rows
        out[t0:t1] = acc.astype(permuted_tokens.dtype)
    return out


def golden_fp64(permuted_tokens: np.ndarray, sorted_indices: np.ndarray,
                probs: np.ndarray | None, num_topk: int, start: int, end: int) -> np.ndarray:
    """The same sum in float64 with no intermediate rounding (accuracy reference)."""
    K = int(probs.shape[1]) if probs is not None else int(num_topk)
    idx = np.asarray(sorted_indices).astype(np.int64).reshape(-1, K)
    N, H = idx.shape[0], permuted_tokens.shape[1]
    p = None if probs is None else np.asarray(probs).astype(np.float64).reshape(N, K)
    out = np.zeros((N, H), dtype=np.float64)
    for k in range(K):
        ok = _accepted(idx[:, k], None if p is None else p[:, k], start, end)
        rows = permuted_tokens[idx[ok, k] - start].astype(np.float64)
        out[ok] += rows if p is None else rows * p[ok, k][:, None]
    return out
