"""The forward's tiling space (sweeps / search): plans, rules, UB budget, verified points."""

from __future__ import annotations

import pytest

from aicore_sim.sim.platform import load_platform
from op_models.moe_token_unpermute_with_ep.tiling_space import TILING_SPACE

A2 = load_platform("ascend910b1")
ts = TILING_SPACE  # the space under test
CASE = ts.resolve_case("tiny_bf16_probs_bf16", {})  # 12 tokens x K 2, H 48, window 10 rows


def test_upstream_plan_is_the_host_tiling():
    p = ts.plan(CASE, A2)
    assert p.feasible and p.block_dim == 12 and p.tiling_key == 3
    # hidden 48, probs (grad length 0), K 2, window [0, 10), 10 permuted rows, one chunk,
    # 1 token per core, 4 buffers
    assert p.tiling.as_list() == [48, 0, 2, 0, 10, 10, 48, 1, 0, 1, 0, 1, 1, 0, 4]


@pytest.mark.parametrize("knobs", [
    {},
    {"cores": 3, "tokens_splited_length": 2, "hidden_splited_length": 16, "buffer_num": 2},
    {"cores": 5, "tokens_splited_length": 1, "hidden_splited_length": 40, "buffer_num": 1},
])
def test_ub_budget_equals_the_kernels_buffers_and_points_verify(knobs):
    """ub_bytes is what the kernel's InitBuffer calls take; every point is exact."""
    p = ts.plan(CASE, A2, knobs=knobs)
    assert p.feasible, p.violations
    res = ts.launch(CASE, A2, p, mode="functional")
    assert sum(a.nbytes for a in res.program.allocations[0]) == p.ub_bytes
    assert ts.verify(CASE, A2, p)["status"] == "verified"


def test_derived_fields_and_remainder_cores():
    """5 cores for 12 tokens: 2 each, the first 2 cores take one more; loops of 2 tokens."""
    p = ts.plan(CASE, A2, knobs={"cores": 5, "tokens_splited_length": 2,
                                 "hidden_splited_length": 20})
    td = p.tiling
    assert (td.tokens_core_length, td.tokens_core_remain) == (2, 2)
    assert (td.tokens_splited_num, td.tokens_splited_remain) == (1, 0)
    assert (td.hidden_splited_num, td.hidden_splited_remain) == (2, 8)  # 48 = 2 x 20 + 8


@pytest.mark.parametrize("knobs,rule", [
    ({"cores": 13}, "cores_range"),
    ({"tokens_splited_length": 0}, "tokens_split_range"),
    ({"hidden_splited_length": 49}, "hidden_range"),
    ({"buffer_num": 5}, "buffer_range"),
])
def test_rules_are_named(knobs, rule):
    p = ts.plan(CASE, A2, knobs=knobs)
    assert not p.feasible and rule in [r for r, _ in p.violations]


def test_ub_budget_rule_and_search_space():
    small = A2.with_overrides(ub_size=16384)
    big = ts.resolve_case("tiny_bf16_probs_bf16", {"hidden": 4096})
    p = ts.plan(big, small, knobs={"hidden_splited_length": 4096})
    assert ("ub_budget" in [r for r, _ in p.violations])
    space = ts.search_space(CASE, A2)
    assert space and all(ts.plan(CASE, A2, knobs=k).feasible for k in space)
    with pytest.raises(ValueError, match="unknown tiling knob"):
        ts.plan(CASE, A2, knobs={"indicesReserveNum": 3})


def test_the_space_is_found_by_op_name_import_path_or_registration():
    from aicore_sim.sweep import ops, register_op

    path = "op_models.moe_token_unpermute_with_ep.tiling_space"
    assert ops.get_op("moe_token_unpermute_with_ep") is ts
    assert ops.get_op(path) is ts and ops.get_op(f"{path}:TILING_SPACE") is ts
    with pytest.raises(ValueError, match=r"module op_models.moe_matrix lacks TILING_SPACE"):
        ops.get_op("op_models.moe_matrix")
    with pytest.raises(ValueError, match="has no tiling space: it cannot be swept"):
        ops.get_op("moe_token_permute_with_ep")
    register_op("fwd_alias", path)
    try:
        assert ops.get_op("fwd_alias") is ts and "fwd_alias" in ops.op_names()
    finally:
        ops._EXTRA.pop("fwd_alias")
