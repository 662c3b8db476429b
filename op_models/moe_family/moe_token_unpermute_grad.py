"""``MoeTokenUnpermuteGrad`` (aclnnMoeTokenUnpermuteGrad): the backward of MoeTokenUnpermute.

Golden, from the operator's documentation (padded_mode false, the only mode supported; no
restore_shape). With ``probs`` ``(tokens, top_k)``, for slot ``k = i * top_k + j`` of token
``i``:

- ``permuted_tokens_grad[sorted_indices[k]] = unpermuted_tokens_grad[i] * probs[i][j]``;
- ``probs_grad[i][j] = sum over the hidden axis of unpermuted_tokens_grad[i] *
  permuted_tokens[sorted_indices[k]]``.

Without ``probs`` (``top_k`` 1): ``permuted_tokens_grad[sorted_indices[i]] =
unpermuted_tokens_grad[i]`` and there is no ``probs_grad``.

Bit-exactness. ``permuted_tokens_grad`` is one float32 product (both factors widened exactly)
rounded once to the token dtype, to nearest with ties to even: bit-exact (a pure copy without
``probs``). ``probs_grad`` is a float32 dot product over ``hidden``; its order of additions is
the kernel's and is fixed, so the golden follows it and is bit-exact:

1. The hidden axis is cut into chunks when a row does not fit the 192 KiB unified buffer with
   its double buffers (:func:`hidden_chunks` - the operator's own budget: rows padded to 512
   bytes, up to 256 slots' probabilities resident at a time, 48 vector cores of the 910B);
   the chunks' dot products are added one after the other to a float32 zero.
2. One chunk's products are summed in the order of
   :mod:`op_models.moe_family._fp32_sum` (halving adds, 32-byte block pair trees, a last pair
   tree; a chunk of exactly 4096, 512 or 64 values takes that width).
3. The float32 total is rounded once to the probabilities' dtype (nearest, ties to even).

The output shapes are the documentation's, and they are also what the operator's infershape
gives: ``permuted_tokens_grad`` is ``(tokens * top_k, hidden)`` and ``probs_grad`` is
``(tokens, top_k)`` in the probabilities' dtype. Without ``probs`` that infershape gives
``probs_grad`` a 0-d shape, where the documentation has no such output (the kernel writes
none), so the model's ``infer`` says it is not produced.
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
VECTOR_CORES = 48


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def hidden_chunks(hidden: int, tokens: int, top_k: int, tok_bytes: int, prob_bytes: int
                  ) -> list[int]:
    """The lengths the kernel cuts a row's hidden axis into (with probabilities).

    The budget: per slot group, its probabilities and their gradients double-buffered plus
    three float32 work rows of them and 256 bytes; per hidden element, two double-buffered
    token rows (inputs and outputs) plus three float32 work rows. When at least one more
    double-buffered token row fits, the whole (512-byte padded) row is one chunk. Otherwise the
    chunk is the largest 512-byte multiple for which three double-buffered rows and three
    float32 rows fit, and the last chunk is what remains."""
    per_512 = 512 // tok_bytes
    row = _up(hidden, per_512)
    per_core = -(-tokens // VECTOR_CORES)
    slots = min(per_core * top_k, 256 // top_k * top_k) if top_k <= 256 else top_k
    slots_al = _up(slots, 32 // prob_bytes)
    fixed = 2 * prob_bytes * slots_al * 2 + slots_al * 4 * 3 + 256
    spare = (UB_BYTES - fixed - (2 * tok_bytes * 2 + 3 * 4) * row) // (2 * tok_bytes * row)
    if spare >= 1:
        return [hidden]
    chunk = (UB_BYTES - fixed) // (3 * 2 * tok_bytes + 3 * 4) // per_512 * per_512
    loops = -(-hidden // chunk)
    return [chunk] * (loops - 1) + [hidden - (loops - 1) * chunk]


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    grad, idx = inputs["unpermuted_tokens_grad"], inputs["sorted_indices"].astype(np.int64)
    probs, tokens = inputs["probs"], inputs["permuted_tokens"]
    n, h = grad.shape
    out = np.empty((idx.size, h), grad.dtype)
    if probs is None:
        out[idx] = grad
        return {"permuted_tokens_grad": out, "probs_grad": None}
    k = probs.shape[1]
    g = np.repeat(grad.astype(np.float32), k, axis=0)  # slot s -> its token's row
    p = probs.astype(np.float32).reshape(-1, 1)
    out[idx] = (g * p).astype(grad.dtype)
    products = tokens[idx].astype(np.float32) * g
    total = np.zeros(idx.size, np.float32)
    start = 0
    for length in hidden_chunks(h, n, k, grad.dtype.itemsize, probs.dtype.itemsize):
        total = total + chunk_sum(products[:, start:start + length], from_width=True)
        start += length
    return {"permuted_tokens_grad": out, "probs_grad": total.reshape(n, k).astype(probs.dtype)}


def infer(specs: Mapping[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    (n, h), dt = specs["unpermuted_tokens_grad"]
    probs = specs.get("probs")
    rows = specs["sorted_indices"][0][0]
    return {"permuted_tokens_grad": ((rows, h), dt),
            "probs_grad": None if probs is None else (tuple(probs[0]), probs[1])}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    (rows, h), dt = case.inputs["permuted_tokens"]
    (n, _), _ = case.inputs["unpermuted_tokens_grad"]
    out: dict[str, Any] = {
        "permuted_tokens": rng.uniform(-2, 2, (rows, h)).astype(as_dtype(dt)),
        "unpermuted_tokens_grad": rng.uniform(-2, 2, (n, h)).astype(as_dtype(dt)),
        "sorted_indices": rng.permutation(rows).astype(np.int32)}
    if case.inputs.get("probs") is not None:
        pshape, pdt = case.inputs["probs"]
        out["probs"] = rng.uniform(0.01, 1.0, pshape).astype(as_dtype(pdt))
    return out


def _case(name: str, n: int, k: int, h: int, dt: str, pdt: str | None, description: str = "",
          seed: int = 0) -> SourceCase:
    return SourceCase(name, description, {
        "permuted_tokens": ((n * k, h), dt), "unpermuted_tokens_grad": ((n, h), dt),
        "sorted_indices": ((n * k,), "int32"),
        "probs": None if pdt is None else ((n, k), pdt)}, {"padded_mode": False}, seed)


CASES = {c.name: c for c in (
    _case("unpermute_grad_small", 16, 4, 64, "bfloat16", "bfloat16",
          "16 tokens x top-4, H 64, bf16 probs"),
    _case("unpermute_grad_small_bf16_fp16probs_h40", 12, 2, 40, "bfloat16", "float16",
          "bf16 tokens, fp16 probs (mixed), H 40 (a masked reduction)", seed=1),
    _case("unpermute_grad_small_fp16_fp32probs_h2100", 6, 3, 2100, "float16", "float32",
          "fp16 tokens, fp32 probs, H 2100 (halving passes before the block sums)", seed=2),
    _case("unpermute_grad_small_fp32_split_h8200", 4, 2, 8200, "float32", "float32",
          "fp32, H 8200: the hidden axis in two chunks", seed=3),
    _case("unpermute_grad_small_fp32_noprobs", 24, 1, 40, "float32", None,
          "fp32, no probs (a scatter), H 40", seed=4),
    _case("unpermute_grad_mixtral", 4096, 2, 4096, "bfloat16", "float32",
          "Mixtral-8x7B layer: 4096 tokens x top-2, H 4096, fp32 probs", seed=5),
)}

MODEL = SourceOpModel(
    "moe_token_unpermute_grad",
    "CANN ops-transformer MoeTokenUnpermuteGrad, run from its own sources", "moe",
    inputs=(TensorSpec("permuted_tokens", FLOATS, 2, optional=True),
            TensorSpec("unpermuted_tokens_grad", FLOATS, 2),
            TensorSpec("sorted_indices", ("int32",), 1),
            TensorSpec("probs", FLOATS, 2, optional=True)),
    outputs=(TensorSpec("permuted_tokens_grad", FLOATS, 2),
             TensorSpec("probs_grad", FLOATS, 2)),
    attrs=(AttrSpec("padded_mode", "bool", False),
           AttrSpec("restore_shape", "int_list", [1, 1])),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden, infer=infer)
