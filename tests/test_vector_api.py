"""The element-wise vector calls (Sub, Div, Max, Min, Adds, Maxs, Mins, Exp, Abs, Relu, Sqrt,
the mask + repeat forms of Muls and Duplicate) and every Cast round mode, against numpy and
hand-written values; and their cycles.

Each kernel copies its inputs GM -> UB with ``DataCopy``, runs one call, copies the result
back (functional mode: numbers only). Platform ``tiny``: vector call = 10 + n / 8 cycles.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    CAST_CEIL,
    CAST_FLOOR,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
    PIPE_ALL,
    Abs,
    Adds,
    BinaryRepeatParams,
    Cast,
    DataCopy,
    Div,
    Duplicate,
    Exp,
    GlobalTensor,
    Max,
    Maxs,
    Min,
    Mins,
    Muls,
    PipeBarrier,
    Relu,
    Sqrt,
    Sub,
    TBuf,
    TPipe,
    UnaryRepeatParams,
    bfloat16,
    float16,
    float32,
    int32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from tests.conftest import TINY

RNG = np.random.default_rng(7)


def _run(call, inputs: dict, out_dtype, n_out: int):
    """Launch on one core: inputs to UB buffers, ``call(out, *ins)``, the result to GM."""
    names = list(inputs)

    def kernel(*gm):
        pipe = TPipe()
        ins = []
        for name, arr, addr in zip(names, (inputs[k] for k in names), gm[:-1]):
            g = GlobalTensor(arr.dtype)
            g.SetGlobalBuffer(addr)
            b = TBuf(name=name)
            pipe.InitBuffer(b, max(32, arr.nbytes))
            t = b.Get(arr.dtype)
            DataCopy(t, g, arr.size)
            ins.append(t)
        o = TBuf(name="out")
        pipe.InitBuffer(o, max(32, n_out * np.dtype(out_dtype).itemsize))
        ot = o.Get(out_dtype)
        PipeBarrier(PIPE_ALL)
        call(ot, *ins)
        PipeBarrier(PIPE_ALL)
        go = GlobalTensor(out_dtype)
        go.SetGlobalBuffer(gm[-1])
        DataCopy(go, ot, n_out)

    tensors = dict(inputs)
    tensors["z"] = np.zeros(n_out, out_dtype)
    r = launch(kernel, [*names, "z"], tensors, {"z": (np.dtype(out_dtype), (n_out,))}, TINY,
               block_dim=1, mode="functional")
    return r.outputs["z"]


N = 128


@pytest.mark.parametrize("dt", [float32, float16])
@pytest.mark.parametrize("api, ref", [(Sub, np.subtract), (Div, np.divide), (Max, np.maximum),
                                      (Min, np.minimum)])
def test_binary_count_form(api, ref, dt):
    a = RNG.uniform(-4, 4, N).astype(dt)
    b = RNG.uniform(0.5, 4, N).astype(dt)
    got = _run(lambda o, x, y: api(o, x, y, N), {"a": a, "b": b}, dt, N)
    assert np.array_equal(got, ref(a, b))  # one IEEE rounding in the operand dtype


def test_binary_mask_repeat_form_with_strides():
    # fp32: 64 lanes per repeat, 8 per block. 2 repeats of the leading 20 lanes; src0 every
    # block (stride 1, repeat 8), src1 blocks two apart (stride 2, repeat 16), dst stride 1.
    a = RNG.uniform(-4, 4, 256).astype(np.float32)
    b = RNG.uniform(-4, 4, 512).astype(np.float32)
    p = BinaryRepeatParams(1, 1, 2, 8, 8, 16)
    got = _run(lambda o, x, y: (Duplicate(o, 0.0, 256), Sub(o, x, y, 20, 2, p)),
               {"a": a, "b": b}, float32, 256)
    want = np.zeros(256, np.float32)
    for r in range(2):
        for lane in range(20):
            blk, k = divmod(lane, 8)
            want[r * 64 + lane] = a[r * 64 + lane] - b[r * 128 + blk * 16 + k]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("api, ref", [(Adds, np.add), (Maxs, np.maximum), (Mins, np.minimum),
                                      (Muls, np.multiply)])
def test_scalar_count_and_repeat_forms(api, ref):
    a = RNG.uniform(-4, 4, N).astype(np.float16)
    s = 1.25
    got = _run(lambda o, x: api(o, x, s, N), {"a": a}, float16, N)
    assert np.array_equal(got, ref(a, np.float16(s)))
    # fp16: 128 lanes per repeat; one repeat of the leading 100 lanes, the rest left at 7
    got = _run(lambda o, x: (Duplicate(o, 7.0, N), api(o, x, s, 100, 1, UnaryRepeatParams())),
               {"a": a}, float16, N)
    want = np.full(N, 7, np.float16)
    want[:100] = ref(a[:100], np.float16(s))
    assert np.array_equal(got, want)


def test_scalar_ops_on_int32():
    a = np.arange(-32, 32, dtype=np.int32)
    assert np.array_equal(_run(lambda o, x: Adds(o, x, 5, 64), {"a": a}, int32, 64), a + 5)
    assert np.array_equal(_run(lambda o, x: Maxs(o, x, 3, 64), {"a": a}, int32, 64),
                          np.maximum(a, 3))


@pytest.mark.parametrize("api, ref", [(Exp, np.exp), (Sqrt, np.sqrt)])
def test_transcendental_through_fp32(api, ref):
    a = RNG.uniform(0.1, 3, N).astype(np.float32)
    assert np.array_equal(_run(lambda o, x: api(o, x, N), {"a": a}, float32, N), ref(a))
    h = a.astype(np.float16)
    got = _run(lambda o, x: api(o, x, N), {"a": h}, float16, N)
    assert np.array_equal(got, ref(h.astype(np.float32)).astype(np.float16))


def test_abs_relu_and_a_strided_unary_repeat():
    a = RNG.uniform(-4, 4, N).astype(np.float32)
    assert np.array_equal(_run(lambda o, x: Abs(o, x, N), {"a": a}, float32, N), np.abs(a))
    assert np.array_equal(_run(lambda o, x: Relu(o, x, N), {"a": a}, float32, N),
                          np.where(a > 0, a, np.float32(0)))
    # Relu of every other source block into consecutive dst blocks: 1 repeat of 32 lanes
    got = _run(lambda o, x: (Duplicate(o, 0.0, 64), Relu(o, x, 32, 1,
                                                         UnaryRepeatParams(1, 2, 8, 8))),
               {"a": a}, float32, 64)
    src = a.reshape(-1, 8)[0:8:2].reshape(-1)
    assert np.array_equal(got[:32], np.maximum(src, 0))
    assert not got[32:].any()


def test_duplicate_mask_repeat_form():
    # fp32, 2 repeats of the first 10 lanes, block stride 2, repeat stride 16 (blocks)
    got = _run(lambda o: (Duplicate(o, 0.0, 256), Duplicate(o, 3.5, 10, 2, 2, 16)), {}, float32,
               256)
    want = np.zeros(256, np.float32)
    for r in range(2):
        for lane in range(10):
            blk, k = divmod(lane, 8)
            want[r * 128 + blk * 16 + k] = 3.5
    assert np.array_equal(got, want)


# Cast: hand-written values. fp16 has 10 fraction bits: between 1 and 2 its step is 2^-10.
ULP = 2.0 ** -10
F32_TO_F16 = np.array([1 + ULP / 2, -(1 + ULP / 2), 1 + 0.75 * ULP, 70000.0], np.float32)
WANT_F16 = {
    # a tie (1 + half a step): even / away / down / up / to zero / the odd neighbour
    CAST_RINT: [1, -1, 1 + ULP, np.inf],
    CAST_NONE: [1, -1, 1 + ULP, np.inf],
    CAST_ROUND: [1 + ULP, -(1 + ULP), 1 + ULP, np.inf],
    CAST_FLOOR: [1, -(1 + ULP), 1, 65504],
    CAST_CEIL: [1 + ULP, -1, 1 + ULP, np.inf],
    CAST_TRUNC: [1, -1, 1, 65504],
    # round to odd never overflows: 65504 (0x7BFF) is the odd neighbour below infinity
    CAST_ODD: [1 + ULP, -(1 + ULP), 1 + ULP, 65504],
}


@pytest.mark.parametrize("mode", list(WANT_F16))
def test_cast_fp32_to_fp16_every_mode(mode):
    x = np.resize(F32_TO_F16, 16)
    got = _run(lambda o, s: Cast(o, s, mode, 16), {"x": x}, float16, 16)
    assert got[:4].tolist() == [np.float16(v) for v in WANT_F16[mode]]


F32_TO_I32 = np.array([2.5, -2.5, 3.5, -0.5, 1e10, np.nan, -1e10, 0.25], np.float32)
WANT_I32 = {
    CAST_RINT: [2, -2, 4, 0, 2147483647, 0, -2147483648, 0],
    CAST_ROUND: [3, -3, 4, -1, 2147483647, 0, -2147483648, 0],
    CAST_FLOOR: [2, -3, 3, -1, 2147483647, 0, -2147483648, 0],
    CAST_CEIL: [3, -2, 4, 0, 2147483647, 0, -2147483648, 1],
    CAST_TRUNC: [2, -2, 3, 0, 2147483647, 0, -2147483648, 0],
}


@pytest.mark.parametrize("mode", list(WANT_I32))
def test_cast_fp32_to_int32_every_mode(mode):
    got = _run(lambda o, s: Cast(o, s, mode, 8), {"x": F32_TO_I32}, int32, 8)
    assert got.tolist() == WANT_I32[mode]


def test_casts_the_device_accepts():
    # int32 -> fp32 with CAST_NONE: exact below 2^24, nearest-even above it
    x = np.array([7, -3, 16777217, 16777219, 0, 1, 2, 3], np.int32)
    got = _run(lambda o, s: Cast(o, s, CAST_NONE, 8), {"x": x}, float32, 8)
    assert got.tolist() == [7, -3, 16777216, 16777220, 0, 1, 2, 3]
    # fp16 -> int32 with CAST_RINT
    h = np.array([0.5, 1.5, -2.5, 1000.25] * 4, np.float16)
    got = _run(lambda o, s: Cast(o, s, CAST_RINT, 16), {"x": h}, int32, 16)
    assert got[:4].tolist() == [0, 2, -2, 1000]
    # fp32 -> bf16 CAST_TRUNC: 1 + 2^-8 + 2^-9 lies between bf16 steps of 2^-7 -> 1
    b = np.full(16, 1 + 2 ** -8 + 2 ** -9, np.float32)
    got = _run(lambda o, s: Cast(o, s, CAST_TRUNC, 16), {"x": b}, bfloat16, 16)
    assert got.astype(np.float32)[0] == 1.0


def test_cast_refusals():
    x = np.zeros(16, np.int32)
    with pytest.raises(KernelError, match="CAST_ODD is for float -> float only"):
        _run(lambda o, s: Cast(o, s, CAST_ODD, 16), {"x": x}, float32, 16)
    with pytest.raises(KernelError, match="integer narrowing or sign change is not modelled"):
        _run(lambda o, s: Cast(o, s, CAST_NONE, 16), {"x": x}, np.dtype(np.int16), 16)


def _one_call_cycles(platform, call, dtype, n_src: int):
    seen = []

    def kernel(x):
        pipe = TPipe()
        b, c = TBuf(name="b"), TBuf(name="c")
        pipe.InitBuffer(b, 1024)
        pipe.InitBuffer(c, 1024)
        call(c.Get(dtype), b.Get(dtype), b.Get(dtype))

    r = launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, platform, block_dim=1,
               mode="timing-only")
    vec = [i for i in r.program.streams[0] if i.pipe.name == "VECTOR"]
    seen.extend(cost.occupancy_cycles(i, platform) for i in vec)
    return seen


def test_cycles():
    # tiny: 10 + n / 8. Sub of 64 fp32: 10 + 8 = 18. Exp mask + repeat, 2 repeats of 64
    # lanes = 128 elements: 10 + 16 = 26. Adds of 64: 18.
    assert _one_call_cycles(TINY, lambda o, a, b: (Sub(o, a, b, 64), Exp(o, a, 64, 2,
                                                    UnaryRepeatParams()), Adds(o, a, 1.0, 64)),
                            float32, 1) == [18, 26, 18]
    # A2 (S6 fits, b + k n): Div fp32 of 64 = 29.0892 + 0.0454 x 64 = 31.99 -> 32;
    # Exp fp16 of 128 = 28.0144 + 0.0311 x 128 = 31.99 -> 32; Max fp32 of 64 = 20.1333
    # + 0.0215 x 64 = 21.51 -> 22
    a2 = load_platform("ascend910b1")
    assert _one_call_cycles(a2, lambda o, a, b: (Div(o, a, b, 64), Max(o, a, b, 64)), float32,
                            1) == [32, 22]
    assert _one_call_cycles(a2, lambda o, a, b: Exp(o, a, 128), float16, 1) == [32]
    # 950 (S6v2 micro-ops): head 30.6 + throughput x registers + the largest latency. Exp fp32
    # of 64 (1 register): 30.6 + (0.343 + 4 + 0.343) x 1 + 13 = 48.29 -> 48
    p950 = load_platform("ascend950pr_9589")
    assert _one_call_cycles(p950, lambda o, a, b: Exp(o, a, 64), float32, 1) == [48]
