"""``MoeTokenPermuteGrad`` (aclnnMoeTokenPermuteGrad): the backward of MoeTokenPermute.

Golden, from the operator's documentation (padded_mode false, the only mode supported):
gather the rows of ``permuted_output_grad`` at ``sorted_indices`` (``sorted_indices[s]`` is the
permuted row of slot ``s = token * num_topk + k``), view them as ``(tokens, num_topk, hidden)``
and sum over the ``num_topk`` axis: ``input_grad[t] = sum_k permuted_output_grad[
sorted_indices[t * num_topk + k]]``.

Bit-exactness: the sum is taken in float32 (16-bit inputs widened exactly), one rounding per
addition, in the kernel's order - slot ``k = 0`` first, then ``k = 1, 2, ...`` added one after
the other (the order is fixed: each output row is one core's sequential loop over its
``num_topk`` slots) - and the float32 result rounded once to the output dtype, to nearest with
ties to even. Done in that order the golden is bit-exact in every dtype; float32 with
``num_topk == 1`` is a pure copy.

Shapes are the documentation's: ``permuted_output_grad`` is ``(tokens * num_topk, hidden)``
and ``input_grad`` ``(tokens, hidden)``; the operator's infershape gives the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec, as_dtype
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("bfloat16", "float16", "float32")


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    grad, idx = inputs["permuted_output_grad"], inputs["sorted_indices"]
    k = int(attrs["num_topk"])
    rows = grad[idx.astype(np.int64)].astype(np.float32).reshape(-1, k, grad.shape[1])
    acc = rows[:, 0].copy()
    for j in range(1, k):
        acc = acc + rows[:, j]  # float32 + float32: one rounding, slot order
    return {"input_grad": acc.astype(grad.dtype)}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    (rows, h), dt = case.inputs["permuted_output_grad"]
    grad = rng.uniform(-2, 2, (rows, h)).astype(as_dtype(dt))
    return {"permuted_output_grad": grad,
            "sorted_indices": rng.permutation(rows).astype(np.int32)}


def _case(name: str, n: int, k: int, h: int, dt: str, description: str = "",
          seed: int = 0) -> SourceCase:
    return SourceCase(name, description, {"permuted_output_grad": ((n * k, h), dt),
                                          "sorted_indices": ((n * k,), "int32")},
                      {"num_topk": k, "padded_mode": False}, seed)


CASES = {c.name: c for c in (
    _case("permute_grad_small", 16, 4, 64, "bfloat16", "16 tokens x top-4, H 64"),
    _case("permute_grad_small_fp16_h100", 10, 3, 100, "float16",
          "fp16, 10 tokens x top-3, H 100 (rows not 32-byte multiples)", seed=1),
    _case("permute_grad_small_fp32_top1", 20, 1, 40, "float32",
          "fp32, top-1 (a pure gather), H 40", seed=2),
    _case("permute_grad_qwen3_moe", 4096, 8, 2048, "bfloat16",
          "Qwen3-MoE layer: 4096 tokens x top-8, H 2048", seed=3),
)}

MODEL = SourceOpModel(
    "moe_token_permute_grad",
    "CANN ops-transformer MoeTokenPermuteGrad, run from its own sources", "moe",
    inputs=(TensorSpec("permuted_output_grad", FLOATS, 2),
            TensorSpec("sorted_indices", ("int32",), 1)),
    outputs=(TensorSpec("input_grad", FLOATS, 2),),
    attrs=(AttrSpec("num_topk", "int"), AttrSpec("padded_mode", "bool", False)),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
