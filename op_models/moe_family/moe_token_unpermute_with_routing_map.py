"""``MoeTokenUnpermuteWithRoutingMap`` (aclnnMoeTokenUnpermuteWithRoutingMap): the permuted
rows summed back into their tokens, weighted by the routing probabilities.

Golden, from the operator's documentation, padded mode false (the mode whose result this
kernel computes; in padded mode the kernel only gathers ``permute_probs``, the token sum is
left to other operators). Padded mode has no case: its kernel sizes its output queue by the
tiling's row count of a whole loop, which is 0 whenever a core's rows fit in one loop (the
usual case), and then writes the last loop's rows into that 0-byte buffer, a UB write out
of bounds that the simulator refuses.

``top_k = rows / tokens``; with ``probs``, ``permute_probs`` is ``probs`` masked by
``routing_map`` (the routed probabilities), and for every slot ``i`` with
``sorted_indices[i] >= 0``: ``unpermuted_tokens[i // top_k] +=
permuted_tokens[sorted_indices[i]] * permute_probs[i]`` (without ``probs`` the plain row).

One departure from the documentation's text: it writes the mask as ``probs.T`` masked by
``routing_map.T`` (expert-major order), but its own sum indexes ``permute_probs`` by the
token-major slot ``i`` (token ``i // top_k``), and the kernel selects in token-major order
(row-major ``probs``, a token's experts ascending), which is what makes slot ``i`` carry its
own token's probability. The golden selects token-major.

Bit-exactness. ``permute_probs`` is a pure copy. A token's result is accumulated in float32
over its ``top_k`` slots in slot order: the first term starts the sum (a float32 zero when
that slot is skipped), each later term is added with one float32 rounding, and the total is
rounded once to the token dtype, nearest with ties to even. A term is the row widened
exactly to float32 times the probability widened exactly to float32 (one rounding); a slot
whose probability is exactly 0 is skipped rather than adding a zero (the kernel's order,
which only matters for the sign of a zero). The golden follows that order and is bit-exact.

``out_index`` and ``permute_token_id`` are not written by the kernel in this mode (the
documentation defines them for padded mode only), nor is ``permute_probs`` without ``probs``:
they keep the zeros the output buffers start with, and the golden gives zeros.

The routing map is int8 (0 / 1) in the cases: the IR also takes bool, which the simulator's
tensors do not hold; the kernel reads the map as bytes either way.

Shapes: the operator's sources register no infershape. ``infer`` gives the
documentation's: ``unpermuted_tokens`` is ``(tokens, hidden)`` (tokens from ``probs``, else
``restore_shape[0]``), ``out_index`` and ``permute_token_id`` are ``(rows,)`` int32 and
``permute_probs`` is ``(rows,)`` in the probabilities' dtype (the tokens' without them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec, as_dtype
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("bfloat16", "float16", "float32")


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens = inputs["permuted_tokens"]
    sorted_idx = inputs["sorted_indices"].astype(np.int64)
    probs = inputs["probs"]
    rows, h = tokens.shape
    n = probs.shape[0] if probs is not None else int(attrs["restore_shape"][0])
    k = rows // n
    slots = sorted_idx.reshape(n, k)
    x = tokens.astype(np.float32)
    if probs is not None:
        permute_probs = probs[inputs["routing_map"].astype(bool)]  # token-major
        p = permute_probs.astype(np.float32).reshape(n, k)
    else:
        permute_probs = np.zeros(rows, tokens.dtype)
        p = np.ones((n, k), np.float32)
    acc = np.zeros((n, h), np.float32)
    for j in range(k):
        idx = slots[:, j]
        use = (idx >= 0) & (idx < rows) & (p[:, j] != 0)
        term = x[np.where(use, idx, 0)]
        if probs is not None:
            term = term * p[:, j:j + 1]
        if j == 0:
            acc = np.where(use[:, None], term, np.float32(0))
        else:
            acc = np.where(use[:, None], acc + term, acc)
    unwritten = np.zeros(rows, np.int32)
    return {"unpermuted_tokens": acc.astype(tokens.dtype), "out_index": unwritten,
            "permute_token_id": unwritten.copy(), "permute_probs": permute_probs}


def infer(specs: Mapping[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    (rows, h), dt = specs["permuted_tokens"]
    probs = specs.get("probs")
    n = probs[0][0] if probs is not None else int(attrs["restore_shape"][0])
    return {"unpermuted_tokens": ((n, h), dt), "out_index": ((rows,), "int32"),
            "permute_token_id": ((rows,), "int32"),
            "permute_probs": ((rows,), probs[1] if probs is not None else dt)}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """Routing as MoeTokenPermuteWithRoutingMap leaves it: each token takes ``top_k``
    distinct experts, the permuted rows are the routing map's entries in expert-major order,
    and ``sorted_indices`` maps each token-major slot (a token's experts ascending) to its
    row. ``drop_slots`` slots are marked -1 (a token using fewer experts than ``top_k``)."""
    (rows, h), dt = case.inputs["permuted_tokens"]
    experts = int(case.attrs.get("experts", 8))
    n = int(case.attrs["tokens"])
    k = rows // n
    chosen = np.argsort(rng.random((n, experts)), axis=1)[:, :k]
    routing = np.zeros((n, experts), bool)
    routing[np.arange(n)[:, None], chosen] = True
    _, row_token = np.nonzero(routing.T)
    sorted_idx = np.argsort(row_token, kind="stable").astype(np.int32)
    drop = int(case.attrs.get("drop_slots", 0))
    if drop:
        sorted_idx[rng.choice(rows, drop, replace=False)] = -1
    out: dict[str, Any] = {
        "permuted_tokens": rng.uniform(-2, 2, (rows, h)).astype(as_dtype(dt)),
        "sorted_indices": sorted_idx}
    if case.inputs.get("probs") is not None:
        pdt, mdt = case.inputs["probs"][1], case.inputs["routing_map"][1]
        out["routing_map"] = routing.astype(mdt)
        probs = rng.uniform(0.01, 1.0, (n, experts)) * routing
        zero = int(case.attrs.get("zero_probs", 0))
        if zero:  # a few routed entries with probability exactly 0 (skipped slots)
            t, e = np.nonzero(routing)
            pick = rng.choice(t.size, zero, replace=False)
            probs[t[pick], e[pick]] = 0.0
        out["probs"] = probs.astype(as_dtype(pdt))
    return out


def _case(name: str, n: int, experts: int, k: int, h: int, dt: str, pdt: str | None,
          map_dt: str = "int8", drop_slots: int = 0, zero_probs: int = 0,
          description: str = "", seed: int = 0) -> SourceCase:
    rows = n * k
    with_probs = pdt is not None
    return SourceCase(name, description, {
        "permuted_tokens": ((rows, h), dt), "sorted_indices": ((rows,), "int32"),
        "routing_map": ((n, experts), map_dt) if with_probs else None,
        "probs": ((n, experts), pdt) if with_probs else None},
        {"drop_and_pad": False, "restore_shape": [n, h], "tokens": n, "experts": experts,
         "drop_slots": drop_slots, "zero_probs": zero_probs}, seed)


CASES = {c.name: c for c in (
    _case("rmap_unpermute_small", 16, 8, 2, 64, "bfloat16", "bfloat16",
          description="16 tokens, 8 experts, top-2, H 64, bf16 probs"),
    _case("rmap_unpermute_small_bf16_fp32probs", 12, 6, 3, 200, "bfloat16", "float32",
          zero_probs=3, description="bf16 tokens, fp32 probs (mixed), top-3, H 200, three "
          "zero probabilities", seed=1),
    _case("rmap_unpermute_small_fp32", 8, 4, 2, 96, "float32", "float32",
          description="fp32, 8 tokens, 4 experts, top-2, H 96", seed=2),
    _case("rmap_unpermute_small_fp32_h30000", 4, 4, 2, 30000, "float32", "float32",
          description="fp32, H 30000: the hidden axis in several parts", seed=4),
    _case("rmap_unpermute_small_fp16_noprobs", 10, 4, 2, 40, "float16", None, drop_slots=3,
          description="fp16, no probs (a sum of rows), H 40, three slots -1", seed=3),
    _case("rmap_unpermute_mixtral", 4096, 8, 2, 4096, "bfloat16", "float32",
          description="Mixtral-8x7B layer: 4096 tokens, 8 experts, top-2, H 4096, fp32 probs",
          seed=6),
)}

MODEL = SourceOpModel(
    "moe_token_unpermute_with_routing_map",
    "CANN ops-transformer MoeTokenUnpermuteWithRoutingMap, run from its own sources", "moe",
    inputs=(TensorSpec("permuted_tokens", FLOATS, 2),
            TensorSpec("sorted_indices", ("int32",), 1),
            TensorSpec("routing_map", ("bool", "int8"), 2, optional=True),
            TensorSpec("probs", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("unpermuted_tokens", FLOATS, 2),
             TensorSpec("out_index", ("int32",), 1),
             TensorSpec("permute_token_id", ("int32",), 1),
             TensorSpec("permute_probs", FLOATS, 1)),
    attrs=(AttrSpec("drop_and_pad", "bool", False), AttrSpec("restore_shape", "int_list", [])),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden, infer=infer)
