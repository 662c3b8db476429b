"""``MoeFinalizeRoutingV2`` (aclnnMoeFinalizeRoutingV2): each token's K expert outputs,
weighted by its routing scales, summed with its shared experts' outputs.

Golden, from the operator's documentation: for token ``i`` (of ``R``) and column ``j``,
``out[i, j] = x1[i, j] + x2[i, j] + sum over k of scales[i, k] * (expanded_x[row, j] +
bias[expert_idx[i, k], j])`` where ``row`` is ``expanded_row_idx[i + k * R]`` with
``drop_pad_mode`` 0 or 1 (the index is laid out expert slot by expert slot) and
``expanded_row_idx[i * K + k]`` with 2 or 3 (token by token). Modes 1 and 3 are drop/pad:
``expanded_x`` is ``(E, C, H)`` and a row index of -1 is a dropped slot, whose term is absent
(neither the row nor its bias). ``x1``, ``x2``, ``bias`` (then ``expert_idx``) and ``scales``
are optional: an absent one is left out of the formula (an absent scale is 1).

Bit-exactness: the formula's additions are not associative, so the golden follows the
kernel's order: the skips first (``x1 + x2``), then for k = 0, 1, ... ``out += (x + bias) *
scale``, each operation one rounding; without skips the first term is the start (no ``0 +``).
float32 and float16 compute in their own type (every float16 operation rounded to float16,
which numpy's float16 arithmetic does exactly: float32 carries enough bits that its
intermediate rounding never changes a float16 result of one +, or *); bfloat16 is widened
exactly to float32, computed in float32 in the same order, and rounded once to bfloat16 (to
nearest, ties to even); float32 scales with bfloat16 rows (the doc's mixed precision) are used
as given. With that order every output is bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel
from aicore_sim.sim import dtypes
from op_models.moe_family.moe_init_routing_v2_grad import routed_rows

FLOATS = ("float16", "float32", "bfloat16")


def _compute_type(dt: np.dtype) -> Any:
    return np.float32 if dt.name == "bfloat16" else dt.type


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    x, idx = inputs["expanded_x"], inputs["expanded_row_idx"].astype(np.int64)
    mode = int(attrs["drop_pad_mode"])
    out_dt = x.dtype
    ct = _compute_type(out_dt)
    h = x.shape[-1]
    rows = x.reshape(-1, h).astype(ct)
    scales, bias, experts = inputs["scales"], inputs["bias"], inputs["expert_idx"]
    if scales is not None:
        r, k = scales.shape
    else:
        k = int(attrs["k"])
        r = idx.size // k
    # the (R, K) row of each token's k-th slot
    slot = idx.reshape(k, r).T if mode in (0, 1) else idx.reshape(r, k)
    acc: np.ndarray | None = None
    skips = [inputs[n].astype(ct) for n in ("x1", "x2") if inputs[n] is not None]
    if len(skips) == 2:
        acc = (skips[0] + skips[1]).astype(ct)
    elif skips:
        acc = skips[0]
    for kk in range(k):
        row = slot[:, kk]
        valid = row >= 0
        term = rows[np.where(valid, row, 0)]
        if bias is not None:
            term = (term + bias.astype(ct)[experts[:, kk]]).astype(ct)
        if scales is not None:
            term = (term * scales[:, kk].astype(ct)[:, None]).astype(ct)
        if mode in (1, 3):
            term = np.where(valid[:, None], term, ct(0))
            if acc is None:
                acc = term
                continue
            acc = np.where(valid[:, None], (acc + term).astype(ct), acc)
        else:
            acc = term if acc is None else (acc + term).astype(ct)
    assert acc is not None
    return {"y": acc.astype(out_dt)}


def _dtype(name: str) -> Any:
    return dtypes.as_dtype(name)


EXPERTS: dict[str, int] = {}
"""The number of experts a case routes to (with drop/pad: E)."""


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """A forward routing's rows (:func:`routed_rows`, laid out as ``drop_pad_mode`` says), its
    experts as ``expert_idx``; values uniform in [-2, 2), scales in [0, 1)."""
    xshape, dt_name = case.inputs["expanded_x"]
    (nk,), _ = case.inputs["expanded_row_idx"]
    mode = int(case.attrs["drop_pad_mode"])
    k = int(case.attrs["k"])
    r = nk // k
    h = xshape[-1]
    dt = _dtype(dt_name)
    e = EXPERTS.get(case.name, 8)
    experts, idx = routed_rows(rng, r, k, e, xshape[1] if mode in (1, 3) else 0)
    if mode in (0, 1):
        idx = np.ascontiguousarray(idx.reshape(r, k).T).reshape(-1)
    out: dict[str, Any] = {"expanded_x": rng.uniform(-2, 2, xshape).astype(dt),
                           "expanded_row_idx": idx}
    for name in ("x1", "x2"):
        if case.inputs.get(name) is not None:
            out[name] = rng.uniform(-2, 2, (r, h)).astype(dt)
    if case.inputs.get("bias") is not None:
        out["bias"] = rng.uniform(-2, 2, (e, h)).astype(dt)
        out["expert_idx"] = experts.reshape(r, k)
    if case.inputs.get("scales") is not None:
        out["scales"] = rng.uniform(0, 1, (r, k)).astype(_dtype(case.inputs["scales"][1]))
    return out


def _case(name: str, r: int, k: int, h: int, dt: str, mode: int = 0, skips: int = 2,
          bias: bool = True, scales: bool = True, capacity: int = 0, experts: int = 8,
          scales_dt: str = "", description: str = "", seed: int = 0) -> SourceCase:
    EXPERTS[name] = experts
    nk = r * k
    xshape: tuple[int, ...] = (experts, capacity, h) if mode in (1, 3) else (nk, h)
    inputs: dict[str, Any] = {
        "expanded_x": (xshape, dt), "expanded_row_idx": ((nk,), "int32"),
        "x1": ((r, h), dt) if skips >= 1 else None,
        "x2": ((r, h), dt) if skips >= 2 else None,
        "bias": ((experts, h), dt) if bias else None,
        "scales": ((r, k), scales_dt or dt) if scales else None,
        "expert_idx": ((r, k), "int32") if bias else None}
    attrs = {"drop_pad_mode": mode, "zero_expert_range": [-1, -1],
             "copy_expert_range": [-1, -1], "constant_expert_range": [-1, -1], "k": k}
    return SourceCase(name, description, inputs, attrs, seed)


CASES = {c.name: c for c in (
    _case("fr_v2_small", 16, 4, 64, "float32",
          description="fp32, x1 + x2, bias, scales, dropless (mode 0): 16 tokens x top-4"),
    _case("fr_v2_small_fp16_mode2", 24, 2, 40, "float16", mode=2, skips=1, experts=6,
          description="fp16, x1 only, bias, token-major rows (mode 2), H 40", seed=1),
    _case("fr_v2_small_bf16_nobias", 12, 3, 136, "bfloat16", skips=0, bias=False,
          description="bf16, no skips, no bias, odd K 3", seed=2),
    _case("fr_v2_small_drop_pad", 32, 2, 48, "float16", mode=1, capacity=6,
          description="fp16, drop/pad 8 x 6 (mode 1): dropped slots", seed=3),
    _case("fr_v2_small_bf16_drop_pad3", 20, 4, 72, "bfloat16", mode=3, capacity=8,
          description="bf16, drop/pad 8 x 8, token-major (mode 3)", seed=4),
    _case("fr_v2_small_fp32_no_scales", 16, 2, 32, "float32", mode=2, skips=0,
          scales=False, description="fp32, no skips, bias, no scales (each scale 1)", seed=5),
    _case("fr_v2_small_cut_h", 4, 2, 20000, "float32",
          description="fp32, H 20000: a row in parts of UB", seed=6),
    _case("fr_v2_small_big_k", 8, 16, 64, "float16", experts=32,
          description="fp16, top-16 of 32 experts", seed=7),
    _case("fr_v2_small_bf16_fp32_scales", 16, 2, 96, "bfloat16", mode=2, skips=1,
          scales_dt="float32", description="bf16 rows, float32 scales (mixed precision)",
          seed=9),
    _case("fr_v2_mixtral", 4096, 2, 4096, "bfloat16", skips=0, bias=False, experts=8,
          description="Mixtral-8x7B layer: 4096 tokens x top-2 of 8, H 4096", seed=8),
)}

MODEL = SourceOpModel(
    "moe_finalize_routing_v2", "CANN ops-transformer MoeFinalizeRoutingV2, run from its own "
    "sources", "moe",
    inputs=(TensorSpec("expanded_x", FLOATS), TensorSpec("expanded_row_idx", ("int32",), 1),
            TensorSpec("x1", FLOATS, 2, optional=True),
            TensorSpec("x2", FLOATS, 2, optional=True),
            TensorSpec("bias", FLOATS, 2, optional=True),
            TensorSpec("scales", FLOATS, 2, optional=True),
            TensorSpec("expert_idx", ("int32",), 2, optional=True)),
    outputs=(TensorSpec("y", FLOATS, 2),),
    attrs=(AttrSpec("drop_pad_mode", "int", 0, doc="0/1: rows slot-major, 2/3: token-major; "
                    "1/3: drop/pad (E, C, H)"),
           AttrSpec("zero_expert_range", "int_list", [-1, -1]),
           AttrSpec("copy_expert_range", "int_list", [-1, -1]),
           AttrSpec("constant_expert_range", "int_list", [-1, -1]),
           AttrSpec("k", "int", 1, doc="K when scales are absent")),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
