"""``MoeTokenUnpermuteWithRoutingMapGrad`` (aclnnMoeTokenUnpermuteWithRoutingMapGrad): the
backward of MoeTokenUnpermuteWithRoutingMap.

Golden, from the operator's documentation. ``permuted_tokens_grad[out_index[i]] =
unpermuted_tokens_grad[permute_token_id[i]]`` for every ``i``. That gather is the whole
result without ``probs``. With ``probs`` (``(tokens, experts)``, with ``routing_map``):

- drop_and_pad false: the permuted rows are the routing map's true entries in expert-major
  order (``routing_map.T``'s mask: row ``p`` is token ``t_p`` sent to expert ``e_p``), so
  ``permuted_probs[p] = probs[t_p, e_p]``;
- drop_and_pad true: ``capacity = rows / experts`` and row ``out_index[i]`` belongs to expert
  ``out_index[i] // capacity`` and token ``permute_token_id[i]``.

Then, for each row ``p``, ``permuted_tokens_grad[p] = permuted_probs[p] * (the gathered row)``
and the row's probability gradient is ``sum over hidden of (the gathered row) *
permuted_tokens[p]``. That gradient is scattered back to ``probs_grad[t_p, e_p]``, and every
other entry of ``probs_grad`` is 0.

Inputs as the forward operators produce them: with drop_and_pad false every token takes
exactly ``top_k`` experts (``rows = tokens * top_k``), ``out_index`` is the forward permute's
``sorted_indices`` (token-major slot -> permuted row, a token's experts in ascending order)
and ``permute_token_id[i] = i // top_k``. With drop_and_pad true each expert keeps its first
``capacity`` tokens by routing-map value (routed tokens first, then padding tokens), and
``permute_token_id`` / ``out_index`` are those rows' token ids sorted, with their rows.

Bit-exactness. ``permuted_tokens_grad`` is a pure copy without ``probs``. With ``probs`` it is
one float32 product (both factors widened exactly) rounded once to the token dtype, nearest
with ties to even. ``probs_grad`` is a float32 dot product whose order of additions is the
kernel's and is fixed; the golden follows it and is bit-exact:

- the hidden axis is cut into chunks when a row does not fit the 192 KiB unified buffer (the
  operator's own budget, :func:`hidden_chunks`);
- each chunk is summed in the order of :mod:`op_models.moe_family._fp32_sum`, where a chunk
  of exactly 4096, 512 or 64 values takes the next smaller width;
- drop_and_pad false adds the chunk sums one after the other to a float32 zero; drop_and_pad
  true sums them by the same order again (for up to 64 chunks, one pair tree over 64 lanes).

The float32 total is then rounded once to the probabilities' dtype.

The routing map is int8 (0 / 1) in the cases: the IR also takes bool, which the simulator's
tensors do not hold; the kernel reads the map as bytes either way.

Shapes: the operator's sources register no infershape. ``infer`` gives the documentation's:
``permuted_tokens_grad`` is ``(rows, hidden)`` in the gradient's dtype, with ``rows`` the
length of ``out_index``. ``probs_grad`` is ``probs``' shape and dtype, and absent without
``probs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec, as_dtype
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel
from op_models.moe_family._fp32_sum import chunk_sum

FLOATS = ("bfloat16", "float16", "float32")
UB_BYTES = 192 * 1024 - 256  # what GetCoreMemSize(UB) gives a kernel on A2
PADDED_TOP_K = 2


def hidden_chunks(hidden: int, experts: int, tok_bytes: int, prob_bytes: int,
                  drop_and_pad: bool) -> list[int]:
    """The lengths the kernel cuts a row's hidden axis into (with probabilities), by the
    operator's unified-buffer budget; every chunk but the last is a whole number of 32-byte
    blocks.

    drop_and_pad false: 256 slots' token values and two float32 work rows of them, one routing
    map row and one probabilities row of the experts (padded to 32), then per hidden element
    three double-buffered token rows and three float32 rows. drop_and_pad true: 32 bytes and
    512 float32 chunk sums, then per hidden element two double-buffered (float32 + token)
    rows."""
    per_block = 32 // tok_bytes
    if drop_and_pad:
        most = (UB_BYTES - 32 - 512 * 4) // (2 * (8 + tok_bytes))
    else:
        experts_al = -(-experts // 32) * 32
        spare = UB_BYTES - 256 * tok_bytes - 256 * 4 * 2 - (1 + prob_bytes) * experts_al
        most = spare // (6 * tok_bytes + 12)
    chunk = -(-hidden // per_block) * per_block
    if most < chunk:
        chunk = most // per_block * per_block
    loops = -(-hidden // chunk)
    return [chunk] * (loops - 1) + [hidden - (loops - 1) * chunk]


def _row_sums(products: np.ndarray, chunks: list[int], drop_and_pad: bool) -> np.ndarray:
    sums, start = [], 0
    for length in chunks:
        sums.append(chunk_sum(products[:, start:start + length], from_width=False))
        start += length
    if drop_and_pad:
        return chunk_sum(np.stack(sums, axis=1), from_width=False)
    total = np.zeros(products.shape[0], np.float32)
    for s in sums:
        total = total + s
    return total


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    grad = inputs["unpermuted_tokens_grad"]
    out_index = inputs["out_index"].astype(np.int64)
    token_id = inputs["permute_token_id"].astype(np.int64)
    probs = inputs["probs"]
    rows, h = out_index.size, grad.shape[1]
    gathered = np.zeros((rows, h), grad.dtype)
    keep = out_index >= 0
    gathered[out_index[keep]] = grad[token_id[keep]]
    if probs is None:
        return {"permuted_tokens_grad": gathered, "probs_grad": None}
    drop_and_pad = bool(attrs.get("drop_and_pad"))
    n, experts = probs.shape
    if drop_and_pad:
        row_token = np.empty(rows, np.int64)
        row_token[out_index] = token_id
        row_expert = np.arange(rows) // (rows // experts)
    else:
        row_expert, row_token = np.nonzero(inputs["routing_map"].T.astype(bool))
    g = gathered.astype(np.float32)
    p = probs[row_token, row_expert].astype(np.float32)[:, None]
    out = (g * p).astype(grad.dtype)
    products = inputs["permuted_tokens"].astype(np.float32) * g
    chunks = hidden_chunks(h, experts, grad.dtype.itemsize, probs.dtype.itemsize, drop_and_pad)
    pgrad = np.zeros((n, experts), probs.dtype)
    pgrad[row_token, row_expert] = _row_sums(products, chunks, drop_and_pad).astype(probs.dtype)
    return {"permuted_tokens_grad": out, "probs_grad": pgrad}


def infer(specs: Mapping[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    (_, h), dt = specs["unpermuted_tokens_grad"]
    probs = specs.get("probs")
    return {"permuted_tokens_grad": ((specs["out_index"][0][0], h), dt),
            "probs_grad": None if probs is None else (tuple(probs[0]), probs[1])}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    """Routing as the forward operators leave it. The experts are ``routing_map``'s second
    dimension (4 without one: the gather does not depend on them); without drop and pad each
    token takes ``rows / tokens`` experts, with it each takes 2 and each expert keeps
    ``rows / experts`` rows."""
    (n, h), dt = case.inputs["unpermuted_tokens_grad"]
    (rows,), _ = case.inputs["out_index"]
    rmap = case.inputs.get("routing_map")
    experts = 4 if rmap is None else rmap[0][1]
    drop_and_pad = bool(case.attrs.get("drop_and_pad"))
    k = PADDED_TOP_K if drop_and_pad else rows // n
    chosen = np.argsort(rng.random((n, experts)), axis=1)[:, :k]  # k distinct experts a token
    routing = np.zeros((n, experts), bool)
    routing[np.arange(n)[:, None], chosen] = True
    if drop_and_pad:
        cap = rows // experts
        row_token = np.concatenate([np.argsort(~routing[:, e], kind="stable")[:cap]
                                    for e in range(experts)])
        out_index = np.argsort(row_token, kind="stable")
        token_id = row_token[out_index]
    else:
        _, row_token = np.nonzero(routing.T)  # permuted rows: expert-major
        out_index = np.argsort(row_token, kind="stable")  # token-major slot -> its row
        token_id = np.arange(rows) // k
    out: dict[str, Any] = {
        "unpermuted_tokens_grad": rng.uniform(-2, 2, (n, h)).astype(as_dtype(dt)),
        "out_index": out_index.astype(np.int32), "permute_token_id": token_id.astype(np.int32)}
    if case.inputs.get("probs") is not None:
        pdt, mdt = case.inputs["probs"][1], rmap[1]
        out["routing_map"] = routing.astype(mdt)
        out["permuted_tokens"] = rng.uniform(-2, 2, (rows, h)).astype(as_dtype(dt))
        out["probs"] = (rng.uniform(0.01, 1.0, (n, experts)) * routing).astype(as_dtype(pdt))
    return out


def _case(name: str, n: int, experts: int, k: int, h: int, dt: str, pdt: str | None,
          drop_and_pad: bool = False, capacity: int = 0, map_dt: str = "int8",
          description: str = "", seed: int = 0) -> SourceCase:
    rows = experts * capacity if drop_and_pad else n * k
    with_probs = pdt is not None
    return SourceCase(name, description, {
        "unpermuted_tokens_grad": ((n, h), dt), "out_index": ((rows,), "int32"),
        "permute_token_id": ((rows,), "int32"),
        "routing_map": ((n, experts), map_dt) if with_probs else None,
        "permuted_tokens": ((rows, h), dt) if with_probs else None,
        "probs": ((n, experts), pdt) if with_probs else None},
        {"drop_and_pad": drop_and_pad}, seed)


CASES = {c.name: c for c in (
    _case("rmap_grad_small", 16, 8, 2, 64, "bfloat16", "bfloat16",
          description="16 tokens, 8 experts, top-2, H 64, bf16 probs"),
    _case("rmap_grad_small_bf16_fp32probs_h512", 12, 6, 3, 512, "bfloat16", "float32",
          description="bf16 grads, fp32 probs (mixed), H 512 (a width boundary)",
          seed=1),
    _case("rmap_grad_small_fp32_split_h7000", 4, 4, 2, 7000, "float32", "float32",
          description="fp32, H 7000: the hidden axis in two chunks", seed=2),
    _case("rmap_grad_small_fp16_noprobs", 10, 4, 2, 40, "float16", None,
          description="fp16, no probs (a gather), H 40", seed=3),
    _case("rmap_grad_small_pad_fp16", 12, 4, 2, 100, "float16", "float16", drop_and_pad=True,
          capacity=5, description="drop and pad: 4 experts x capacity 5, fp16, H 100", seed=4),
    _case("rmap_grad_small_pad_noprobs", 12, 4, 2, 48, "bfloat16", None, drop_and_pad=True,
          capacity=5, description="drop and pad, no probs, bf16, H 48", seed=5),
    _case("rmap_grad_mixtral", 4096, 8, 2, 4096, "bfloat16", "float32",
          description="Mixtral-8x7B layer: 4096 tokens, 8 experts, top-2, H 4096, fp32 probs",
          seed=6),
)}

MODEL = SourceOpModel(
    "moe_token_unpermute_with_routing_map_grad",
    "CANN ops-transformer MoeTokenUnpermuteWithRoutingMapGrad, run from its own sources", "moe",
    inputs=(TensorSpec("unpermuted_tokens_grad", FLOATS, 2),
            TensorSpec("out_index", ("int32",), 1),
            TensorSpec("permute_token_id", ("int32",), 1),
            TensorSpec("routing_map", ("bool", "int8"), 2, optional=True),
            TensorSpec("permuted_tokens", FLOATS, 2, optional=True),
            TensorSpec("probs", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("permuted_tokens_grad", FLOATS, 2),
             TensorSpec("probs_grad", FLOATS, 2, optional=True)),
    attrs=(AttrSpec("drop_and_pad", "bool", False), AttrSpec("restore_shape", "int_list", [])),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden, infer=infer)
