"""Tests of the ``MoeTokenUnpermuteWithEp`` host tiling port (``op_models/.../tiling.py``).

``test_upstream_ut_*`` port every case of upstream's tiling unit test
``moe/moe_token_unpermute_with_ep/tests/ut/op_host/test_moe_token_unpermute_with_ep_tiling.cpp``
at hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f`` on the same fake platform
(64 AIV, ub_size 262144 -> GetCoreMemSize 261888; the small-UB case uses ub_size 16384 -> 16128).
Where upstream gives the tiling string, it is asserted character for character
(``TilingData2Str``: every value followed by a space). Where upstream asserts only status and
key, the full 15 fields are still asserted, derived by hand in the comment next to the case.
"""

from __future__ import annotations

import pytest

from aicore_sim.ascendc.host import TensorDesc
from op_models.moe_token_unpermute_with_ep.tiling import (
    GRAPH_SUCCESS,
    SYS_WORKSPACE_SIZE,
    ComputeMaxHiddenSize,
    ComputeUnitHSpace,
    MoeTokenUnpermuteWithEpParam,
    TilingContext,
    TilingData,
    TilingPrepareForMoeTokenUnpermuteWithEp,
    tiling_func,
)
from tests.moe_tiling_ut import A2, UT, assert_failed, assert_succeeded, ut_and_a2, ut_platform

UT_SMALL_UB = ut_platform(16384)
BF16, FP16, FP32, I32, I64 = "DT_BF16", "DT_FLOAT16", "DT_FLOAT", "DT_INT32", "DT_INT64"


def test_platforms_are_what_the_tests_assume() -> None:
    assert ut_and_a2() == (64, 261888, 48, 196352)
    assert UT_SMALL_UB.GetCoreMemSize() == 16128


def ctx(tokens, indices, probs=None, *, num_topk=8, range_=None):
    """An upstream UT context: inputs (shape, dtype), attributes by name."""
    return TilingContext.create(
        TensorDesc(*tokens), TensorDesc(*indices),
        None if probs is None else TensorDesc(*probs),
        num_topk=num_topk, range=range_, padded_mode=False, restore_shape=[])


# (name, context, platform, key, expected tiling string as upstream prints it, block dim)
UT_SUCCESS = [
    # tokens num 6144 over 64 cores = 96 each; UnitHSpace(bf16, 4) = 2*5 + 4*2 = 18,
    # (261888 - 5120) // 18 = 14264 -> AlignN(13752, 512) = 13824 >= 5120: 4 buffers.
    ("test_tiling_prob_none_bf16",
     ctx(((49152, 5120), BF16), ((49152,), I32), ((6144, 8), BF16), range_=[1, 6144]),
     UT, 3, "5120 0 8 1 6144 49152 5120 1 0 96 0 96 1 0 4 ", 64),
    # no probs: tokens num = 6144 // 8 = 768 -> 12 per core; max chunk (2 buffers):
    # (261888 - 5120) // 14 = 18340 -> AlignN(17828, 512) = 17920 < 20480 -> 1 x 17920 + 2560;
    # 3 buffers: // 16 = 16048 -> 15872 < 17920 -> bufferNum 2.
    ("test_tiling_prob_none_bf16_2",
     ctx(((6143, 20480), BF16), ((6144,), I32), range_=[1, 6144]),
     UT, 0, "20480 1 8 1 6144 6143 17920 1 2560 12 0 12 1 0 2 ", 64),
    ("test_tiling_prob_not_none_bf16",
     ctx(((49150, 5120), BF16), ((49152,), I32), ((6144, 8), BF16), range_=[1, 49151]),
     UT, 3, "5120 0 8 1 49151 49150 5120 1 0 96 0 96 1 0 4 ", 64),
    ("test_tiling_prob_none_fp16",
     ctx(((6143, 20480), FP16), ((6144,), I32), range_=[1, 6144]),
     UT, 0, "20480 1 8 1 6144 6143 17920 1 2560 12 0 12 1 0 2 ", 64),
    ("test_tiling_prob_not_none_fp16",
     ctx(((49150, 5120), FP16), ((49152,), I32), ((6144, 8), FP16), range_=[1, 49151]),
     UT, 2, "5120 0 8 1 49151 49150 5120 1 0 96 0 96 1 0 4 ", 64),
    # fp32: no cast buffers, UnitHSpace(4, 2) = 12 -> 21397 -> AlignN(20885) = 20992 >= 20480;
    # 4 buffers: 20 -> 12838 -> 12800, 3 buffers: 16 -> 15872, both < 20480 -> bufferNum 2.
    ("test_tiling_prob_none_fp32",
     ctx(((6143, 20480), FP32), ((6144,), I32), range_=[1, 49151]),
     UT, 0, "20480 1 8 1 49151 6143 20480 1 0 12 0 12 1 0 2 ", 64),
    ("test_tiling_prob_not_none_fp32",
     ctx(((49150, 5120), FP32), ((49152,), I32), ((6144, 8), FP32), range_=[1, 49151]),
     UT, 1, "5120 0 8 1 49151 49150 5120 1 0 96 0 96 1 0 4 ", 64),
    # upstream asserts key 0 only. tokens num = 8 // 8 = 1 -> 1 core; no range -> 0 / 0.
    ("test_tiling_small_tokens_num_core",
     ctx(((8, 128), FP16), ((8,), I32)),
     UT, 0, "128 1 8 0 0 8 128 1 0 1 0 1 1 0 4 ", 1),
    # upstream asserts key 0 only. 64 // 8 = 8 tokens on 8 cores.
    ("test_tiling_without_range_attr",
     ctx(((64, 128), FP16), ((64,), I32)),
     UT, 0, "128 1 8 0 0 64 128 1 0 1 0 1 1 0 4 ", 8),
    # upstream asserts key 3 only. UB 16128: chunk (2 buffers) (16128 - 5120) // 14 = 786 ->
    # AlignN(274) = 512 -> 16 x 512; 4 buffers: 11008 // 18 = 611 -> 512, not < 512: 4.
    # remain = 16128 - 512 * 18 - 256 = 6656; 768 tokens / 64 = 12 per core; per token
    # K * (4 idx + 2 probs + 4 fp32 probs) = 640 B; 12 * 640 = 7680 > 6656 -> 6656 // 640 = 10
    # tokens per loop, 12 % 10 = 2 left, 12 // 10 = 1 loop.
    ("test_tiling_prob_small_ub_token_split",
     ctx(((49152, 8192), BF16), ((49152,), I32), ((768, 64), BF16), num_topk=64,
         range_=[1, 768]),
     UT_SMALL_UB, 3, "8192 0 64 1 768 49152 512 16 0 12 0 10 1 2 4 ", 64),
    # upstream asserts key 0: probs int32 is not fp32/fp16/bf16, the key stays 0.
    # probs given: tokens num 8, PermuteProbGradSize 0; 4-byte probs need no fp32 copy.
    ("test_tiling_probs_invalid_dtype",
     ctx(((64, 128), FP16), ((64,), I32), ((8, 8), I32), range_=[1, 8]),
     UT, 0, "128 0 8 1 8 64 128 1 0 1 0 1 1 0 4 ", 8),
    # upstream asserts key 0: unknown tokens dtype has length 0, so UnitHSpace = 0 + 4 * 2.
    ("test_tiling_tokens_unknown_dtype",
     ctx(((64, 128), 100), ((64,), I32), range_=[1, 8]),
     UT, 0, "128 1 8 1 8 64 128 1 0 1 0 1 1 0 4 ", 8),
    ("test_tiling_indices_int64_dtype",
     ctx(((64, 128), FP16), ((64,), I64), range_=[1, 8]),
     UT, 0, "128 1 8 1 8 64 128 1 0 1 0 1 1 0 4 ", 8),
]


@pytest.mark.parametrize("name,context,plat,key,expected,block_dim", UT_SUCCESS,
                         ids=[c[0] for c in UT_SUCCESS])
def test_upstream_ut_success(name, context, plat, key, expected, block_dim):
    # workspace 16 * 1024 * 1024, upstream expectWorkspaces
    assert_succeeded(tiling_func(context, plat), key, expected, block_dim, [16777216])


UT_FAILED = [
    ("test_tiling_input_topk_invalid", ctx(((64, 128), FP16), ((64,), I32), num_topk=0,
                                           range_=[1, 8]), "topk_min"),
    ("test_tiling_tokens_not_2d", ctx(((64,), FP16), ((64,), I32), range_=[1, 8]),
     "tokens_dim_num"),
    ("test_tiling_probs_topk_mismatch",
     ctx(((64, 128), FP16), ((64,), I32), ((8, 4), FP16), range_=[1, 8]), "topk_mismatch"),
    ("test_tiling_probs_dim_mismatch",  # 64 != 4 * 8
     ctx(((64, 128), FP16), ((64,), I32), ((4, 8), FP16), range_=[1, 8]), "total_length"),
    ("test_tiling_probs_topk_too_large",
     ctx(((513, 128), FP16), ((513,), I32), ((1, 513), FP16), num_topk=513, range_=[1, 1]),
     "topk_max"),
]


@pytest.mark.parametrize("name,context,rule", UT_FAILED, ids=[c[0] for c in UT_FAILED])
def test_upstream_ut_failed(name, context, rule):
    assert_failed(tiling_func(context, UT), rule)


def test_upstream_ut_tiling_parse():
    assert TilingPrepareForMoeTokenUnpermuteWithEp(object()) == GRAPH_SUCCESS


# --------------------------------------------------------------------------------------------
# hand examples beyond upstream's UT
# --------------------------------------------------------------------------------------------


def test_unit_h_space_and_max_hidden():
    # bf16, 2 buffers: 2 * (2 + 2 - 1) + 4 * 2 = 14 B per hidden element; fp32: 4 * 3 = 12
    assert ComputeUnitHSpace(2, 2) == 14
    assert ComputeUnitHSpace(4, 2) == 12
    assert ComputeUnitHSpace(2, 4) == 18
    p = MoeTokenUnpermuteWithEpParam()
    p.core.maxCoreMemory, p.input.tokensDtypeSize = 196352, 2
    # (196352 - 5120) // 14 = 13659 -> AlignN(13147, 512) = 13312
    assert ComputeMaxHiddenSize(p, 2) == 13312


def test_remainder_tokens_and_real_a2():
    """N 100 (K 2) on 48 cores: 100 // 48 = 2 per core, 4 cores carry one more (kernel)."""
    r = tiling_func(ctx(((200, 64), BF16), ((200,), I32), ((100, 2), FP32), num_topk=2,
                        range_=[0, 200]), A2)
    assert r.ok and r.tiling_key == 1 and r.block_dim == 48
    assert r.tiling_data.as_dict() == {
        "hidden_size": 64, "permuted_probs_grad_length": 0, "top_k": 2, "start": 0,
        "end": 200, "num_out_tokens": 200, "hidden_splited_length": 64,
        "hidden_splited_num": 1, "hidden_splited_remain": 0, "tokens_core_length": 2,
        "tokens_core_remain": 4, "tokens_splited_length": 2, "tokens_splited_num": 1,
        "tokens_splited_remain": 0, "buffer_num": 4}
    assert len(r.tiling_data.to_bytes()) == 15 * 8


def test_range_of_wrong_size_succeeds_with_zeroed_shapes():
    """Deviation 3: Init returns early, every shape field stays 0, block dim 0, a warning."""
    r = tiling_func(ctx(((64, 128), FP16), ((64,), I32), range_=[1, 2, 3]), UT)
    assert r.ok and r.block_dim == 0 and r.tiling_key == 0
    assert r.tiling_data.as_list()[:9] == [0, 0, 0, 0, 0, 0, 0, 1, 0]
    assert any("range has 3 values" in w for w in r.warnings)


def test_missing_inputs_and_attr_fail_named():
    r = tiling_func(TilingContext.create(None, TensorDesc((8,), I32)), UT)
    assert r.rule == "null_desc" and "permuted_tokens" in r.error
    r = tiling_func(TilingContext.create(TensorDesc((8, 16), BF16), TensorDesc((8,), I32),
                                         num_topk=None), UT)
    assert r.rule == "null_attr"
    r = tiling_func(ctx(((64, 128), FP16), ((64,), I32), ((8, 8, 1), FP16)), UT)
    assert r.rule == "probs_dim_num"


def test_tiling_data_round_trip():
    td = TilingData.from_list(range(15))
    assert td.as_list() == list(range(15))
    assert td.to_string() == "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 "
    with pytest.raises(ValueError):
        TilingData.from_list([1, 2])
    assert SYS_WORKSPACE_SIZE == 16 * 1024 * 1024
