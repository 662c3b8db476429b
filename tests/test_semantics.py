"""Numerics of every vector and copy instruction, against hand-computed values.

Most tests run a small kernel through the real Ascend C API on the ``tiny`` platform, once in
``functional`` mode and once in ``timed`` mode, and require the same bits from both and no
hazard. A few build ``Instr`` objects and call ``semantics.execute`` directly on a UB byte
array, where that is simpler.

Notation in comments: ``u = 2**-23`` is the spacing of fp32 in [1, 2); bf16 has spacing 2**-7
there and fp16 2**-10. A value exactly half-way between two neighbours is a *tie*; ties go to
the neighbour whose last significand bit is 0 ("even").
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from aicore_sim.ascendc import (
    CAST_NONE,
    CAST_RINT,
    PIPE_ALL,
    PIPE_V,
    Add,
    BlockReduceSum,
    Cast,
    Copy,
    CopyRepeatParams,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    Duplicate,
    GlobalTensor,
    Mul,
    Muls,
    PipeBarrier,
    TBuf,
    TPipe,
    TPosition,
    WholeReduceSum,
)
from aicore_sim.sim import semantics
from aicore_sim.sim.dtypes import bfloat16, float16, float32, int32
from aicore_sim.sim.isa import Instr, Opcode, Operand, Pipe, RoundMode, Space
from aicore_sim.sim.launch import launch
from tests.conftest import TINY  # 2 AIV cores, 8192 usable UB bytes

F32 = np.float32


def arr(values, dtype) -> np.ndarray:
    return np.array(values, dtype=dtype)


def assert_bits(got: np.ndarray, expected: np.ndarray) -> None:
    """Same dtype, same shape, same bytes (so -0.0, inf and NaN payloads count)."""
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if got.tobytes() != expected.tobytes():
        raise AssertionError(f"bits differ:\n got      {got!r}\n expected {expected!r}")


# ---------------------------------------------------------------------------------------------
# Kernel harness: every test kernel runs on one core, in both modes.
# ---------------------------------------------------------------------------------------------


def _entry(*args) -> None:
    *gm_addrs, body = args
    body(*gm_addrs)


def run_kernel(body, tensors: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
    """Launch ``body(*GM_ADDRs of tensors)`` functional and timed; return the timed outputs
    after checking both modes wrote the same bytes and nothing was reported."""
    names = list(tensors)
    shapes = {n: (tensors[n].dtype, tensors[n].shape) for n in outputs}
    got = {}
    for mode in ("functional", "timed"):
        r = launch(_entry, [*names, body], tensors, shapes, TINY, block_dim=1, mode=mode)
        assert r.hazards == [], [str(h) for h in r.hazards]
        got[mode] = r.outputs
    for n in outputs:
        assert_bits(got["timed"][n], got["functional"][n])
    return got["timed"]


def _ub(pipe: TPipe, name: str, nbytes: int, dtype):
    buf = TBuf(TPosition.VECCALC, name=name)
    pipe.InitBuffer(buf, nbytes)
    return buf.Get(dtype)


def _gm(addr, dtype) -> GlobalTensor:
    g = GlobalTensor(dtype)
    g.SetGlobalBuffer(addr)
    return g


def run_vector(ops, inputs: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    """Copy each input and the initial ``out`` into its own UB buffer, run
    ``ops(*input_tensors, out_tensor)`` on the vector pipe, copy ``out`` back; return it."""
    arrays = [*inputs, out]
    tensors = {f"in{i}": a for i, a in enumerate(inputs)} | {"out": out}

    def body(*addrs) -> None:
        pipe = TPipe()
        locs = []
        for i, (addr, a) in enumerate(zip(addrs, arrays, strict=True)):
            t = _ub(pipe, f"b{i}", a.nbytes, a.dtype)
            DataCopyPad(
                t, _gm(addr, a.dtype), DataCopyExtParams(1, a.nbytes, 0, 0), DataCopyPadExtParams()
            )
            locs.append(t)
        PipeBarrier(PIPE_ALL)  # MTE2 -> V
        ops(*locs)
        PipeBarrier(PIPE_ALL)  # V -> MTE3
        DataCopyPad(_gm(addrs[-1], out.dtype), locs[-1], DataCopyExtParams(1, out.nbytes, 0, 0))

    return run_kernel(body, tensors, ["out"])["out"]


# ---------------------------------------------------------------------------------------------
# DataCopyPad
# ---------------------------------------------------------------------------------------------


def test_datacopypad_strided_blocks_padding_and_mirror() -> None:
    """GM->UB: blockCount 3, blockLen 20 B (5 int32), GM srcStride 8 B (2 int32 gap).

    GM blocks start at bytes 0, 28, 56, i.e. elements 0, 7, 14 (pitch 20 + 8 = 28 B).
    UB, dstStride 0: each block is padded to 32 B, so blocks land at 0, 32, 64 B (int32 index
    0, 8, 16); with dstStride 1 (one 32-B block) they land at 0, 64, 128 B (index 0, 16, 32).
    The padding (index 5..7 of every 8) and the gaps keep the -1 written by Duplicate before.
    UB->GM mirror: UB srcStride in blocks, GM dstStride in bytes; GM gaps keep their -7.
    """
    src = np.arange(100, 121, dtype=np.int32)  # 21 elements: 100 .. 120
    tensors = {
        "src": src,
        "dumpA": np.zeros(24, np.int32),  # 96 B of UB buffer A
        "dumpB": np.zeros(40, np.int32),  # 160 B of UB buffer B
        "outA": np.full(17, -7, np.int32),
        "outB": np.full(21, -7, np.int32),
    }

    def body(src_a, dump_a, dump_b, out_a, out_b) -> None:
        pipe = TPipe()
        a = _ub(pipe, "A", 96, int32)
        b = _ub(pipe, "B", 160, int32)
        Duplicate(a, -1, 24)
        Duplicate(b, -1, 40)
        PipeBarrier(PIPE_ALL)
        g = _gm(src_a, int32)
        DataCopyPad(a, g, DataCopyExtParams(3, 20, 8, 0), DataCopyPadExtParams())
        DataCopyPad(b, g, DataCopyExtParams(3, 20, 8, 1), DataCopyPadExtParams())
        PipeBarrier(PIPE_ALL)
        DataCopyPad(_gm(dump_a, int32), a, DataCopyExtParams(1, 96, 0, 0))
        DataCopyPad(_gm(dump_b, int32), b, DataCopyExtParams(1, 160, 0, 0))
        # A: UB blocks 32 B apart (srcStride 0) -> GM packed, 20 B apart (dstStride 0).
        DataCopyPad(_gm(out_a, int32), a, DataCopyExtParams(3, 20, 0, 0))
        # B: UB blocks 64 B apart (srcStride 1 block) -> GM 28 B apart (dstStride 8 B).
        DataCopyPad(_gm(out_b, int32), b, DataCopyExtParams(3, 20, 1, 8))

    got = run_kernel(body, tensors, ["dumpA", "dumpB", "outA", "outB"])

    dump_a = np.full(24, -1, np.int32)
    dump_b = np.full(40, -1, np.int32)
    for k in range(3):
        block = src[7 * k : 7 * k + 5]  # GM element 7k .. 7k+4
        dump_a[8 * k : 8 * k + 5] = block  # UB byte 32k
        dump_b[16 * k : 16 * k + 5] = block  # UB byte 64k
    assert_bits(got["dumpA"], dump_a)
    assert_bits(got["dumpB"], dump_b)
    # dumpA = [100..104, -1,-1,-1, 107..111, -1,-1,-1, 114..118, -1,-1,-1]
    assert list(got["dumpA"][:10]) == [100, 101, 102, 103, 104, -1, -1, -1, 107, 108]

    # outA: 3 x 5 elements packed, then the untouched tail (GM bytes 60..67).
    out_a = np.full(17, -7, np.int32)
    out_a[:15] = np.concatenate([src[0:5], src[7:12], src[14:19]])
    assert_bits(got["outA"], out_a)
    # outB: blocks back at GM elements 0, 7, 14; the 2-element gaps and tail keep -7.
    out_b = np.full(21, -7, np.int32)
    for k in range(3):
        out_b[7 * k : 7 * k + 5] = src[7 * k : 7 * k + 5]
    assert_bits(got["outB"], out_b)


def test_datacopypad_padding_bytes_untouched_bytewise() -> None:
    """Direct execute, byte level: 2 blocks of 6 B (3 fp16), GM srcStride 2 B, dstStride 0.

    GM bytes [0, 6) -> UB [0, 6); GM [8, 14) -> UB [32, 38). Every other UB byte keeps 0xAB.
    """
    gm = {"g": np.arange(1, 17, dtype=np.uint8)}
    ub = np.full(64, 0xAB, np.uint8)
    ins = Instr(
        Pipe.MTE2,
        Opcode.COPY_GM_TO_UB,
        dst=Operand(Space.UB, "b", 0, 38, np.dtype(float16)),
        src=(Operand(Space.GM, "g", 0, 14, np.dtype(float16)),),
        count=2,
        nbytes=12,
        params=(2, 6, 2, 0),
    )
    semantics.execute(ins, ub, gm)
    want = np.full(64, 0xAB, np.uint8)
    want[0:6] = [1, 2, 3, 4, 5, 6]
    want[32:38] = [9, 10, 11, 12, 13, 14]
    assert_bits(ub, want)


# ---------------------------------------------------------------------------------------------
# Cast
# ---------------------------------------------------------------------------------------------


def _cast(x: np.ndarray, dst_dtype, mode: RoundMode) -> np.ndarray:
    n = x.size
    return run_vector(lambda s, d: Cast(d, s, mode, n), [x], np.zeros(n, dst_dtype))


def test_cast_bf16_to_fp32_exact() -> None:
    # bf16 is the top half of an fp32: widening appends 16 zero bits.
    vals = [1 + 2**-7, -3.5, 2.0**-133, 3.3895313892515355e38, np.inf, -0.0, 0.1]
    x = arr(vals, bfloat16)
    x = np.concatenate([x, np.zeros(16 - x.size, bfloat16)])
    got = _cast(x, float32, CAST_NONE)
    assert_bits(got.view(np.uint32), x.view(np.uint16).astype(np.uint32) << 16)
    # bf16(0.1) = 205 * 2**-11 (0.1 * 2**11 = 204.8 -> 205)
    assert got[:7].tolist() == [
        1.0078125,
        -3.5,
        2.0**-133,
        3.3895313892515355e38,
        np.inf,
        0.0,
        205 * 2**-11,
    ]
    assert np.signbit(got[5])


def test_cast_fp16_to_fp32_exact() -> None:
    # 65504 = fp16 max, 2**-24 = smallest fp16 subnormal, -(1 + 2**-10) = 1 ulp below -1.
    vals = [65504.0, 2.0**-24, -(1 + 2**-10), np.inf, -0.0, 0.5, 3.0, -(2.0**-14)]
    x = np.concatenate([arr(vals, float16), np.zeros(8, float16)])
    got = _cast(x, float32, CAST_NONE)
    assert_bits(got, np.concatenate([arr(vals, F32), np.zeros(8, F32)]))


TO_BF16 = [  # (fp32 input, bf16 result)
    (1 + 2**-8, 1.0),  # tie between 1 (even) and 1 + 2**-7 (odd)
    (1 + 3 * 2**-8, 1 + 2**-6),  # tie between 1 + 2**-7 (odd) and 1 + 2**-6 = 1.015625 (even)
    (-(1 + 2**-8), -1.0),  # negative tie
    (-(1 + 3 * 2**-8), -(1 + 2**-6)),  # negative tie, away from zero this time
    (1 + 2**-8 + 2**-23, 1 + 2**-7),  # one fp32 ulp above the tie: up
    (1 - 2**-9, 1.0),  # tie between 1 - 2**-8 (odd) and 1.0 (even)
    (2.0**-126, 2.0**-126),  # smallest normal fp32: a bf16 value, exact
    (-0.0, -0.0),
]


def test_cast_fp32_to_bf16_rint_ties_to_even() -> None:
    x = arr([v for v, _ in TO_BF16] * 2, F32)
    got = _cast(x, bfloat16, CAST_RINT)
    assert_bits(got, arr([r for _, r in TO_BF16] * 2, bfloat16))
    assert float(got[1]) == 1.015625


TO_FP16 = [  # (fp32 input, fp16 result)
    (1 + 2**-11, 1.0),  # tie between 1 (even) and 1 + 2**-10 (odd)
    (1 + 3 * 2**-11, 1 + 2**-9),  # tie between 1 + 2**-10 (odd) and 1 + 2**-9 (even)
    (-(1 + 2**-11), -1.0),  # negative tie
    (1 + 2**-11 + 2**-23, 1 + 2**-10),  # just above the tie: up
    (2.0**-25, 0.0),  # half the smallest subnormal 2**-24: tie between 0 and 2**-24
    (3 * 2.0**-25, 2.0**-23),  # tie between 2**-24 (odd) and 2**-23 (even)
    (65519.0, 65504.0),  # below the tie 65520 between 65504 (max) and 65536
    (65520.0, np.inf),  # the tie: to even 65536 = 2**16, which overflows (IEEE)
    (-65520.0, -np.inf),
    (0.1, 1638 * 2**-14),  # 0.1 * 2**14 = 1638.4 -> 1638
    (1e-10, 0.0),  # far below 2**-25
    (np.inf, np.inf),
    (np.nan, np.nan),
    (-0.0, -0.0),
    (2.0, 2.0),
    (3.5, 3.5),
]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_cast_fp32_to_fp16_rint_ties_and_overflow() -> None:
    """fp32 -> fp16 with CAST_RINT: ties to even, and the simulator's overflow convention.

    The simulator follows IEEE round-to-nearest-even: 65519 is below the half-way point
    65520 between the fp16 max 65504 and 65536, so it gives 65504; 65520 is exactly that
    tie and rounds to the even neighbour 65536 = 2**16, which overflows to +inf (-65520 ->
    -inf). The device may instead saturate to +-65504 (its saturation mode is a global
    setting; which one is the default is unverified); the simulator does not model it.
    """
    got = _cast(arr([v for v, _ in TO_FP16], F32), float16, CAST_RINT)
    assert_bits(got, arr([r for _, r in TO_FP16], float16))


def test_cast_none_narrows_as_rint_and_rint_widens_exactly() -> None:
    # Ascend C: CAST_NONE is CAST_RINT where the target cannot hold the value; a widening
    # cast is exact whatever the mode. 1 + 2^-11 is a tie between fp16 1 and 1 + 2^-10:
    # nearest-even gives 1; in bf16 (7 fraction bits) 1 + 2^-8 is a tie -> 1.
    tie16, tie_bf = 1 + 2.0 ** -11, 1 + 2.0 ** -8
    assert_bits(_cast(arr([tie16] * 16, F32), float16, CAST_NONE), arr([1.0] * 16, float16))
    assert_bits(_cast(arr([tie_bf] * 16, F32), bfloat16, CAST_NONE), arr([1.0] * 16, bfloat16))
    wide = arr([1.5, -2.25] * 8, float16)
    assert_bits(_cast(wide, float32, CAST_RINT), arr([1.5, -2.25] * 8, F32))
    bwide = arr([3.0, -0.5] * 8, bfloat16)
    assert_bits(_cast(bwide, float32, CAST_RINT), arr([3.0, -0.5] * 8, F32))


def test_cast_fp32_to_int32_rint_rounds_to_nearest_even() -> None:
    ub = np.zeros(64, np.uint8)
    ub[:32] = arr([1.5, 2.5, 2.7, -1.5, -2.5, -2.7, 0.4, 3.0], F32).view(np.uint8)
    ins = Instr(
        Pipe.VECTOR,
        Opcode.CAST,
        dst=Operand(Space.UB, "d", 32, 32, np.dtype(int32)),
        src=(Operand(Space.UB, "s", 0, 32, np.dtype(float32)),),
        count=8,
        round_mode=RoundMode.CAST_RINT,
    )
    semantics.execute(ins, ub, {})
    # round half to even: 1.5 -> 2, 2.5 -> 2, 2.7 -> 3, -1.5 -> -2, -2.5 -> -2, -2.7 -> -3
    assert_bits(ub[32:].view(np.int32), arr([2, 2, 3, -2, -2, -3, 0, 3], np.int32))


# ---------------------------------------------------------------------------------------------
# Copy (mask + repeat)
# ---------------------------------------------------------------------------------------------

SRC256 = np.arange(1, 257, dtype=F32)  # 1 .. 256, 1024 B


def _copy_expected(
    mask: int, repeat: int, dst_blk: int, src_blk: int, dst_rep: int, src_rep: int
) -> np.ndarray:
    # lane l of repeat r sits at element r * rep * 8 + (l // 8) * blk * 8 + l % 8 (fp32)
    want = np.full(256, -1.0, F32)
    for r in range(repeat):
        for lane in range(mask):
            d = r * dst_rep * 8 + (lane // 8) * dst_blk * 8 + lane % 8
            s = r * src_rep * 8 + (lane // 8) * src_blk * 8 + lane % 8
            want[d] = SRC256[s]
    return want


@pytest.mark.parametrize(
    ("mask", "repeat", "strides"),
    [
        (64, 2, (1, 1, 8, 8)),  # full mask: elements 0..127 copied, 128..255 untouched
        (10, 2, (1, 1, 8, 8)),  # lanes 0..9 of each repeat: elements 0..9 and 64..73
        (0, 2, (1, 1, 8, 8)),  # mask 0: no-op
        (64, 0, (1, 1, 8, 8)),  # repeat 0: no-op
        (64, 2, (2, 1, 16, 8)),  # scatter: src block b of repeat r -> dst element 128r + 16b
        (64, 2, (1, 2, 8, 16)),  # gather: src element 128r + 16b -> dst block b of repeat r
        (20, 2, (2, 2, 16, 16)),  # both strided, partial mask: blocks 0, 1 and half of block 2
    ],
)
def test_copy_mask_repeat(mask: int, repeat: int, strides: tuple[int, int, int, int]) -> None:
    dst_blk, src_blk, dst_rep, src_rep = strides
    params = CopyRepeatParams(dst_blk, src_blk, dst_rep, src_rep)
    got = run_vector(
        lambda s, d: Copy(d, s, mask, repeat, params), [SRC256], np.full(256, -1.0, F32)
    )
    want = _copy_expected(mask, repeat, dst_blk, src_blk, dst_rep, src_rep)
    assert_bits(got, want)


def test_copy_expected_layouts_spelled_out() -> None:
    """The mapping used above, checked on a few elements by hand."""
    partial = _copy_expected(10, 2, 1, 1, 8, 8)
    assert partial[:11].tolist() == [*range(1, 11), -1.0]
    assert partial[63:75].tolist() == [-1.0, *range(65, 75), -1.0]
    scatter = _copy_expected(64, 2, 2, 1, 16, 8)
    # repeat 1, block 1: src elements 64 + 8 .. 64 + 15 (values 73 .. 80) -> dst 128 + 16
    assert scatter[144:152].tolist() == list(range(73, 81))
    assert scatter[152:160].tolist() == [-1.0] * 8


# ---------------------------------------------------------------------------------------------
# Duplicate, Muls, Mul, Add
# ---------------------------------------------------------------------------------------------


def test_duplicate_fp32() -> None:
    def ops(d) -> None:
        Duplicate(d, 0.1, 8)  # fp32(0.1) = 0x3DCCCCCD
        Duplicate(d[8], 1 + 2**-24, 8)  # tie between 1 and 1 + 2**-23 -> 1.0
        Duplicate(d[16], -2.5, 5)  # count 5: elements 21..23 keep -1

    got = run_vector(ops, [], np.full(24, -1.0, F32))
    assert got.view(np.uint32)[0] == 0x3DCCCCCD
    want = arr([0.1] * 8 + [1.0] * 8 + [-2.5] * 5 + [-1.0] * 3, F32)
    assert_bits(got, want)


def test_duplicate_bf16_rounds_value() -> None:
    def ops(d) -> None:
        Duplicate(d, 1 + 2**-8, 16)  # tie -> even 1.0
        Duplicate(d[16], 1 + 3 * 2**-8, 16)  # tie -> even 1 + 2**-6 = 1.015625
        Duplicate(d[32], 0.1, 16)  # 0.1 * 2**11 = 204.8 -> 205 * 2**-11, bits 0x3DCD

    got = run_vector(ops, [], np.zeros(48, bfloat16))
    want = arr([1.0] * 16 + [1.015625] * 16 + [205 * 2**-11] * 16, bfloat16)
    assert_bits(got, want)
    assert got.view(np.uint16)[32] == 0x3DCD


def test_duplicate_int32_large_value_exact() -> None:
    got = run_vector(lambda d: Duplicate(d, 2**24 + 1, 8), [], np.zeros(8, np.int32))
    assert_bits(got, np.full(8, 16777217, np.int32))


def test_muls_fp32_rounding() -> None:
    x = arr([1 + 2**-23, 3.0, -2.0, 0.0, 1.0, 2**-126, 1e30, -0.0], F32)
    got = run_vector(lambda s, d: Muls(d, s, 1.5, 8), [x], np.zeros(8, F32))
    # (1 + u) * 1.5 = 1.5 + 1.5u: tie between 1.5 + u (odd) and 1.5 + 2u (even) -> 1.5 + 2u
    # 1e30 * 1.5 = 1.5e30 rounded once to fp32; -0.0 * 1.5 = -0.0
    want = arr([1.5 + 2**-22, 4.5, -3.0, 0.0, 1.5, 1.5 * 2**-126, F32(1e30) * F32(1.5), -0.0], F32)
    assert_bits(got, want)


def test_bf16_token_times_prob_double_rounding() -> None:
    """Cast up (exact), Muls by the fp32 prob (rounding 1), Cast down RINT (rounding 2).

    u = 1 + 2**-7 (bf16), p = 1 - 2**-8 + 2**-15 - 2**-22 + 2**-24 (fp32).
    u * p = 1 + 2**-8 + (2**-24 - 2**-29 + 2**-31) exactly, i.e. the bf16 tie 1 + 2**-8 plus
    0.977 * 2**-24. Rounded once to bf16 that is above the tie -> 1 + 2**-7 = 1.0078125.
    Rounded first to fp32 (spacing 2**-23, so anything below 2**-24 above a grid point rounds
    down) it is exactly 1 + 2**-8, a bf16 tie, which rounds to even -> 1.0.
    """
    u = 1 + 2**-7
    p = 1 - 2**-8 + 2**-15 - 2**-22 + 2**-24
    assert float(F32(p)) == p
    exact = Fraction(u) * Fraction(p)
    tie = Fraction(1) + Fraction(1, 2**8)
    assert exact - tie == Fraction(2**7 - 2**2 + 1, 2**31)  # = 2**-24 - 2**-29 + 2**-31 > 0
    single_rounding = 1 + 2**-7  # above the tie between 1.0 and 1 + 2**-7
    assert float(F32(u) * F32(p)) == float(tie)  # the fp32 product lands on the tie

    def ops(tok, up32, out) -> None:  # up32: a fp32 scratch buffer
        Cast(up32, tok, CAST_NONE, 16)
        Muls(up32, up32, F32(p), 16)
        Cast(out, up32, CAST_RINT, 16)

    got = run_vector(ops, [np.full(16, u, bfloat16), np.zeros(16, F32)], np.zeros(16, bfloat16))
    assert_bits(got, np.full(16, 1.0, bfloat16))
    assert float(got[0]) != single_rounding


@pytest.mark.filterwarnings("ignore:overflow encountered in multiply")
def test_mul_fp32_and_int32() -> None:
    a = arr([1 + 2**-12, 1 + 2**-23, 3.0, -0.5, 0.0, 2.0**100, 7.0, 1.0], F32)
    b = arr([1 + 2**-12, 1 + 2**-23, 1 / 3, 2.0, -1.0, 2.0**100, 0.25, -1.0], F32)
    got = run_vector(lambda x, y, d: Mul(d, x, y, 8), [a, b], np.zeros(8, F32))
    want = arr(
        [
            1 + 2**-11,  # 1 + 2**-11 + 2**-24: tie, 1 + 2**-11 has an even last bit
            1 + 2**-22,  # 1 + 2**-22 + 2**-46: below the tie
            1.0,  # fp32(1/3) = 11184811 * 2**-25; 3 * it = 1 + 2**-25 -> 1.0
            -1.0,
            -0.0,  # 0 * -1 = -0
            np.inf,  # 2**200 overflows fp32
            1.75,
            -1.0,
        ],
        F32,
    )
    assert_bits(got, want)

    ai = arr([7, -3, 46340, 2**24 + 1, 0, -1, 1, 2], np.int32)
    bi = arr([6, 5, 46340, 1, 9, -1, -(2**31), 3], np.int32)
    got = run_vector(lambda x, y, d: Mul(d, x, y, 8), [ai, bi], np.zeros(8, np.int32))
    # 46340**2 = 2147395600 < 2**31; 2**24 + 1 stays exact (no float path)
    assert_bits(got, arr([42, -15, 2147395600, 16777217, 0, 1, -(2**31), 6], np.int32))


def test_add_fp32_and_int32() -> None:
    a = arr([1.0, 1 + 2**-23, 1.0, -1.0, 1e8, 0.0, 1.0, -0.0], F32)
    b = arr([2**-24, 2**-24, 2**-24 + 2**-47, -(2**-24), 1.0, -0.0, -1.0, -0.0], F32)
    got = run_vector(lambda x, y, d: Add(d, x, y, 8), [a, b], np.zeros(8, F32))
    want = arr(
        [
            1.0,  # 1 + 2**-24: tie, 1.0 is even
            1 + 2**-22,  # 1 + u + u/2: tie between 1 + u (odd) and 1 + 2u (even)
            1 + 2**-23,  # just above the tie -> up
            -1.0,  # negative tie -> even
            1e8,  # fp32 spacing at 1e8 is 8: 1e8 + 1 -> 1e8
            0.0,  # +0 + -0 = +0
            0.0,  # exact cancellation gives +0
            -0.0,  # -0 + -0 = -0
        ],
        F32,
    )
    assert_bits(got, want)

    ai = arr([2**31 - 2, -5, 2**24 + 1, 0, 100, -100, 1, 2], np.int32)
    bi = arr([1, 7, 1, 0, -100, -1, 2**24, 3], np.int32)
    got = run_vector(lambda x, y, d: Add(d, x, y, 8), [ai, bi], np.zeros(8, np.int32))
    # integer adds are exact: 2**24 + 2 is not an fp32 value but is an int32 one
    assert_bits(got, arr([2**31 - 1, 2, 2**24 + 2, 0, 0, -101, 2**24 + 1, 5], np.int32))


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------


def t8(v: np.ndarray) -> np.ndarray:
    """((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)) over the last axis of an (..., 8) fp32 array."""
    a = [v[..., i] for i in range(8)]
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))


def sequential(v) -> F32:
    s = F32(0)
    for x in v:
        s = F32(s + F32(x))
    return s


def _brs_input() -> tuple[np.ndarray, list[float]]:
    blocks = [
        [1e8, 1, -1e8, 1, 0, 0, 0, 0],  # ((1e8+1)+(-1e8+1)) = 1e8 + -1e8 = 0; left-to-right 1
        [1, 1, 1e8, -1e8, 0, 0, 0, 0],  # (1+1)+(1e8-1e8) = 2; left-to-right (2+1e8)-1e8 = 0
        [2] * 8,  # 16
        [-3] * 8,  # -24
        [0.5] * 8,  # 4
        [1, 2, 3, 4, 5, 6, 7, 8],  # 36
        [0] * 8,  # 0
        [1e30, -1e30, 0, 0, 0, 0, 0, 0],  # 0
        # repeat 1
        [2**24, 1, 1, 1, 0, 0, 0, 0],  # (2**24+1 -> 2**24 tie-even) + 2 = 2**24 + 2
        [0.25] * 8,  # 2
        [-1e8, -1, 1e8, -1, 0, 0, 0, 0],  # 0; left-to-right -1
        [7] * 8,  # 56
        [1, -1] * 4,  # 0
        [2**-20] * 8,  # 2**-17
        [100, 0, 0, 0, 0, 0, 0, 1],  # 101
        [-0.5] * 8,  # -4
    ]
    sums = [0, 2, 16, -24, 4, 36, 0, 0, 2**24 + 2, 2, 0, 56, 0, 2**-17, 101, -4]
    return arr(blocks, F32).reshape(-1), sums


def test_block_reduce_sum_pair_tree() -> None:
    x, sums = _brs_input()
    # the tree differs from a left-to-right sum in blocks 0, 1, 8 and 10:
    assert sequential(x[0:8]) == 1 and t8(x[0:8]) == 0
    assert sequential(x[8:16]) == 0 and t8(x[8:16]) == 2
    assert sequential(x[64:72]) == 2**24 and t8(x[64:72]) == 2**24 + 2
    assert sequential(x[80:88]) == -1 and t8(x[80:88]) == 0
    got = run_vector(lambda s, d: BlockReduceSum(d, s, 2, 64, 1, 1, 8), [x], np.full(24, -1.0, F32))
    # dstRepStride 1: repeat r writes its 8 sums at dst[8r .. 8r+7]; dst[16:] untouched
    assert_bits(got, arr(sums + [-1.0] * 8, F32))


def test_block_reduce_sum_in_place() -> None:
    x, sums = _brs_input()

    def ops(s, d) -> None:
        BlockReduceSum(s, s, 2, 64, 1, 1, 8)  # dst == src, as in ReduceSumFunc
        PipeBarrier(PIPE_V)
        Copy(d, s, 64, 2, CopyRepeatParams())

    got = run_vector(ops, [x], np.zeros(128, F32))
    want = x.copy()
    want[:16] = sums  # the rest of the source is not written
    assert_bits(got, want)


def _wrs_cases():
    tail = [1e8, 1, -1e8, 1] + [1] * 60
    # 64 lanes: blocks ((1e8+1)+(-1e8+1)) + ((1+1)+(1+1)) = 4, then 7 blocks of 8 -> 60
    # left to right: 1e8 + 1 = 1e8; - 1e8 = 0; + 1 + 60 ones = 61
    full = (arr(tail + [0] * 64, F32), 64, 1, [60.0], 61.0)
    # mask 37: lanes 0..31 = 1, 32..35 = 1e8, 1, -1e8, 1, lane 36 = 1, lanes 37.. = 1e30
    # (inactive, count as +0). Block 4 = ((1e8+1)+(-1e8+1)) + ((1+0)+(0+0)) = 1; blocks 0..3
    # = 8 each; total ((8+8)+(8+8)) + ((1+0)+(0+0)) = 33.
    # left to right: 32 + 1e8 = 100000032; + 1 -> 100000032 (spacing 8); - 1e8 = 32; +1 +1 = 34
    lanes37 = [1] * 32 + [1e8, 1, -1e8, 1, 1] + [1e30] * 27
    part = (arr(lanes37 + [0] * 64, F32), 37, 1, [33.0], 34.0)
    # repeat 2, dstRepStride 1: the sums of repeats 0 and 1 land in dst[0] and dst[1]
    two = (arr(tail + [0.25] * 64, F32), 64, 2, [60.0, 16.0], None)
    return {"mask64": full, "mask37": part, "repeat2": two}


@pytest.mark.parametrize("case", ["mask64", "mask37", "repeat2"])
def test_whole_reduce_sum_pair_tree(case: str) -> None:
    x, mask, repeat, sums, left_to_right = _wrs_cases()[case]
    lanes = np.where(np.arange(64) < mask, x[:64], F32(0)).astype(F32)
    assert t8(t8(lanes.reshape(8, 8))) == sums[0]
    if left_to_right is not None:
        assert sequential(x[:mask]) == left_to_right != sums[0]
    got = run_vector(
        lambda s, d: WholeReduceSum(d, s, mask, repeat, 1, 1, 8), [x], np.full(8, -1.0, F32)
    )
    assert_bits(got, arr(sums + [-1.0] * (8 - len(sums)), F32))


def _reduce_sum_func(x, n0: int) -> None:
    """Kernel side of the spec's ReduceSumFunc for 512 <= L < 4096 (M = 512, Tm = 1024)."""

    def next_half(m: int) -> int:  # up(ceil(m / 2), 8)
        return (m + 1) // 2 + (-((m + 1) // 2)) % 8

    n = n0
    half = next_half(n)
    while n > 1024:  # halving
        Add(x, x, x[half], n - half)
        n, half = half, next_half(half)
    Add(x, x, x[512], n - 512)  # fold to 512 (count may be 0; still issued)
    BlockReduceSum(x, x, 8, 64, 1, 1, 8)  # 512 -> 64
    BlockReduceSum(x, x, 1, 64, 1, 1, 8)  # 64 -> 8


@pytest.mark.parametrize("length", [512, 1000, 1100])
def test_reduce_sum_sequence_matches_spec_formula(length: int) -> None:
    """Add halving / fold, BlockReduceSum 512 -> 64 -> 8, WholeReduceSum mask 8.

    L = 512: the fold Add has count 0. L = 1000: fold x[i] += x[512 + i], i < 488.
    L = 1100: one halving step (half = up(550, 8) = 552, x[i] += x[552 + i] for i < 548,
    n = 552), then the fold x[i] += x[512 + i] for i < 40.
    """
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(length) * 10.0 ** rng.integers(-4, 7, length)).astype(F32)

    # by hand, in fp32
    v = x.copy()
    n = length
    if n > 1024:
        v[:548] = v[:548] + v[552:1100]
        n = 552
    v[: n - 512] = v[: n - 512] + v[512:n]
    v64 = t8(v[:512].reshape(64, 8))
    v8 = t8(v64.reshape(8, 8))
    want = t8(v8)
    assert want.dtype == F32
    # the order matters for these inputs: neither a left-to-right sum nor numpy's sum agrees
    assert want != sequential(x)
    assert want != x.sum(dtype=F32)

    def ops(s, d) -> None:
        _reduce_sum_func(s, length)
        WholeReduceSum(d, s, 8, 1, 1, 1, 8)

    got = run_vector(ops, [x], np.full(8, -1.0, F32))
    assert_bits(got, arr([want] + [-1.0] * 7, F32))


# ---------------------------------------------------------------------------------------------
# read / commit: what the timed replay does at an instruction's start and completion
# ---------------------------------------------------------------------------------------------


def test_read_at_start_commit_at_completion() -> None:
    ub = np.zeros(96, np.uint8)
    ub[0:32] = np.full(8, 1.0, F32).view(np.uint8)
    ub[32:64] = np.full(8, 2.0, F32).view(np.uint8)
    ub[64:96] = np.full(8, -1.0, F32).view(np.uint8)
    op = lambda addr: Operand(Space.UB, "b", addr, 32, np.dtype(float32))  # noqa: E731
    ins = Instr(Pipe.VECTOR, Opcode.ADD, dst=op(64), src=(op(0), op(32)), count=8)
    pending = semantics.read(ins, ub, {})
    assert_bits(ub[64:96].view(F32), np.full(8, -1.0, F32))  # nothing written yet
    ub[0:32] = np.full(8, 100.0, F32).view(np.uint8)  # a later write to a source ...
    semantics.commit(pending)
    assert_bits(ub[64:96].view(F32), np.full(8, 3.0, F32))  # ... is not seen: 1 + 2
