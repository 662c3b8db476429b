"""Named cases of ``MoeTokenUnpermuteWithEp`` and their input tensors.

Place in the flow: the *case* at the head of the pipeline. Inputs are built the way a real MoE
layer (and upstream's system-test executor) builds them: every token picks ``top_k`` distinct
experts out of ``experts``; ``order`` = the stable argsort of the flattened expert ids groups
the ``N * K`` (token, slot) pairs by expert; ``sorted_indices = argsort(order)`` (int32) is the
row each pair was permuted to. Expert parallelism over ``ep`` ranks: this rank (``rank``) holds
the experts ``[rank * E / ep, (rank + 1) * E / ep)``, i.e. the permuted rows
``[start, end)`` = the EP window passed as ``range``; ``permuted_tokens`` holds exactly those
rows (the original token of row ``r`` is ``order[start + r] // K``). An explicit ``range``
overrides the window.

Values: float tensors drawn in fp32 with ``np.random.default_rng(seed)`` and cast to the case
dtype (exactly representable); tokens in [-2, 2); probs: the top-K of a softmax over random
logits, renormalised, then a fraction ``zero_probs`` of them set to exactly 0 (terms the kernel
skips).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from op_models import moe_routing
from op_models.moe_common import DTYPES, RoutedCase, lookup_case, np_dtype

__all__ = ["CASES", "Case", "DTYPES", "get_case", "make_inputs", "np_dtype", "routing",
           "window"]

@dataclass(frozen=True)
class Case(RoutedCase):
    """One forward call: N tokens, top-K of ``experts``, hidden H, dtypes, EP layout (the
    fields of :class:`~op_models.moe_common.RoutedCase`, then the probs' dtype, ``experts`` and
    the fraction of probs set to 0)."""

    probs_dtype: str | None
    experts: int
    zero_probs: float = 0.0

    def __post_init__(self) -> None:
        np_dtype(self.dtype)
        if self.probs_dtype is not None:
            np_dtype(self.probs_dtype)
        self.check_routing()

    @property
    def has_probs(self) -> bool:
        return self.probs_dtype is not None


def routing(case: Case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(expert ids ``[N, K]``, router logits ``[N, K]`` fp32) of distinct experts per token."""
    return moe_routing.draw(case.tokens_num, case.top_k, case.experts, rng)


window = Case.window  # the ``range`` of :func:`make_inputs` for ``seed``


def make_inputs(case: Case, seed: int | None = None) -> dict:
    """``permuted_tokens``, ``sorted_indices``, ``probs`` (or None), the ``range`` used and the
    original ``tokens`` (for references), reproducible from ``seed`` (default the case's)."""
    rng, ids, logits = case.draw(seed)
    dt = np_dtype(case.dtype)
    order, sorted_indices = moe_routing.slots(ids)
    start, end = case.routing_window(ids)
    tokens = moe_routing.values(rng, (case.tokens_num, case.hidden), dt)
    rows = order[max(start, 0):max(end, start, 0)] // case.top_k
    permuted = tokens[rows] if rows.size else np.zeros((1, case.hidden), dt)
    probs = None
    if case.has_probs:
        w = moe_routing.router_weights(logits)
        if case.zero_probs > 0:
            w[rng.random(w.shape) < case.zero_probs] = 0
        probs = w.astype(np_dtype(case.probs_dtype))
    return {"permuted_tokens": np.ascontiguousarray(permuted), "sorted_indices": sorted_indices,
            "probs": probs, "range": (start, end), "tokens": tokens}


def _c(*args, **kw) -> Case:
    return Case(*args, **kw)


_LIST = [
    # tiny: tests and quick looks
    _c("tiny_bf16_probs_bf16", 12, 2, 48, "bfloat16", "bfloat16", 8, ep=2,
       description="12 tokens x top-2 of 8 experts, EP 2 (rank 0), H 48 (unaligned rows)"),
    _c("tiny_fp32_probs_fp32", 10, 3, 40, "float32", "float32", 6, ep=2,
       description="fp32 tokens and probs: UB->UB DataCopy first term, in-place Muls"),
    _c("tiny_fp16_noprobs", 9, 2, 64, "float16", None, 4, ep=2,
       description="no probs (tiling key 0), 32-byte aligned rows (DataCopy path)"),
    _c("tiny_bf16_zero_probs", 16, 4, 32, "bfloat16", "float16", 8, zero_probs=0.3,
       description="30 % of probs exactly 0: those terms are skipped"),
    # layer shapes (one EP rank, one micro-batch of 4096 tokens)
    _c("deepseek_v3_layer", 4096, 8, 7168, "bfloat16", "float32", 256, ep=8,
       description="DeepSeek-V3 MoE layer: H 7168, top-8 of 256 routed experts, EP 8 (rank 0: "
                   "32 experts), fp32 router weights"),
    _c("qwen3_235b_layer", 4096, 8, 4096, "bfloat16", "bfloat16", 128, ep=8,
       description="Qwen3-235B-A22B MoE layer: H 4096, top-8 of 128 experts, EP 8"),
    _c("qwen3_30b_layer", 4096, 8, 2048, "bfloat16", "bfloat16", 128, ep=4,
       description="Qwen3-30B-A3B MoE layer: H 2048, top-8 of 128 experts, EP 4"),
    _c("mixtral_8x7b_layer", 4096, 2, 4096, "bfloat16", "bfloat16", 8, ep=2,
       description="Mixtral-8x7B MoE layer: H 4096, top-2 of 8 experts, EP 2"),
]
CASES: dict[str, Case] = {c.name: c for c in _LIST}


def get_case(name: str) -> Case:
    return lookup_case(CASES, name)
