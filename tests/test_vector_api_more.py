"""ArithProgression, CreateVecIndex, the level-2 ReduceSum / ReduceMax, InitGlobalMemory /
InitOutput, GetPhyAddr and ToFloat: numbers against hand-computed values, and cycles on
``tiny`` (vector call = 10 + n / 8; UB->GM copy = 100 + bytes)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    ArithProgression,
    CreateVecIndex,
    DataCopy,
    GlobalTensor,
    InitGlobalMemory,
    InitOutput,
    PipeBarrier,
    ReduceMax,
    ReduceSum,
    TBuf,
    ToFloat,
    TPipe,
    bfloat16,
    float32,
    int32,
)
from aicore_sim.ascendc.tensors import GM_ADDR
from aicore_sim.sim import cost
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY


def _ub_kernel(body, x: np.ndarray, out_dtype, n_out: int):
    """x to UB, ``body(out, x_ub)``, out to GM; returns (outputs, program)."""
    def kernel(xg_addr, zg_addr):
        pipe = TPipe()
        a, o, tmp = TBuf(name="a"), TBuf(name="o"), TBuf(name="tmp")
        pipe.InitBuffer(a, max(32, x.nbytes))
        pipe.InitBuffer(o, max(32, n_out * np.dtype(out_dtype).itemsize))
        pipe.InitBuffer(tmp, 1024)
        xg = GlobalTensor(x.dtype)
        xg.SetGlobalBuffer(xg_addr)
        ta = a.Get(x.dtype)
        DataCopy(ta, xg, x.size)
        PipeBarrier(PIPE_ALL)
        ot = o.Get(out_dtype)
        body(ot, ta, tmp.Get(out_dtype))
        PipeBarrier(PIPE_ALL)
        zg = GlobalTensor(out_dtype)
        zg.SetGlobalBuffer(zg_addr)
        DataCopy(zg, ot, n_out)

    r = launch(kernel, ["x", "z"], {"x": x, "z": np.zeros(n_out, out_dtype)},
               {"z": (np.dtype(out_dtype), (n_out,))}, TINY, block_dim=1, mode="functional")
    return r.outputs["z"], r.program


def test_arith_progression_and_create_vec_index():
    x = np.zeros(8, np.int32)
    got, _ = _ub_kernel(lambda o, a, t: ArithProgression(o, 5, 3, 40), x, int32, 40)
    assert got.tolist() == [5 + 3 * i for i in range(40)]
    got, _ = _ub_kernel(lambda o, a, t: CreateVecIndex(o, -2, 16), x, int32, 16)
    assert got.tolist() == list(range(-2, 14))
    got, _ = _ub_kernel(lambda o, a, t: ArithProgression(o, 0.5, 0.25, 8), x, float32, 8)
    assert got.tolist() == [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25]


def test_reduce_sum_and_its_order():
    x = np.arange(200, dtype=np.float32)
    got, _ = _ub_kernel(lambda o, a, t: ReduceSum(o, a, t, 200), x, float32, 8)
    assert got[0] == 19900.0  # 0 + ... + 199, exact in fp32
    # pair tree inside the 64-lane repeat: (1 + 1e8) rounds to 1e8 and (1 - 1e8) to -1e8,
    # so the sum is 0, not 2
    y = np.zeros(64, np.float32)
    y[:4] = [1, 1e8, 1, -1e8]
    got, _ = _ub_kernel(lambda o, a, t: ReduceSum(o, a, t, 64), y, float32, 8)
    assert got[0] == 0.0


def test_reduce_max_with_index():
    x = np.array([3, 7, 7, 1, -2, 0, 5, 6], np.float32)
    got, _ = _ub_kernel(lambda o, a, t: ReduceMax(o, a, t, 8, True), x, float32, 8)
    assert got[0] == 7.0
    assert got[1:2].view(np.uint32)[0] == 1  # the first 7
    got, _ = _ub_kernel(lambda o, a, t: ReduceMax(o, a, t, 8), x, float32, 8)
    assert got[0] == 7.0 and got[1] == 0.0  # no index written


def test_init_global_memory_fills_and_is_priced_as_a_write():
    def kernel(z):
        g = GlobalTensor(int32)
        g.SetGlobalBuffer(z)
        InitGlobalMemory(g, 48, 7)
        InitOutput(g[48], 16)  # value 0 by default
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 64)
        with pytest.raises(KernelError, match="only allowed before any InitBuffer"):
            InitGlobalMemory(g, 8, 1)
        InitOutput(g[56], 8, 3)  # the basic API's fill: after InitBuffer too

    z = np.full(64, -1, np.int32)
    r = launch(kernel, ["z"], {"z": z}, {"z": (np.dtype(np.int32), (64,))}, TINY, block_dim=1)
    assert r.outputs["z"].tolist() == [7] * 48 + [0] * 8 + [3] * 8
    fills = [i for i in r.program.streams[0] if i.op is Opcode.COPY_UB_TO_GM]
    assert [i.label for i in fills] == ["InitGlobalMemory", "InitOutput", "InitOutput"]
    # a UB->GM copy on tiny: 100 + bytes = 100 + 48 x 4 = 292 cycles
    assert cost.occupancy_cycles(fills[0], TINY) == 292


def test_init_output_takes_bfloat16_and_follows_init_buffer():
    """InitOutput is the library's Duplicate-and-copy from the stack UB: any 16/32-bit type,
    bfloat16 too, and legal after the TPipe's buffers (InitGlobalMemory is neither)."""
    bf16 = np.dtype(bfloat16)

    def kernel(z):
        g = GlobalTensor(bf16)
        g.SetGlobalBuffer(z)
        pipe = TPipe()
        pipe.InitBuffer(TBuf(name="b"), 64)
        InitOutput(g[4], 8)
        InitOutput(g[12], 4, 1.5)
        with pytest.raises(KernelError, match="InitGlobalMemory<bfloat16>: the element type"):
            InitGlobalMemory(g, 4, 1.0)

    z = np.full(16, 3, bf16)
    r = launch(kernel, ["z"], {"z": z}, {"z": (bf16, (16,))}, TINY, block_dim=1)
    assert r.outputs["z"].astype(np.float32).tolist() == [3] * 4 + [0] * 8 + [1.5] * 4


def test_init_output_fills_bfloat16_and_refuses_int8():
    def kernel(z, w):
        g, h = GlobalTensor(bfloat16), GlobalTensor(np.int8)
        g.SetGlobalBuffer(z)
        h.SetGlobalBuffer(w)
        InitOutput(g, 16, 1.5)
        with pytest.raises(KernelError, match=r"InitOutput<int8>: the element type"):
            InitOutput(h, 32)

    z = np.zeros(16, bfloat16)
    r = launch(kernel, ["z", "w"], {"z": z, "w": np.zeros(32, np.int8)},
               {"z": (np.dtype(bfloat16), (16,))}, TINY, block_dim=1)
    assert r.outputs["z"].astype(np.float32).tolist() == [1.5] * 16


def test_phy_addr_and_to_float():
    seen = {}

    def kernel(x):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(x + 64)
        pipe = TPipe()
        b, c = TBuf(name="b"), TBuf(name="c")
        pipe.InitBuffer(b, 96)
        pipe.InitBuffer(c, 64)
        seen.update(gm=g.GetPhyAddr(), ub=c.Get(float32).GetPhyAddr())

    launch(kernel, ["x"], {"x": np.zeros(64, np.float32)}, {}, TINY, block_dim=1)
    assert seen == {"gm": GM_ADDR("x", 64), "ub": 96}
    v = ToFloat(np.array([1.5], bfloat16)[0])
    assert v == np.float32(1.5) and v.dtype == np.float32


def test_cycles_on_tiny():
    x = np.zeros(64, np.float32)
    _, prog = _ub_kernel(lambda o, a, t: (ArithProgression(o, 0, 1, 64), ReduceSum(o, a, t, 64)),
                         x, float32, 64)
    vec = [i for i in prog.streams[0] if i.op in (Opcode.ARITH_PROGRESSION, Opcode.REDUCE_SUM)]
    # both 10 + 64 / 8 = 18 cycles (priced as Duplicate / WholeReduceSum of 64 elements)
    assert [cost.occupancy_cycles(i, TINY) for i in vec] == [18, 18]
