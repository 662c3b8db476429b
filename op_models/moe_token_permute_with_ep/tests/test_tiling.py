"""Tests of the ``MoeTokenPermuteWithEp`` host tiling port (``op_models/.../tiling.py``).

``test_upstream_ut_*`` port every tiling case of upstream's unit test
``moe/moe_token_permute_with_ep/tests/ut/op_host/test_moe_token_permute_with_ep_tiling.cpp``
at hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f`` on the same fake
platform (64 AIV, ub_size 262144 -> GetCoreMemSize 261888; the split-D case sets ub_size 98304
-> 98048). Where upstream gives the tiling string (46 values, each followed by a space), it is
asserted character for character, with the key and the workspace; where upstream asserts a
failure, the rule that fails is asserted.
"""

from __future__ import annotations

import pytest

from aicore_sim.ascendc.host import TensorDesc
from op_models.moe_token_permute_with_ep.tiling import (
    GRAPH_SUCCESS,
    N_FIELDS,
    CeilLog4,
    TilingContext,
    TilingData,
    TilingPrepareForMoeTokenPermuteWithEp,
    VmsLoops,
    tiling_func,
)
from tests.moe_tiling_ut import A2, UT, assert_failed, assert_succeeded, ut_and_a2, ut_platform

UT_98K = ut_platform(98304)
BF16, I32, I64 = "DT_BF16", "DT_INT32", "DT_INT64"


def test_platforms_are_what_the_tests_assume() -> None:
    assert ut_and_a2() == (64, 261888, 48, 196352)
    assert UT_98K.GetCoreMemSize() == 98048


def ctx(tokens, indices, probs, outs, range_, num_out=1, padded=False):
    """An upstream UT context: input shapes (dtype bf16 / int64 / bf16 as upstream), output
    shapes (bf16 / int32 / int32), attributes by name."""
    return TilingContext.create(
        TensorDesc(tokens, BF16), TensorDesc(indices, I64),
        None if probs is None else TensorDesc(probs, BF16),
        outputs=[TensorDesc(outs[0], BF16), TensorDesc(outs[1], I32), TensorDesc(outs[2], I32)],
        range=range_, num_out_tokens=num_out, padded_mode=padded)


N16K = 16384
# (name, context, platform, key, tiling string, workspace, block dim)
UT_SUCCESS = [
    # 6 indices <= 32 -> one core; sortLoopMax (261888 - 32) // 32 // 32 * 32 = 8160; 6 rows
    # of 5 bf16 (10 B -> 32 B aligned); onceUbTokenNums (261888 - 96) // (64 + 48) = 2337;
    # key 1 + 4 (4 rows kept of 6); ws 6 * 16 + 1 * 64 + 16 MiB = 16777376; block dim
    # max(1, 2 index-copy cores) = 2.
    ("moe_token_permute_with_ep_tiling_01",
     ctx((2, 5), (2, 3), (2, 3), ((4, 5), (6,), (4,)), [1, 5], 4), UT, 5,
     "1 2 5 16 3 1 6 1 6 6 6 1 6 6 8160 0 0 1024 2 2 0 1 0 10 2 2 2337 4674 14022 1 1 1 1 1 "
     "0 4674 2 2337 1 1 4 1 5 74784 56096 56096 ", 16777376, 2),
    # 12288 elements on 64 cores: sortLoopMax (261888 - 2048) // 32 // 32 * 32 = 8096 ->
    # ceil(12288 / 8096) = 2 -> 4 ** 1 = 4 cores of 3072; ws 12288 * 16 + 64 * 64 + 16 MiB.
    ("moe_token_permute_with_ep_tiling_02",
     ctx((4096, 5), (4096, 3), (4096, 3), ((4096, 5), (12288,), (4096,)), [0, 4096]), UT, 6,
     "64 4096 5 16 3 4 3072 1 3072 3072 3072 1 3072 3072 8096 0 0 1024 64 64 0 64 64 10 2 2 "
     "2337 4674 14022 1 1 1 1 64 1 64 1 64 1 64 4096 0 4096 74784 56096 56096 ", 16977920, 64),
    ("moe_token_permute_with_ep_tiling_03",
     ctx((4096, 5), (4096, 3), (4096, 3), ((4096, 5), (12288,), (4096,)), [0, 4096]), UT, 6,
     "64 4096 5 16 3 4 3072 1 3072 3072 3072 1 3072 3072 8096 0 0 1024 64 64 0 64 64 10 2 2 "
     "2337 4674 14022 1 1 1 1 64 1 64 1 64 1 64 4096 0 4096 74784 56096 56096 ", 16977920, 64),
    # 49152 elements: ceil(49152 / 8096) = 7 -> 4 ** 2 = 16 cores of 3072, 16 > 4 lists ->
    # 4 middle-merge cores.
    ("moe_token_permute_with_ep_tiling_multi_core",
     ctx((N16K, 5), (N16K, 3), (N16K, 3), ((4096, 5), (N16K * 3,), (4096,)), [0, 4096]), UT, 6,
     "64 16384 5 16 3 16 3072 1 3072 3072 3072 1 3072 3072 8096 0 4 1024 64 64 0 256 256 10 2 "
     "2 2337 4674 14022 1 1 1 1 256 1 256 1 256 1 256 4096 0 4096 74784 56096 56096 ",
     17567744, 64),
    # H 32768 bf16 = 65536 B a row: two rows fit (257760 >= 131072), one row per move.
    ("moe_token_permute_with_ep_tiling_long_h",
     ctx((N16K, 32768), (N16K, 3), (N16K, 3), ((4096, 32768), (N16K * 3,), (4096,)),
         [0, 4096]), UT, 6,
     "64 16384 32768 32768 3 16 3072 1 3072 3072 3072 1 3072 3072 8096 0 4 1024 64 64 0 256 "
     "256 65536 2 5446 1 5446 16338 1 1 1 1 256 1 256 256 1 256 1 4096 0 4096 65536 65376 "
     "65376 ", 17567744, 64),
    # 1-D indices: topK 1; 4 elements -> one core; 4 rows kept of 4 -> key 1.
    ("moe_token_permute_with_ep_tiling_indices_1d",
     ctx((4, 5), (4,), (4,), ((4, 5), (4,), (4,)), [0, 4], 4), UT, 1,
     "1 4 5 16 1 1 4 1 4 4 4 1 4 4 8160 0 0 1024 4 4 0 1 0 10 2 2 3272 6544 6544 1 1 1 1 1 0 "
     "6544 2 3272 1 1 4 0 4 104704 26176 26176 ", 16777344, 4),
    # UB 98048: ubLeft 98048 - 4096 - 32 = 93920 < 2 * 65536 -> split D (key 2 + 2 + 4);
    # oneTokenOnceMove FloorAlign(46960, 512) // 2 = 23296 elements, 2 moves, last 9472;
    # sortLoopMax (98048 - 2048) // 32 = 3000 -> 2976 -> 17 -> 64 cores of 768.
    ("moe_token_permute_with_ep_tiling_split_d_small_ub",
     ctx((N16K, 32768), (N16K, 3), (N16K, 3), ((4096, 32768), (N16K * 3,), (4096,)),
         [0, 4096]), UT_98K, 8,
     "64 16384 32768 32768 3 64 768 1 768 768 768 1 768 768 2976 0 16 1024 64 64 0 256 256 "
     "65536 2 1 1 170 510 9472 23296 2 2 86 2 86 86 1 86 1 4096 0 4096 46592 2048 2048 ",
     17567744, 64),
]


@pytest.mark.parametrize("name,context,plat,key,expected,ws,block_dim", UT_SUCCESS,
                         ids=[c[0] for c in UT_SUCCESS])
def test_upstream_ut_success(name, context, plat, key, expected, ws, block_dim):
    assert_succeeded(tiling_func(context, plat), key, expected, block_dim, [ws])


def test_upstream_ut_vbs_ceil_align_branch():
    """Upstream asserts key 6 only. 100000 elements: ceil(100000 / 8096) = 13 -> 4 ** 2 = 16
    cores; 100000 // 16 = 6250, floor-aligned 6240 leaves the last core 100000 - 15 * 6240 =
    6400 > the ceil-aligned 6272, so 6272 per core and ceil(100000 / 6272) = 16 cores; the last
    takes 100000 - 15 * 6272 = 5920."""
    r = tiling_func(ctx((20000, 5), (20000, 5), (20000, 5), ((4096, 5), (100000,), (4096,)),
                        [0, 4096]), UT)
    assert r.tiling_key == 6
    vbs = r.tiling_data.vbsComputeParamsOp
    assert (vbs.needCoreNum, vbs.perCoreElements, vbs.lastCoreElements) == (16, 6272, 5920)


UT_FAILED = [
    # tokens dim0 16384 != indices dim0 2
    ("moe_token_permute_with_ep_tiling_error",
     ctx((N16K, 5), (2, 3), (N16K, 3), ((4096, 5), (N16K * 3,), (4096,)), [0, 4096]),
     "tokens_indices_dim0"),
    ("moe_token_permute_with_ep_tiling_padded_mode_true",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (6,), (4,)), [0, 6], 6, True), "padded_mode"),
    ("moe_token_permute_with_ep_tiling_range_size_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (6,), (4,)), [0, 6, 1], 6), "range_size"),
    ("moe_token_permute_with_ep_tiling_indices_dim_invalid",
     ctx((2, 5), (2, 3, 1), (2, 3), ((6, 5), (6,), (4,)), [0, 6], 6), "indices_dim_num"),
    ("moe_token_permute_with_ep_tiling_topk_out_of_range",
     ctx((2, 5), (2, 513), (2, 513), ((6, 5), (6,), (4,)), [0, 6], 6), "topk_range"),
    ("moe_token_permute_with_ep_tiling_range_out_of_bounds",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (6,), (4,)), [0, 100], 6), "range_bounds"),
    ("moe_token_permute_with_ep_tiling_output_indices_dim_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (2, 3), (4,)), [0, 6], 6), "out_indices_dim_num"),
    ("moe_token_permute_with_ep_tiling_output_token_dim_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6,), (6,), (4,)), [0, 6], 6), "out_tokens_dim_num"),
    # probs (2, 5) vs indices (2, 3)
    ("moe_token_permute_with_ep_tiling_probs_dim_mismatch",
     ctx((2, 5), (2, 3), (2, 5), ((6, 5), (6,), (4,)), [0, 6], 6), "indices_probs_dim1"),
    ("moe_token_permute_with_ep_tiling_output_indices_size_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (4,), (4,)), [0, 6], 6), "out_indices_size"),
    ("moe_token_permute_with_ep_tiling_output_hidden_size_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6, 8), (6,), (4,)), [0, 6], 6), "out_hidden_size"),
    ("moe_token_permute_with_ep_tiling_output_token_num_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((4, 5), (6,), (4,)), [0, 6], 6), "out_tokens_num"),
    ("moe_token_permute_with_ep_tiling_probs_dim_num_mismatch",
     ctx((2, 5), (2, 3), (6,), ((6, 5), (6,), (4,)), [0, 6], 6), "probs_indices_dim_num"),
    ("moe_token_permute_with_ep_tiling_probs_token_dim_mismatch",
     ctx((2, 5), (2, 3), (4, 3), ((6, 5), (6,), (4,)), [0, 6], 6), "tokens_probs_dim0"),
    ("moe_token_permute_with_ep_tiling_output_probs_dim_invalid",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (6,), (6, 1)), [0, 6], 6), "out_probs_dim_num"),
    # range [0, 6] keeps 6 rows, the probs output has 4
    ("moe_token_permute_with_ep_tiling_output_probs_size_mismatch",
     ctx((2, 5), (2, 3), (2, 3), ((6, 5), (6,), (4,)), [0, 6], 6), "out_probs_size"),
    ("moe_token_permute_with_ep_tiling_probs_3d",
     ctx((2, 5), (2, 3), (2, 3, 1), ((6, 5), (6,), (6,)), [0, 6], 6), "probs_dim_num"),
    # 32768 x 512 = 16777216 >= 16777215
    ("moe_token_permute_with_ep_tiling_sort_limit_exceeded",
     ctx((32768, 5), (32768, 512), (32768, 512),
         ((32768 * 512, 5), (32768 * 512,), (32768 * 512,)), [0, 32768 * 512], 32768 * 512),
     "sort_limit"),
]


@pytest.mark.parametrize("name,context,rule", UT_FAILED, ids=[c[0] for c in UT_FAILED])
def test_upstream_ut_failed(name, context, rule):
    assert_failed(tiling_func(context, UT), rule)


def test_upstream_ut_tiling_parse():
    assert TilingPrepareForMoeTokenPermuteWithEp(None) == GRAPH_SUCCESS


def test_upstream_ut_data_accessor_layout():
    """The data-accessor UTs set and read fields; here: 46 fields round-trip in order."""
    td = TilingData.from_list(list(range(N_FIELDS)))
    assert td.as_list() == list(range(46))
    assert td.vbsComputeParamsOp.needCoreNum == 5  # after the 5 head fields
    assert td.indexCopyComputeParamsOp.probsUB == 45
    assert len(td.to_bytes()) == 46 * 8


# --------------------------------------------------------------------------------------------
# beyond upstream's UT
# --------------------------------------------------------------------------------------------


def test_helpers():
    assert [CeilLog4(x) for x in (1, 2, 4, 5, 16, 17)] == [0, 1, 1, 2, 2, 3]
    # merge rounds of x lists four at a time, parity: 1 -> 1 round (1), 4 -> 1, 5 -> 2 (0)
    assert [VmsLoops(x) for x in (1, 4, 5, 16, 17)] == [1, 1, 0, 0, 1]


def test_deepseek_v3_rank_on_a2():
    """4096 tokens x top-8 = 32768 ids on A2 (48 AIV, UB 196352): sortLoopMax
    (196352 - 48 * 32) // 32 = 6088 -> 6080; ceil(32768 / 6080) = 6 -> 4 ** 2 = 16 cores of
    2048; rows of 7168 bf16 = 14336 B: (196352 - 96) // (28672 + 128) = 6 rows a move; 4096
    tokens over 48 cores: 16 cores take 86, 32 take 85. EP window 4096 rows of 32768 -> key
    2 + 4 = 6; ws 32768 * 16 + 48 * 64 + 16 MiB = 17304576."""
    r = tiling_func(TilingContext.create(
        TensorDesc((4096, 7168), BF16), TensorDesc((4096, 8), I32), TensorDesc((4096, 8), BF16),
        outputs=[TensorDesc((4096, 7168), BF16), TensorDesc((32768,), I32),
                 TensorDesc((4096,), BF16)], range=[4096, 8192]), A2)
    assert r.ok and r.tiling_key == 6 and r.block_dim == 48
    d = r.tiling_data.flat_dict()
    assert d["vbsComputeParamsOp.oneLoopMaxElements"] == 6080
    assert (d["vbsComputeParamsOp.needCoreNum"], d["vbsComputeParamsOp.perCoreElements"]) == \
        (16, 2048)
    assert d["vmsMiddleComputeParamsOp.needCoreNum"] == 4
    ic = r.tiling_data.indexCopyComputeParamsOp
    assert (ic.frontCoreNum, ic.tailCoreNum, ic.coreCalcNum, ic.coreCalcTail) == (16, 32, 86, 85)
    assert (ic.onceUbTokenNums, ic.numOutTokens, ic.start, ic.end) == (6, 4096, 4096, 8192)
    assert r.workspace == [17304576]


def test_missing_attrs_and_inputs_fail_named():
    outs = [TensorDesc((6, 5), BF16), TensorDesc((6,), I32)]
    r = tiling_func(TilingContext.create(TensorDesc((2, 5), BF16), TensorDesc((2, 3), I32),
                                         outputs=outs, range=None, num_out_tokens=None), UT)
    assert r.rule == "null_attr"
    r = tiling_func(TilingContext.create(None, TensorDesc((2, 3), I32), outputs=outs,
                                         range=[0, 6]), UT)
    assert r.rule == "null_desc"
    # no range: [0, num_out_tokens]; num_out_tokens 0 -> every row (0 + 6)
    r = tiling_func(TilingContext.create(TensorDesc((2, 5), BF16), TensorDesc((2, 3), I32),
                                         outputs=outs, range=None, num_out_tokens=0), UT)
    assert r.ok and r.tiling_key == 1
    assert r.tiling_data.indexCopyComputeParamsOp.numOutTokens == 6
