"""``MoeInitRouting`` (aclnnMoeInitRouting): tokens routed to their top-K experts' rows.

Golden, from the operator's documentation: the ``(N, K)`` expert ids are flattened into one row
and key-value sorted by expert id, the values being ``row_idx`` (the flattened positions, as the
doc asks: ``row_idx[n, k] = k * N + n``), giving ``expanded_expert_idx`` (the sorted ids) and
``sortedRowIdx``; ``expanded_row_idx[sortedRowIdx[i]] = i`` and ``expanded_x[i] =
x[sortedRowIdx[i] % N]`` for the first ``min(N, active_num) * K`` rows. Equal expert ids keep
the order of the flattened ``expert_idx`` (row-major, ``n * K + k``): the sort is stable. Pure
copies and a sort: bit-exact in every dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, TensorSpec
from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

FLOATS = ("float16", "bfloat16", "float32")


def route(row_idx: np.ndarray, expert_idx: np.ndarray, active_num: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The routing of the doc: the source token of each of the first ``min(N, active_num) *
    K`` expanded rows, ``expanded_row_idx`` and ``expanded_expert_idx``."""
    n, k = expert_idx.shape
    order = np.argsort(expert_idx.reshape(-1).astype(np.int64), kind="stable")
    sorted_experts = expert_idx.reshape(-1)[order]
    sorted_rows = row_idx.reshape(-1)[order].astype(np.int64)
    expanded_row_idx = np.empty(n * k, np.int32)
    expanded_row_idx[sorted_rows] = np.arange(n * k, dtype=np.int32)
    active = min(n, int(active_num)) * k
    return sorted_rows[:active] % n, expanded_row_idx, sorted_experts.astype(np.int32)


def golden(inputs: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    tokens, expanded_row_idx, expanded_expert_idx = route(
        inputs["row_idx"], inputs["expert_idx"], attrs["active_num"])
    return {"expanded_x": inputs["x"][tokens], "expanded_row_idx": expanded_row_idx,
            "expanded_expert_idx": expanded_expert_idx}


def make_inputs(case: SourceCase, rng: np.random.Generator) -> dict[str, Any]:
    return draw(case, rng, EXPERTS.get(case.name, 8))


def draw(case: SourceCase, rng: np.random.Generator, experts: int) -> dict[str, Any]:
    """x uniform in [-2, 2); each token's K distinct experts of ``experts`` (as a gating
    top-K gives them); ``row_idx[n, k] = k * N + n`` (the doc's layout)."""
    (n, h), xdt = case.inputs["x"]
    (_, k), _ = case.inputs["expert_idx"]
    dt = __import__("ml_dtypes").bfloat16 if xdt == "bfloat16" else np.dtype(xdt)
    x = rng.uniform(-2, 2, (n, h)).astype(dt)
    expert_idx = np.argsort(rng.random((n, experts)), axis=1)[:, :k].astype(np.int32)
    row_idx = (np.arange(k, dtype=np.int32)[None, :] * n
               + np.arange(n, dtype=np.int32)[:, None]).astype(np.int32)
    return {"x": x, "row_idx": row_idx, "expert_idx": expert_idx}


EXPERTS: dict[str, int] = {}
"""The number of experts a case's ids are drawn from (not an attribute of the op)."""


def _case(name: str, n: int, k: int, h: int, dt: str, active: int, experts: int = 8,
          description: str = "", seed: int = 0) -> SourceCase:
    EXPERTS[name] = experts
    return SourceCase(name, description, {"x": ((n, h), dt), "row_idx": ((n, k), "int32"),
                                          "expert_idx": ((n, k), "int32")},
                      {"active_num": active}, seed)


CASES = {c.name: c for c in (
    _case("init_routing_small", 16, 4, 64, "float16", 16,
          description="16 tokens x top-4 of 8 experts, H 64, every row active"),
    _case("init_routing_small_bf16_active", 24, 2, 40, "bfloat16", 10, experts=16,
          description="bf16, 24 tokens x top-2 of 16, only 10 x 2 rows kept", seed=1),
    _case("init_routing_small_fp32", 8, 8, 96, "float32", 8, experts=64,
          description="fp32, 8 tokens x top-8 of 64, H 96", seed=2),
    _case("init_routing_small_wide", 8, 4, 16400, "float16", 8,
          description="H 16400: wider than one loop's columns, sorted on one core", seed=4),
    _case("init_routing_small_wide_active", 12, 4, 16400, "float16", 4,
          description="H 16400, only 4 x 4 rows kept (the gather of few active rows)", seed=5),
    _case("init_routing_multicore_sort", 776, 8, 16, "float16", 776, experts=64,
          description="6208 rows: more than one core's sort, merged (2 s: not a small case)",
          seed=6),
    _case("init_routing_small_multicore_active", 776, 8, 16, "bfloat16", 300, experts=64,
          description="6208 rows sorted on two cores, only 300 x 8 kept", seed=7),
    _case("init_routing_mixtral", 4096, 2, 4096, "bfloat16", 4096, experts=8,
          description="Mixtral-8x7B layer: 4096 tokens x top-2 of 8, H 4096", seed=3),
    _case("init_routing_deepseek_v3", 4096, 8, 7168, "bfloat16", 4096, experts=256,
          description="DeepSeek-V3 layer: 4096 tokens x top-8 of 256, H 7168", seed=8),
)}

MODEL = SourceOpModel(
    "moe_init_routing", "CANN ops-transformer MoeInitRouting, run from its own sources", "moe",
    inputs=(TensorSpec("x", FLOATS, 2), TensorSpec("row_idx", ("int32",), 2),
            TensorSpec("expert_idx", ("int32",), 2)),
    outputs=(TensorSpec("expanded_x", FLOATS, 2), TensorSpec("expanded_row_idx", ("int32",), 1),
             TensorSpec("expanded_expert_idx", ("int32",), 1)),
    attrs=(AttrSpec("active_num", "int", None,
                    doc="rows of x kept (expanded_x has min(N, active_num) * K rows)"),),
    cases=CASES, make_inputs=make_inputs, golden_fn=golden)
