"""The chip fabric (engine/fabric.py): a UB -> GM write gets what the fabric has left beside
the reads that were already streaming when it came; a write beside the first read after a
wait (a new stream) or with no fabric modelled keeps its single-core rate.

Platform: ``tiny`` with its 2 AIV cores on 1 AI core, 128-byte L2 lines (the writes are
absorbed by L2: no HBM bytes, only fabric), pipelined copies (issue 10, no row cost,
32 B/cycle per core, no latency), chip HBM 32 B/cycle (two cores' reads at once: 16 each) and
a fabric of 80 B/cycle per AI core (the chip's: 1 AI core).
"""

from __future__ import annotations

import numpy as np

from aicore_sim.ascendc import (
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    LocalTensor,
    SetFlag,
    TPosition,
    WaitFlag,
    float32,
)
from aicore_sim.sim import engine
from aicore_sim.sim.engine.core import prepare
from aicore_sim.sim.engine.groups import groups
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform

COSTS = dict(copy_model="pipelined",
             mte2_issue_cycles=10, mte2_row_cycles=0, mte2_core_bytes_per_cycle=32,
             mte2_latency_ns=0,
             mte3_issue_cycles=10, mte3_row_cycles=0, mte3_core_bytes_per_cycle=32,
             mte3_latency_ns=0,
             l2_line_bytes=128, gm_fabric_ai_core_bytes_per_cycle=80.0)
FABRIC = load_platform("tiny").with_overrides(costs=COSTS, hbm_bytes_per_cycle=32.0)
NO_FABRIC = FABRIC.with_overrides(costs={"gm_fabric_ai_core_bytes_per_cycle": 0.0})
R = 1024  # fp32 elements per read: 4096 B
W = 512  # fp32 elements written: 2048 B


def _kernel(x, z, tiling):
    """Three reads back to back on MTE2 and one write on MTE3, started after the second read
    (flag MTE2 -> MTE3) or at once (``tiling["at_once"]``)."""
    base = GetBlockIdx() * 3 * R
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + base * 4, 3 * R)
    zg.SetGlobalBuffer(z + GetBlockIdx() * W * 4, W)
    u = LocalTensor(float32, TPosition.VECCALC, 0, R)  # the reads land in one buffer
    out = LocalTensor(float32, TPosition.VECCALC, R * 4, W)
    DataCopy(u, xg, R)
    DataCopy(u, xg[R], R)
    if not tiling["at_once"]:
        SetFlag(HardEvent.MTE2_MTE3, 0)
        WaitFlag(HardEvent.MTE2_MTE3, 0)
    DataCopy(zg, out, W)
    DataCopy(u, xg[2 * R], R)


def _write(platform, at_once=False):
    x = np.zeros(2 * 3 * R, np.float32)
    z = np.zeros(2 * W, np.float32)
    r = launch(_kernel, ["x", "z", {"at_once": at_once}], {"x": x, "z": z},
               {"z": (np.float32, (2 * W,))}, platform, block_dim=2, mode="timing-only")
    ct = r.trace.cores[0]
    rows = [(ct.start[k], ct.end[k]) for k in range(len(ct.start))
            if ct.stream[int(ct.index[k])].op.name == "COPY_UB_TO_GM"]
    return rows, r


def test_a_write_beside_streaming_reads_gets_what_the_fabric_leaves():
    rows, r = _write(FABRIC)
    # core 0: reads 1-257 and 257-513 (4096 B each at 16 B/cycle: the two cores share HBM's
    # 32), SetFlag 513-514, the third read from 514 (straight after the second: streaming),
    # WaitFlag 514-515, the write from 515. Beside it both cores' third reads stream at
    # 16 B/cycle each (their HBM share, under their own 32): R = 32, the fabric (80) leaves
    # 48 to the two writes, 24 each: 2048 / 24 = 85.3 -> 86 cycles (alone 2048 / 32 = 64)
    assert rows == [(515, 601)]
    ct = r.trace.cores[0]
    assert any(s[3] == "gm_bandwidth" and (s[1], s[2]) == (579, 601) for s in ct.stalls)


def test_a_write_beside_a_new_stream_or_without_the_fabric_keeps_its_rate():
    # at once: the write starts at 3 beside each core's first read (a new stream: it takes no
    # precedence), the fabric gives each of the two writes 80 / 2 = 40 >= 32: 2048 / 32 = 64
    assert _write(FABRIC, at_once=True)[0] == [(3, 67)]
    # no fabric: the write of the first test at its own rate, 515 + 64
    assert _write(NO_FABRIC)[0] == [(515, 579)]


def test_the_fabric_is_the_same_for_grouped_and_single_cores():
    # the two cores are one group (one replayed core of weight 2); replaying each gives the
    # same timelines
    _, r = _write(FABRIC)
    streams = r.program.streams
    assert groups(streams, [prepare(s, FABRIC) for s in streams], FABRIC) == [[0, 1]]
    again = engine.replay(streams, FABRIC, None, r.program.allocations, group=False)
    assert again.makespan == r.trace.makespan
    for a, b in zip(r.trace.cores, again.cores, strict=True):
        for name in ("index", "start", "end", "pipe", "stall_rows"):
            assert np.array_equal(getattr(a, name), getattr(b, name))


def test_hbm_unlimited_slack_lifts_the_fabric_too():
    from aicore_sim.views.slack import HBM, _columns

    _, r = _write(FABRIC)
    base = r.columns()[0]
    assert sum(base.fab) == 2048  # the one write's bytes
    assert sum(_columns(base, HBM, "unlimited").fab) == 0
