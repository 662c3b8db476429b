"""``TPipe.Destroy`` releases the UB: a second TPipe on a core allocates from byte 0 again.

Platform ``tiny``: 8192 bytes usable by InitBuffer; ``ascend910b1``: 196,352 (192 KiB less the
1 KiB the platform keeps). The two-pass kernel below holds 7168 bytes in its first TPipe and
6144 in its second, 13,312 together: only a rewound UB fits both on ``tiny``.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    EVENT_ID0,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    Muls,
    SetFlag,
    TBuf,
    TPipe,
    TPosition,
    TQue,
    WaitFlag,
    float32,
)
from aicore_sim.sim.errors import EventIdError, KernelError, UBOverflowError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from aicore_sim.sim.memory import Allocation, reserved_bytes
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize_trace
from tests.conftest import TINY


def two_pass(x, y, n1, n2, destroy=True):
    """Pass 1: y = 2 x through a double-buffered queue pair and a scratch TBuf (TPipe 1).
    Pass 2 (TPipe 2): y = 3 y in place, ``n2`` elements per core in one TBuf."""
    core = GetBlockIdx()
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + core * n2 * 4)
    yg.SetGlobalBuffer(y + core * n2 * 4)
    pipe = TPipe()
    qin, qout = TQue(TPosition.VECIN, 2, name="qin"), TQue(TPosition.VECOUT, 1, name="qout")
    scratch = TBuf(TPosition.VECCALC, name="scratch")
    pipe.InitBuffer(qin, 2, n1 * 4)
    pipe.InitBuffer(qout, 1, n1 * 4)
    pipe.InitBuffer(scratch, 1024)
    for k in range(n2 // n1):
        a = qin.AllocTensor(float32)
        DataCopy(a, xg[k * n1], n1)
        qin.EnQue(a)
        a = qin.DeQue(float32)
        b = qout.AllocTensor(float32)
        Muls(b, a, 2.0, n1)
        qin.FreeTensor(a)
        qout.EnQue(b)
        b = qout.DeQue(float32)
        DataCopy(yg[k * n1], b, n1)
        qout.FreeTensor(b)
    if destroy:
        pipe.Destroy()
    pipe2 = TPipe()
    buf = TBuf(TPosition.VECCALC, name="scratch")  # the same name as a buffer of TPipe 1
    pipe2.InitBuffer(buf, n2 * 4)
    t = buf.Get(float32)
    DataCopy(t, yg, n2)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Muls(t, t, 3.0, n2)
    SetFlag(HardEvent.V_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopy(yg, t, n2)


def _launch(platform, cores, n1, n2, destroy=True, mode="timed"):
    x = (np.arange(cores * n2, dtype=np.float32) % 97) - 48
    return x, launch(two_pass, ["x", "y", n1, n2, destroy],
                     {"x": x, "y": np.zeros_like(x)},
                     {"y": (np.dtype(np.float32), x.shape)}, platform, block_dim=cores,
                     mode=mode)


def test_second_tpipe_allocates_from_byte_zero():
    # TPipe 1, n1 = 512 fp32 = 2048 B: qin 2 x 2048 + qout 2048 + scratch 1024 = 7168 B;
    # TPipe 2: n2 = 1536 fp32 = 6144 B
    x, r = _launch(TINY, 2, 512, 1536)
    assert np.array_equal(r.outputs["y"], x * 6)  # 2 x, then 3 y: exact in fp32
    assert r.program.allocations[0] == [
        Allocation("qin[0]", 0, 2048, 0), Allocation("qin[1]", 2048, 2048, 0),
        Allocation("qout", 4096, 2048, 0), Allocation("scratch", 6144, 1024, 0),
        Allocation("scratch@pipe1", 0, 6144, 1)]
    core = r.trace.cores[0]
    assert reserved_bytes(core.allocations) == 7168  # the larger of 7168 and 6144
    assert summarize_trace(r.trace, TINY)["ub_high_water_bytes"] == 7168
    # Destroy's full barrier stands between the two pipes' instructions
    ops = [i.op for i in r.program.streams[0]]
    first_pass2 = ops.index(Opcode.COPY_GM_TO_UB, ops.index(Opcode.BARRIER))
    assert Opcode.COPY_UB_TO_GM in ops[:ops.index(Opcode.BARRIER)]
    assert first_pass2 > ops.index(Opcode.BARRIER)
    assert not r.hazards


def test_without_destroy_a_second_tpipe_is_refused():
    with pytest.raises(KernelError, match="second TPipe while another is alive"):
        _launch(TINY, 1, 512, 1536, destroy=False)


def test_realistic_size_two_pipes_of_most_of_the_ub():
    p = load_platform("ascend910b1")
    # TPipe 1: n1 = 9600 fp32 = 38,400 B: 2 x 38,400 + 38,400 + 1024 = 116,224 B; TPipe 2:
    # n2 = 5 x 9600 = 48,000 fp32 = 192,000 B; 308,224 B together, over the 196,352 usable
    x, r = _launch(p, 4, 9600, 48_000)
    assert np.array_equal(r.outputs["y"], x * 6)
    alloc = r.program.allocations[3]
    assert reserved_bytes(alloc) == 192_000  # TPipe 2, the larger
    assert summarize_trace(r.trace, p)["ub_high_water_bytes"] == 192_000
    assert not r.hazards


def test_queues_of_a_destroyed_pipe_are_refused():
    def kernel(x):
        pipe = TPipe()
        q = TQue(TPosition.VECIN, 1, name="q")
        b = TBuf(name="b")
        pipe.InitBuffer(q, 1, 256)
        pipe.InitBuffer(b, 256)
        pipe.Destroy()
        with pytest.raises(KernelError, match="'b': Get after its TPipe was destroyed"):
            b.Get(float32)
        with pytest.raises(KernelError, match="InitBuffer on a destroyed TPipe"):
            pipe.InitBuffer(b, 256)
        pipe.Init()  # usable again, from UB byte 0
        pipe.InitBuffer(b, 512)
        q.AllocTensor(float32)

    with pytest.raises(KernelError, match="TQue 'q': AllocTensor after its TPipe was destroyed"):
        launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)


def test_alloc_and_release_event_id():
    got = []

    def kernel(x):
        pipe = TPipe()
        a = pipe.AllocEventID(HardEvent.V_MTE3)
        b = pipe.AllocEventID(HardEvent.V_MTE3)
        pipe.ReleaseEventID(HardEvent.V_MTE3, a)
        c = pipe.AllocEventID(HardEvent.V_MTE3)  # the lowest free id again
        got.extend([a, b, c, pipe.FetchEventID(HardEvent.V_MTE3)])
        with pytest.raises(EventIdError, match="id 5 of HardEvent V_MTE3 is not taken"):
            pipe.ReleaseEventID(HardEvent.V_MTE3, 5)

    launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)
    assert got == [0, 1, 0, 2]


def test_ub_overflow_still_named_in_the_second_pipe():
    # TPipe 2 asks 2560 fp32 = 10,240 B of the 8192 the UB has, all free again
    with pytest.raises(UBOverflowError, match="InitBuffer 'scratch@pipe1': asks 10240 bytes "
                                              r"\(request 10240 rounded to 32\), only 8192 "):
        _launch(TINY, 1, 512, 2560)


def idle_then_working(x, y, n, late_alloc=False):
    """A TPipe declared and never used, then a second TPipe that does the work (y = 2 x);
    with ``late_alloc`` the idle pipe allocates after the second one holds its buffer."""
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    idle = TPipe()
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC, name="work")
    pipe.InitBuffer(buf, n * 4)
    if late_alloc:
        idle.InitBuffer(TBuf(TPosition.VECCALC, name="late"), 32)
    t = buf.Get(float32)
    DataCopy(t, xg, n)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Muls(t, t, 2.0, n)
    SetFlag(HardEvent.V_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopy(yg, t, n)


def _launch_idle(late_alloc):
    x = np.arange(256, dtype=np.float32) - 100
    return x, launch(idle_then_working, ["x", "y", 256, late_alloc],
                     {"x": x, "y": np.zeros_like(x)},
                     {"y": (np.dtype(np.float32), x.shape)}, TINY, block_dim=1)


def test_a_live_idle_tpipe_does_not_conflict():
    x, r = _launch_idle(False)
    assert np.array_equal(r.outputs["y"], x * 2)


def test_an_idle_tpipe_allocating_beside_a_working_one_is_refused():
    with pytest.raises(KernelError, match="second TPipe while another is alive"):
        _launch_idle(True)
