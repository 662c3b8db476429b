"""Shape and dtype inference of ``MoeTokenUnpermuteWithEpGrad`` (upstream ``op_host`` infershape).

Place in the flow: between the case and the launch - it says which outputs a call has, with
which shape and dtype, before anything runs. ``aicore-sim verify`` uses it to know the shape
and dtype of expected-output files; the operator API can use it to allocate its outputs.

Behaviour (spec §2.2, checked against upstream's ``moe_token_unpermute_with_ep_grad_infershape``
and its unit tests; inputs by IR index: 0 ``unpermuted_tokens_grad``, 1 ``sorted_indices``,
2 ``permuted_tokens``, 3 ``probs``):

1. ``permuted_tokens``, ``unpermuted_tokens_grad`` and ``sorted_indices`` must be given
   (upstream null-checks all three, so ``permuted_tokens`` is mandatory here although optional
   in the IR). ``probs`` is optional.
2. Unknown rank (GE's shape ``[-2]``, :data:`UNKNOWN_RANK`) of ``permuted_tokens``: output 0 is
   ``[-2]`` and the other ranks are not checked.
3. Otherwise ``permuted_tokens`` and ``unpermuted_tokens_grad`` must be 2-D and
   ``sorted_indices`` 1-D, else inference fails (:class:`InferShapeError`, rule ``rank``).
4. Output 0 ``permuted_tokens_grad`` = ``[sorted_indices.dim0, unpermuted_tokens_grad.dim1]``.
   Both dims pass through 32-bit unsigned values upstream, so a dynamic ``-1`` comes out as
   ``4294967295``; reproduced here (spec §2.2, "latent bug").
5. Output 1 ``probs_grad`` = ``probs``' shape; without ``probs`` there is no output 1 (upstream
   leaves it untouched; the aclnn API then delivers nothing) - ``None`` here.
6. Dtypes: output 0 takes ``permuted_tokens``' dtype; output 1 takes ``probs``' dtype when
   ``probs`` is given, else ``permuted_tokens``' dtype.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "InferShapeError",
    "UNKNOWN_RANK",
    "infer_dtype",
    "infer_outputs",
    "infer_shape",
]

UNKNOWN_RANK: tuple[int, ...] = (-2,)
_UNKNOWN_RANK_DIM = -2
_U32 = 0xFFFFFFFF


class InferShapeError(ValueError):
    """Inference failed (GRAPH_FAILED upstream); ``rule`` names the broken rule."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(f"{message} (rule {rule})")
        self.rule = rule


Shape = Sequence[int] | None


def _is_unknown_rank(shape: Sequence[int]) -> bool:
    return tuple(int(d) for d in shape) == UNKNOWN_RANK


def _u32(dim: int) -> int:
    """A dim stored in a 32-bit unsigned local and read back (negative dims wrap)."""
    return int(dim) & _U32


def infer_shape(
    unpermuted_tokens_grad: Shape,
    sorted_indices: Shape,
    permuted_tokens: Shape,
    probs: Shape = None,
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """``(permuted_tokens_grad shape, probs_grad shape or None)`` from the input shapes.

    Shapes are sequences of ints (``None`` = tensor absent; ``[-2]`` = unknown rank).
    Raises :class:`InferShapeError` with rule ``required`` or ``rank``.
    """
    for name, shape in (("permuted_tokens", permuted_tokens),
                        ("unpermuted_tokens_grad", unpermuted_tokens_grad),
                        ("sorted_indices", sorted_indices)):
        if shape is None:
            raise InferShapeError(f"{name} is absent; the infershape needs its shape", "required")
    assert permuted_tokens is not None and unpermuted_tokens_grad is not None
    assert sorted_indices is not None
    if _is_unknown_rank(permuted_tokens):
        out0: tuple[int, ...] = (_UNKNOWN_RANK_DIM,)
    else:
        ranks = (len(permuted_tokens), len(unpermuted_tokens_grad), len(sorted_indices))
        if ranks[0] != 2 or ranks[1] != 2 or ranks[2] != 1:
            raise InferShapeError(
                f"permuted_tokens and unpermuted_tokens_grad must be 2-D and sorted_indices "
                f"1-D, got ranks {ranks[0]}, {ranks[1]} and {ranks[2]}", "rank")
        out0 = (_u32(sorted_indices[0]), _u32(unpermuted_tokens_grad[1]))
    out1 = None if probs is None else tuple(int(d) for d in probs)
    return out0, out1


def infer_dtype(permuted_tokens: Any, probs: Any = None) -> tuple[np.dtype, np.dtype]:
    """``(permuted_tokens_grad dtype, probs_grad dtype)``: tokens' dtype; probs' when given."""
    tok = np.dtype(permuted_tokens)
    return tok, (tok if probs is None else np.dtype(probs))


def infer_outputs(specs: Mapping[str, Any], attrs: Mapping[str, Any] | None = None
                  ) -> dict[str, tuple[tuple[int, ...], np.dtype] | None]:
    """Both outputs' ``(shape, dtype)`` from the inputs' ``(shape, dtype)`` (``None``:
    absent; the attributes change nothing): ``probs_grad`` is ``None`` without ``probs``."""
    g, i, t, p = (specs.get(k) for k in ("unpermuted_tokens_grad", "sorted_indices",
                                          "permuted_tokens", "probs"))
    s0, s1 = infer_shape(*(None if x is None else x[0] for x in (g, i, t, p)))
    assert t is not None  # infer_shape rejected an absent permuted_tokens
    d0, d1 = infer_dtype(t[1], None if p is None else p[1])
    return {"permuted_tokens_grad": (s0, d0), "probs_grad": None if s1 is None else (s1, d1)}
