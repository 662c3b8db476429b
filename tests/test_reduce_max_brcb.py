"""WholeReduceMax (every ReduceOrder), Brcb and SetAtomicMax against hand-built expectations,
and their cycles on ``tiny`` (vector call = 10 + n / 8)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    Brcb,
    BrcbRepeatParams,
    DataCopy,
    Duplicate,
    GetBlockIdx,
    GlobalTensor,
    PipeBarrier,
    ReduceOrder,
    SetAtomicMax,
    TBuf,
    TPipe,
    WholeReduceMax,
    float32,
    int32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY


def _run(body, x: np.ndarray, n_out: int):
    def kernel(xa, za):
        pipe = TPipe()
        a, o = TBuf(name="a"), TBuf(name="o")
        pipe.InitBuffer(a, 2048)
        pipe.InitBuffer(o, 2048)
        xg, zg = GlobalTensor(x.dtype), GlobalTensor(float32)
        xg.SetGlobalBuffer(xa)
        zg.SetGlobalBuffer(za)
        DataCopy(a.Get(x.dtype), xg, x.size)
        PipeBarrier(PIPE_ALL)
        ot = o.Get(float32)
        Duplicate(ot, -7.0, n_out)
        PipeBarrier(PIPE_ALL)
        body(ot, a.Get(x.dtype))
        PipeBarrier(PIPE_ALL)
        DataCopy(zg, ot, n_out)

    z = np.zeros(n_out, np.float32)
    r = launch(kernel, ["x", "z"], {"x": x, "z": z}, {"z": (np.dtype(np.float32), z.shape)},
               TINY, block_dim=1, mode="functional")
    return r.outputs["z"], r.program


X = np.zeros(128, np.float32)
X[:64] = np.arange(64) % 13  # repeat 0: max 12, first at lane 12
X[64:128] = -np.arange(64)  # repeat 1: max 0 at lane 0
X[64 + 40] = 3.0  # ... now max 3 at lane 40


@pytest.mark.parametrize("order, want", [
    # (value, index) pairs one pair (8 bytes) apart: dstRepStride 1
    (ReduceOrder.ORDER_VALUE_INDEX, [12.0, 12, 3.0, 40]),
    (ReduceOrder.ORDER_INDEX_VALUE, [12, 12.0, 40, 3.0]),
    (ReduceOrder.ORDER_ONLY_VALUE, [12.0, 3.0]),
    (ReduceOrder.ORDER_ONLY_INDEX, [12, 40]),
])
def test_whole_reduce_max_orders(order, want):
    got, _ = _run(lambda o, a: WholeReduceMax(o, a, 64, 2, 1, 1, 8, order), X, 8)
    n = len(want)
    vals = got[:n]
    ints = got[:n].view(np.uint32)
    for k, w in enumerate(want):  # an int is an index (uint32 bits), a float a value
        assert (ints[k] == w) if isinstance(w, int) else (vals[k] == w)
    assert np.all(got[n:] == -7.0)  # nothing else written


def test_whole_reduce_max_mask_limits_the_lanes():
    # only the leading 10 lanes of each repeat: max 9 at lane 9; repeat 1: 0 at lane 0
    got, _ = _run(lambda o, a: WholeReduceMax(o, a, 10, 2, 1, 1, 8,
                                              ReduceOrder.ORDER_ONLY_VALUE), X, 8)
    assert got[:2].tolist() == [9.0, 0.0]


def test_brcb_broadcasts_each_element_over_a_block():
    x = np.arange(1, 17, dtype=np.float32)
    # 2 repeats of 8 elements; blocks of 8 fp32; dstBlkStride 1, dstRepStride 8 (blocks)
    got, _ = _run(lambda o, a: Brcb(o, a, 2, BrcbRepeatParams(1, 8)), x, 128)
    assert np.array_equal(got, np.repeat(x, 8))
    got, _ = _run(lambda o, a: Brcb(o, a, 1, (2, 8)), x, 128)  # every other block
    want = np.full(128, -7.0, np.float32)
    for j in range(8):
        want[16 * j:16 * j + 8] = x[j]
    assert np.array_equal(got, want)


def test_atomic_max_of_two_cores():
    def kernel(y):
        c = GetBlockIdx()
        g = GlobalTensor(int32)
        g.SetGlobalBuffer(y)
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 64)
        t = b.Get(int32)
        Duplicate(t, 10 * (c + 1), 16)  # core 0: 10, core 1: 20
        PipeBarrier(PIPE_ALL)
        SetAtomicMax(int32)
        DataCopy(g, t, 16)

    y = np.array([5, 15, 25, 35] * 4, np.int32)
    r = launch(kernel, ["y"], {"y": y}, {"y": (np.dtype(np.int32), y.shape)}, TINY,
               block_dim=2)
    assert r.outputs["y"].tolist() == [20, 20, 25, 35] * 4
    assert r.hazards == []


def test_cycles_on_tiny():
    _, prog = _run(lambda o, a: (WholeReduceMax(o, a, 64, 2, 1, 1, 8),
                                 Brcb(o, a, 2, BrcbRepeatParams())), X, 128)
    vec = {i.op: cost.occupancy_cycles(i, TINY) for i in prog.streams[0]
           if i.op in (Opcode.WHOLE_REDUCE_MAX, Opcode.BRCB)}
    # WholeReduceMax: 2 x 64 lanes = 128 elements: 10 + 16 = 26; Brcb: 2 repeats x 8 blocks x
    # 8 fp32 written = 128: 10 + 16 = 26
    assert vec == {Opcode.WHOLE_REDUCE_MAX: 26, Opcode.BRCB: 26}
