"""``MoeTokenPermute`` (aclnnMoeTokenPermute): tokens broadcast to their top-K experts' rows.

Golden, from the operator's documentation (padded_mode false, the only mode supported):
``sortedIndicesFirst = argSort(flatten(indices))``, ``sortedIndicesOut =
argSort(sortedIndicesFirst)`` (int32: the permuted row of each slot), ``permuteTokensOut[
sortedIndicesOut[i]] = tokens[i // topK]``; with ``num_out_tokens`` > 0 only the first
``num_out_tokens`` permuted rows are kept. The sort is stable (equal expert ids keep slot
order). Pure copies: bit-exact in every dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("bfloat16", "float16", "float32")


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens, indices = inputs["tokens"], inputs["indices"]
    k = 1 if indices.ndim == 1 else indices.shape[1]
    first = np.argsort(indices.reshape(-1).astype(np.int64), kind="stable")
    sorted_indices = np.empty_like(first)
    sorted_indices[first] = np.arange(first.size)
    total = first.size
    n_out = total if attrs["num_out_tokens"] <= 0 else min(attrs["num_out_tokens"], total)
    rows = tokens.reshape(tokens.shape[0], -1)[first[:n_out] // k]
    return {"permute_tokens": rows, "sorted_indices": sorted_indices.astype(np.int32)}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    (n, h), tdt = case.inputs["tokens"]
    ishape, idt = case.inputs["indices"]
    experts = int(case.attrs.get("experts", 8))
    tokens = rng.uniform(-2, 2, (n, h)).astype(np.dtype(tdt) if tdt != "bfloat16" else
                                                 __import__("ml_dtypes").bfloat16)
    return {"tokens": tokens, "indices": rng.integers(0, experts, ishape).astype(idt)}


def _case(name: str, n: int, k: int, h: int, dt: str, idt: str = "int32", num_out: int = 0,
          description: str = "", seed: int = 0) -> SourceCase:
    return SourceCase(name, description, {"tokens": ((n, h), dt),
                                          "indices": ((n, k) if k else (n,), idt)},
                      {"num_out_tokens": num_out, "padded_mode": False}, seed)


CASES = {c.name: c for c in (
    _case("permute_small", 16, 4, 64, "bfloat16", description="16 tokens x top-4, H 64"),
    _case("permute_small_fp32_i64_drop", 12, 2, 40, "float32", "int64", num_out=20,
          description="fp32 tokens, int64 indices, 20 of 24 rows kept", seed=1),
    _case("permute_qwen3_moe", 4096, 8, 2048, "bfloat16",
          description="Qwen3-MoE layer: 4096 tokens x top-8, H 2048", seed=2),
)}

MODEL = SourceOpModel(
    "moe_token_permute", "CANN ops-transformer MoeTokenPermute, run from its own sources",
    "moe",
    inputs=(TensorSpec("tokens", FLOATS + ("int8",), 2),
            TensorSpec("indices", ("int32", "int64"))),
    outputs=(TensorSpec("permute_tokens", FLOATS + ("int8",), 2),
             TensorSpec("sorted_indices", ("int32",), 1)),
    attrs=(AttrSpec("num_out_tokens", "int", 0), AttrSpec("padded_mode", "bool", False)),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
