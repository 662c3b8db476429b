"""``MoeFinalizeRouting`` (aclnnMoeFinalizeRouting): each token's K expert outputs, weighted
by its routing scales, summed with its shared experts' outputs - the first version of
:mod:`~op_models.moe_family.moe_finalize_routing_v2`, dropless and slot-major only.

Golden, from the operator's documentation: for token ``i`` (of ``R``) and column ``j``,
``out[i, j] = x1[i, j] + x2[i, j] + sum over k of scales[i, k] * (expanded_x[row, j] +
bias[expanded_expert_idx[i, k], j])`` with ``row = expanded_row_idx[i + k * R]`` (the index
laid out expert slot by expert slot). ``x1``, ``bias``, ``scales`` and ``expanded_expert_idx``
are required; ``x2`` is optional (absent: left out of the formula).

Bit-exactness: the golden follows the kernel's order (as V2's, whose golden this shares with
``drop_pad_mode`` 0): ``x1 + x2`` (or ``x1``) first, then for k = 0, 1, ... ``out += (x +
bias) * scale``, one rounding per operation - in float32 and float16 in their own type,
bfloat16 widened exactly to float32 and rounded once to bfloat16 at the end - to nearest,
ties AWAY FROM ZERO here (the kernel's rounding mode for its last conversion; V2's rounds ties
to even): a tie is rare but real, so the golden rounds the same way. Every output is
bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel
from aicore_sim.sim import dtypes
from op_models.moe_family import moe_finalize_routing_v2 as v2
from op_models.moe_family.moe_init_routing_v2_grad import routed_rows

FLOATS = ("float16", "float32", "bfloat16")


def _bf16_ties_away(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16, to nearest, ties away from zero (finite values): half a bfloat16
    unit added to the magnitude's bits, the low 16 bits then dropped."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x8000)) >> np.uint32(16)).astype(np.uint16).view(
        dtypes.as_dtype("bfloat16"))


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    if inputs["expanded_x"].dtype.name == "bfloat16":
        widened = {n: v.astype(np.float32) if v is not None and v.dtype.name == "bfloat16"
                   else v for n, v in inputs.items()}
        return {"y": _bf16_ties_away(golden(widened, attrs)["y"])}
    as_v2 = {"expanded_x": inputs["expanded_x"], "expanded_row_idx": inputs["expanded_row_idx"],
             "x1": inputs["x1"], "x2": inputs["x2"], "bias": inputs["bias"],
             "scales": inputs["scales"], "expert_idx": inputs["expanded_expert_idx"]}
    return v2.golden(as_v2, {"drop_pad_mode": 0, "k": inputs["scales"].shape[1]})


EXPERTS: dict[str, int] = {}
"""The number of experts a case routes to."""


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """A forward routing's rows (:func:`routed_rows`), slot-major, and its experts; values
    uniform in [-2, 2), scales in [0, 1)."""
    (r, k), dt_name = case.inputs["scales"]
    h = case.inputs["x1"][0][1]
    dt = dtypes.as_dtype(dt_name)
    e = EXPERTS.get(case.name, 8)
    experts, idx = routed_rows(rng, r, k, e)
    out: dict[str, Any] = {
        "expanded_x": rng.uniform(-2, 2, (r * k, h)).astype(dt),
        "x1": rng.uniform(-2, 2, (r, h)).astype(dt),
        "bias": rng.uniform(-2, 2, (e, h)).astype(dt),
        "scales": rng.uniform(0, 1, (r, k)).astype(dt),
        "expanded_row_idx": np.ascontiguousarray(idx.reshape(r, k).T).reshape(-1),
        "expanded_expert_idx": experts.reshape(r, k)}
    if case.inputs.get("x2") is not None:
        out["x2"] = rng.uniform(-2, 2, (r, h)).astype(dt)
    return out


def _case(name: str, r: int, k: int, h: int, dt: str, x2: bool = True, experts: int = 8,
          description: str = "", seed: int = 0) -> SourceCase:
    EXPERTS[name] = experts
    inputs: dict[str, Any] = {
        "expanded_x": ((r * k, h), dt), "x1": ((r, h), dt),
        "x2": ((r, h), dt) if x2 else None, "bias": ((experts, h), dt),
        "scales": ((r, k), dt), "expanded_row_idx": ((r * k,), "int32"),
        "expanded_expert_idx": ((r, k), "int32")}
    return SourceCase(name, description, inputs, {}, seed)


CASES = {c.name: c for c in (
    _case("fr_small", 16, 4, 64, "float32", description="fp32, x1 + x2: 16 tokens x top-4"),
    _case("fr_small_fp16_no_x2", 24, 2, 40, "float16", x2=False, experts=6,
          description="fp16, x1 only, H 40", seed=1),
    _case("fr_small_bf16_k3", 12, 3, 136, "bfloat16", description="bf16, odd K 3", seed=2),
    _case("fr_small_cut_h", 4, 2, 20000, "float32",
          description="fp32, H 20000: a row in parts of UB", seed=3),
    _case("fr_small_big_k", 8, 16, 64, "float16", experts=32,
          description="fp16, top-16 of 32 experts", seed=4),
    _case("fr_mixtral", 4096, 2, 4096, "bfloat16", experts=8,
          description="Mixtral-8x7B layer: 4096 tokens x top-2 of 8, H 4096", seed=8),
)}

MODEL = SourceOpModel(
    "moe_finalize_routing", "CANN ops-transformer MoeFinalizeRouting, run from its own sources",
    "moe",
    inputs=(TensorSpec("expanded_x", FLOATS, 2), TensorSpec("x1", FLOATS, 2),
            TensorSpec("x2", FLOATS, 2, optional=True), TensorSpec("bias", FLOATS, 2),
            TensorSpec("scales", FLOATS, 2), TensorSpec("expanded_row_idx", ("int32",), 1),
            TensorSpec("expanded_expert_idx", ("int32",), 2)),
    outputs=(TensorSpec("y", FLOATS, 2),),
    attrs=(), cases=CASES, make_inputs=make_inputs, golden_fn=golden)
