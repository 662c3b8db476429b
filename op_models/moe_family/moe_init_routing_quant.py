"""``MoeInitRoutingQuant`` (aclnnMoeInitRoutingQuant): :mod:`moe_init_routing`'s routing, with
the expanded rows quantised to int8.

Golden, from the operator's documentation: the routing is MoeInitRouting's (the flattened expert
ids key-value sorted with ``row_idx`` as values, stable; ``expanded_row_idx[sortedRowIdx[i]] =
i``) and ``expanded_x[i] = quant(x[sortedRowIdx[i] % N])`` for the first ``min(N, active_num)
* K`` rows, ``quant(v) = int8(v * scale + offset)``.

Bit-exactness: the sorts and the index outputs are copies (exact). The doc does not say in
which precision or rounding ``quant`` runs; the golden does what the kernel does, so it is
bit-exact: the value is taken to half precision (float32 and bfloat16 x rounded to nearest
even; float16 as it is), multiplied by ``scale`` and then added ``offset`` in half precision
(each rounded to nearest even; ``scale`` and ``offset`` are the float attributes taken to
half), then rounded to the nearest integer, ties to even, and saturated to [-128, 127]. The
cases' scales make a few values saturate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel
from op_models.moe_family.moe_init_routing import FLOATS, draw, route


def quant(x: np.ndarray, scale: float, offset: float) -> np.ndarray:
    """``int8(x * scale + offset)`` in half precision, rounded half to even, saturated."""
    h = np.asarray(x).astype(np.float32).astype(np.float16)
    s16, o16 = np.float16(np.float32(scale)), np.float16(np.float32(offset))
    with np.errstate(over="ignore"):
        y = (h * s16) + o16
    return np.clip(np.rint(y.astype(np.float64)), -128, 127).astype(np.int8)


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens, expanded_row_idx, expanded_expert_idx = route(
        inputs["row_idx"], inputs["expert_idx"], attrs["active_num"])
    return {"expanded_x": quant(inputs["x"][tokens], attrs["scale"], attrs["offset"]),
            "expanded_row_idx": expanded_row_idx, "expanded_expert_idx": expanded_expert_idx}


EXPERTS: dict[str, int] = {}
"""The number of experts a case's ids are drawn from (not an attribute of the op)."""


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    return draw(case, rng, EXPERTS.get(case.name, 8))


def _case(name: str, n: int, k: int, h: int, dt: str, active: int, scale: float,
          offset: float, experts: int = 8, description: str = "", seed: int = 0
          ) -> SourceCase:
    EXPERTS[name] = experts
    return SourceCase(name, description, {"x": ((n, h), dt), "row_idx": ((n, k), "int32"),
                                          "expert_idx": ((n, k), "int32")},
                      {"active_num": active, "scale": scale, "offset": offset}, seed)


CASES = {c.name: c for c in (
    _case("quant_small", 16, 4, 64, "float16", 16, 70.0, 0.5,
          description="fp16, 16 tokens x top-4 of 8, H 64, scale 70 (some saturate)"),
    _case("quant_small_bf16_active", 24, 2, 40, "bfloat16", 10, 40.0, -3.25, experts=16,
          description="bf16, 24 tokens x top-2 of 16, only 10 x 2 rows kept", seed=1),
    _case("quant_small_fp32", 8, 8, 96, "float32", 8, 63.5, 1.0, experts=64,
          description="fp32, 8 tokens x top-8 of 64, H 96", seed=2),
    _case("quant_small_wide_active", 12, 4, 16400, "bfloat16", 4, 50.0, 0.0,
          description="H 16400 (one-core sort, gather of few active rows), 4 x 4 kept",
          seed=5),
    _case("quant_small_multicore", 776, 8, 16, "float16", 100, 60.0, 2.0, experts=64,
          description="6208 rows sorted on two cores, only 100 x 8 kept", seed=6),
    _case("quant_qwen3_moe", 4096, 8, 2048, "bfloat16", 4096, 60.0, 0.0, experts=128,
          description="Qwen3-MoE layer: 4096 tokens x top-8 of 128, H 2048", seed=3),
)}

MODEL = SourceOpModel(
    "moe_init_routing_quant", "CANN ops-transformer MoeInitRoutingQuant, run from its own "
    "sources", "moe",
    inputs=(TensorSpec("x", FLOATS, 2), TensorSpec("row_idx", ("int32",), 2),
            TensorSpec("expert_idx", ("int32",), 2)),
    outputs=(TensorSpec("expanded_x", ("int8",), 2),
             TensorSpec("expanded_row_idx", ("int32",), 1),
             TensorSpec("expanded_expert_idx", ("int32",), 1)),
    attrs=(AttrSpec("active_num", "int", None,
                    doc="rows of x kept (expanded_x has min(N, active_num) * K rows)"),
           AttrSpec("scale", "float", None, doc="quantisation scale"),
           AttrSpec("offset", "float", None, doc="quantisation offset")),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
