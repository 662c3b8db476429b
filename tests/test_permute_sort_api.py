"""The Ascend C API behaviour the ``MoeTokenPermuteWithEp`` port needed, against hand-built
expectations (platform ``tiny``): ``Concat`` on A2/A3 only rebinds its concat tensor,
``MrgSort<T, true>`` (exhausted suspension) stops when one list runs out and reports what it
took from each list, ``Duplicate`` with a ``uint64_t mask[2]`` bit mask writes only the masked
lanes, and ``GetPhyAddr`` of a GlobalTensor bound to nullptr is ``None``."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    Concat,
    DataCopy,
    Duplicate,
    Extract,
    GetSortOffset,
    GlobalTensor,
    LocalTensor,
    MrgSort,
    MrgSortSrcList,
    PipeBarrier,
    Sort,
    TBuf,
    TPipe,
    float32,
    uint32,
)
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY


def _run(kernel, inputs, outputs, mode="functional"):
    return launch(kernel, list(inputs), inputs, outputs, TINY, block_dim=1, mode=mode)


def test_concat_rebinds_without_an_instruction():
    def kernel(x, y):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 1024)
        src = b.Get(float32)
        concat = LocalTensor(float32)  # default-constructed, as `LocalTensor<float> c;`
        with pytest.raises(KernelError, match="default-constructed"):
            concat.GetValue(0)
        Concat(concat, src[32], src, 2)
        assert (concat.buf, concat.addr) == (src.buf, src.addr + 128)

    r = _run(kernel, {"x": np.zeros(8, np.float32), "y": np.zeros(8, np.float32)}, {})
    # nothing but the PipeBarrier(PIPE_ALL) of the TPipe's teardown at kernel end
    assert [i.op for i in r.program.streams[0]] == [Opcode.BARRIER]


def _merge_kernel(a: np.ndarray, b: np.ndarray, counts: list[int]):
    """Sort ``a`` and ``b`` (32 each) on their own, then one exhausted-suspension merge of the
    first ``counts`` structures of each; outputs the merged indices and the taken counts."""
    taken: list[int] = []

    def kernel(x, idx, out):
        pipe = TPipe()
        bufs = {k: TBuf(name=k) for k in ("s", "i", "sorted", "merged", "v", "o")}
        for k, n in (("s", 256), ("i", 256), ("sorted", 512), ("merged", 512), ("v", 256),
                     ("o", 256)):
            pipe.InitBuffer(bufs[k], n)
        xg, ig, og = GlobalTensor(float32), GlobalTensor(uint32), GlobalTensor(uint32)
        xg.SetGlobalBuffer(x)
        ig.SetGlobalBuffer(idx)
        og.SetGlobalBuffer(out)
        s, i = bufs["s"].Get(float32), bufs["i"].Get(uint32)
        DataCopy(s, xg, 64)
        DataCopy(i, ig, 64)
        PipeBarrier(PIPE_ALL)
        sorted_ = bufs["sorted"].Get(float32)
        Sort(sorted_, s, i, sorted_, 1, True)
        Sort(sorted_[GetSortOffset(float32, 32)], s[32], i[32], sorted_, 1, True)
        PipeBarrier(PIPE_ALL)
        merged = bufs["merged"].Get(float32)
        sortedNum = [0, 0, 0, 0]
        MrgSort(merged, MrgSortSrcList(sorted_, sorted_[GetSortOffset(float32, 32)]),
                [counts[0], counts[1], 0, 0], sortedNum, 0b0011, 1,
                isExhaustedSuspension=True)
        taken.extend(sortedNum)
        PipeBarrier(PIPE_ALL)
        v, o = bufs["v"].Get(float32), bufs["o"].Get(uint32)
        Duplicate(o.ReinterpretCast(float32), 0.0, 64)
        PipeBarrier(PIPE_ALL)
        Extract(v, o, merged, 2)
        PipeBarrier(PIPE_ALL)
        DataCopy(og, o, 64)

    x = np.concatenate([a, b]).astype(np.float32)
    r = _run(kernel, {"x": x, "idx": np.arange(64, dtype=np.uint32),
                      "out": np.zeros(64, np.uint32)}, {"out": (np.dtype(np.uint32), (64,))})
    return r, taken


def test_exhausted_merge_stops_when_a_list_runs_out():
    a = np.arange(32, dtype=np.float32)[::-1] * 2  # 62, 60, ..., 0 (indices 0..31)
    b = np.arange(32, dtype=np.float32)[::-1] * 2 + 1  # 63, 61, ..., 1 (indices 32..63)
    r, taken = _merge_kernel(a, b, [4, 4])
    # first 4 of each list: 62 60 58 56 and 63 61 59 57; merged 63 62 61 60 59 58 57 -> list
    # b runs out at 57 after 7 structures: 3 taken from a, 4 from b; then Extract of 2 x 32
    # writes the 7 merged indices and whatever the rest of `merged` held (zeros here)
    assert taken == [3, 4, 0, 0]
    assert r.outputs["out"][:7].tolist() == [32, 0, 33, 1, 34, 2, 35]
    ms = [i for i in r.program.streams[0] if i.op is Opcode.MRG_SORT]
    assert len(ms) == 1 and ms[0].count == 7 and ms[0].params == (4, 4, 1)
    reads = [i for i in r.program.streams[0] if i.label == "GetMrgSortResult"]
    assert len(reads) == 1 and reads[0].dep is not None


def test_exhausted_merge_equal_scores_take_the_first_list_first():
    a = np.full(32, 5.0, np.float32)
    b = np.full(32, 5.0, np.float32)
    r, taken = _merge_kernel(a, b, [3, 3])
    # all scores equal: list a's 3 come first and exhaust it -> stop after 3
    assert taken == [3, 0, 0, 0]
    assert r.outputs["out"][:3].tolist() == [0, 1, 2]


def test_exhausted_merge_needs_numerics():
    with pytest.raises(KernelError, match="timing-only record"):
        launch(*_timing_only_args(), block_dim=1, mode="timing-only")


def _timing_only_args():
    def kernel(x):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 1024)
        t = b.Get(float32)
        MrgSort(t[128], MrgSortSrcList(t, t[16]), [2, 2, 0, 0], [0, 0, 0, 0], 0b11, 1,
                isExhaustedSuspension=True)

    return (kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY)


def test_duplicate_bit_mask_writes_only_the_tail_lanes():
    def kernel(out):
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 256)
        t = b.Get(float32)
        Duplicate(t, 1.0, 64)
        PipeBarrier(PIPE_ALL)
        n = 5  # as the permute sort: lanes [n, 32) of the last repeat get -3.4e38
        mask0 = ((0xFFFFFFFFFFFFFFFF << n) & 0xFFFFFFFFFFFFFFFF) & (0xFFFFFFFFFFFFFFFF >> 32)
        Duplicate(t, -3.4e38, [mask0, 0], 1, 1, 8)
        with pytest.raises(KernelError, match="not one run"):
            Duplicate(t, 0.0, [0b101, 0], 1, 1, 8)
        PipeBarrier(PIPE_ALL)
        og = GlobalTensor(float32)
        og.SetGlobalBuffer(out)
        DataCopy(og, t, 64)

    r = _run(kernel, {"out": np.zeros(64, np.float32)}, {"out": (np.dtype(np.float32), (64,))})
    o = r.outputs["out"]
    assert o[:5].tolist() == [1.0] * 5
    assert (o[5:32] == np.float32(-3.4e38)).all() and len(o[5:32]) == 27
    assert o[32:].tolist() == [1.0] * 32


def test_get_phy_addr_of_nullptr_is_none():
    def kernel(x):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(None)
        assert g.GetPhyAddr() is None
        g.SetGlobalBuffer(x)
        assert g.GetPhyAddr().name == "x"

    _run(kernel, {"x": np.zeros(8, np.float32)}, {})
