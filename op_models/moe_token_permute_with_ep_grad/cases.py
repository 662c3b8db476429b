"""Named cases of ``MoeTokenPermuteWithEpGrad`` and their input tensors.

A case is the backward of one forward EP permute (``MoeTokenPermuteWithEp``): ``tokens_num``
tokens each routed to ``top_k`` distinct experts of ``experts``, ``ep`` ranks, this rank
``rank`` holding experts ``[rank * E / ep, (rank + 1) * E / ep)``, i.e. the permuted rows
``[start, end)`` = the ``range`` attribute (an explicit ``range`` overrides it).

The routing is drawn exactly as the forward op model's cases draw it (same generator, same
calls, same order: ``np.random.default_rng(seed)``, the expert ids of blocks of tokens by
argsort of fp32 uniforms, then the router logits), so a grad case and the forward case of the
same shape and seed share ``sorted_indices`` and ``range`` and the two can be chained: the
forward's ``sorted_indices`` output is this operator's input. (Both draw through
:class:`op_models.moe_common.RoutedCase`: op models do not import each other.)

Inputs: ``sorted_indices`` (int32, ``N * K``) = the inverse of the stable argsort of the
flattened expert ids; ``permuted_tokens_output_grad`` (``end - start`` rows, H) and, with
probs, ``permuted_probs_output_grad`` (``end - start``): fp32 draws in [-2, 2) of the same
generator after the routing, cast to the dtype.
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
    """One backward call: N tokens, top-K of ``experts``, hidden H, dtype, EP layout (the
    fields of :class:`~op_models.moe_common.RoutedCase`, then ``probs`` and ``experts``)."""

    probs: bool
    experts: int

    def __post_init__(self) -> None:
        np_dtype(self.dtype)
        self.check_routing()
        if self.range is not None and not 0 <= self.range[0] < self.range[1] <= self.flat_size:
            raise ValueError(f"range {self.range}: need 0 <= start < end <= N * K "
                             f"= {self.flat_size}")


def routing(case: Case, seed: int | None = None) -> tuple[np.ndarray, np.ndarray,
                                                          tuple[int, int]]:
    """(expert ids N x K, ``sorted_indices``, ``range``) for ``seed``, without the grads (the
    router logits are drawn too, unused here, to keep the stream)."""
    ids = case.draw(seed)[1]
    return ids, moe_routing.slots(ids)[1], case.routing_window(ids)


window = Case.window  # the ``range`` of :func:`make_inputs` for ``seed``


def make_inputs(case: Case, seed: int | None = None) -> dict:
    """``permuted_tokens_output_grad``, ``sorted_indices``, ``permuted_probs_output_grad`` (or
    None), the ``range`` and ``num_topk`` used, from ``seed`` (default the case's)."""
    rng, ids, _ = case.draw(seed)
    start, end = case.routing_window(ids)
    dt = np_dtype(case.dtype)
    rows = end - start
    grad = moe_routing.values(rng, (rows, case.hidden), dt)
    probs = moe_routing.values(rng, (rows,), dt) if case.probs else None
    return {"permuted_tokens_output_grad": grad, "sorted_indices": moe_routing.slots(ids)[1],
            "permuted_probs_output_grad": probs, "range": (start, end),
            "num_topk": case.top_k}


_LIST = [
    Case("permute_grad_tiny_bf16_probs", 12, 2, 48, "bfloat16", True, 8, ep=2,
         description="backward of permute_tiny_bf16_probs: 12 tokens x top-2 of 8 experts, "
                     "EP 2 (rank 0), H 48 (96-byte rows: DataCopy), both passes (key 1)"),
    Case("permute_grad_tiny_fp16_noprobs", 9, 3, 40, "float16", False, 6, ep=3, rank=1,
         description="9 tokens x top-3 of 6, EP 3 (rank 1: a window off row 0), H 40 "
                     "(80-byte rows: DataCopyPad), token pass only (key 0)"),
    Case("permute_grad_tiny_fp32_probs", 9, 3, 40, "float32", True, 6, range=(0, 27),
         description="fp32, every row in the window, both passes (key 1)"),
    Case("permute_grad_ep_path_tiny", 32, 8, 64, "bfloat16", True, 256, ep=8,
         description="backward of permute_ep_path_tiny (same routing: top-8 of 256, EP 8, "
                     "rank 0), 32 tokens, H 64, both passes (key 1)"),
    Case("permute_grad_deepseek_v3_layer", 4096, 8, 7168, "bfloat16", True, 256, ep=8,
         description="backward of permute_deepseek_v3_layer: 4096 tokens, H 7168, top-8 of "
                     "256 routed experts, EP 8 (rank 0: 32 experts), bf16 grads (key 1)"),
]
CASES: dict[str, Case] = {c.name: c for c in _LIST}


def get_case(name: str) -> Case:
    return lookup_case(CASES, name)
