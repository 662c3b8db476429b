"""``MoeFinalizeRoutingV2Grad`` (aclnnMoeFinalizeRoutingV2Grad): the backward of
MoeFinalizeRoutingV2 - each expanded row's gradient, and each routing weight's.

Golden, from the operator's documentation, for ``i`` over the ``R * K`` routed rows (``r = i
// K``, ``k = i % K``) whose ``expanded_row_idx[i]`` is a row of ``grad_expanded_x``:

- without ``scales`` (then K = 1): ``grad_expanded_x[expanded_row_idx[i]] = grad_y[r]``;
- with ``scales``: ``grad_expanded_x[expanded_row_idx[i]] = grad_y[r] * scales[r, k]`` and
  ``grad_scales[r, k] = sum over j of (expanded_x[expanded_row_idx[i], j] (+ bias[expert_idx[r,
  k], j] when ``bias`` is given)) * grad_y[r, j]``.

A row index is a row when it is in ``[0, rows)``: ``rows`` is ``R * K`` without dropping,
``active_num`` when that is in ``(0, R * K)`` (dropless only), ``expert_num *
expert_capacity`` with drop/pad (``drop_pad_mode`` 1, -1 for a dropped slot). A row no index
names is zero with drop/pad (the op clears ``grad_expanded_x`` first); without dropping every row
is named. For a dropped ``i`` the doc's sum has no ``expanded_x`` term: ``grad_scales[r, k]`` is
0 without bias and the sum of ``bias[expert_idx[r, k], j] * grad_y[r, j]`` with it (the
kernel's reading of the formula: the missing row counted as zeros). Without ``scales``
``grad_scales`` has no meaning (the doc); the op still takes the caller's ``(R, K)`` tensor (its
tiling requires one) and leaves it as it is: zeros here, the simulator's fresh output.

Bit-exactness: the copies are exact. ``grad_y * scale`` is one float32 product of the inputs
widened exactly, rounded once to the output type (to nearest, ties to even): exact. The
``grad_scales`` sum is exact only in the kernel's order, which the doc does not give; the golden
follows it: the float32 products (bias + x first, one rounding) over a row's H elements, or
over each chunk of H when the host tiling splits the row (its ``hiddenPrePart``), are summed
in 8-element blocks by the adjacent-pair tree (the last block padded with +0), the block sums
then by the same tree over 64-lane repeats, pass after pass (padded with +0), and the chunks'
sums added in order to 0.0; then rounded once to the output type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel
from aicore_sim.sim import dtypes
from op_models.moe_family.moe_init_routing_v2_grad import routed_rows

FLOATS = ("float16", "float32", "bfloat16")


def _pair_tree(x: np.ndarray) -> np.ndarray:
    """Adjacent pairs added level by level over the last axis (a power of two)."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def _padded(x: np.ndarray, width: int) -> np.ndarray:
    pad = -x.shape[-1] % width
    if pad:
        x = np.concatenate((x, np.zeros(x.shape[:-1] + (pad,), np.float32)), axis=-1)
    return x.reshape(x.shape[:-1] + (-1, width))


def chunk_sum(v: np.ndarray) -> np.ndarray:
    """``v`` ``(M, n)`` float32 summed over n: blocks of 8 by the pair tree, then the block
    sums by the pair tree over 64 lanes, pass after pass until one is left."""
    s = _pair_tree(_padded(v, 8))
    while True:
        s = _pair_tree(_padded(s, 64))
        if s.shape[-1] == 1:
            return s[..., 0]


def row_sums(v: np.ndarray, chunk: int) -> np.ndarray:
    """``v`` ``(M, H)`` float32 summed over H in chunks of ``chunk`` elements (the last one
    shorter), each chunk's sum added in order to 0.0."""
    total = np.zeros(v.shape[0], np.float32)
    for start in range(0, v.shape[1], chunk):
        total = total + chunk_sum(v[:, start:start + chunk])
    return total


def golden(inputs: dict[str, Any], attrs: dict[str, Any], tiling: dict[str, Any]
           ) -> dict[str, Any]:
    grad_y, idx = inputs["grad_y"], inputs["expanded_row_idx"].astype(np.int64)
    scales, x = inputs["scales"], inputs["expanded_x"]
    r, h = grad_y.shape
    k = idx.size // r
    rows = _rows(attrs, idx.size)
    valid = (idx >= 0) & (idx < rows)
    token = np.arange(idx.size) // k
    gy = grad_y.astype(np.float32)
    out = np.zeros((rows, h), grad_y.dtype)
    if scales is None:
        out[idx[valid]] = grad_y[token[valid]]
        return {"grad_expanded_x": out.reshape(_out_shape(attrs, rows, h)),
                "grad_scales": np.zeros((r, k), grad_y.dtype)}
    scale = scales.reshape(-1).astype(np.float32)
    out[idx[valid]] = (gy[token[valid]] * scale[valid, None]).astype(grad_y.dtype)
    xs = x.reshape(-1, h).astype(np.float32)[np.where(valid, idx, 0)]
    xs[~valid] = 0
    terms = xs
    if inputs["bias"] is not None:
        bias = inputs["bias"].astype(np.float32)[inputs["expert_idx"].reshape(-1)]
        terms = np.where(valid[:, None], bias + xs, bias)
    products = terms * gy[token]
    chunk = int(tiling.get("hiddenPrePart") or h)
    sums = row_sums(products, min(chunk, h))
    return {"grad_expanded_x": out.reshape(_out_shape(attrs, rows, h)),
            "grad_scales": sums.astype(scales.dtype).reshape(r, k)}


def _rows(attrs: dict[str, Any], nk: int) -> int:
    if attrs["drop_pad_mode"] == 1:
        return int(attrs["expert_num"]) * int(attrs["expert_capacity"])
    active = int(attrs["active_num"])
    return active if 0 < active < nk else nk


def _out_shape(attrs: dict[str, Any], rows: int, h: int) -> tuple[int, ...]:
    if attrs["drop_pad_mode"] == 1:
        return (int(attrs["expert_num"]), int(attrs["expert_capacity"]), h)
    return (rows, h)


def infer(specs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """The doc's output shapes, as aclnn's caller allocates them: ``grad_scales`` is (R, K) in
    the data type of ``scales`` - of ``grad_y`` when there are none (K is then 1). The op's own
    infershape gives the graph's answer instead, which without ``scales`` is (R, 1) in the data
    type of the absent input."""
    (r, h), dt = specs["grad_y"]
    (nk,), _ = specs["expanded_row_idx"]
    rows = _rows(attrs, nk)
    scales = specs.get("scales")
    return {"grad_expanded_x": (_out_shape(attrs, rows, h), dt),
            "grad_scales": ((r, nk // r), dt) if scales is None else (tuple(scales[0]),
                                                                     scales[1])}


def _dtype(name: str) -> Any:
    return dtypes.as_dtype(name)


EXPERTS: dict[str, int] = {}
"""The number of experts a case routes to (with drop/pad: its ``expert_num``)."""


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """A forward routing's rows (:func:`routed_rows`), its experts as ``expert_idx``, the
    values uniform in [-2, 2) (scales in [0, 1))."""
    (r, h), dt_name = case.inputs["grad_y"]
    (nk,), _ = case.inputs["expanded_row_idx"]
    k, dt = nk // r, _dtype(dt_name)
    drop_pad = case.attrs.get("drop_pad_mode", 0) == 1
    e = EXPERTS.get(case.name, 8)
    experts, idx = routed_rows(rng, r, k, e, int(case.attrs.get("expert_capacity", 0))
                               if drop_pad else 0)
    out: dict[str, Any] = {"grad_y": rng.uniform(-2, 2, (r, h)).astype(dt),
                           "expanded_row_idx": idx}
    if case.inputs.get("scales") is not None:
        xshape = case.inputs["expanded_x"][0]
        out["expanded_x"] = rng.uniform(-2, 2, xshape).astype(dt)
        out["scales"] = rng.uniform(0, 1, (r, k)).astype(dt)
    if case.inputs.get("bias") is not None:
        out["expert_idx"] = experts.reshape(r, k)
        out["bias"] = rng.uniform(-2, 2, (e, h)).astype(dt)
    return out


def _case(name: str, r: int, k: int, h: int, dt: str, scales: bool = True,
          bias: bool = False, active: int = 0, capacity: int = 0, experts: int = 8,
          description: str = "", seed: int = 0) -> SourceCase:
    EXPERTS[name] = experts
    nk = r * k
    rows = experts * capacity if capacity else (active if 0 < active < nk else nk)
    xshape: tuple[int, ...] = (experts, capacity, h) if capacity else (rows, h)
    inputs: dict[str, Any] = {"grad_y": ((r, h), dt), "expanded_row_idx": ((nk,), "int32"),
                              "expanded_x": (xshape, dt) if scales else None,
                              "scales": ((r, k), dt) if scales else None,
                              "expert_idx": ((r, k), "int32") if bias else None,
                              "bias": ((experts, h), dt) if bias else None}
    attrs = {"drop_pad_mode": 1 if capacity else 0, "active_num": active,
             "expert_num": experts if capacity else 0, "expert_capacity": capacity}
    return SourceCase(name, description, inputs, attrs, seed)


CASES = {c.name: c for c in (
    _case("fr_v2_grad_small", 16, 4, 64, "float32",
          description="fp32, scales, dropless: 16 tokens x top-4, H 64"),
    _case("fr_v2_grad_small_bf16_bias", 24, 2, 40, "bfloat16", bias=True, experts=6,
          description="bf16, scales and bias, dropless, H 40 (a partial repeat)", seed=1),
    _case("fr_v2_grad_small_fp16_active", 12, 4, 136, "float16", active=30,
          description="fp16, scales, active: 30 of 48 rows", seed=2),
    _case("fr_v2_grad_small_drop_pad_bias", 32, 2, 48, "float16", bias=True, capacity=6,
          description="fp16, scales and bias, drop/pad 8 x 6: dropped rows' bias terms",
          seed=3),
    _case("fr_v2_grad_small_drop_pad", 20, 4, 72, "bfloat16", capacity=8,
          description="bf16, scales, drop/pad 8 x 8, no bias", seed=4),
    _case("fr_v2_grad_small_no_scales", 16, 1, 64, "float32", scales=False,
          description="fp32, no scales (top-1): a row copy, no grad_scales", seed=5),
    _case("fr_v2_grad_small_no_scales_drop_pad", 24, 1, 32, "bfloat16", scales=False,
          capacity=2, experts=8, description="bf16, no scales, drop/pad 8 x 2", seed=6),
    _case("fr_v2_grad_small_cut_h", 4, 2, 20000, "float32",
          description="fp32, scales, H 20000: a row summed in two chunks of UB", seed=7),
    _case("fr_v2_grad_mixtral", 4096, 2, 4096, "bfloat16", experts=8,
          description="Mixtral-8x7B layer backward: 4096 tokens x top-2 of 8, H 4096", seed=8),
)}

MODEL = SourceOpModel(
    "moe_finalize_routing_v2_grad", "CANN ops-transformer MoeFinalizeRoutingV2Grad, run from "
    "its own sources", "moe",
    inputs=(TensorSpec("grad_y", FLOATS, 2), TensorSpec("expanded_row_idx", ("int32",), 1),
            TensorSpec("expanded_x", FLOATS, optional=True),
            TensorSpec("scales", FLOATS, 2, optional=True),
            TensorSpec("expert_idx", ("int32",), 2, optional=True),
            TensorSpec("bias", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("grad_expanded_x", FLOATS), TensorSpec("grad_scales", FLOATS, 2)),
    attrs=(AttrSpec("drop_pad_mode", "int", 0, doc="1: grad_expanded_x is (E, C, H)"),
           AttrSpec("active_num", "int", 0, doc="dropless: rows of grad_expanded_x when in "
                    "(0, R * K)"),
           AttrSpec("expert_num", "int", 0, doc="drop/pad: E"),
           AttrSpec("expert_capacity", "int", 0, doc="drop/pad: C")),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden, infer=infer)
