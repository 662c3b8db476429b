"""``SyncAll``: every core of a launch waits at its k-th SyncAll until all have arrived, in the
record pass (cores advance phase by phase, so a core reads what the others wrote before the
barrier) and in the replay (released ``sync_all_cycles`` after the last arrival).

Platform ``tiny`` (data/costs/tiny.toml): 2 AIV cores, vector call 10 + n/8 cycles, issue 1
cycle per pipe instruction, PipeBarrier 1 cycle, SyncAll released 50 cycles after the last
arrival.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    EVENT_ID0,
    Add,
    DataCopy,
    Duplicate,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    LocalTensor,
    Muls,
    SetFlag,
    SyncAll,
    TBuf,
    TPipe,
    TPosition,
    WaitFlag,
    float32,
    int32,
)
from aicore_sim.sim import engine
from aicore_sim.sim.errors import DeadlockError, KernelError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY

N = 64  # fp32 elements per core


def imbalanced(y, extra):
    """Core 1 runs ``extra`` more Duplicates than core 0 before the SyncAll."""
    core = GetBlockIdx()
    pipe = TPipe()
    b = TBuf(name="b")
    pipe.InitBuffer(b, N * 4)
    t = b.Get(float32)
    for _ in range(1 + (extra if core == 1 else 0)):
        Duplicate(t, float(core + 1), N)
    SyncAll()
    Duplicate(t, 5.0, N)


def _rows(core):
    return [(core.stream[i].op, int(s), int(e)) for i, s, e in
            zip(core.index, core.start, core.end)]


def test_released_together_50_cycles_after_the_last_arrival():
    r = launch(imbalanced, ["y", 2], {"y": np.zeros(N, np.float32)}, {}, TINY, block_dim=2,
               mode="timing-only")
    c0, c1 = r.trace.cores
    # Duplicate of 64 = 10 + 64 / 8 = 18 cycles, issued in 1 cycle each. Core 0: [1, 19), its
    # PipeBarrier<PIPE_ALL> (SyncAll drains the pipes first) [19, 20): arrives at 20. Core 1:
    # three Duplicates [1, 19), [19, 37), [37, 55), barrier [55, 56): arrives at 56, the last.
    # Both are released at 56 + 50 = 106; the SyncAll row is the release latency [56, 106).
    assert _rows(c0)[:3] == [(Opcode.DUPLICATE, 1, 19), (Opcode.BARRIER, 19, 20),
                             (Opcode.SYNC_ALL, 56, 106)]
    assert _rows(c1)[3:5] == [(Opcode.BARRIER, 55, 56), (Opcode.SYNC_ALL, 56, 106)]
    # core 0 waited for core 1 from its arrival to core 1's: a sync_all stall [20, 56)
    assert (0, 20, 56, "sync_all", "SyncAll #1: the other cores") in c0.stalls
    assert not [s for s in c1.stalls if s[3] == "sync_all"]
    # after it: Duplicate issued at 106 + 1, runs [107, 125); teardown barrier [125, 126)
    assert r.trace.makespan == 126


def two_phase(x, ws, y, sync):
    """Phase 1: ws[c] = 2 x[c]. Phase 2: y[c] = ws[other core] + x[c]."""
    c, n = GetBlockIdx(), N
    other = (c + 1) % 2
    xg, wg, yg = GlobalTensor(float32), GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    wg.SetGlobalBuffer(ws)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    a, b = TBuf(name="a"), TBuf(name="b")
    pipe.InitBuffer(a, n * 4)
    pipe.InitBuffer(b, n * 4)
    ta, tb = a.Get(float32), b.Get(float32)
    DataCopy(ta, xg[c * n], n)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Muls(tb, ta, 2.0, n)
    SetFlag(HardEvent.V_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopy(wg[c * n], tb, n)
    if sync:
        SyncAll()
    DataCopy(tb, wg[other * n], n)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Add(tb, tb, ta, n)
    SetFlag(HardEvent.V_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopy(yg[c * n], tb, n)


def _two_phase(sync, jobs=1, mode="timed"):
    x = np.arange(2 * N, dtype=np.float32) - 50
    out = {"ws": (np.dtype(np.float32), x.shape), "y": (np.dtype(np.float32), x.shape)}
    r = launch(two_phase, ["x", "ws", "y", sync],
               {"x": x, "ws": np.zeros_like(x), "y": np.zeros_like(x)}, out, TINY,
               block_dim=2, mode=mode, jobs=jobs)
    return x, r


def test_phase_two_reads_what_the_other_core_wrote_in_phase_one():
    x, r = _two_phase(sync=True)
    other = np.concatenate([x[N:], x[:N]])
    assert np.array_equal(r.outputs["y"], 2 * other + x)  # exact: small integers in fp32
    assert r.hazards == []  # the SyncAll orders ws's write and the other core's read


def test_without_sync_all_the_read_comes_first_and_races():
    x, r = _two_phase(sync=False, mode="functional")
    # recorded core after core: core 0 ran to its end before core 1 wrote ws[1], so it read
    # zeros there; core 1 read ws[0] after core 0 wrote it
    assert np.array_equal(r.outputs["y"][:N], x[:N])
    assert np.array_equal(r.outputs["y"][N:], 2 * x[:N] + x[N:])
    x, r = _two_phase(sync=False)
    # replayed together, each core's read of ws comes before the other's write lands
    assert np.array_equal(r.outputs["y"], x)
    gm = [h.message for h in r.hazards if h.kind == "race" and "GM 'ws'" in h.message]
    assert len(gm) == 2  # ws[0] and ws[1], each written by one core and read by the other
    assert [h.kind for h in r.hazards].count("timed_differs") == 1


def test_jobs_two_gives_the_serial_result():
    _, serial = _two_phase(sync=True, jobs=1)
    _, par = _two_phase(sync=True, jobs=2)
    assert np.array_equal(serial.outputs["y"], par.outputs["y"])
    assert [list(s) for s in serial.program.streams] == [list(s) for s in par.program.streams]
    assert serial.trace.makespan == par.trace.makespan
    assert par.program.jobs == 1  # the cores must meet: recorded in one process


def test_a_core_that_never_arrives_is_a_named_deadlock():
    def kernel(y):
        if GetBlockIdx() == 0:
            SyncAll()

    with pytest.raises(DeadlockError, match=r"SyncAll #1: core1.veccore0 ended after 0 SyncAll "
                                            r"call\(s\), while 1 core\(s\) \(first: "
                                            r"core0.veccore0\)"):
        launch(kernel, ["y"], {"y": np.zeros(8, np.float32)}, {}, TINY, block_dim=2)


def test_replay_of_streams_that_never_meet_names_core_and_barrier():
    r = launch(imbalanced, ["y", 0], {"y": np.zeros(N, np.float32)}, {}, TINY, block_dim=2,
               mode="timing-only")
    streams = [list(s) for s in r.program.streams]
    streams[1] = [i for i in streams[1] if i.op is not Opcode.SYNC_ALL]
    with pytest.raises(DeadlockError, match=r"core0.veccore0, pipe SCALAR waits SyncAll #1 "
                                            r"\(1 of 2 cores arrived\)"):
        engine.replay(streams, TINY, group=False)


def test_soft_form_checks_its_workspaces():
    seen = []

    def kernel(ws):
        g = GlobalTensor(int32)
        g.SetGlobalBuffer(ws, 16)  # 64 bytes: 32 per core
        u = LocalTensor(int32, TPosition.VECCALC, 0, 16)
        SyncAll(g, u)  # every core, priced as the hard form
        seen.append(GetBlockIdx())
        with pytest.raises(KernelError, match="usedCores 1 of 2 cores is not modelled"):
            SyncAll(g, u, 1)
        small = LocalTensor(int32, TPosition.VECCALC, 256, 8)
        with pytest.raises(KernelError, match="ubWorkspace holds 32 bytes; 2 cores need at "
                                              "least 64"):
            SyncAll(g, small)
        with pytest.raises(KernelError, match="SyncAll<false>"):
            SyncAll(isAIVOnly=False)

    r = launch(kernel, ["ws"], {"ws": np.zeros(16, np.int32)}, {}, TINY, block_dim=2,
               mode="timing-only")
    assert seen == [0, 1]
    assert [i.op for i in r.program.streams[0]].count(Opcode.SYNC_ALL) == 1


def test_sync_all_outside_a_launch_is_refused():
    with pytest.raises(KernelError, match="outside a kernel launch"):
        SyncAll()
