"""Tests of the MoeTokenUnpermuteWithEpGrad host tiling port (``op_models/.../tiling.py``).

* ``test_upstream_ut_*``: every case of upstream's tiling unit test at hicann/ops-transformer
  ``6b18be490757f18e42a401373ee48efb50ab2181`` (20 cases, the V3 target), on the same fake
  platform (64 AIV, ub_size 262144 → GetCoreMemSize 261888; odd cases change ub_size exactly as
  upstream's context builder does). Attributes are passed positionally, as upstream's builder
  assigns them, so its quirk (``topk_num`` listed second lands on IR index 1) is reproduced.
  Where upstream asserts only status and key, the full 19-field list is still asserted; those
  values are derived by hand in the comment next to the case.
* ``test_real_*``: the "Real A2/A3" rows of the spec (48 AIV, UB 196352) and 40-core notes.
* ``test_hand_*``: small examples with the arithmetic written out.
* Range normalisation, K bounds, padded mode, empty tensors and other V3 checks.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aicore_sim.ascendc.host import TensorDesc, TilingError
from aicore_sim.ascendc.platform_ascendc import PlatformAscendC
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_unpermute_with_ep_grad.tiling import (
    GRAPH_SUCCESS,
    SYS_WORKSPACE_SIZE,
    GetLengthByType,
    TilingContext,
    TilingData,
    TilingPrepare4MoeTokenUnpermuteWithEpGrad,
    TilingResult,
    tiling_func,
    tiling_or_raise,
)
from tests.moe_tiling_ut import A2, UT, assert_failed, assert_succeeded, ut_and_a2, ut_platform

# --------------------------------------------------------------------------------------------
# Platforms
# --------------------------------------------------------------------------------------------


A3 = PlatformAscendC(load_platform("ascend910_9391"))  # 48 AIV, 196352 B usable UB
A2_40 = PlatformAscendC(load_platform("ascend910b3"))  # 40 AIV, 196352 B usable UB


def test_platforms_are_what_the_tests_assume() -> None:
    assert ut_and_a2() == (64, 261888, 48, 196352)
    assert (A3.GetCoreNumAiv(), A3.GetCoreMemSize()) == (48, 196352)
    assert (A2_40.GetCoreNumAiv(), A2_40.GetCoreMemSize()) == (40, 196352)
    assert [ut_platform(u).GetCoreMemSize() for u in (1024, 256, 4096)] == [768, 0, 3840]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

BF16, FP16, FP32, I32, I64 = "DT_BF16", "DT_FLOAT16", "DT_FLOAT", "DT_INT32", "DT_INT64"


def ut_ctx(
    grad: tuple[tuple[int, ...], object],
    idx: tuple[tuple[int, ...], object],
    perm: tuple[tuple[int, ...], object] | None,
    probs: tuple[tuple[int, ...], object] | None,
    *attrs: object,
) -> TilingContext:
    """A context built like upstream's UT: inputs in IR order, attributes positional."""
    inputs = [TensorDesc(*grad), TensorDesc(*idx)]
    inputs.append(None if perm is None else TensorDesc(*perm))
    inputs.append(None if probs is None else TensorDesc(*probs))
    return TilingContext.positional(inputs, *attrs)


def aclnn_ctx(
    n: int,
    k: int,
    h: int,
    tokens: str,
    probs: str | None,
    *,
    range_: tuple[int, int] | list[int] = (-1, -1),
    topk_num: int | None = None,
    indices: str = I32,
) -> TilingContext:
    """A context as aclnn builds it: every attribute present, null arrays as IR defaults."""
    return TilingContext.create(
        TensorDesc((n, h), tokens),
        TensorDesc((n * k,), indices),
        TensorDesc((n * k, h), tokens),
        None if probs is None else TensorDesc((n, k), probs),
        padded_mode=False,
        restore_shape=[1, 1],
        range=list(range_),
        topk_num=k if topk_num is None else topk_num,
    )


def fields_of(text: str) -> list[int]:
    return [int(v) for v in text.split()]


def assert_success(result: TilingResult, key: int, expected: str, block_dim: int) -> None:
    assert_succeeded(result, key, fields_of(expected), block_dim, [16777216])


# --------------------------------------------------------------------------------------------
# Upstream V3 tiling UT (20 cases)
# --------------------------------------------------------------------------------------------

G64_BF16, G64_FP16, G64_FP32 = ((10, 64), BF16), ((10, 64), FP16), ((10, 64), FP32)
P64_BF16, P64_FP16, P64_FP32 = ((30, 64), BF16), ((30, 64), FP16), ((30, 64), FP32)
G8K_BF16, G8K_FP16, G8K_FP32 = ((10, 8192), BF16), ((10, 8192), FP16), ((10, 8192), FP32)
P8K_BF16, P8K_FP16, P8K_FP32 = ((30, 8192), BF16), ((30, 8192), FP16), ((30, 8192), FP32)
IDX30 = ((30,), I32)

# (name, context, ub_size or None, key, expected 19 fields)
UT_SUCCESS = [
    (
        # Range {-1,-1} = no range in V3 (V0/V1 expected start = end = numOutTokens = 29).
        "prob_not_none_bf16_001",
        ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), BF16), False, [1, 1], [-1, -1], 1),
        None,
        1,
        "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 16 261888 0 30",
    ),
    (
        "prob_not_none_bf16_002",
        ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), FP32), False),
        None,
        1,
        "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 8 261888 0 30",
    ),
    (
        # topk_num 3 is listed second → IR index 1: K = 1 and T = N·K is not checked.
        "prob_none_bf16_001",
        ut_ctx(G64_BF16, IDX30, P64_BF16, None, False, 3),
        None,
        0,
        "10 1 64 30 10 54 1 0 1 0 64 1 64 984 984 984 261888 0 30",
    ),
    (
        "prob_not_none_split_h_bf16_001",
        ut_ctx(G8K_BF16, IDX30, P8K_BF16, ((10, 3), BF16), False),
        None,
        1,
        "10 3 8192 30 10 54 1 0 3 0 8192 1 8192 1 3 16 261888 0 30",
    ),
    (
        "prob_not_none_fp16_001",
        ut_ctx(G64_FP16, IDX30, P64_FP16, ((10, 3), FP16), False),
        None,
        1,
        "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 16 261888 0 30",
    ),
    (
        "prob_none_fp16_001",
        ut_ctx(G64_FP16, IDX30, P64_FP16, None, False, 3),
        None,
        0,
        "10 1 64 30 10 54 1 0 1 0 64 1 64 984 984 984 261888 0 30",
    ),
    (
        "prob_not_none_split_h_fp16_001",
        ut_ctx(G8K_FP16, IDX30, P8K_FP16, ((10, 3), FP16), False),
        None,
        1,
        "10 3 8192 30 10 54 1 0 3 0 8192 1 8192 1 3 16 261888 0 30",
    ),
    (
        "prob_not_none_split_h_fp16_002",
        ut_ctx(G8K_FP16, IDX30, P8K_FP16, ((10, 3), FP32), False),
        None,
        1,
        "10 3 8192 30 10 54 1 0 3 0 8192 1 8192 1 3 8 261888 0 30",
    ),
    (
        "prob_not_none_fp32_001",
        ut_ctx(G64_FP32, IDX30, P64_FP32, ((10, 3), FP32), False),
        None,
        1,
        "10 3 64 30 10 54 1 0 3 0 128 1 64 3 3 8 261888 0 30",
    ),
    (
        # hA = up(64, 8) = 64; E0 = (261888-64) / (2·(64·4 + 1·4)) = 261824/520 = 503;
        # E = up(503, 8) = 504; hMax = (261888 - 2·4·504) / (2·4·504) = 257856/4032 = 63 < 64
        # → hA = down(63, 8) = 56, loops = 2, tail = 64 - 56 = 8.
        "prob_none_fp32_001",
        ut_ctx(G64_FP32, IDX30, P64_FP32, None, False, 3),
        None,
        0,
        "10 1 64 30 10 54 1 0 1 0 56 2 8 504 504 504 261888 0 30",
    ),
    (
        # hA = 8192, E = 3, EA = 8; Rmax = (261888 - 128 - 96 - 256 - 28·8192) / (8·8192)
        # = 32032/65536 = 0 → split: hMax = 261408/36 = 7261 → down(7261, 128) = 7168,
        # loops = 2, tail = 8192 - 7168 = 1024.
        "prob_not_none_split_h_fp32_001",
        ut_ctx(G8K_FP32, IDX30, P8K_FP32, ((10, 3), FP32), False),
        None,
        1,
        "10 3 8192 30 10 54 1 0 3 0 7168 2 1024 1 3 8 261888 0 30",
    ),
    (
        "prob_not_none_split_h_fp32_002",
        ut_ctx(G8K_FP32, IDX30, P8K_FP32, ((10, 3), BF16), False),
        None,
        1,
        "10 3 8192 30 10 54 1 0 3 0 7168 2 1024 1 3 16 261888 0 30",
    ),
    (
        # Upstream asserts success + key 1 only. Path B never uses the index dtype length, so
        # the fields equal prob_not_none_fp16_001's.
        "indices_int64_dtype",
        ut_ctx(G64_FP16, ((30,), I64), P64_FP16, ((10, 3), FP16), False),
        None,
        1,
        "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 16 261888 0 30",
    ),
    (
        # Upstream asserts success + key 0 only (ub_size 1024 → 768). t = 2, r = 4:
        # hA = 8192; E0 = (768-64) / (2·(8192·2 + 4)) = 704/32776 = 0; E = max(0, 1) = 1
        # → up(1, 8) = 8; hMax = (768 - 2·4·8) / (2·2·8) = 704/32 = 22 < 8192
        # → hA = down(22, 16) = 16, loops = 8192/16 = 512, tail 16. numOut = perm dim0 = 10.
        "prob_none_extreme_small_ub",
        ut_ctx(((10, 8192), FP16), ((10,), I32), ((10, 8192), FP16), None, False, 1),
        1024,
        0,
        "10 1 8192 10 10 54 1 0 1 0 16 512 16 8 8 8 768 0 10",
    ),
    (
        # Upstream asserts success + key 0 only (ub_size 256 → 0). uint64 wrap:
        # E0 = (2^64 - 64) // (2·(4096·2 + 4)) = 18446744073709551552 // 16392
        #    = 1125350419333183; E ≥ 512 → down(E0, 8) = 1125350419333176;
        # hMax = (2^64 - 8·E) // (4·E) = 18437741270354886208 // 4501401677332704 = 4096
        # → not < 4096, so hA = 4096, loops 1, tail 4096.
        "prob_none_tiny_ub",
        ut_ctx(((4, 4096), FP16), ((4,), I32), ((4, 4096), FP16), None, False, 1),
        256,
        0,
        "4 1 4096 4 4 60 1 0 1 0 4096 1 4096 "
        "1125350419333176 1125350419333176 1125350419333176 0 0 4",
    ),
]

UT_FAILED = [
    (
        "prob_not_none_split_h_fp32_error_indices",
        ut_ctx(G8K_FP32, ((30, 1), I32), P8K_FP32, ((10, 3), FP32), False),
        None,
        "indices_dim_num",
    ),
    (
        "tokens_unknown_dtype",  # permuted_tokens dtype (enum 100) != grad dtype
        ut_ctx(G64_FP16, ((30,), I32), ((30, 64), 100), None, False, 3),
        None,
        "dtype_mismatch",
    ),
    (
        "rowidmap_unknown_dtype",  # V3: a dtype length of 0 fails (V1 "succeeded")
        ut_ctx(G64_FP16, ((30,), 100), P64_FP16, None, False, 3),
        None,
        "dtype_length",
    ),
    (
        # ub_size 4096 → 3840. hA = 8192, E = 3, EA = 8: Rmax = int64(3360 - 28·8192)/65536
        # = -226016/65536 = -3 (truncating) → split: hMax = 3360/36 = 93 → down(93, 128) = 0
        # → fail (V3; V1 "succeeded" with fields 10-15 at 0).
        "prob_not_none_small_ub_failed",
        ut_ctx(G8K_FP32, IDX30, P8K_FP32, ((10, 3), FP32), False),
        4096,
        "split_prob_not_none",
    ),
]


@pytest.mark.parametrize(
    ("ctx", "ub_size", "key", "expected"),
    [c[1:] for c in UT_SUCCESS],
    ids=[c[0] for c in UT_SUCCESS],
)
def test_upstream_ut_success(
    ctx: TilingContext, ub_size: int | None, key: int, expected: str
) -> None:
    assert_success(tiling_func(ctx, ut_platform(ub_size)), key, expected, block_dim=64)


@pytest.mark.parametrize(
    ("ctx", "ub_size", "rule"),
    [c[1:] for c in UT_FAILED],
    ids=[c[0] for c in UT_FAILED],
)
def test_upstream_ut_failed(ctx: TilingContext, ub_size: int | None, rule: str) -> None:
    assert_failed(tiling_func(ctx, ut_platform(ub_size)), rule)


def test_upstream_ut_tiling_parse() -> None:
    assert TilingPrepare4MoeTokenUnpermuteWithEpGrad(object()) == GRAPH_SUCCESS


def test_upstream_ut_case_count() -> None:
    # 15 successes + 4 failures + tiling_parse = the 20 cases of the V3 UT file.
    assert len(UT_SUCCESS) + len(UT_FAILED) + 1 == 20


# --------------------------------------------------------------------------------------------
# Real A2/A3 rows (spec §3.10) and the 40-core notes
# --------------------------------------------------------------------------------------------

REAL_ROWS = [
    (
        # Upstream ST shape. hA = 5376; E0 = (196352-64) / (2·(5376·2 + 4)) = 196288/21512 = 9
        # → up(9, 8) = 16; hMax = (196352 - 128) / (2·2·16) = 3066 < 5376 → hA = down(3066,16)
        # = 3056, loops 2, tail 2320.
        "st_bf16_none_n9638_k1_h5376",
        aclnn_ctx(9638, 1, 5376, BF16, None),
        0,
        "9638 1 5376 9638 38 10 201 200 201 200 3056 2 2320 16 16 16 196352 0 9638",
    ),
    (
        "bf16_fp32_n4096_k8_h7168",
        aclnn_ctx(4096, 8, 7168, BF16, FP32),
        1,
        "4096 8 7168 32768 16 32 86 85 688 680 7168 1 7168 1 256 256 196352 0 32768",
    ),
    (
        "bf16_fp32_n4096_k8_h7168_range_8192_16384",
        aclnn_ctx(4096, 8, 7168, BF16, FP32, range_=(8192, 16384)),
        1,
        "4096 8 7168 16384 16 32 86 85 688 680 7168 1 7168 1 256 256 196352 8192 16384",
    ),
    (
        "bf16_bf16_n4096_k8_h4096",
        aclnn_ctx(4096, 8, 4096, BF16, BF16),
        1,
        "4096 8 4096 32768 16 32 86 85 688 680 4096 1 4096 4 256 256 196352 0 32768",
    ),
    (
        "bf16_none_n4096_k8_h7168",
        aclnn_ctx(4096, 8, 7168, BF16, None),
        0,
        "4096 8 7168 32768 16 32 86 85 688 680 7168 1 7168 48 48 48 196352 0 32768",
    ),
    (
        "fp32_fp32_n4096_k8_h4096",
        aclnn_ctx(4096, 8, 4096, FP32, FP32),
        1,
        "4096 8 4096 32768 16 32 86 85 688 680 4096 1 4096 2 256 256 196352 0 32768",
    ),
    (
        "bf16_bf16_n64_k300_h2048",
        aclnn_ctx(64, 300, 2048, BF16, BF16),
        1,
        "64 300 2048 19200 16 32 2 1 600 300 2048 1 2048 15 300 304 196352 0 19200",
    ),
    (
        "fp32_fp32_n100_k512_h16384",
        aclnn_ctx(100, 512, 16384, FP32, FP32),
        1,
        "100 512 16384 51200 4 44 3 2 1536 1024 4992 4 1408 1 512 512 196352 0 51200",
    ),
]


@pytest.mark.parametrize("platform", [A2, A3], ids=["ascend910b1", "ascend910_9391"])
@pytest.mark.parametrize(
    ("ctx", "key", "expected"), [r[1:] for r in REAL_ROWS], ids=[r[0] for r in REAL_ROWS]
)
def test_real_a2_a3(platform: PlatformAscendC, ctx: TilingContext, key: int, expected: str) -> None:
    assert_success(tiling_func(ctx, platform), key, expected, block_dim=48)


def test_real_40_cores_inter_core_split() -> None:
    # 4096 = 40·102 + 16 → 16 former cores with 103 tokens, 24 tail cores with 102.
    data = tiling_func(aclnn_ctx(4096, 8, 7168, BF16, FP32), A2_40).tiling_data
    assert data is not None
    assert (data.formerCoreNum, data.tailCoreNum) == (16, 24)
    assert (data.tokenNumEachCore, data.tokenNumTailCore) == (103, 102)
    assert (data.rowIdMapEachCore, data.rowIdMapTailCore) == (824, 816)


@pytest.mark.parametrize(
    ("platform", "cores", "e", "ea"), [(A2, 48, 42, 48), (A2_40, 40, 50, 64)], ids=["48", "40"]
)
def test_real_path_b_e_depends_on_core_count(
    platform: PlatformAscendC, cores: int, e: int, ea: int
) -> None:
    # fp16/fp16, N 1000, K 2, H 1024. 48 cores: eachTok = ⌈1000/48⌉ = 21 → E = min(42, 256) = 42,
    # EA = up(42, 16) = 48. 40 cores: eachTok = 25 → E = 50, EA = up(50, 16) = 64.
    result = tiling_func(aclnn_ctx(1000, 2, 1024, FP16, FP16), platform)
    assert result.ok and result.tiling_data is not None
    assert result.block_dim == cores
    assert (result.tiling_data.indicesReserveNum, result.tiling_data.indicesReserveNumAlign) == (
        e,
        ea,
    )


# --------------------------------------------------------------------------------------------
# Hand derivations on a small what-if platform (4 AIV)
# --------------------------------------------------------------------------------------------


def small_platform(usable_ub: int) -> PlatformAscendC:
    """4 AIV cores; ``usable_ub`` is what GetCoreMemSize returns (ub_size − 256)."""
    p = load_platform("ut-fake-910b").with_overrides(aiv_core_num=4, ub_size=usable_ub + 256)
    return PlatformAscendC(p)


def test_hand_path_a_no_split() -> None:
    # bf16, N 10, K 2 (topk_num at IR index 3), H 100, usable UB 4096, 4 cores.
    # Inter-core: 10 = 4·2 + 2 → former 2 (3 tokens, 6 positions), tail 2 (2 tokens, 4).
    # t = 2, r = 4: hA = up(100, 16) = 112; E0 = (4096 - 64) / (2·(112·2 + 2·4)) = 4032/464 = 8;
    # E = max(8·2, 2) = 16 → up(16, 8) = 16; hMax = (4096 - 2·4·16) / (2·2·(16/2)) = 3968/32
    # = 124 ≥ 112 → no split: loops 1, tail 100. numOut = T = 20.
    result = tiling_func(aclnn_ctx(10, 2, 100, BF16, None), small_platform(4096))
    assert_success(result, 0, "10 2 100 20 2 2 3 2 6 4 112 1 100 16 16 16 4096 0 20", 4)


def test_hand_path_b_group_of_two() -> None:
    # fp32/fp32, N 10, K 2, H 100, usable UB 8192, 4 cores (eachTok 3).
    # hA = up(100, 128) = 128; E = min(3·2, down(256, 2)) = 6; EA = up(6, 8) = 8.
    # fixed = 2·4·8·2 + 8·4·3 + 256 = 128 + 96 + 256 = 480; per-hidden = (2·4·2 + 12)·128 = 3584
    # Rmax = (8192 - 480 - 3584) / (2·4·128) = 4128/1024 = 4 → min(4, K=2) = 2 → R = 2.
    result = tiling_func(aclnn_ctx(10, 2, 100, FP32, FP32), small_platform(8192))
    assert_success(result, 1, "10 2 100 20 2 2 3 2 6 4 128 1 100 2 6 8 8192 0 20", 4)


def test_hand_path_b_split_hidden() -> None:
    # fp16/fp16, N 10, K 2, H 1000, usable UB 8192, 4 cores.
    # hA = up(1000, 256) = 1024; E = 6; EA = up(6, 16) = 16; fixed = 2·2·16·2 + 16·12 + 256 = 576;
    # Rmax = int64(8192 - 576 - (2·2·2 + 12)·1024) / (2·2·1024) = -12864/4096 = -3 → split:
    # hMax = (8192 - 576) / (3·2·2 + 12) = 7616/24 = 317 → down(317, 256) = 256;
    # loops = ⌈1000/256⌉ = 4, tail = 1000 - 3·256 = 232, R = 1.
    result = tiling_func(aclnn_ctx(10, 2, 1000, FP16, FP16), small_platform(8192))
    assert_success(result, 1, "10 2 1000 20 2 2 3 2 6 4 256 4 232 1 6 16 8192 0 20", 4)


def test_hand_path_b_too_small_fails() -> None:
    # Same as the group-of-two case with usable UB 4096: Rmax = (4096 - 480 - 3584)/1024 = 0
    # → split: hMax = (4096 - 480)/36 = 100 → down(100, 128) = 0 → the intra-core split fails.
    result = tiling_func(aclnn_ctx(10, 2, 100, FP32, FP32), small_platform(4096))
    assert_failed(result, "split_prob_not_none")
    # Upstream's (misleading) range message is still logged after the split error.
    assert any("rangeOptional[1]" in line for line in result.log)


# --------------------------------------------------------------------------------------------
# Range normalisation (§3.8)
# --------------------------------------------------------------------------------------------


def window(result: TilingResult) -> tuple[int, int, int]:
    assert result.ok, result.error
    assert result.tiling_data is not None
    d = result.tiling_data
    return d.start, d.end, d.numOutTokens


@pytest.mark.parametrize(
    ("range_", "expected"),
    [
        ((-1, -1), (0, 30, 30)),  # the exact pair {-1,-1} means "no range" (V3)
        ((-10, -1), (20, 29, 29)),  # both wrap by +T; start ≠ 0 → numOut = end
        ((0, -1), (0, 29, 30)),  # start 0 → numOut stays T
        ((5, 100), (5, 30, 30)),  # end clamped to T
        ((-100, 10), (0, 10, 30)),  # start wraps to -70, clamped to 0
        ((0, 0), (0, 0, 30)),  # empty window is allowed
        ((30, 30), (30, 30, 30)),
        ((12, 18), (12, 18, 18)),
    ],
)
def test_range_normalisation(range_: tuple[int, int], expected: tuple[int, int, int]) -> None:
    ctx = aclnn_ctx(10, 3, 64, BF16, BF16, range_=range_)
    assert window(tiling_func(ctx, UT)) == expected


@pytest.mark.parametrize(
    ("range_", "expected"), [((0, -1), (0, 32767, 32768)), ((-8192, -1), (24576, 32767, 32767))]
)
def test_range_negative_examples_t32768(
    range_: tuple[int, int], expected: tuple[int, int, int]
) -> None:
    ctx = aclnn_ctx(4096, 8, 7168, BF16, FP32, range_=range_)
    assert window(tiling_func(ctx, A2)) == expected


def test_range_absent_is_full_window() -> None:
    ctx = TilingContext.create(
        TensorDesc((10, 64), BF16),
        TensorDesc((30,), I32),
        TensorDesc((30, 64), BF16),
        TensorDesc((10, 3), BF16),
    )
    assert window(tiling_func(ctx, UT)) == (0, 30, 30)


@pytest.mark.parametrize("range_", [(20, 10), (-1, 5), (29, -2)])
def test_range_end_before_start_fails(range_: tuple[int, int]) -> None:
    # (-1, 5): only the exact pair {-1,-1} is special, so start = 29 > end = 5.
    result = tiling_func(aclnn_ctx(10, 3, 64, BF16, BF16, range_=range_), UT)
    assert_failed(result, "range_order")
    assert "range[1] must not be less than range[0]" in (result.error or "")


@pytest.mark.parametrize("range_", [[3], [0, 10, 20], []])
def test_range_size_not_two_bug(range_: list[int]) -> None:
    # Bug §9 #3: succeeds with numOutTokens/start/end = 0 and the block dim never set.
    result = tiling_func(aclnn_ctx(10, 3, 64, BF16, BF16, range_=range_), UT)
    expected = "10 3 64 0 10 54 1 0 3 0 256 1 64 3 3 16 261888 0 0"
    assert result.ok
    assert result.tiling_key == 1
    assert result.tiling_data is not None
    assert result.tiling_data.as_list() == fields_of(expected)
    assert result.block_dim is None
    assert result.workspace == [SYS_WORKSPACE_SIZE]
    assert any("not 2" in w for w in result.warnings)


# --------------------------------------------------------------------------------------------
# K bounds, T = N·K, attribute-index quirk
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 513])
def test_topk_from_probs_out_of_bounds(k: int) -> None:
    ctx = ut_ctx(G64_BF16, ((10 * k,), I32), ((10 * k, 64), BF16), ((10, k), BF16), False)
    assert_failed(tiling_func(ctx, UT), "topk_range")


@pytest.mark.parametrize("k", [0, -1, 513])
def test_topk_attribute_out_of_bounds(k: int) -> None:
    ctx = aclnn_ctx(10, 3, 64, BF16, None, topk_num=k)
    assert_failed(tiling_func(ctx, UT), "topk_range")


def test_topk_512_is_accepted() -> None:
    # K = 512 > 256 → E = K = 512, EA = up(512, 16) = 512; one token per outer loop.
    result = tiling_func(aclnn_ctx(2, 512, 64, BF16, BF16), UT)
    assert result.ok and result.tiling_data is not None
    assert result.tiling_data.topK == 512
    assert result.tiling_data.indicesReserveNum == 512
    assert result.tiling_data.indicesReserveNumAlign == 512


def test_total_num_checked_when_topk_present() -> None:
    # topk_num = 3 at IR index 3 → sorted_indices dim0 must be 10·3.
    ctx = aclnn_ctx(10, 3, 64, BF16, None)
    assert tiling_func(ctx, UT).ok
    bad = TilingContext.create(
        TensorDesc((10, 64), BF16),
        TensorDesc((29,), I32),
        TensorDesc((29, 64), BF16),
        topk_num=3,
    )
    assert_failed(tiling_func(bad, UT), "total_num")


def test_topk_at_index_one_is_ignored() -> None:
    # The UT quirk: positional (padded_mode, topk_num) puts 3 on IR index 1 → K = 1, no T check.
    quirk = tiling_func(ut_ctx(G64_BF16, IDX30, P64_BF16, None, False, 3), UT)
    named = tiling_func(aclnn_ctx(10, 3, 64, BF16, None), UT)
    assert quirk.tiling_data is not None and named.tiling_data is not None
    assert quirk.tiling_data.topK == 1
    assert named.tiling_data.topK == 3
    assert quirk.tiling_data.rowIdMapEachCore == 1
    assert named.tiling_data.rowIdMapEachCore == 3


# --------------------------------------------------------------------------------------------
# padded_mode, empty tensors, shape and dtype checks
# --------------------------------------------------------------------------------------------


def test_padded_mode_true_rejected() -> None:
    ctx = ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), BF16), True)
    assert_failed(tiling_func(ctx, UT), "padded_mode_true")


def test_padded_mode_absent_rejected() -> None:
    ctx = TilingContext(
        (TensorDesc((10, 64), BF16), TensorDesc((30,), I32), TensorDesc((30, 64), BF16)),
        {3: 3},
    )
    assert_failed(tiling_func(ctx, UT), "padded_mode_missing")


def test_null_attribute_set_rejected() -> None:
    ctx = TilingContext(
        (TensorDesc((10, 64), BF16), TensorDesc((30,), I32), TensorDesc((30, 64), BF16)), None
    )
    assert_failed(tiling_func(ctx, UT), "null_attrs")


@pytest.mark.parametrize("platform", [A2, A3], ids=["ascend910b1", "ascend910_9391"])
@pytest.mark.parametrize(
    ("n", "k", "h", "probs"),
    [(0, 3, 64, BF16), (10, 3, 0, BF16), (0, 1, 64, None), (10, 1, 0, None)],
    ids=["n0_probs", "h0_probs", "n0_none", "h0_none"],
)
def test_empty_inputs_fail_on_a2_a3(
    platform: PlatformAscendC, n: int, k: int, h: int, probs: str | None
) -> None:
    assert_failed(tiling_func(aclnn_ctx(n, k, h, BF16, probs), platform), "zero_shape")


def test_empty_inputs_with_3510_host_build() -> None:
    # Deviation 6: only a host build with __NPU_ARCH__ == 3510 takes the empty-tensor exit.
    result = tiling_func(aclnn_ctx(0, 3, 64, BF16, BF16), A2, host_npu_arch=3510)
    assert result.ok
    assert result.tiling_data is not None
    assert result.tiling_data.as_list() == [0, 3, 64] + [0] * 16
    assert result.workspace == [0]
    assert result.block_dim == 48
    assert result.tiling_key == 0


@pytest.mark.parametrize(
    ("ctx", "rule"),
    [
        (ut_ctx(((10, 64, 1), BF16), IDX30, None, None, False), "grad_dim_num"),
        (ut_ctx(G64_BF16, IDX30, P64_BF16, ((30,), BF16), False), "probs_dim_num"),
        (ut_ctx(G64_BF16, IDX30, P64_BF16, ((9, 3), BF16), False), "probs_dim0"),
        (ut_ctx(G64_BF16, IDX30, ((30, 64, 1), BF16), None, False), "permuted_dim_num"),
        (ut_ctx(G64_BF16, IDX30, ((31, 64), BF16), None, False), "permuted_dim0"),
        (ut_ctx(G64_BF16, IDX30, ((30, 32), BF16), None, False), "permuted_dim1"),
        (ut_ctx(G64_BF16, IDX30, ((30, 64), FP16), None, False), "dtype_mismatch"),
        (ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), "DT_INT8"), False), "dtype_length"),
    ],
    ids=[
        "grad_3d",
        "probs_1d",
        "probs_dim0",
        "perm_3d",
        "perm_dim0",
        "perm_dim1",
        "perm_dtype",
        "probs_int8",
    ],
)
def test_shape_and_dtype_checks(ctx: TilingContext, rule: str) -> None:
    assert_failed(tiling_func(ctx, UT), rule)


@pytest.mark.parametrize("probs", [None, ((10, 3), BF16)], ids=["path_a", "path_b"])
def test_permuted_tokens_absent(probs: tuple[tuple[int, ...], object] | None) -> None:
    # Spec §9 #6: descriptors are fetched by instance index; with permuted_tokens absent upstream
    # reads a shifted or null descriptor (a crash); we report a failure instead.
    ctx = ut_ctx(G64_BF16, IDX30, None, probs, False)
    assert_failed(tiling_func(ctx, UT), "null_desc")


def test_dtype_names_are_interchangeable() -> None:
    numpy_style = ut_ctx(
        ((10, 64), "bfloat16"),
        ((30,), "int32"),
        ((30, 64), "bfloat16"),
        ((10, 3), "float32"),
        False,
    )
    ge_style = ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), FP32), False)
    a, b = tiling_func(numpy_style, UT), tiling_func(ge_style, UT)
    assert a.ok and b.ok and a.tiling_data == b.tiling_data
    assert [GetLengthByType(d) for d in (BF16, FP32, I64, "DT_INT8", None, 100)] == [
        2,
        4,
        8,
        0,
        0,
        0,
    ]


# --------------------------------------------------------------------------------------------
# Result and data containers
# --------------------------------------------------------------------------------------------


def test_tiling_data_layout() -> None:
    data = TilingData.from_list(range(19))
    names = list(data.as_dict())
    assert names == [
        "tokensNum",
        "topK",
        "hiddenSize",
        "numOutTokens",
        "formerCoreNum",
        "tailCoreNum",
        "tokenNumEachCore",
        "tokenNumTailCore",
        "rowIdMapEachCore",
        "rowIdMapTailCore",
        "hiddenSizeAlign",
        "hiddenSizeLoopTimes",
        "hiddenSizeTail",
        "inputReserveNum",
        "indicesReserveNum",
        "indicesReserveNumAlign",
        "totalUbSize",
        "start",
        "end",
    ]
    assert data.as_list() == list(range(19))
    raw = data.to_bytes()
    assert len(raw) == 152
    assert raw[8:16] == (1).to_bytes(8, "little")


def test_raise_for_status() -> None:
    ok = tiling_or_raise(aclnn_ctx(10, 3, 64, BF16, BF16), UT)
    assert ok.tiling_key == 1
    with pytest.raises(TilingError, match="padded_mode") as info:
        tiling_or_raise(ut_ctx(G64_BF16, IDX30, P64_BF16, ((10, 3), BF16), True), UT)
    assert info.value.rule == "padded_mode_true"


# --------------------------------------------------------------------------------------------
# Invariants on random shapes (real A2 platform)
# --------------------------------------------------------------------------------------------


def _up32(nbytes: int) -> int:
    return (nbytes + 31) // 32 * 32


_LEN = {BF16: 2, FP16: 2, FP32: 4}


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 20000),
    k=st.integers(1, 512),
    h=st.integers(1, 20000),
    tokens=st.sampled_from([BF16, FP16, FP32]),
    probs=st.sampled_from([None, BF16, FP16, FP32]),
)
def test_invariants_fit_ub(n: int, k: int, h: int, tokens: str, probs: str | None) -> None:
    ub = A2.GetCoreMemSize()
    result = tiling_func(aclnn_ctx(n, k, h, tokens, probs), A2)
    assert result.ok, result.error
    d = result.tiling_data
    assert d is not None
    t = _LEN[tokens]
    # Inter-core split covers every token exactly once.
    assert d.formerCoreNum * d.tokenNumEachCore + d.tailCoreNum * d.tokenNumTailCore == n
    # Hidden chunks cover H.
    assert (d.hiddenSizeLoopTimes - 1) * d.hiddenSizeAlign + d.hiddenSizeTail == h
    assert 0 < d.hiddenSizeTail <= d.hiddenSizeAlign
    e, ea, r = d.indicesReserveNum, d.indicesReserveNumAlign, d.inputReserveNum
    if probs is None:
        # Path A: 2 index slots + 2 slots of (E div K) token rows (spec §3.6).
        assert result.tiling_key == 0
        assert e == ea == r and e >= k
        assert 2 * _up32(e * 4) + 2 * _up32((e // k) * d.hiddenSizeAlign * t) <= ub
    else:
        # Path B: the kernel's twelve buffers (spec §3.7 / §6.1), each rounded to 32 bytes.
        p = _LEN[probs]
        ha = d.hiddenSizeAlign
        assert result.tiling_key == 1
        assert e % k == 0 and e <= 512 and ea <= 512 and k % r == 0
        used = (
            _up32(2 * ha * t)
            + _up32(2 * r * ha * t)
            + 2 * _up32(2 * ea * p)
            + _up32(2 * ha * t)
            + _up32(ha * 4)
            + 256
            + _up32(ha * 4)
            + 3 * _up32(ea * 4)
            + _up32(ha * 4)
        )
        assert used <= ub
