"""Gather (byte offsets), Sigmoid, PairReduceSum and Sort32 against hand-built expectations, and
their cycles on ``tiny`` (vector call = 10 + n / 8; Sort 10 + 1 per element)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    Extract,
    Gather,
    PairReduceSum,
    PipeBarrier,
    Sigmoid,
    Sort32,
    float16,
    float32,
    uint32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Opcode
from tests.conftest import TINY
from tests.kernels import run_vector_body


def _run(body, inputs: dict, out_dtype, n_out: int):
    got, _, program = run_vector_body(body, inputs, out_dtype, n_out, TINY)
    return got, program


def test_gather_by_byte_offsets():
    x = np.arange(100, 164, dtype=np.float32)
    idx = np.array([5, 0, 63, 7, 7, 1, 2, 3] * 2, np.uint32)
    off = (idx * 4).astype(np.uint32)  # byte offsets
    got, _ = _run(lambda o, w, a, b: Gather(o, a, b, 0, 16), {"a": x, "b": off}, float32, 16)
    assert np.array_equal(got, x[idx])
    # srcBaseAddr 8 bytes = 2 elements further: idx + 2 (all still inside x)
    small = (np.array([5, 0, 60, 7, 7, 1, 2, 3], np.uint32) * 4).astype(np.uint32)
    got, _ = _run(lambda o, w, a, b: Gather(o, a, b, 8, 8), {"a": x, "b": small}, float32, 8)
    assert np.array_equal(got, x[[7, 2, 62, 9, 9, 3, 4, 5]])


def test_gather_refuses_an_offset_outside_src():
    x = np.arange(8, dtype=np.float32)
    off = np.array([4096] + [0] * 7, np.uint32)
    with pytest.raises(KernelError, match="Gather: an offset leaves src's buffer 'a'"):
        _run(lambda o, w, a, b: Gather(o, a, b, 0, 8), {"a": x, "b": off}, float32, 8)


def test_sigmoid_in_fp32():
    x = np.linspace(-6, 6, 64, dtype=np.float32)
    got, _ = _run(lambda o, w, a: Sigmoid(o, a, w.Get(float32), 64), {"a": x}, float32, 64)
    assert np.array_equal(got, np.float32(1) / (np.float32(1) + np.exp(-x)))
    h = x.astype(np.float16)
    got, _ = _run(lambda o, w, a: Sigmoid(o, a, 64), {"a": h}, float16, 64)
    want = (np.float32(1) / (np.float32(1) + np.exp(-h.astype(np.float32)))).astype(np.float16)
    assert np.array_equal(got, want)


def test_pair_reduce_sum():
    x = np.arange(64, dtype=np.float32)
    # one repeat of the leading 16 lanes: 8 pair sums 0+1, 2+3, ...
    got, _ = _run(lambda o, w, a: PairReduceSum(o, a, 1, 16, 1, 1, 8), {"a": x}, float32, 8)
    assert got.tolist() == [1.0, 5.0, 9.0, 13.0, 17.0, 21.0, 25.0, 29.0]


def test_sort32_sorts_each_group_of_32():
    rng = np.random.default_rng(11)
    s = rng.integers(0, 5, 64).astype(np.float32)
    idx = np.arange(64, dtype=np.uint32)

    def body(o, w, a, b):
        sorted_ = w.Get(float32)
        Sort32(sorted_, a, b, 2)
        PipeBarrier(PIPE_ALL)
        Extract(o, o[64].ReinterpretCast(uint32), sorted_, 2)

    got, _ = _run(body, {"a": s, "b": idx}, float32, 128)
    order = [j for g in (0, 32) for j in sorted(range(g, g + 32), key=lambda j: (-s[j], j))]
    assert np.array_equal(got[:64], s[order])
    assert np.array_equal(got[64:].view(np.uint32), np.array(order, np.uint32))


def test_cycles_on_tiny():
    x = np.arange(64, dtype=np.float32)
    off = np.zeros(64, np.uint32)
    _, prog = _run(lambda o, w, a, b: (Gather(o, a, b, 0, 64), Sigmoid(o, a, 64),
                                       PairReduceSum(o, a, 1, 64, 1, 1, 8)),
                   {"a": x, "b": off}, float32, 64)
    ops = (Opcode.GATHER, Opcode.SIGMOID, Opcode.PAIR_REDUCE_SUM)
    got = [cost.occupancy_cycles(i, TINY) for i in prog.streams[0] if i.op in ops]
    assert got == [18, 18, 18]  # each 10 + 64 / 8
