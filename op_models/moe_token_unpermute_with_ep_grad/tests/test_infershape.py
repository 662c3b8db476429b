"""Shape and dtype inference of MoeTokenUnpermuteWithEpGrad.

The first tables are the expectations of upstream's infershape unit tests
(``tests/ut/op_host/test_moeTokenUnpermuteWithEpGrad_infershape.cpp``), rewritten as data:
inputs in IR order (grad, sorted_indices, permuted_tokens, probs) and the expected outputs.
"""

from __future__ import annotations

import pytest

from aicore_sim.ascendc.host import specs_of
from aicore_sim.sim.dtypes import bfloat16, float16, float32, int32
from op_models.moe_token_unpermute_with_ep_grad import moe_token_unpermute_with_ep_grad
from op_models.moe_token_unpermute_with_ep_grad.cases import get_case, make_inputs
from op_models.moe_token_unpermute_with_ep_grad.infershape import (
    UNKNOWN_RANK,
    InferShapeError,
    infer_dtype,
    infer_outputs,
    infer_shape,
)

# (test name upstream, grad, sorted_indices, permuted_tokens, probs, out0, out1)
UPSTREAM_SHAPES = [
    ("infershape_case_0", (10, 64), (30,), (30, 64), (10, 3), (30, 64), (10, 3)),
    ("infershape_case_01", (10, 64), (30,), (30, 64), (10, 3), (30, 64), (10, 3)),
    ("infershape_case_1", (10, 64), (30,), (30, 64), (10, 3), (30, 64), (10, 3)),
    ("prob_not_none_split_h_case_0", (10, 8192), (30,), (30, 8192), (10, 3), (30, 8192),
     (10, 3)),
    ("prob_not_none_split_h_fp16_case_0", (10, 8192), (30,), (30, 8192), (10, 3), (30, 8192),
     (10, 3)),
    ("prob_not_none_split_h_fp16_case_1", (10, 8192), (30,), (30, 8192), (10, 3), (30, 8192),
     (10, 3)),
]

# (test name upstream, tokens dtype (inputs 0 and 2), probs dtype, out0 dtype, out1 dtype)
UPSTREAM_DTYPES = [
    ("inferdtype_bf16_case_0", bfloat16, bfloat16, bfloat16, bfloat16),
    ("inferdtype_bf16_case_1", bfloat16, float32, bfloat16, float32),
    ("inferdtype_fp16_case_0", float16, float16, float16, float16),
]


@pytest.mark.parametrize("row", UPSTREAM_SHAPES, ids=[r[0] for r in UPSTREAM_SHAPES])
def test_upstream_infershape_expectations(row):
    _, grad, idx, perm, probs, out0, out1 = row
    assert infer_shape(grad, idx, perm, probs) == (out0, out1)


@pytest.mark.parametrize("row", UPSTREAM_DTYPES, ids=[r[0] for r in UPSTREAM_DTYPES])
def test_upstream_inferdtype_expectations(row):
    _, tok, prob, out0, out1 = row
    assert infer_dtype(tok, prob) == (out0, out1)


def test_mixed_precision_shape_and_dtype_together():
    """infershape_case_1: bf16 tokens with fp32 probs - shapes as ever, probs_grad fp32."""
    outs = infer_outputs({"unpermuted_tokens_grad": ((10, 64), bfloat16),
                          "sorted_indices": ((30,), int32),
                          "permuted_tokens": ((30, 64), bfloat16), "probs": ((10, 3), float32)})
    assert outs == {"permuted_tokens_grad": ((30, 64), bfloat16),
                    "probs_grad": ((10, 3), float32)}


def test_no_probs_no_output_and_dtype_from_tokens():
    assert infer_shape((10, 64), (30,), (30, 64), None) == ((30, 64), None)
    assert infer_dtype(float16, None) == (float16, float16)
    outs = infer_outputs({"unpermuted_tokens_grad": ((10, 64), float16),
                          "sorted_indices": ((30,), int32), "permuted_tokens": ((30, 64), float16)})
    assert outs["probs_grad"] is None
    assert outs["permuted_tokens_grad"] == ((30, 64), float16)


def test_hidden_from_grad_rows_from_indices():
    """dim0 from sorted_indices, dim1 from unpermuted_tokens_grad (not permuted_tokens)."""
    assert infer_shape((4, 96), (12,), (7, 5), None) == ((12, 96), None)


def test_unknown_rank_permuted_tokens():
    """permuted_tokens of unknown rank ([-2]): output 0 is [-2], other ranks unchecked."""
    assert infer_shape((10, 64, 1), (30, 2), UNKNOWN_RANK, (10, 3)) == ((-2,), (10, 3))


@pytest.mark.parametrize("grad,idx,perm", [
    ((10, 64), (30, 1), (30, 64)),   # 2-D sorted_indices
    ((10, 64), (), (30, 64)),        # scalar sorted_indices
    ((10, 64), (30,), (30, 64, 1)),  # 3-D permuted_tokens
    ((640,), (30,), (30, 64)),       # 1-D grad
])
def test_ranks_rejected(grad, idx, perm):
    with pytest.raises(InferShapeError) as e:
        infer_shape(grad, idx, perm, None)
    assert e.value.rule == "rank"


def test_permuted_tokens_required():
    with pytest.raises(InferShapeError) as e:
        infer_shape((10, 64), (30,), None, None)
    assert e.value.rule == "required"


def test_dynamic_dims_wrap_through_uint32():
    """Upstream keeps both dims in 32-bit unsigned locals: -1 comes out as 2^32 - 1."""
    assert infer_shape((10, -1), (-1,), (30, 64), None) == ((2**32 - 1, 2**32 - 1), None)


@pytest.mark.parametrize("name", ["tiny", "few_tokens_noprobs", "hidden_40_mask"])
def test_api_outputs_follow_infershape(name):
    """The operator API delivers outputs of exactly the inferred shapes and dtypes."""
    case = get_case(name)
    inp = make_inputs(case)
    spec = infer_outputs(specs_of({k: inp[k] for k in ("unpermuted_tokens_grad", "sorted_indices",
                                                       "permuted_tokens", "probs")}))
    outs, _ = moe_token_unpermute_with_ep_grad(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["permuted_tokens"],
        inp["probs"], topk_num=case.top_k, platform="ascend910b1", mode="functional")
    for out_name, s in spec.items():
        if s is None:
            assert outs[out_name] is None
        else:
            assert (outs[out_name].shape, outs[out_name].dtype) == s
