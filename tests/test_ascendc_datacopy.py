"""Tests of ``DataCopy`` (GM->UB, UB->UB, UB->GM), ``GetTPipePtr`` and ``TPipe.FetchEventID``.

Platform ``tiny``: copies cost 100 cycles + 1 per byte, a vector Copy 10 + n / 8 cycles, flags
1 cycle, issue 1 cycle (``data/costs/tiny.toml``).
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    DataCopy,
    GetTPipePtr,
    GlobalTensor,
    HardEvent,
    TPipe,
    TPosition,
    TQue,
    float32,
)
from aicore_sim.sim import program
from aicore_sim.sim.errors import EventIdError, KernelError
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.memory import MemoryImage, UnifiedBuffer
from tests import kernels
from tests.conftest import TINY


def _rows(result, core=0):
    ct = result.trace.cores[core]
    order = np.argsort(ct.index, kind="stable")
    return [(ct.stream[int(ct.index[r])].describe(), int(ct.start[r]), int(ct.end[r]))
            for r in order]


def _round_trip(n, **kw):
    x = np.arange(n, dtype=np.float32) + 0.5
    return launch(kernels.data_copy_round_trip, ["x", "y", dict(n=n, **kw)],
                  {"x": x, "y": np.zeros(n, np.float32)}, {"y": (np.float32, (n,))}, TINY,
                  block_dim=1), x


def test_data_copy_three_directions_exact_cycles():
    r, x = _round_trip(64)
    assert _rows(r) == [
        ("MTE2 DataCopy.GM2UB x@0->a@0 256B", 1, 357),  # 100 + 256 B (named as called)
        ("MTE2 SetFlag<MTE2_V>(0)", 357, 358),
        ("VECTOR WaitFlag<MTE2_V>(0)", 358, 359),
        ("VECTOR DataCopy.UB2UB a@0->b@256 256B", 359, 377),  # as a Copy: 10 + 64 / 8 = 18
        ("VECTOR SetFlag<V_MTE3>(0)", 377, 378),
        ("MTE3 WaitFlag<V_MTE3>(0)", 378, 379),
        ("MTE3 DataCopy.UB2GM b@256->y@0 256B", 379, 735),  # 100 + 256 B
        ("SCALAR PipeBarrier<PIPE_ALL>", 735, 736),
    ]
    stream = r.program.streams[0]
    assert [i.label for i in stream if i.op in (Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM)] \
        == ["DataCopy", "DataCopy"]
    ub2ub = next(i for i in stream if i.op is Opcode.DATA_COPY_UB_TO_UB)
    assert (ub2ub.pipe, ub2ub.count, ub2ub.params) == (Pipe.VECTOR, 64, (1, 256, 0, 0))
    assert np.array_equal(r.outputs["y"], x)
    assert r.hazards == []


@pytest.mark.parametrize("skip", [HardEvent.MTE2_V, HardEvent.V_MTE3])
def test_data_copy_without_its_flag_is_a_race(skip):
    r, x = _round_trip(64, skip=skip)
    races = [h for h in r.hazards if h.kind == "race"]
    assert races, [str(h) for h in r.hazards]
    # the UB->UB copy is the vector side of both races
    assert "DataCopy.UB2UB" in races[0].message
    assert not np.array_equal(r.outputs["y"], x)  # the timed image read stale bytes


def test_data_copy_unaligned_count_moves_whole_blocks_and_is_reported():
    """12 fp32 = 48 B: only one 32-byte block (8 values) moves, as on device."""
    r, x = _round_trip(12)
    mis = [h for h in r.hazards if h.kind == "misaligned"]
    assert len(mis) == 3  # GM->UB, UB->UB, UB->GM
    assert "48 B is not a multiple of 32 bytes; only 32 B are moved" in mis[0].message
    assert np.array_equal(r.outputs["y"][:8], x[:8])
    assert np.array_equal(r.outputs["y"][8:], np.zeros(4, np.float32))


def _recorder():
    image = MemoryImage.from_tensors({"x": np.zeros(16, np.float32)}, TINY.ub_size, 1, set(),
                                     copy=True)
    return program.CoreRecorder(0, 1, image, UnifiedBuffer(TINY.core_mem_size_ub), TINY)


def test_fetch_event_id_returns_lowest_free_id_without_taking_it():
    rec = _recorder()
    program._ACTIVE.append(rec)
    try:
        pipe = TPipe()
        assert GetTPipePtr() is pipe
        q = TQue(TPosition.VECIN, 2, name="q")
        pipe.InitBuffer(q, 2, 64)
        assert pipe.FetchEventID(HardEvent.MTE2_V) == 0
        assert pipe.FetchEventID(HardEvent.MTE2_V) == 0  # not taken by the first call
        t = q.AllocTensor(float32)
        q.EnQue(t)  # the queue takes MTE2_V id 0
        assert pipe.FetchEventID(HardEvent.MTE2_V) == 1
        assert pipe.FetchEventID(HardEvent.V_S) == 0
        q.DeQue(float32)  # id 0 released
        assert pipe.FetchEventID(HardEvent.MTE2_V) == 0
        rec.event_ids[HardEvent.S_V] = set(range(8))
        with pytest.raises(EventIdError, match="S_V"):
            pipe.FetchEventID(HardEvent.S_V)
        with pytest.raises(EventIdError):
            pipe.FetchEventID("V_S")
    finally:
        program._ACTIVE.pop()


def test_get_tpipe_ptr_without_tpipe_and_bad_operands():
    rec = _recorder()
    program._ACTIVE.append(rec)
    try:
        with pytest.raises(KernelError, match="no TPipe"):
            GetTPipePtr()
        g = GlobalTensor(float32)
        with pytest.raises(KernelError, match="expected"):
            DataCopy(g, g, 8)
    finally:
        program._ACTIVE.pop()


def test_without_auto_sync_an_unfenced_scalar_read_is_a_race():
    """``launch(auto_sync=False)``: the scalar read of the copied ids no longer waits for the
    MTE2 copy (issued at 1, read at 2 instead of 133), and the checker names the race."""
    x = np.arange(8, dtype=np.int32) + 10
    r = launch(kernels.scalar_read, ["x", "y", {}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.int32, (8,))}, TINY, block_dim=1, auto_sync=False)
    rows = _rows(r)
    assert rows[1] == ("SCALAR GetValue.UB ids@12-> 4B", 1, 2)  # 1-cycle read, no wait
    race = [h for h in r.hazards if h.kind == "race"]
    assert race and "MTE2 DataCopyPad.GM2UB x@0->ids@0" in race[0].message
    assert "SCALAR GetValue.UB ids@12" in race[0].message
    # the default is unchanged: the same launch with auto-sync is clean
    r2 = launch(kernels.scalar_read, ["x", "y", {}], {"x": x, "y": np.zeros_like(x)},
                {"y": (np.int32, (8,))}, TINY, block_dim=1)
    assert r2.hazards == []


def test_a_scalar_store_waits_for_the_vector_fill_it_overwrites():
    """Auto-sync orders a SetValue after the last non-scalar writer of its bytes: the stored
    element survives the earlier Duplicate in the timed image, with no hazard; built without
    auto-sync the store runs ahead of the fill and the checker names the race."""
    y = np.zeros(8, np.int32)
    r = launch(kernels.fill_then_scalar_store, ["x", "y", {}], {"x": y, "y": y.copy()},
               {"y": (np.int32, (8,))}, TINY, block_dim=1)
    rows = _rows(r)
    fill, store = rows[0], rows[1]
    assert fill[0].startswith("VECTOR Duplicate") and store[0].startswith("SCALAR SetValue.UB")
    assert store[1] >= fill[2]  # the store starts once the fill has completed
    assert r.outputs["y"].tolist() == [7, 7, 7, 42, 7, 7, 7, 7] and r.hazards == []
    r2 = launch(kernels.fill_then_scalar_store, ["x", "y", {}], {"x": y, "y": y.copy()},
                {"y": (np.int32, (8,))}, TINY, block_dim=1, auto_sync=False)
    race = [h for h in r2.hazards if h.kind == "race"]
    assert race and "VECTOR Duplicate" in race[0].message and "SetValue.UB" in race[0].message
