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

from dataclasses import dataclass

import numpy as np

from aicore_sim import dtypes
from op_models import moe_routing
from op_models.moe_common import RoutedCase, lookup_case

__all__ = ["CASES", "Case", "DTYPES", "get_case", "make_inputs", "np_dtype", "window"]

DTYPES: dict[str, np.dtype] = dtypes.table("bfloat16", "float16", "float32", "int32", "int64")


def np_dtype(name: str) -> np.dtype:
    return dtypes.choose(name, DTYPES)


@dataclass(frozen=True)
class Case(RoutedCase):
    """One forward call: N tokens, top-K of ``experts``, hidden H, dtypes, EP layout (the
    fields of :class:`~op_models.moe_common.RoutedCase`, then ``probs``, ``experts`` and the
    expert ids' dtype)."""

    probs: bool
    experts: int
    indices_dtype: str = "int32"

    def __post_init__(self) -> None:
        np_dtype(self.dtype)
        if self.indices_dtype not in ("int32", "int64"):
            raise ValueError(f"indices_dtype {self.indices_dtype!r}: int32 or int64")
        self.check_routing()


window = Case.window  # the ``range`` of :func:`make_inputs` for ``seed``


def make_inputs(case: Case, seed: int | None = None) -> dict:
    """``tokens``, ``indices``, ``probs`` (or None) and the ``range`` used, from ``seed``
    (default the case's)."""
    rng, ids, logits = case.draw(seed)
    start, end = case.routing_window(ids)
    dt = np_dtype(case.dtype)
    tokens = moe_routing.values(rng, (case.tokens_num, case.hidden), dt)
    probs = moe_routing.router_weights(logits).astype(dt) if case.probs else None
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
    return lookup_case(CASES, name)
