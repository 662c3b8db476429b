"""``MoeInitRoutingV2Grad`` (aclnnMoeInitRoutingV2Grad): the backward of MoeInitRoutingV2, each
token's gradient the sum of its K expanded rows' gradients.

Golden, from the operator's documentation: ``grad_x[i] = sum over t < top_k of
grad_expanded_x[expanded_row_idx[i * top_k + t]]``, where ``grad_expanded_x`` is read as rows
of H: ``(N * K, H)`` without dropping (``drop_pad_mode`` 0, ``active_num`` 0), ``(A, H)`` in the
active case (``active_num`` A > 0: a row index of A or more contributes nothing) and ``(E, C,
H)`` flattened to ``(E * C, H)`` with drop/pad (``drop_pad_mode`` 1: an index of -1
contributes nothing).

Bit-exactness: a float sum is bit-exact only in the kernel's order, which the doc does not
give; the golden adds in the kernel's order, in float32 (half and bfloat16 inputs widened
exactly), then rounds once to the output type (to nearest, ties to even). That order: ``B =
2^e`` partial sums, ``e = max(0, floor(log2 K) - 1)`` (``e = 6`` from K = 128 on); partial
``j`` starts from term ``2j`` (or 0 when that term is dropped), then the further even terms
``2j + 2B, 2j + 4B, ...`` and then the odd terms ``2j + 1, 2j + 1 + 2B, ...`` are added to it
one by one (a dropped term skipped); then the partials are summed as a binary tree (partial
``j`` added into ``j - s`` for ``s = 1, 2, 4, ...``). With that order the result is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("float16", "bfloat16", "float32")


def partials(k: int) -> int:
    """The number of partial sums the kernel keeps for ``k`` terms (a power of two)."""
    e = 6 if k >= 128 else max(0, int(math.floor(math.log2(k))) - 1)
    return 2 ** e


def ordered_sum(terms: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``terms`` ``(N, K, H)`` float32 summed over K in the kernel's order, a term whose
    ``valid`` ``(N, K)`` is false left out; float32 ``(N, H)``."""
    n, k, h = terms.shape
    b = partials(k)
    acc = np.zeros((n, b, h), np.float32)
    first = 0
    for j in range(b):  # each partial starts from one even term
        t = 2 * j
        if t >= k:
            break
        acc[:, j] = np.where(valid[:, t, None], terms[:, t], np.float32(0))
        first = t + 2

    def add(t: int, j: int) -> None:
        acc[:, j] = np.where(valid[:, t, None], acc[:, j] + terms[:, t], acc[:, j])

    for t in range(first, k, 2):  # the further even terms, round robin
        add(t, ((t - first) // 2) % b)
    for t in range(1, k, 2):  # then every odd term
        add(t, ((t - 1) // 2) % b)
    stride = 1
    while stride < b:  # the partials, as a binary tree
        for j in range(stride, b, 2 * stride):
            acc[:, j - stride] += acc[:, j]
        stride *= 2
    return acc[:, 0]


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    grad, idx = inputs["grad_expanded_x"], inputs["expanded_row_idx"].astype(np.int64)
    k = int(attrs["top_k"])
    h = grad.shape[-1]
    rows = grad.reshape(-1, h)
    if attrs["drop_pad_mode"] == 1:
        valid = idx != -1
    elif attrs["active_num"] > 0:
        valid = idx < int(attrs["active_num"])
    else:
        valid = np.ones(idx.shape, bool)
    terms = rows[np.where(valid, idx, 0)].astype(np.float32).reshape(-1, k, h)
    out = ordered_sum(terms, valid.reshape(-1, k))
    return {"grad_x": out.astype(grad.dtype)}


def _dtype(name: str) -> Any:
    return __import__("ml_dtypes").bfloat16 if name == "bfloat16" else np.dtype(name)


EXPERTS: dict[str, int] = {}
"""The number of experts a case routes to (drop/pad: the first dimension of grad_expanded_x;
otherwise only how the rows are drawn)."""


def routed_rows(rng: np.random.Generator, n: int, k: int, e: int, capacity: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    """A forward routing of ``n`` tokens to ``k`` distinct experts of ``e`` each: the experts
    ``(n * k,)`` and ``expanded_row_idx`` - the rows sorted by expert (stable), so entry ``n *
    K + k`` is the row of (n, k); with a ``capacity`` C the row is ``expert * C + position``
    in its expert, -1 past the capacity (drop/pad)."""
    nk = n * k
    experts = np.argsort(rng.random((n, e)), axis=1)[:, :k].reshape(-1)
    order = np.argsort(experts, kind="stable")
    if capacity:
        counts = np.bincount(experts, minlength=e)
        start = np.concatenate(([0], np.cumsum(counts)[:-1]))
        pos = np.empty(nk, np.int64)
        pos[order] = np.arange(nk) - start[experts[order]]
        idx = np.where(pos < capacity, experts * capacity + pos, -1)
    else:
        idx = np.empty(nk, np.int64)
        idx[order] = np.arange(nk)
    return experts.astype(np.int32), idx.astype(np.int32)


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    gshape, gdt = case.inputs["grad_expanded_x"]
    (nk,), _ = case.inputs["expanded_row_idx"]
    k = int(case.attrs["top_k"])
    drop_pad = case.attrs.get("drop_pad_mode", 0) == 1
    _, idx = routed_rows(rng, nk // k, k, EXPERTS.get(case.name, 8),
                         gshape[1] if drop_pad else 0)
    grad = rng.uniform(-2, 2, gshape).astype(_dtype(gdt))
    return {"grad_expanded_x": grad, "expanded_row_idx": idx}


def _case(name: str, n: int, k: int, h: int, dt: str, active: int = 0, capacity: int = 0,
          experts: int = 8, description: str = "", seed: int = 0) -> SourceCase:
    EXPERTS[name] = experts
    if capacity:
        gshape: tuple[int, ...] = (experts, capacity, h)
    else:
        gshape = (active if active else n * k, h)
    return SourceCase(name, description, {"grad_expanded_x": (gshape, dt),
                                          "expanded_row_idx": ((n * k,), "int32")},
                      {"top_k": k, "drop_pad_mode": 1 if capacity else 0,
                       "active_num": active}, seed)


CASES = {c.name: c for c in (
    _case("v2_grad_small", 16, 4, 64, "float16",
          description="dropless: 16 tokens x top-4, H 64"),
    _case("v2_grad_small_bf16_k8", 24, 8, 40, "bfloat16", experts=16,
          description="dropless bf16, top-8 (4 partial sums), H 40", seed=1),
    _case("v2_grad_small_fp32_k6", 10, 6, 96, "float32", experts=16,
          description="dropless fp32, top-6 (odd terms wrap), H 96", seed=2),
    _case("v2_grad_small_active", 20, 4, 48, "float16", active=50,
          description="active: 50 of 80 rows kept, the rest contribute nothing", seed=3),
    _case("v2_grad_small_drop_pad", 32, 2, 32, "bfloat16", capacity=6, experts=8,
          description="drop/pad: 8 experts x capacity 6, the rows past it dropped", seed=4),
    _case("v2_grad_small_k1_wide", 6, 1, 20000, "float32",
          description="top-1, H 20000: a row in several column chunks", seed=5),
    _case("v2_grad_deepseek_v3", 4096, 8, 7168, "bfloat16", experts=256,
          description="DeepSeek-V3 layer backward: 4096 tokens x top-8, H 7168", seed=6),
)}

MODEL = SourceOpModel(
    "moe_init_routing_v2_grad", "CANN ops-transformer MoeInitRoutingV2Grad, run from its own "
    "sources", "moe",
    inputs=(TensorSpec("grad_expanded_x", FLOATS), TensorSpec("expanded_row_idx", ("int32",), 1)),
    outputs=(TensorSpec("grad_x", FLOATS, 2),),
    attrs=(AttrSpec("top_k", "int", None, doc="experts per token (K)"),
           AttrSpec("drop_pad_mode", "int", 0, doc="1: grad_expanded_x is (E, C, H), -1 rows "
                    "dropped"),
           AttrSpec("active_num", "int", 0, doc="> 0 (dropless only): grad_expanded_x has "
                    "that many rows")),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
