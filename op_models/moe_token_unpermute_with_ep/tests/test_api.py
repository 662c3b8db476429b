"""Tests of the forward's aclnn-style API (checks and codes), infershape and golden.

Infershape: the cases of upstream's
``tests/ut/op_host/test_moeTokenUnpermuteWithEp_infershape.cpp`` (hicann/ops-transformer
``5778144076def6311557939ab5cbfe8303f13e8f``); shapes only, no launch.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
)
from op_models.moe_token_unpermute_with_ep import (
    MODEL,
    AclnnError,
    get_workspace_size,
    moe_token_unpermute_with_ep,
    run_case,
)
from op_models.moe_token_unpermute_with_ep.cases import (
    CASES,
    Case,
    get_case,
    make_inputs,
    window,
)
from op_models.moe_token_unpermute_with_ep.golden import golden, golden_fp64
from op_models.moe_token_unpermute_with_ep.infershape import (
    InferDataTypeForMoeTokenUnpermuteWithEp,
    InferShapeForMoeTokenUnpermuteWithEp,
)

BF16 = np.dtype(ml_dtypes.bfloat16)


# --------------------------------------------------------------------------------------------
# infershape (upstream UT)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("probs", [(6144, 8), None], ids=["probs", "prob_none"])
def test_upstream_infershape(probs):
    # test_infershape_{bf16,fp16,fp32} and their prob_none twins all expect {6144, 5120}:
    # probs dim0, or 49152 / num_topk 8
    assert InferShapeForMoeTokenUnpermuteWithEp((49152, 5120), (49152,), probs, 8) == (6144,
                                                                                         5120)


@pytest.mark.parametrize("dt", [BF16, np.dtype(np.float16), np.dtype(np.float32)])
def test_upstream_infertype(dt):
    assert InferDataTypeForMoeTokenUnpermuteWithEp(dt) == dt


def test_infershape_zero_topk_is_named():
    with pytest.raises(ValueError, match="num_topk is 0"):
        InferShapeForMoeTokenUnpermuteWithEp((4, 8), (8,), None, 0)


# --------------------------------------------------------------------------------------------
# the API's checks and codes
# --------------------------------------------------------------------------------------------


def tiny_inputs(prob: str | None = "bfloat16"):
    return make_inputs(Case("t", 6, 2, 32, "bfloat16", prob, 4, ep=2, seed=1))


def gws(inp, **kw):
    args = dict(permuted_tokens=inp["permuted_tokens"], sorted_indices=inp["sorted_indices"],
                probs=inp["probs"], num_topk=2, range=list(inp["range"]), padded_mode=False,
                restore_shape=None, out=None)
    args.update(kw)
    return get_workspace_size(**args, platform="ascend910b1")


def raises(code: int, rule: str, **kw):
    with pytest.raises(AclnnError) as e:
        gws(tiny_inputs(), **kw)
    assert (e.value.code, e.value.rule) == (code, rule), str(e.value)
    return str(e.value)


def test_error_codes():
    raises(ACLNN_ERR_PARAM_NULLPTR, "nullptr", permuted_tokens=None)
    raises(ACLNN_ERR_PARAM_NULLPTR, "nullptr", sorted_indices=None)
    raises(ACLNN_ERR_PARAM_INVALID, "not_a_tensor", probs=[[0.5, 0.5]])
    raises(ACLNN_ERR_PARAM_INVALID, "dtype",
           permuted_tokens=np.zeros((5, 32), np.float64))
    raises(ACLNN_ERR_PARAM_INVALID, "indices_dtype", sorted_indices=np.zeros(12, np.int64))
    raises(ACLNN_ERR_PARAM_INVALID, "rank", sorted_indices=np.zeros((6, 2), np.int32))
    raises(ACLNN_ERR_PARAM_INVALID, "empty", permuted_tokens=np.zeros((0, 32), BF16))
    raises(ACLNN_ERR_PARAM_INVALID, "padded_mode", padded_mode=True)
    raises(ACLNN_ERR_PARAM_INVALID, "range_none", range=None)
    raises(ACLNN_ERR_PARAM_INVALID, "range_size", range=[0, 1, 2])
    msg = raises(ACLNN_ERR_PARAM_INVALID, "range_rows", range=[0, 100])
    assert "spans 100 rows" in msg
    raises(ACLNN_ERR_PARAM_INVALID, "out_dtype", out=np.zeros((6, 32), np.float32))
    raises(ACLNN_ERR_PARAM_INVALID, "out_shape", out=np.zeros((5, 32), BF16))
    raises(ACLNN_ERR_PARAM_INVALID, "attr_type", num_topk=2.0)
    raises(ACLNN_ERR_INNER_TILING_ERROR, "topk_mismatch", num_topk=3)
    raises(ACLNN_ERR_INNER_TILING_ERROR, "total_length",
           probs=np.full((5, 2), 0.5, BF16))
    raises(ACLNN_ERR_INNER_TILING_ERROR, "topk_min", probs=None, num_topk=0)


def test_ub_too_small_is_named():
    from aicore_sim.sim.platform import load_platform

    tiny = load_platform("tiny")  # 8192 B usable: (8192 - 5120) // 14 = 219 -> chunk 0
    inp = tiny_inputs()
    with pytest.raises(AclnnError, match="ub_too_small"):
        get_workspace_size(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], 2,
                           list(inp["range"]), False, None, None, platform=tiny)


def test_two_phases_preallocated_out_and_workspace():
    inp = tiny_inputs()
    out = np.full((6, 32), 7, BF16)
    size, ex = gws(inp, out=out, restore_shape=[16, 16])
    assert size == 16 * 1024 * 1024
    with pytest.raises(AclnnError, match="workspace"):
        MODEL.execute(ex, workspace_size=size - 1)
    assert np.all(out == 7)  # nothing written before a successful launch
    res = MODEL.execute(ex, workspace_size=size)
    assert res.outputs["unpermuted_tokens"] is out
    want = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], 2,
                  *inp["range"])
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))


def test_default_range_is_the_empty_window():
    """The IR default range [0, 0] accepts no row: every output row is +0."""
    inp = tiny_inputs(None)
    outs, res = moe_token_unpermute_with_ep(inp["permuted_tokens"], inp["sorted_indices"],
                                            num_topk=2)
    out = outs["unpermuted_tokens"]
    assert out.shape == (6, 32) and not np.any(out.view(np.uint16))


# --------------------------------------------------------------------------------------------
# golden and cases
# --------------------------------------------------------------------------------------------


def test_golden_hand_example():
    """Upstream's doc example: tokens [[2,2],[1,1],[3,3],[2,2]], indices 2 0 4 1 5 3, probs
    all 1, K 2, range [1, 5]: row r - 1 for every r in [1, 5).
    token 0: q0 -> 2 (row 1 = 1), q1 -> 0 (outside) -> 1;
    token 1: q2 -> 4 (row 3 = 2), q3 -> 1 (row 0 = 2) -> 4;
    token 2: q4 -> 5 (outside), q5 -> 3 (row 2 = 3) -> 0 + 3 = 3."""
    tokens = np.array([[2, 2], [1, 1], [3, 3], [2, 2]], np.float32)
    idx = np.array([2, 0, 4, 1, 5, 3], np.int32)
    probs = np.ones((3, 2), np.float32)
    want = np.array([[1, 1], [4, 4], [3, 3]], np.float32)
    assert np.array_equal(golden(tokens, idx, probs, 2, 1, 5), want)
    outs, res = moe_token_unpermute_with_ep(tokens, idx, probs, range=[1, 5])
    assert np.array_equal(outs["unpermuted_tokens"], want) and res.hazards == []


def test_golden_sign_of_zero_follows_the_kernel():
    """k = 0 accepted: the accumulator is the term itself (-0.0 stays); k = 0 rejected: it
    starts at +0.0 and +0.0 + -0.0 = +0.0."""
    tokens = np.array([[-0.0], [-0.0]], np.float32)
    idx = np.array([0, 5, 5, 1], np.int32)  # token 0: row 0 first; token 1: row 1 second
    out = golden(tokens, idx, None, 2, 0, 2)
    assert np.signbit(out[0, 0]) and not np.signbit(out[1, 0])


def test_golden_close_to_fp64_and_cases_build():
    c = get_case("tiny_bf16_probs_bf16")
    inp = make_inputs(c)
    g = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], c.top_k,
               *inp["range"]).astype(np.float64)
    r = golden_fp64(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], c.top_k,
                    *inp["range"])
    # bf16 output: one RNE rounding of a near-exact fp32 sum, |err| <= 2^-8 |r| + tiny
    assert np.all(np.abs(g - r) <= 2.0**-8 * np.abs(r) + 1e-30)
    assert {"deepseek_v3_layer", "qwen3_235b_layer", "qwen3_30b_layer",
            "mixtral_8x7b_layer"} <= set(CASES)
    for name in ("tiny_bf16_probs_bf16", "tiny_bf16_zero_probs"):
        case = get_case(name)
        assert window(case) == make_inputs(case)["range"]  # the same routing draw
    with pytest.raises(KeyError, match="bundled"):
        get_case("nope")


def test_run_case_tiny_bit_exact():
    outs, res, inp = run_case("tiny_fp32_probs_fp32", platform="ascend910b1")
    want = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], 3,
                  *window(get_case("tiny_fp32_probs_fp32")))
    assert np.array_equal(outs["unpermuted_tokens"].view(np.uint32), want.view(np.uint32))
    assert res.hazards == [] and res.cycles > 0


@pytest.mark.slow
def test_deepseek_v3_layer_bit_exact():
    outs, res, inp = run_case("deepseek_v3_layer", platform="ascend910b1", jobs=2)
    want = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], 8,
                  *window(get_case("deepseek_v3_layer")))
    assert np.array_equal(outs["unpermuted_tokens"].view(np.uint16), want.view(np.uint16))
    assert res.hazards == []
