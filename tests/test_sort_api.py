"""Sort, MrgSort, Concat, Extract, GetSortLen / GetSortOffset (A2/A3 layout: an 8-byte (score,
index) structure per element, descending, equal scores in input order) against hand-built
expectations, and their cycles on ``tiny`` (Sort / MrgSort 10 + 1 per element). Exhausted-
suspension merges: tests/test_permute_sort_api.py."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    Concat,
    DataCopy,
    Extract,
    GetSortLen,
    GetSortOffset,
    GlobalTensor,
    MrgSort,
    MrgSort4Info,
    MrgSortSrcList,
    PipeBarrier,
    Sort,
    TBuf,
    TPipe,
    float16,
    float32,
    uint32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from tests.conftest import TINY


def _sort_kernel(scores: np.ndarray, full: bool, merge: bool = False):
    """scores -> Concat -> Sort (indices 0..n-1) -> [MrgSort of the two halves] -> Extract."""
    n = scores.size
    dt = scores.dtype

    def kernel(x, vals, idx):
        pipe = TPipe()
        bufs = {k: TBuf(name=k) for k in ("src", "concat", "index", "sorted", "merged", "tmp",
                                          "v", "i")}
        sizes = {"src": n * dt.itemsize, "concat": n * dt.itemsize, "index": n * 4,
                 "sorted": n * 8, "merged": n * 8, "tmp": n * 8, "v": n * dt.itemsize,
                 "i": n * 4}
        for k, b in bufs.items():
            pipe.InitBuffer(b, sizes[k])
        xg, vg, ig = GlobalTensor(dt), GlobalTensor(dt), GlobalTensor(uint32)
        xg.SetGlobalBuffer(x)
        vg.SetGlobalBuffer(vals)
        ig.SetGlobalBuffer(idx)
        src, concat = bufs["src"].Get(dt), bufs["concat"].Get(dt)
        index = bufs["index"].Get(uint32)
        DataCopy(src, xg, n)
        ig_in = GlobalTensor(uint32)
        ig_in.SetGlobalBuffer(idx)  # the launch passes 0..n-1 in `idx`
        DataCopy(index, ig_in, n)
        PipeBarrier(PIPE_ALL)
        Concat(concat, src, bufs["tmp"].Get(dt), n // 16)
        PipeBarrier(PIPE_ALL)
        sorted_ = bufs["sorted"].Get(dt)
        Sort(sorted_, concat, index, bufs["tmp"].Get(dt), n // 32, full)
        PipeBarrier(PIPE_ALL)
        if merge:
            half = n // 2
            merged = bufs["merged"].Get(dt)
            MrgSort(merged, MrgSortSrcList(sorted_, sorted_[GetSortOffset(dt, half)]),
                    MrgSort4Info([half, half, 0, 0], False, 0b11, 1))
            PipeBarrier(PIPE_ALL)
            sorted_ = merged
        v, i = bufs["v"].Get(dt), bufs["i"].Get(uint32)
        Extract(v, i, sorted_, n // 32)
        PipeBarrier(PIPE_ALL)
        DataCopy(vg, v, n)
        DataCopy(ig, i, n)

    out = {"vals": (dt, (n,)), "idx": (np.dtype(np.uint32), (n,))}
    r = launch(kernel, ["x", "vals", "idx"],
               {"x": scores, "vals": np.zeros(n, dt), "idx": np.arange(n, dtype=np.uint32)},
               out, TINY, block_dim=1, mode="functional")
    return r.outputs["vals"], r.outputs["idx"], r.program


def _want(scores: np.ndarray, groups: int | None = None):
    """Descending with ties in input order, hand-rolled: insertion by (-score, position)."""
    n = scores.size
    size = n if groups is None else groups
    order = []
    for g in range(0, n, size):
        order += sorted(range(g, g + size), key=lambda j: (-float(scores[j]), j))
    return scores[order], np.array(order, np.uint32)


def test_full_sort_descending_ties_in_input_order():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 10, 64).astype(np.float32)  # many equal scores
    v, i, _ = _sort_kernel(s, full=True)
    wv, wi = _want(s)
    assert np.array_equal(v, wv) and np.array_equal(i, wi)


def test_sort_per_32_when_not_full():
    s = np.arange(64, dtype=np.float32)[::-1].copy()
    s[:32] = s[:32][::-1]  # first group ascending, second descending
    v, i, _ = _sort_kernel(s, full=False)
    wv, wi = _want(s, groups=32)
    assert np.array_equal(v, wv) and np.array_equal(i, wi)


def test_half_scores_and_merge_of_two_sorted_halves():
    rng = np.random.default_rng(5)
    s = rng.normal(size=64).astype(np.float16)
    s[10] = s[50]  # a tie across the halves: the first list's element comes first
    v, i, prog = _sort_kernel(s, full=False, merge=True)
    wv, wi = _want(s)
    assert np.array_equal(v, wv) and np.array_equal(i, wi)
    ops = [ins.op for ins in prog.streams[0]]
    assert ops.count(Opcode.MRG_SORT) == 1 and ops.count(Opcode.EXTRACT) == 2


def test_sort_len_offset_and_layout():
    assert GetSortLen(float32, 32) == 64 and GetSortLen(float16, 32) == 128
    assert GetSortOffset(float32, 16) == 32
    s = np.array([1.5] + [0.0] * 31, np.float32)
    v, i, prog = _sort_kernel(s, full=True)
    assert v[0] == 1.5 and i[0] == 0


def test_refusals():
    def kernel(x):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 1024)
        t = b.Get(float32)
        with pytest.raises(KernelError, match="index tensor must be uint32"):
            Sort(t, t, t, t, 1)
        with pytest.raises(KernelError, match="validBit 0b101 must be"):
            MrgSort(t, MrgSortSrcList(t, t), MrgSort4Info([1, 1, 0, 0], False, 0b101, 1))
        with pytest.raises(KernelError, match="repeatTimes 2 is not modelled"):
            MrgSort(t, MrgSortSrcList(t, t), MrgSort4Info([1, 1, 0, 0], True, 0b11, 2))

    launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)


def test_cycles_on_tiny():
    s = np.zeros(64, np.float32)
    _, _, prog = _sort_kernel(s, full=True, merge=True)
    by_op = {}
    for ins in prog.streams[0]:
        by_op.setdefault(ins.op, cost.occupancy_cycles(ins, TINY))
    # full Sort of 64: 2 groups of 32, then one round of 4-way merges: 2 passes,
    # 10 + 2 x 64 x 1 = 138; MrgSort of 64: 10 + 64 = 74; Extract of 64: 10 + 64 / 8 = 18
    assert (by_op[Opcode.SORT], by_op[Opcode.MRG_SORT], by_op[Opcode.EXTRACT]) == (138, 74, 18)
    # on A2 (the vendor's 2 elements per cycle): 20 + 0.5 x 2 x 64 = 84
    sort = next(i for i in prog.streams[0] if i.op is Opcode.SORT)
    assert cost.occupancy_cycles(sort, load_platform("ascend910b1")) == 84


@pytest.mark.parametrize("count, full, passes", [
    (32, True, 1),  # one group: the sort instruction only
    (64, True, 2),  # 2 groups: one round of merges
    (128, True, 2),  # 4 groups: one 4-way merge
    (160, True, 3),  # 5 groups -> 2 lists -> 1: two rounds
    (160, False, 1),  # each group on its own: no merges
])
def test_a_full_sort_passes_its_elements_once_per_merge_round(count, full, passes):
    sort = Instr(Pipe.VECTOR, Opcode.SORT, count=count, params=(int(full),))
    assert cost.sort_passes(sort) == passes
