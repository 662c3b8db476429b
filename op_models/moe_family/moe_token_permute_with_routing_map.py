"""``MoeTokenPermuteWithRoutingMap`` (aclnnMoeTokenPermuteWithRoutingMap): tokens copied to
the rows of the experts a routing map sends them to.

Golden, from the operator's documentation. drop_and_pad false: with ``tokens`` tokens and
``experts`` experts, ``top_k = num_out_tokens // tokens``. The permuted rows are the routing
map's true entries in expert-major order: ``sortedIndicesFirst`` is the token ids
``arange(tokens)`` repeated per expert, masked by ``routing_map.T`` (row ``p`` is token
``sortedIndicesFirst[p]``), and ``sorted_indices = argsort(sortedIndicesFirst)`` (stable:
a token's rows keep expert order), the permuted row of each token-major slot.
``permute_tokens[sorted_indices[i]] = tokens[i // top_k]``, and with ``probs``
``permute_probs = probs.T`` masked by ``routing_map.T`` (the same expert-major order).

Every token takes exactly ``top_k`` experts in the cases (the documentation's ``outToken =
top_k * tokens`` rows are then all routed). Pure copies and integer indices: bit-exact in
every dtype.

drop_and_pad true: ``capacity = num_out_tokens // experts``; for each expert (a row of the
operator's ``routing_map``) ``sorted_indices`` holds its first ``capacity`` token ids in the
order of a stable descending argsort of the map row (its routed tokens ascending, then
padding tokens ascending), expert after expert, and ``permute_probs`` the probabilities at
those (expert, token) places. The documentation's ``permute_tokens = tokens.index_select(0,
sorted_indices)`` is not this kernel's on A2: the calling layer gathers those rows with a
separate gather operator after it (the kernel gathers them itself only on the newer
architecture), so the kernel leaves ``permute_tokens`` as the zeros its buffer starts with,
and the golden gives zeros there.

Without ``probs`` the kernel writes no ``permute_probs``: it keeps the zeros the output
buffer starts with, and the golden gives zeros.

Layout: the operator itself takes ``routing_map`` and ``probs`` as ``(experts, tokens)``
(the documentation's ``routingMap.T`` and ``probs.T``; the aclnn layer transposes its
``(tokens, experts)`` arguments before calling it), so the cases and the golden use that
layout.

The routing map is int8 (0 / 1) in the cases: the IR also takes bool, which the simulator's
tensors do not hold; the kernel reads the map as bytes either way.

Shapes: the operator's sources register no infershape. ``infer`` gives the documentation's:
``permute_tokens`` ``(top_k * tokens, hidden)`` in the tokens' dtype, ``permute_probs``
``(top_k * tokens,)`` in the probabilities' dtype (the tokens' without them) and
``sorted_indices`` ``(top_k * tokens,)`` int32; with drop_and_pad ``experts * capacity``
rows in place of ``top_k * tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec, as_dtype
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("bfloat16", "float16", "float32")


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens, rmap, probs = inputs["tokens"], inputs["routing_map"], inputs["probs"]
    experts, n = rmap.shape  # the operator's layout: routing_map.T
    if attrs.get("drop_and_pad"):
        cap = int(attrs["num_out_tokens"]) // experts
        order = np.argsort(-rmap.astype(np.int64), axis=1, kind="stable")[:, :cap]
        pp = (np.zeros(experts * cap, tokens.dtype) if probs is None
              else np.take_along_axis(probs, order, axis=1).reshape(-1))
        # the rows tokens[order] are gathered by a separate operator on this platform
        rows = np.zeros((experts * cap, tokens.shape[1]), tokens.dtype)
        return {"permute_tokens": rows, "permute_probs": pp,
                "sorted_indices": order.reshape(-1).astype(np.int32)}
    k = int(attrs["num_out_tokens"]) // n
    rows = k * n
    mask_t = rmap.astype(bool)
    first = np.broadcast_to(np.arange(n), (experts, n))[mask_t][:rows]
    sorted_indices = np.argsort(first, kind="stable")
    permuted = np.zeros((rows, tokens.shape[1]), tokens.dtype)
    permuted[sorted_indices] = tokens[np.arange(rows) // k]
    pp = (np.zeros(rows, tokens.dtype) if probs is None else probs[mask_t][:rows])
    return {"permute_tokens": permuted, "permute_probs": pp,
            "sorted_indices": sorted_indices.astype(np.int32)}


def infer(specs: Mapping[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    (n, h), dt = specs["tokens"]
    experts = specs["routing_map"][0][0]
    unit = experts if attrs.get("drop_and_pad") else n
    rows = int(attrs["num_out_tokens"]) // unit * unit
    probs = specs.get("probs")
    return {"permute_tokens": ((rows, h), dt),
            "permute_probs": ((rows,), probs[1] if probs is not None else dt),
            "sorted_indices": ((rows,), "int32")}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """Each token takes ``num_out_tokens / tokens`` distinct experts at random."""
    (n, h), dt = case.inputs["tokens"]
    (experts, _), mdt = case.inputs["routing_map"]
    k = int(case.attrs["top_k"])
    chosen = np.argsort(rng.random((n, experts)), axis=1)[:, :k]
    routing = np.zeros((n, experts), bool)
    routing[np.arange(n)[:, None], chosen] = True
    out: dict[str, Any] = {
        "tokens": rng.uniform(-2, 2, (n, h)).astype(as_dtype(dt)),
        "routing_map": np.ascontiguousarray(routing.T).astype(mdt)}
    if case.inputs.get("probs") is not None:
        pdt = case.inputs["probs"][1]
        probs = rng.uniform(0.01, 1.0, (n, experts)) * routing
        out["probs"] = np.ascontiguousarray(probs.T).astype(as_dtype(pdt))
    return out


def _case(name: str, n: int, experts: int, k: int, h: int, dt: str, pdt: str | None,
          map_dt: str = "int8", capacity: int = 0, description: str = "",
          seed: int = 0) -> SourceCase:
    out = experts * capacity if capacity else n * k
    return SourceCase(name, description, {
        "tokens": ((n, h), dt), "routing_map": ((experts, n), map_dt),
        "probs": ((experts, n), pdt) if pdt is not None else None},
        {"num_out_tokens": out, "drop_and_pad": bool(capacity), "top_k": k}, seed)


CASES = {c.name: c for c in (
    _case("rmap_permute_small", 16, 8, 2, 64, "bfloat16", "bfloat16",
          description="16 tokens, 8 experts, top-2, H 64, bf16 probs"),
    _case("rmap_permute_small_fp32_top3", 12, 6, 3, 200, "float32", "float32",
          description="fp32, 12 tokens, 6 experts, top-3, H 200", seed=1),
    _case("rmap_permute_small_fp16_noprobs", 10, 4, 2, 40, "float16", None,
          description="fp16, no probs, H 40", seed=2),
    _case("rmap_permute_small_multicore_sort", 4096, 8, 2, 16, "float16", "float16",
          description="8192 rows: past one core's sort, the multi-core sort path, H 16",
          seed=4),
    _case("rmap_permute_small_pad", 12, 4, 2, 48, "bfloat16", "bfloat16", capacity=5,
          description="drop and pad: 4 experts x capacity 5, bf16, H 48", seed=5),
    _case("rmap_permute_small_pad_fp32_noprobs", 16, 4, 3, 40, "float32", None, capacity=7,
          description="drop and pad, no probs: 4 experts x capacity 7, fp32, H 40", seed=6),
    _case("rmap_permute_mixtral", 4096, 8, 2, 4096, "bfloat16", "bfloat16",
          description="Mixtral-8x7B layer: 4096 tokens, 8 experts, top-2, H 4096", seed=3),
)}

MODEL = SourceOpModel(
    "moe_token_permute_with_routing_map",
    "CANN ops-transformer MoeTokenPermuteWithRoutingMap, run from its own sources", "moe",
    inputs=(TensorSpec("tokens", FLOATS, 2),
            TensorSpec("routing_map", ("bool", "int8"), 2),
            TensorSpec("probs", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("permute_tokens", FLOATS, 2),
             TensorSpec("permute_probs", FLOATS, 1),
             TensorSpec("sorted_indices", ("int32",), 1)),
    attrs=(AttrSpec("num_out_tokens", "int", 0), AttrSpec("drop_and_pad", "bool", False)),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden, infer=infer)
