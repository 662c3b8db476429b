"""Golden reference for ``MoeTokenUnpermuteWithEpGrad`` (plain numpy + ml_dtypes).

Place in the flow: the *oracle* that simulator outputs are compared with. It is written from the
operator specification (maths §1, range normalisation §3.8, numerics §7) and deliberately shares
no code with the simulator or with the other modules of this op model, so that a bug in one is not
silently repeated in the other.

Two functions compute the operator:

* :func:`golden` - bit-exact model of the device arithmetic (fp32 vector maths, single
  round-to-nearest-even narrowing, the kernel's exact reduction tree and its per-chunk
  accumulation).
* :func:`golden_fp64` - the same maths in float64 with no intermediate rounding, for tolerance
  checks against independent formulations.

Tolerances of :func:`golden` relative to :func:`golden_fp64` (``u_X`` is the unit roundoff of
dtype X: bf16 2^-8, fp16 2^-11, fp32 2^-24; all bounds are per element):

=========================  ================================================================
output                      bound
=========================  ================================================================
permuted_tokens_grad        no probs: exact (bit copy).
                            with probs: ``|g - g64| <= (u_T + 2^-23) |g64|`` for 16-bit tokens,
                            ``u_32 |g64|`` for fp32 tokens (normal range).
probs_grad                  ``|p - p64| <= B + u_P (|p64| + B)`` with
                            ``B = gamma_D * sum_h |a_h b_h|  <=  gamma_D * sqrt(H) * ||a*b||_2``,
                            ``gamma_D = D u_32 / (1 - D u_32)`` and
                            ``D = 1 + depth(hidden_chunk) + (chunks - 1)``.
=========================  ================================================================

Why: each permuted-grad element is one exact product of two fp32 values rounded to fp32 (error
``<= u_32``) and then rounded once more to the token dtype (error ``<= u_T``); the two relative
errors compose to at most ``u_T + u_32 + u_T u_32 <= u_T + 2^-23``. For ``probs_grad`` every
product carries one rounding, and every product then passes through at most ``depth`` fp32 adds
inside its chunk's reduction tree (halving steps + fold + log2 M tree levels, or 6 levels for a
64-lane WholeReduceSum) and ``chunks - 1`` adds of the cross-chunk accumulation; the classical
bound for any summation tree whose leaves pass through at most ``D - 1`` adds gives ``gamma_D``
times the sum of magnitudes. Cauchy-Schwarz turns the sum of magnitudes into
``sqrt(H) * ||a*b||_2``, which is the sqrt(H)*eps scaling quoted for tree sums; the typical
(random-sign) error is smaller still, about ``u_32 sqrt(D) ||a*b||_2``. The last term is the final
narrowing to the probs dtype. :func:`permuted_grad_rtol` and :func:`probs_grad_bound` return
these numbers; a tiny absolute floor covers fp32 underflow, which the moderate-range cases
never reach.

Narrowing is always done from an fp32 array (``astype`` from float32: round to nearest, ties to
even, for both ml_dtypes bf16 and numpy fp16). It must never be done from float64: that would be a
different rounding (and ml_dtypes' own float64 -> bf16 conversion was observed to pass through
fp32, so it is not a single correct rounding either). Overflow on narrowing gives +-inf here
(IEEE); the device's default may be saturation (spec §7.1, unverified) - the moderate-range cases
never overflow.

Duplicate accepted indices: when several accepted flat positions ``q`` carry the same index
value, they all write the same ``permuted_tokens_grad`` row. On the device the winner depends
on which core's MTE3 write lands last, so upstream's result is schedule-dependent. This golden
fixes the rule "the last ``q`` in flat order wins". ``probs_grad`` is unaffected (each ``q`` has
its own element).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

__all__ = [
    "golden",
    "golden_fp64",
    "normalise_range",
    "reduce_sum_func",
    "reduce_tree_depth",
    "permuted_grad_rtol",
    "probs_grad_bound",
    "unit_roundoff",
]

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)

# Elements per working block when the golden vectorises across rows (about 32 MiB of fp32).
_BLOCK_ELEMS = 1 << 23


# ---------------------------------------------------------------------------------------------
# Range normalisation (spec §3.8)
# ---------------------------------------------------------------------------------------------


def normalise_range(
    range_attr: tuple[int, int] | list[int] | None, T: int, num_out: int | None = None
) -> tuple[int, int, int]:
    """Return ``(start, end, num_out_tokens)`` for a ``range`` attribute.

    ``None`` and the exact pair ``(-1, -1)`` mean "no range" (window ``[0, T)``). Otherwise a
    negative bound gets ``T`` added (Python-slice style), both bounds are clamped to ``[0, T]``
    and ``end < start`` raises ``ValueError`` (the host tiling fails). ``num_out`` defaults to
    ``T`` (the permuted-token row count) and becomes ``end`` whenever ``start != 0``.
    """
    if num_out is None:
        num_out = T
    start, end = 0, T
    if range_attr is not None:
        if len(range_attr) != 2:
            raise ValueError(f"range must have 2 values, got {len(range_attr)}")
        s, e = int(range_attr[0]), int(range_attr[1])
        if not (s == -1 and e == -1):
            if e < 0:
                e += T
            if s < 0:
                s += T
            e = min(max(e, 0), T)
            s = min(max(s, 0), T)
            if e < s:
                raise ValueError(f"range end {e} < start {s} after normalisation")
            start, end = s, e
    if start != 0:
        num_out = end
    return start, end, num_out


# ---------------------------------------------------------------------------------------------
# ReduceSumFunc (spec §7.3)
# ---------------------------------------------------------------------------------------------


def _up(x: int, a: int) -> int:
    return -(-x // a) * a if a else 0


def _pair_tree(x: np.ndarray) -> np.ndarray:
    """Complete adjacent-pair binary tree over the last axis (a power of two), fp32 adds."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def _fold_sizes(L: int) -> tuple[int, int]:
    """``ReduceSumFunc``'s sizes for a row of ``L >= 64`` elements: the width ``M`` it folds
    to and the length ``Tm`` above which it halves first."""
    if L >= 4096:
        return 4096, 8192
    if L >= 512:
        return 512, 1024
    return 64, 128


def _reduce_rows_inplace(x: np.ndarray) -> np.ndarray:
    """ReduceSumFunc over the last axis of a C-contiguous fp32 matrix ``x`` of shape (m, L).

    ``x`` is used as scratch (like the kernel's ``x32``). Every row is reduced with the same
    element order, so one numpy operation per tree level serves all rows.
    """
    L = x.shape[-1]
    if L == 0:
        return np.zeros(x.shape[:-1], dtype=FP32)
    if L < 64:
        # One WholeReduceSum with mask L: assumed adjacent-pair tree over 64 lanes, inactive
        # lanes +0.0 (spec §7.3 d, the one order not pinned by documentation).
        lanes = np.zeros(x.shape[:-1] + (64,), dtype=FP32)
        lanes[..., :L] = x
        return _pair_tree(lanes)
    M, Tm = _fold_sizes(L)
    n = L
    half = _up(-(-n // 2), 8)
    while n > Tm:  # (a) halving Adds, count n - half each
        x[..., : n - half] += x[..., half:n]
        n = half
        half = _up(-(-n // 2), 8)
    x[..., : n - M] += x[..., M:n]  # (b) fold to M (count may be 0)
    # (c) BlockReduceSum passes + (d) final mask-8 WholeReduceSum: T8 over 8-lane blocks at each
    # pass is exactly a complete adjacent-pair tree over the M lanes.
    return _pair_tree(x[..., :M])


def reduce_sum_func(x: np.ndarray) -> np.ndarray | np.float32:
    """The kernel's ``ReduceSumFunc`` over the last axis of ``x`` (spec §7.3), in fp32.

    ``x`` (1-D or N-D) is converted to fp32 (exactly, for bf16/fp16/fp32 inputs) and copied, so
    the caller's array is not modified. Returns a fp32 scalar for 1-D input, else an array of
    the leading shape.
    """
    a = np.array(x, dtype=FP32, copy=True, order="C")
    out = _reduce_rows_inplace(a)
    return FP32.type(out) if a.ndim == 1 else out


def reduce_tree_depth(L: int) -> int:
    """Maximum number of fp32 adds any element passes through in ``ReduceSumFunc(x, L)``."""
    if L < 64:
        return 6
    M, Tm = _fold_sizes(L)
    n, half, steps = L, _up(-(-L // 2), 8), 0
    while n > Tm:
        steps += 1
        n = half
        half = _up(-(-n // 2), 8)
    return steps + 1 + int(math.log2(M))


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def _accepted(s: np.ndarray, start: int, end: int, num_out_tokens: int) -> np.ndarray:
    return (s >= start) & (s < end) & (s < num_out_tokens)


def _winners(q_acc: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each distinct row among ``rows``, the last accepted ``q`` (flat order) hitting it."""
    if q_acc.size == 0:
        return q_acc, rows
    uniq, first_in_rev = np.unique(rows[::-1], return_index=True)
    return q_acc[::-1][first_in_rev], uniq


def _chunks(H: int, hidden_chunk: int, T: int = 1) -> list[tuple[int, int]]:
    if H == 0 or T == 0:  # nothing to reduce: the chunking is immaterial (tiling gives 0)
        return [(0, H)] if H else []
    if hidden_chunk <= 0:
        raise ValueError(f"hidden_chunk must be positive, got {hidden_chunk}")
    return [(lo, min(lo + hidden_chunk, H)) for lo in range(0, H, hidden_chunk)]


def _check_shapes(
    grad: np.ndarray, s: np.ndarray, permuted: np.ndarray | None, probs: np.ndarray | None
) -> tuple[int, int, int, int]:
    if grad.ndim != 2:
        raise ValueError(f"unpermuted_tokens_grad must be 2-D, got shape {grad.shape}")
    N, H = grad.shape
    T = s.size
    if probs is not None:
        if probs.ndim != 2 or probs.shape[0] != N:
            raise ValueError(f"probs must be ({N}, K), got shape {probs.shape}")
        K = probs.shape[1]
    else:
        K = T // N if N else 0
    if N * K != T:
        raise ValueError(f"sorted_indices has {T} entries, expected N*K = {N}*{K}")
    if permuted is not None and (permuted.ndim != 2 or permuted.shape[1] != H):
        raise ValueError(f"permuted_tokens must be (rows, {H}), got shape {permuted.shape}")
    if probs is not None and permuted is None:
        raise ValueError("permuted_tokens is required when probs is given")
    return N, K, H, T


def _init_output(init: np.ndarray | None, T: int, H: int, dtype: np.dtype) -> np.ndarray:
    if init is None:
        return np.zeros((T, H), dtype=dtype)
    out = np.array(init, dtype=dtype, copy=True)
    if out.shape != (T, H):
        raise ValueError(f"permuted_tokens_grad_init must be {(T, H)}, got {out.shape}")
    return out


# ---------------------------------------------------------------------------------------------
# Bit-exact golden
# ---------------------------------------------------------------------------------------------


def golden(
    unpermuted_tokens_grad: np.ndarray,
    sorted_indices: np.ndarray,
    permuted_tokens: np.ndarray | None,
    probs: np.ndarray | None,
    *,
    start: int,
    end: int,
    num_out_tokens: int,
    hidden_chunk: int,
    permuted_tokens_grad_init: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Bit-exact reference outputs ``(permuted_tokens_grad, probs_grad)``.

    Arguments follow the operator: ``unpermuted_tokens_grad`` (N, H) and ``permuted_tokens``
    (rows, H) in the token dtype (bf16/fp16/fp32), ``sorted_indices`` int32 of length
    ``T = N*K``, ``probs`` (N, K) in the probs dtype or ``None``. ``start``/``end``/
    ``num_out_tokens`` are the *normalised* range (see :func:`normalise_range`);
    ``hidden_chunk`` is the tiling's ``hiddenSizeAlign``: ``probs_grad`` is reduced per hidden
    chunk of that length and accumulated across chunks (spec §7.4). It has no effect without
    probs.

    Position ``q`` (token ``q // K``) is accepted iff ``start <= s[q] < end`` and
    ``s[q] < num_out_tokens``; it writes row ``s[q] - start``. Results:

    * ``permuted_tokens_grad`` (T, H), token dtype, starting from a copy of
      ``permuted_tokens_grad_init`` (zeros when ``None``); rows that no accepted ``q`` hits keep
      their content. With probs: ``RINT_T(fp32(grad[n]) * fp32(probs[n, k]))`` (one fp32
      multiply, then one round-to-nearest-even narrowing - a double rounding for 16-bit
      tokens); without probs: a bit copy of ``grad[n]``. Duplicate accepted index values: the
      last ``q`` in flat order wins (upstream's winner is schedule-dependent).
    * ``probs_grad`` (N, K), probs dtype (``None`` without probs): for accepted ``q``,
      ``acc = +0.0; acc = acc + ReduceSumFunc(fp32(permuted[row, c]) * fp32(grad[n, c]))`` for
      each hidden chunk ``c`` in order, then ``RINT_P(acc)``. For positions not accepted the
      kernel reduces a zeroed row times the grad row, which is +0.0, or NaN when the grad row
      holds an inf/NaN (spec §7.6) - reproduced here.
    """
    grad = np.asarray(unpermuted_tokens_grad)
    s = np.asarray(sorted_indices).reshape(-1).astype(np.int64)
    permuted = None if permuted_tokens is None else np.asarray(permuted_tokens)
    prb = None if probs is None else np.asarray(probs)
    N, K, H, T = _check_shapes(grad, s, permuted, prb)
    tok_dtype = grad.dtype
    out = _init_output(permuted_tokens_grad_init, T, H, tok_dtype)

    accepted = _accepted(s, start, end, num_out_tokens)
    q_acc = np.flatnonzero(accepted)
    rows_acc = s[q_acc] - start
    if (rows_acc >= T).any():
        raise ValueError("an accepted index addresses a row beyond the output (end - start > T)")
    q_win, rows_win = _winners(q_acc, rows_acc)

    if prb is None:
        out[rows_win] = grad[q_win // K]
        return out, None

    prob32 = prb.reshape(-1).astype(FP32)
    grad32 = grad.astype(FP32)  # exact widening (CAST_NONE)

    # permuted_tokens_grad: Muls in fp32, then one RINT narrowing (astype from fp32 is RNE).
    rows_per_block = max(1, _BLOCK_ELEMS // max(H, 1))
    for b0 in range(0, q_win.size, rows_per_block):
        qb = q_win[b0 : b0 + rows_per_block]
        pg32 = grad32[qb // K] * prob32[qb][:, None]
        out[rows_win[b0 : b0 + rows_per_block]] = pg32.astype(tok_dtype)

    # probs_grad: per-chunk ReduceSumFunc of the fp32 products, accumulated from +0.0.
    acc_all = np.zeros(T, dtype=FP32)
    chunks = _chunks(H, hidden_chunk, T)
    for b0 in range(0, q_acc.size, rows_per_block):
        qb = q_acc[b0 : b0 + rows_per_block]
        toks = qb // K
        prow = rows_acc[b0 : b0 + rows_per_block]
        acc = np.zeros(qb.size, dtype=FP32)
        for lo, hi in chunks:
            x = permuted[prow, lo:hi].astype(FP32)
            x *= grad32[toks, lo:hi]
            acc = acc + _reduce_rows_inplace(x)
        acc_all[qb] = acc
    # Not accepted: zero row times grad row -> +0.0, unless the grad row is not finite (NaN).
    bad_tok = ~np.isfinite(grad32).all(axis=1)
    rejected_nan = ~accepted & bad_tok[np.arange(T) // K]
    acc_all[rejected_nan] = np.nan
    return out, acc_all.astype(prb.dtype).reshape(N, K)


# ---------------------------------------------------------------------------------------------
# float64 reference
# ---------------------------------------------------------------------------------------------


def golden_fp64(
    unpermuted_tokens_grad: np.ndarray,
    sorted_indices: np.ndarray,
    permuted_tokens: np.ndarray | None,
    probs: np.ndarray | None,
    *,
    start: int,
    end: int,
    num_out_tokens: int,
    hidden_chunk: int | None = None,
    permuted_tokens_grad_init: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The same maths as :func:`golden` in float64 with no rounding steps.

    Outputs are float64: ``permuted_tokens_grad`` (T, H) starting from the init (or zeros),
    ``probs_grad`` (N, K) or ``None``. ``hidden_chunk`` is accepted for signature symmetry and
    ignored (the exact sum does not depend on the chunking). Positions not accepted give 0.
    The duplicate rule is the same as :func:`golden` (last ``q`` wins).
    """
    grad = np.asarray(unpermuted_tokens_grad)
    s = np.asarray(sorted_indices).reshape(-1).astype(np.int64)
    permuted = None if permuted_tokens is None else np.asarray(permuted_tokens)
    prb = None if probs is None else np.asarray(probs)
    N, K, H, T = _check_shapes(grad, s, permuted, prb)
    out = _init_output(permuted_tokens_grad_init, T, H, np.dtype(np.float64))

    accepted = _accepted(s, start, end, num_out_tokens)
    q_acc = np.flatnonzero(accepted)
    rows_acc = s[q_acc] - start
    q_win, rows_win = _winners(q_acc, rows_acc)
    grad64 = grad.astype(np.float64)
    if prb is None:
        out[rows_win] = grad64[q_win // K]
        return out, None

    prob64 = prb.reshape(-1).astype(np.float64)
    out[rows_win] = grad64[q_win // K] * prob64[q_win][:, None]
    pg = np.zeros(T, dtype=np.float64)
    rows_per_block = max(1, _BLOCK_ELEMS // max(H, 1))
    for b0 in range(0, q_acc.size, rows_per_block):
        qb = q_acc[b0 : b0 + rows_per_block]
        prow = rows_acc[b0 : b0 + rows_per_block]
        pg[qb] = np.einsum(
            "ij,ij->i", permuted[prow].astype(np.float64), grad64[qb // K], optimize=False
        )
    return out, pg.reshape(N, K)


# ---------------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------------


def unit_roundoff(dtype: np.dtype | type) -> float:
    """Unit roundoff of a floating dtype (half an ulp at 1): bf16 2^-8, fp16 2^-11, fp32 2^-24."""
    dt = np.dtype(dtype)
    if dt == BF16:
        return 2.0**-8
    if dt == FP16:
        return 2.0**-11
    if dt == FP32:
        return 2.0**-24
    if dt == np.float64:
        return 2.0**-53
    raise ValueError(f"unsupported dtype {dt}")


def permuted_grad_rtol(tokens_dtype: np.dtype | type, with_probs: bool = True) -> float:
    """Relative bound of ``golden`` vs ``golden_fp64`` for ``permuted_tokens_grad``."""
    if not with_probs:
        return 0.0
    dt = np.dtype(tokens_dtype)
    if dt == FP32:
        return unit_roundoff(FP32)
    return unit_roundoff(dt) + 2.0**-23


def probs_grad_bound(
    unpermuted_tokens_grad: np.ndarray,
    sorted_indices: np.ndarray,
    permuted_tokens: np.ndarray,
    probs_dtype: np.dtype | type,
    *,
    start: int,
    end: int,
    num_out_tokens: int,
    hidden_chunk: int,
    probs_grad_fp64: np.ndarray,
) -> np.ndarray:
    """Per-element absolute bound on ``|golden probs_grad - golden_fp64 probs_grad|`` (N, K).

    ``B = gamma_D * sum_h |a_h b_h|`` plus the final narrowing ``u_P (|p64| + B)`` plus a tiny
    underflow floor; see the module docstring for the derivation.
    """
    grad = np.asarray(unpermuted_tokens_grad)
    s = np.asarray(sorted_indices).reshape(-1).astype(np.int64)
    N, H = grad.shape
    T = s.size
    K = T // N
    chunks = _chunks(H, hidden_chunk, T)
    depth = max(reduce_tree_depth(hi - lo) for lo, hi in chunks)
    D = 1 + depth + (len(chunks) - 1)
    u32 = unit_roundoff(FP32)
    gamma = D * u32 / (1.0 - D * u32)
    accepted = _accepted(s, start, end, num_out_tokens)
    q_acc = np.flatnonzero(accepted)
    abs_sum = np.zeros(T, dtype=np.float64)
    grad_abs = np.abs(grad.astype(np.float64))
    perm = np.asarray(permuted_tokens)
    rows_per_block = max(1, _BLOCK_ELEMS // max(H, 1))
    for b0 in range(0, q_acc.size, rows_per_block):
        qb = q_acc[b0 : b0 + rows_per_block]
        prow = s[qb] - start
        abs_sum[qb] = np.einsum(
            "ij,ij->i", np.abs(perm[prow].astype(np.float64)), grad_abs[qb // K]
        )
    B = gamma * abs_sum.reshape(N, K)
    uP = 0.0 if np.dtype(probs_dtype) == FP32 else unit_roundoff(probs_dtype)
    floor = H * 2.0**-149 + float(ml_dtypes.finfo(np.dtype(probs_dtype)).smallest_subnormal)
    return B + uP * (np.abs(probs_grad_fp64) + B) + floor
