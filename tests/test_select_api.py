"""CompareScalar / Compare (one bit per element, lowest bit first), Select, GatherMask (counter
mode, its kept count returned), And / Or, ShiftLeft / ShiftRight, against hand-built
expectations; and cycles on ``tiny`` (vector call = 10 + n / 8)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    CMPMODE,
    PIPE_ALL,
    SELMODE,
    And,
    Compare,
    CompareScalar,
    GatherMask,
    GatherMaskParams,
    Or,
    PipeBarrier,
    Select,
    ShiftLeft,
    ShiftRight,
    TBuf,
    TPipe,
    float32,
    int16,
    uint8,
    uint32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.errors import KernelError, OutOfBoundsError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY
from tests.kernels import run_vector_body


def _run(body, inputs: dict, out_dtype, n_out: int):
    return run_vector_body(body, inputs, out_dtype, n_out, TINY)


A = np.array([3, -1, 7, 7, 0, 2, -5, 9] * 8, np.float32)  # 64 values
B = np.array([3, 0, 8, 6, 0, 2, -6, 9] * 8, np.float32)


def test_compare_scalar_bits_lowest_first():
    def body(o, m, a):
        CompareScalar(o, a, 2.0, CMPMODE.GT, 64)

    got, _, _ = _run(body, {"a": A}, np.uint8, 32)
    # per 8 values: 3 > 2, 7 > 2, 7 > 2, 9 > 2 -> bits 0, 2, 3, 7 -> 0b10001101 = 0x8D
    assert got[:8].tolist() == [0x8D] * 8 and not got[8:].any()


# per 8 values: EQ at 0, 4, 5, 7; LT (A < B) at 1 (-1 < 0) and 2 (7 < 8); GE and NE the
# complements of LT and EQ
@pytest.mark.parametrize("mode, byte", [(CMPMODE.EQ, 0b10110001), (CMPMODE.LT, 0b00000110),
                                        (CMPMODE.GE, 0b11111001), (CMPMODE.NE, 0b01001110)])
def test_compare_tensor_modes(mode, byte):
    def body(o, m, a, b):
        Compare(o, a, b, mode, 64)

    got, _, _ = _run(body, {"a": A, "b": B}, np.uint8, 32)
    assert got[:8].tolist() == [byte] * 8


def test_select_tensor_and_scalar_modes():
    def body(o, m, a, b):
        mask = m.Get(uint8)
        CompareScalar(mask, a, 2.0, CMPMODE.GT, 64)
        PipeBarrier(PIPE_ALL)
        Select(o, mask, a, b, SELMODE.VSEL_TENSOR_TENSOR_MODE, 64)

    got, _, _ = _run(body, {"a": A, "b": B}, float32, 64)
    assert np.array_equal(got, np.where(A > 2, A, B))

    def body2(o, m, a):
        mask = m.Get(uint8)
        CompareScalar(mask, a, 0.0, CMPMODE.LT, 64)
        PipeBarrier(PIPE_ALL)
        Select(o, mask, a, -100.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 64)

    got, _, _ = _run(body2, {"a": A}, float32, 64)
    assert np.array_equal(got, np.where(A < 0, A, np.float32(-100)))


def test_gather_mask_packs_the_kept_and_returns_their_count():
    def body(o, m, a):
        mask = m.Get(uint8)
        CompareScalar(mask, a, 2.0, CMPMODE.GT, 64)
        PipeBarrier(PIPE_ALL)
        return GatherMask(o, a, m.Get(uint32), True, 64, GatherMaskParams(1, 1, 8, 1))

    got, kept, _ = _run(body, {"a": A}, float32, 64)
    want = A[A > 2]
    assert kept == want.size == 32
    assert np.array_equal(got[:32], want) and not got[32:].any()


def test_bitwise_and_shifts():
    x = np.arange(-8, 8, dtype=np.int16)
    y = np.full(16, 0b0101, np.int16)
    got, _, _ = _run(lambda o, m, a, b: And(o, a, b, 16), {"a": x, "b": y}, int16, 16)
    assert np.array_equal(got, x & y)
    got, _, _ = _run(lambda o, m, a, b: Or(o, a, b, 16), {"a": x, "b": y}, int16, 16)
    assert np.array_equal(got, x | y)
    got, _, _ = _run(lambda o, m, a: ShiftLeft(o, a, 8, 16), {"a": x}, int16, 16)
    assert np.array_equal(got, (x.astype(np.int32) << 8).astype(np.int16))
    got, _, _ = _run(lambda o, m, a: ShiftRight(o, a, 1, 16), {"a": x}, int16, 16)
    assert np.array_equal(got, x >> 1)  # arithmetic: -8 >> 1 = -4


def test_refusals():
    def kernel(x):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 256)
        t = b.Get(float32)
        with pytest.raises(KernelError, match="reduceMode = false"):
            GatherMask(t, t, b.Get(uint32), False, 8, GatherMaskParams())
        with pytest.raises(KernelError, match="VSEL_CMPMASK_SPR"):
            Select(t, b.Get(uint8), t, t, SELMODE.VSEL_CMPMASK_SPR, 8)
        with pytest.raises(KernelError, match=r"shift 16 outside \[0, 16\)"):
            ShiftLeft(b.Get(int16), b.Get(int16), 16, 8)

    launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)


def test_cycles_on_tiny():
    def body(o, m, a, b):
        mask = m.Get(uint8)
        CompareScalar(mask, a, 2.0, CMPMODE.GT, 64)
        Select(o, mask, a, b, SELMODE.VSEL_TENSOR_TENSOR_MODE, 64)
        GatherMask(o, a, m.Get(uint32), True, 64, GatherMaskParams())

    _, _, prog = _run(body, {"a": A, "b": B}, float32, 64)
    ops = (Opcode.COMPARE_SCALAR, Opcode.SELECT, Opcode.GATHER_MASK)
    got = [cost.occupancy_cycles(i, TINY) for i in prog.streams[0] if i.op in ops]
    assert got == [18, 18, 18]  # each 10 + 64 / 8


def test_set_size_is_what_get_size_reports():
    seen = []

    def kernel(x):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 256)  # 64 fp32
        t = b.Get(float32)
        seen.append(t.GetSize())
        t.SetSize(24)
        seen.append(t.GetSize())
        with pytest.raises(OutOfBoundsError, match=r"SetSize\(65\): buffer 'b' holds 64"):
            t.SetSize(65)

    launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)
    assert seen == [64, 24]
