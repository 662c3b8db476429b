"""``MoeTokenUnpermute`` (aclnnMoeTokenUnpermute): permuted rows gathered back to their tokens,
weighted by the routing probabilities and summed.

Golden, from the operator's documentation (padded_mode false, the only mode supported; no
restore_shape): with ``probs`` of shape ``(tokens, top_k)``, slot ``k = i * top_k + j`` takes
row ``sorted_indices[k]`` of ``permuted_tokens``, scales it by ``probs[i][j]``, and
``unpermuted_tokens[i]`` is the sum of its ``top_k`` scaled rows. Without ``probs``,
``top_k`` is 1 and ``unpermuted_tokens[i] = permuted_tokens[sorted_indices[i]]``.

Bit-exactness: rows and probabilities are widened to float32 (exact), each product is one
float32 rounding, and the products are added in the kernel's order - slot ``j = 0`` first,
then ``j = 1, 2, ...`` one after the other (fixed: each output row is one core's sequential
loop over its slots) - and the float32 sum rounded once to the output dtype, to nearest with
ties to even. In that order the golden is bit-exact in every dtype and mix of dtypes; without
``probs`` it is a pure copy. (The kernel skips a slot whose probability is exactly 0; the
cases draw probabilities in (0, 1), where that and the formula agree.)

Shapes are the documentation's: ``permuted_tokens`` ``(tokens * top_k, hidden)``,
``sorted_indices`` ``(tokens * top_k,)``, output ``(tokens, hidden)``; the operator's
infershape gives the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec, as_dtype
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("bfloat16", "float16", "float32")


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens, idx, probs = inputs["permuted_tokens"], inputs["sorted_indices"], inputs["probs"]
    rows = tokens[idx.astype(np.int64)].astype(np.float32)
    if probs is None:
        return {"unpermuted_tokens": rows.astype(tokens.dtype)}
    n, k = probs.shape
    rows = rows.reshape(n, k, tokens.shape[1])
    p = probs.astype(np.float32)
    acc = rows[:, 0] * p[:, 0:1]
    for j in range(1, k):
        acc = acc + rows[:, j] * p[:, j:j + 1]  # each product and sum one float32 rounding
    return {"unpermuted_tokens": acc.astype(tokens.dtype)}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    (rows, h), dt = case.inputs["permuted_tokens"]
    out: dict[str, Any] = {
        "permuted_tokens": rng.uniform(-2, 2, (rows, h)).astype(as_dtype(dt)),
        "sorted_indices": rng.permutation(rows).astype(np.int32)}
    if case.inputs.get("probs") is not None:
        pshape, pdt = case.inputs["probs"]
        out["probs"] = rng.uniform(0.01, 1.0, pshape).astype(as_dtype(pdt))
    return out


def _case(name: str, n: int, k: int, h: int, dt: str, pdt: str | None, description: str = "",
          seed: int = 0) -> SourceCase:
    return SourceCase(name, description, {
        "permuted_tokens": ((n * k, h), dt), "sorted_indices": ((n * k,), "int32"),
        "probs": None if pdt is None else ((n, k), pdt)}, {"padded_mode": False}, seed)


CASES = {c.name: c for c in (
    _case("unpermute_small", 16, 4, 64, "bfloat16", "bfloat16",
          "16 tokens x top-4, H 64, bf16 probs"),
    _case("unpermute_small_fp16_fp32probs_h100", 10, 3, 100, "float16", "float32",
          "fp16 tokens, fp32 probs (mixed), H 100", seed=1),
    _case("unpermute_small_fp32_noprobs", 24, 1, 40, "float32", None,
          "fp32, no probs (top-1 gather), H 40", seed=2),
    _case("unpermute_deepseek_v3", 4096, 8, 7168, "bfloat16", "float32",
          "DeepSeek-V3 layer: 4096 tokens x top-8, H 7168, fp32 probs", seed=3),
)}

MODEL = SourceOpModel(
    "moe_token_unpermute", "CANN ops-transformer MoeTokenUnpermute, run from its own sources",
    "moe",
    inputs=(TensorSpec("permuted_tokens", FLOATS, 2),
            TensorSpec("sorted_indices", ("int32",), 1),
            TensorSpec("probs", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("unpermuted_tokens", FLOATS, 2),),
    attrs=(AttrSpec("padded_mode", "bool", False), AttrSpec("restore_shape", "int_list")),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
