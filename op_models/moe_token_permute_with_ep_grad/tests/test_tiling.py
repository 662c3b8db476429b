"""Tests of the ``MoeTokenPermuteWithEpGrad`` host tiling port (``op_models/.../tiling.py``).

``test_upstream_ut_*`` port every case of upstream's unit test
``moe/moe_token_permute_with_ep_grad/tests/ut/op_host/test_moe_token_permute_with_ep_grad_tiling.cpp``
at hicann/ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f`` on the same fake
platform (64 AIV, ub_size 262144 -> GetCoreMemSize 261888; three cases set ub_size 8192 /
4096 / 2048 -> 7936 / 3840 / 1792). Upstream asserts the status and the tiling key only; here
every one of the 15 fields and the block dim is asserted too, each derived by hand in the
comment beside it. An upstream input of shape ``{}`` (the "no probs" cases) is an absent input
for the UT harness, hence ``None`` here.

Arithmetic used throughout (``unit(b)`` = UB bytes per hidden element with ``b`` input buffers:
``size * (2 + b - 1) + 4 * 2`` for 2-byte dtypes, ``4 * (2 + b - 1)`` for fp32; ``maxH(b)`` =
``AlignN((UB - 5120) // unit(b) - 512, 512)``):

* UB 261888, bf16 / fp16: ``maxH(2)`` = 256768 // 14 = 18340 -> 17828 -> 17920;
  ``maxH(4)`` = 256768 // 18 = 14264 -> 13752 -> 13824;
* UB 261888, fp32: ``maxH(2)`` = 256768 // 12 = 21397 -> 20885 -> 20992; ``maxH(4)`` =
  256768 // 20 = 12838 -> 12326 -> 12800.
"""

from __future__ import annotations

import pytest

from aicore_sim.ascendc.host import TensorDesc
from aicore_sim.ascendc.platform_ascendc import PlatformAscendC
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_permute_with_ep_grad.infershape import (
    InferDataTypeForMoeTokenPermuteWithEpGrad,
    InferShapeForMoeTokenPermuteWithEpGrad,
)
from op_models.moe_token_permute_with_ep_grad.tiling import (
    GRAPH_SUCCESS,
    N_FIELDS,
    AlignN,
    TilingContext,
    TilingData,
    TilingMoeTokenPermuteWithEpGrad,
    TilingPrepareForMoeTokenPermuteWithEpGrad,
    tiling_func,
)
from tests.moe_tiling_ut import A2, UT, assert_failed, assert_succeeded, ut_and_a2, ut_platform

UT_8K, UT_4K, UT_2K = ut_platform(8192), ut_platform(4096), ut_platform(2048)
BF16, FP16, FP32, I32, I64 = "DT_BF16", "DT_FLOAT16", "DT_FLOAT", "DT_INT32", "DT_INT64"


def test_platforms_are_what_the_tests_assume() -> None:
    assert ut_and_a2() == (64, 261888, 48, 196352)
    assert (UT_8K.GetCoreMemSize(), UT_4K.GetCoreMemSize(), UT_2K.GetCoreMemSize()) == \
        (7936, 3840, 1792)


def ctx(grad, indices, probs, topk, range_, dt=BF16, idt=I32):
    """An upstream UT context: the three input shapes (probs ``None`` = the harness's empty
    shape), dtypes, ``num_topk``, ``range`` and ``padded_mode`` false."""
    return TilingContext.create(
        TensorDesc(grad, dt), TensorDesc(indices, idt),
        None if probs is None else TensorDesc(probs, dt),
        num_topk=topk, range=range_, padded_mode=False)


def fields(hidden, start, end, num_out, hsl, hsn, hsr, tcl, tcr, tsl, tsn, tsr, buf,
           top_k=8, ppgl=1):
    """The 15 fields in upstream order (``ppgl`` = permuted_probs_grad_length)."""
    return [hidden, ppgl, top_k, start, end, num_out, hsl, hsn, hsr, tcl, tcr, tsl, tsn, tsr,
            buf]


# (name, context, platform, key, 15 fields, block dim)
UT_SUCCESS = [
    # 49152 slots / K 8 = 6144 tokens on 64 cores = 96 each, remain 0; H 5120 (aligned 5120)
    # <= maxH(2) 17920 -> one chunk; 5120 <= maxH(4) 13824 -> 4 buffers; UB left 261888 -
    # 5120 * 18 - 256 = 169472 >= 96 * 8 * 4 = 3072 -> one loop of 96 tokens; probs -> key 1.
    ("test_tiling_bf16",
     ctx((49151, 5120), (49152,), (49151,), 8, [1, 49152]), UT, 1,
     fields(5120, 1, 49152, 49151, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
    ("test_tiling_fp16",
     ctx((49151, 5120), (49152,), (49151,), 8, [1, 49152], FP16), UT, 1,
     fields(5120, 1, 49152, 49151, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
    # fp32: 5120 <= maxH(2) 20992 and <= maxH(4) 12800 -> 4 buffers (UB left 261888 - 5120 * 20
    # - 256 = 159232, still >= 3072)
    ("test_tiling_fp32",
     ctx((49151, 5120), (49152,), (49151,), 8, [1, 49152], FP32), UT, 1,
     fields(5120, 1, 49152, 49151, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
    # as bf16 without probs -> key 0; 49152 rows of the grad, range [0, 49152]
    ("test_tiling_no_probs_bf16",
     ctx((49152, 5120), (49152,), None, 8, [0, 49152]), UT, 0,
     fields(5120, 0, 49152, 49152, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
    # 128 slots / 8 = 16 tokens -> 16 cores of 1; H 128 aligns to 512 <= 17920 -> one chunk of
    # 128; UB left 261888 - 512 * 18 - 256 = 252416 >= 1 * 8 * 4
    ("test_tiling_small_shape",
     ctx((16, 128), (128,), (128,), 8, [0, 16]), UT, 1,
     fields(128, 0, 16, 16, 128, 1, 0, 1, 0, 1, 1, 0, 4), 16),
    # 131072 / 8 = 16384 tokens / 64 cores = 256; 256 * 8 * 4 = 8192 <= 169472 -> one loop
    ("test_tiling_multi_core",
     ctx((16384, 5120), (131072,), (131072,), 8, [0, 16384]), UT, 1,
     fields(5120, 0, 16384, 16384, 5120, 1, 0, 256, 0, 256, 1, 0, 4), 64),
    # H 32768 > maxH(2) 17920 -> chunks of 17920: 32768 // 17920 = 1, remain 14848; buffers:
    # 17920 > maxH(4) 13824, > maxH(3) = AlignN(256768 // 16 - 512 = 15536) = 15872 -> 2;
    # UB left 261888 - 17920 * 14 - 256 = 10752 >= 4 * 8 * 4 (2048 / 8 = 256 tokens, 4 a core)
    ("test_tiling_long_hidden",
     ctx((256, 32768), (2048,), (2048,), 8, [0, 256]), UT, 1,
     fields(32768, 0, 256, 256, 17920, 1, 14848, 4, 0, 4, 1, 0, 2), 64),
    # range of 3 values: Init returns before the shapes, so tokensNum 0 -> 0 cores; H 0
    # aligns to 0 <= 17920 -> length 0, num 1; buffers 4; UB left 261888 - 0 - 256; 0 tokens
    # a core fit -> num 1; no haveProbs -> key 0; top_k, start, end, rows, ppgl all 0
    ("test_tiling_range_size_invalid",
     ctx((16, 128), (128,), (128,), 8, [0, 16, 1]), UT, 0,
     fields(0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 4, top_k=0, ppgl=0), 0),
    # int64 indices: 1 token a core x 8 x 8 bytes = 64 still fits -> as small_shape
    ("test_tiling_int64_indices",
     ctx((16, 128), (128,), (128,), 8, [0, 16], idt=I64), UT, 1,
     fields(128, 0, 16, 16, 128, 1, 0, 1, 0, 1, 1, 0, 4), 16),
    # UB 7936: maxH(2) = AlignN(2816 // 14 - 512 = -311, 512) = 200 & ~511 = 0 -> H 8192 does
    # not fit: length 0, num and remain 0 (safeDiv / safeMod by 0); maxH(4) = AlignN(156 -
    # 512) = 0 and 0 > 0 is false -> 4 buffers; UB left 7936 - 0 - 256 = 7680 >= 64 * 8 * 4
    # (32768 / 8 = 4096 tokens, 64 a core)
    ("test_tiling_tight_ub_token_split",
     ctx((4096, 8192), (32768,), (32768,), 8, [0, 4096]), UT_8K, 1,
     fields(8192, 0, 4096, 4096, 0, 0, 0, 64, 0, 64, 1, 0, 4), 64),
    # UB 3840 < the 5120 reserve: maxH(2) = AlignN(-1280 / 14 = -91 (C) - 512 = -603) = -92 &
    # ~511 = -512; H 65536: 65536 / -512 = -128, remainder 0; maxH(4) = AlignN(-71 - 512) =
    # -512, not exceeded -> 4; UB left 3840 - AlignN(-512) * 18 - 256 = 3840 + 9216 - 256 =
    # 12800 >= 128 * 8 * 4 (65536 / 8 = 8192 tokens, 128 a core)
    ("test_tiling_extreme_ub_token_split",
     ctx((8192, 65536), (65536,), (65536,), 8, [0, 8192]), UT_4K, 1,
     fields(65536, 0, 8192, 8192, -512, -128, 0, 128, 0, 128, 1, 0, 4), 64),
    # UB 1792: maxH(2) = AlignN(-3328 / 14 = -237 - 512 = -749) = -238 & ~511 = -512; 32768 /
    # -512 = -64; maxH(4) = AlignN(-184 - 512) = -512 -> 4; UB left 1792 + 9216 - 256 = 10752
    # >= 256 * 8 * 4 = 8192 (16384 tokens, 256 a core)
    ("test_tiling_minimal_ub_multi_core",
     ctx((16384, 32768), (131072,), (131072,), 8, [0, 16384]), UT_2K, 1,
     fields(32768, 0, 16384, 16384, -512, -64, 0, 256, 0, 256, 1, 0, 4), 64),
    ("test_tiling_no_probs_fp16",
     ctx((49152, 5120), (49152,), None, 8, [0, 49152], FP16), UT, 0,
     fields(5120, 0, 49152, 49152, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
    ("test_tiling_no_probs_fp32",
     ctx((49152, 5120), (49152,), None, 8, [0, 49152], FP32), UT, 0,
     fields(5120, 0, 49152, 49152, 5120, 1, 0, 96, 0, 96, 1, 0, 4), 64),
]


@pytest.mark.parametrize("name,context,plat,key,expected,block_dim", UT_SUCCESS,
                         ids=[c[0] for c in UT_SUCCESS])
def test_upstream_ut_success(name, context, plat, key, expected, block_dim):
    # the upstream tiling sets no workspace
    assert_succeeded(tiling_func(context, plat), key, expected, block_dim, [])


UT_FAILED = [
    ("test_tiling_topk_invalid", ctx((16, 128), (128,), (128,), 0, [0, 16]), "topk_min"),
    ("test_tiling_tokens_not_2d", ctx((16,), (128,), (128,), 8, [0, 16]), "tokens_dim_num"),
    ("test_tiling_probs_not_1d", ctx((16, 128), (128,), (16, 8), 8, [0, 16]), "probs_dim_num"),
]


@pytest.mark.parametrize("name,context,rule", UT_FAILED, ids=[c[0] for c in UT_FAILED])
def test_upstream_ut_failed(name, context, rule):
    assert_failed(tiling_func(context, UT), rule)


def test_upstream_ut_tiling_parse():
    assert TilingPrepareForMoeTokenPermuteWithEpGrad(None) == GRAPH_SUCCESS


def test_range_size_warns():
    r = tiling_func(ctx((16, 128), (128,), (128,), 8, [0, 16, 1]), UT)
    assert any("range has 3 values" in w for w in r.warnings)


def test_upstream_infershape_ut():
    """``MoeTokenPermuteWithEpGrad_infershape_case_0``: grad (49152, 5120), num_topk 8 ->
    token_grad (49152 / 8, 5120) = (6144, 5120); probs_grad left unset ({}). ``infertype_bf16``:
    token_grad takes the grad's dtype."""
    assert InferShapeForMoeTokenPermuteWithEpGrad((49152, 5120), 8) == ((6144, 5120), ())
    assert InferDataTypeForMoeTokenPermuteWithEpGrad("bfloat16") == "bfloat16"


# --------------------------------------------------------------------------------------------
# beyond upstream's UT
# --------------------------------------------------------------------------------------------


def test_tiling_data_layout():
    td = TilingData.from_list(list(range(N_FIELDS)))
    assert td.as_list() == list(range(15))
    assert (td.hidden_size, td.top_k, td.hidden_splited_length, td.buffer_num) == (0, 2, 6, 14)
    assert len(td.to_bytes()) == 15 * 8


def test_align_n_two_complement():
    # -603 + 511 = -92 -> -512; -311 + 511 = 200 -> 0; 5121 + 511 = 5632 -> 5632
    assert [AlignN(x, 512) for x in (-603, -311, 5121, 512)] == [-512, 0, 5632, 512]


def test_deepseek_v3_rank_on_a2():
    """The DeepSeek-V3 layer case on A2 (48 AIV, UB 196352): 32768 slots / 8 = 4096 tokens;
    4096 // 48 = 85, 4096 % 48 = 16 (16 cores take 86). bf16 H 7168: maxH(2) =
    AlignN((196352 - 5120) // 14 = 13659 - 512 = 13147) = 13312 >= 7168 -> one chunk;
    maxH(4) = AlignN(191232 // 18 = 10624 - 512 = 10112) = 10240 >= 7168 -> 4 buffers; UB
    left 196352 - 7168 * 18 - 256 = 67072 >= 85 * 8 * 4 = 2720 -> one loop. EP rank 0 window
    [0, 4099) (4099 rows of the grad: the forward case's routing)."""
    r = tiling_func(ctx((4099, 7168), (32768,), (4099,), 8, [0, 4099]), A2)
    assert r.ok and r.tiling_key == 1 and r.block_dim == 48
    assert r.tiling_data.as_list() == fields(7168, 0, 4099, 4099, 7168, 1, 0, 85, 16, 85, 1,
                                             0, 4)


def test_token_split_on_a_small_ub():
    """A what-if UB where the indices of a core do not fit: UB 16384 -> 16128 (A2 minus
    256); fp32 H 1000: maxH(2) = AlignN((16128 - 5120) // 12 = 917 - 512 = 405) = 512 < 1024
    (1000 aligned) -> chunks of 512: 1000 // 512 = 1, remain 488; maxH(4) = AlignN(550 -
    512 = 38) = 512 -> 4 buffers; UB left 16128 - 512 * 20 - 256 = 5632; 2 cores, 3000 slots
    / K 3 = 1000 tokens, 500 a core: 500 * 3 * 4 = 6000 > 5632 -> 5632 // 12 = 469 tokens a
    loop, 500 // 469 = 1 loop, remain 31."""
    plat = PlatformAscendC(load_platform("ascend910b1").with_overrides(aiv_core_num=2,
                                                                       ub_size=16384))
    r = tiling_func(ctx((3000, 1000), (3000,), None, 3, [0, 3000], FP32), plat)
    assert r.ok and r.tiling_key == 0 and r.block_dim == 2
    assert r.tiling_data.as_list() == fields(1000, 0, 3000, 3000, 512, 1, 488, 500, 0, 469, 1,
                                             31, 4, top_k=3)


def test_num_topk_beyond_int32_gives_top_k_one():
    """``int inputTopK = *tmpTopK``: 2**32 + 8 truncates to 8 (passes ``>= 1``), and Init's
    ``(inputTopK == topK) ? topK : 1`` then keeps 1: 16 slots -> 16 tokens."""
    r = tiling_func(ctx((16, 128), (16,), None, 2**32 + 8, [0, 16]), UT)
    assert r.ok
    assert (r.tiling_data.top_k, r.block_dim) == (1, 16)


def test_missing_num_topk_and_inputs_fail_named():
    r = tiling_func(TilingContext.create(TensorDesc((16, 128), BF16), TensorDesc((128,), I32),
                                         num_topk=None), UT)
    assert r.rule == "null_attr"
    r = tiling_func(TilingContext.create(TensorDesc((16, 128), BF16), None, num_topk=8), UT)
    assert r.rule == "null_desc"


def test_unpermute_flavour_entry():
    """``TilingMoeTokenPermuteWithEpGrad`` (isUnpermute, unregistered upstream): probs 2-D
    (16, 8) in fp16 -> key 2; indices 4 + probs 2 + fp32 copy 4 = 10 bytes a slot; probs
    2-D required, so the 1-D probs of this operator fail there."""
    r = TilingMoeTokenPermuteWithEpGrad(ctx((128, 128), (128,), (16, 8), 8, [0, 128], FP16), UT)
    assert r.ok and r.tiling_key == 2
    assert r.tiling_data.permuted_probs_grad_length == 0
    r = TilingMoeTokenPermuteWithEpGrad(ctx((128, 128), (128,), (128,), 8, [0, 128]), UT)
    assert r.rule == "probs_dim_num"
