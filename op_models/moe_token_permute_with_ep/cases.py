"""Named cases of ``MoeTokenPermuteWithEp`` and their input tensors.

Inputs are built the way a MoE layer's router makes them: every token picks ``top_k`` distinct
experts of ``experts`` (``indices``, int32 or int64) with routing weights (``probs``: the top-K
of a softmax over random logits, renormalised, in the tokens' dtype as the IR requires).
Expert parallelism over ``ep`` ranks: this rank (``rank``) holds experts
``[rank * E / ep, (rank + 1) * E / ep)``, i.e. the permuted rows ``[start, end)`` (the experts
are sorted in ascending order) = the ``range`` attribute; an explicit ``range`` overrides it.
Token values: fp32 draws in [-2, 2) of ``np.random.default_rng(seed)``, cast to the dtype.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from aicore_sim import dtypes
from op_models import moe_routing

__all__ = ["CASES", "Case", "DTYPES", "get_case", "make_inputs", "np_dtype", "window"]

DTYPES: dict[str, np.dtype] = dtypes.table("bfloat16", "float16", "float32", "int32", "int64")


def np_dtype(name: str) -> np.dtype:
    return dtypes.choose(name, DTYPES)


@dataclass(frozen=True)
class Case:
    """One forward call: N tokens, top-K of ``experts``, hidden H, dtypes, EP layout."""

    name: str
    tokens_num: int
    top_k: int
    hidden: int
    dtype: str
    probs: bool
    experts: int
    indices_dtype: str = "int32"
    ep: int = 1
    rank: int = 0
    range: tuple[int, int] | None = None  # None: this rank's EP window
    description: str = ""
    seed: int = 0

    def __post_init__(self) -> None:
        np_dtype(self.dtype)
        if self.indices_dtype not in ("int32", "int64"):
            raise ValueError(f"indices_dtype {self.indices_dtype!r}: int32 or int64")
        if min(self.tokens_num, self.top_k, self.hidden, self.experts, self.ep) < 1:
            raise ValueError("tokens_num, top_k, hidden, experts and ep must be >= 1")
        if self.top_k > self.experts:
            raise ValueError(f"top_k {self.top_k} exceeds experts {self.experts}")
        if self.experts % self.ep or not 0 <= self.rank < self.ep:
            raise ValueError("experts must divide by ep and 0 <= rank < ep")

    @property
    def flat_size(self) -> int:
        return self.tokens_num * self.top_k

    def with_(self, **changes: object) -> Case:
        return dataclasses.replace(self, **changes)


def _routing(case: Case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return moe_routing.draw(case.tokens_num, case.top_k, case.experts, rng)


def _window(case: Case, ids: np.ndarray) -> tuple[int, int]:
    return moe_routing.ep_window(ids, case.experts, case.ep, case.rank, case.range)


def window(case: Case, seed: int | None = None) -> tuple[int, int]:
    """The ``range`` of :func:`make_inputs` for ``seed``, without drawing the tokens."""
    rng = np.random.default_rng(case.seed if seed is None else seed)
    ids, _ = _routing(case, rng)
    return _window(case, ids)


def make_inputs(case: Case, seed: int | None = None) -> dict:
    """``tokens``, ``indices``, ``probs`` (or None) and the ``range`` used, from ``seed``
    (default the case's)."""
    rng = np.random.default_rng(case.seed if seed is None else seed)
    N, H = case.tokens_num, case.hidden
    dt = np_dtype(case.dtype)
    ids, logits = _routing(case, rng)
    start, end = _window(case, ids)
    tokens = (rng.random((N, H), dtype=np.float32) * np.float32(4) - np.float32(2)).astype(dt)
    probs = None
    if case.probs:
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs = (w / w.sum(axis=1, keepdims=True)).astype(np.float32).astype(dt)
    return {"tokens": tokens, "indices": ids.astype(np_dtype(case.indices_dtype)),
            "probs": probs, "range": (start, end)}


_LIST = [
    Case("permute_tiny_bf16_probs", 12, 2, 48, "bfloat16", True, 8, ep=2,
         description="12 tokens x top-2 of 8 experts, EP 2 (rank 0), H 48: one-core sort, "
                     "EP window (key 5)"),
    Case("permute_tiny_fp32_int64_noprobs", 9, 3, 40, "float32", False, 6, indices_dtype="int64",
         range=(0, 27), description="int64 expert ids, no probs, every row kept (key 1)"),
    Case("permute_ep_path_tiny", 32, 8, 64, "bfloat16", True, 256, ep=8,
         description="the DeepSeek-V3 routing (top-8 of 256 experts, EP 8, rank 0, bf16 router "
                     "weights) on 32 tokens, H 64: examples/ep_token_path.py --size tiny"),
    Case("permute_deepseek_v3_layer", 4096, 8, 7168, "bfloat16", True, 256, ep=8,
         description="DeepSeek-V3 MoE layer: 4096 tokens, H 7168, top-8 of 256 routed experts, "
                     "EP 8 (rank 0: 32 experts), bf16 router weights: multi-core sort (key 6)"),
]
CASES: dict[str, Case] = {c.name: c for c in _LIST}


def get_case(name: str) -> Case:
    try:
        return CASES[name]
    except KeyError:
        raise KeyError(f"unknown case {name!r}; bundled: {', '.join(CASES)}") from None
