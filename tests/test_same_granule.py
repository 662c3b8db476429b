"""Same-address serialisation (engine/l2.py): a copy whose first row's GM granule k > 1 cores
request at the same step of their streams holds its MTE for at least k x serial_cycles, the
excess a ``same_granule`` stall; cores reading different granules, or the same granule at
other steps, are not held.

Platform: ``tiny`` with 4 AIV cores, 128-byte L2 lines, pipelined copies (issue 10 cycles, no
row cost, 32 B/cycle per core, no latency), 512-byte granules served one request per
100 cycles; HBM and L2 made fast (10^6 B/cycle; 256 B/cycle per core for hits) so that only
the queue holds a copy.
"""

from __future__ import annotations

import numpy as np

from aicore_sim.ascendc import DataCopy, GetBlockIdx, GlobalTensor, LocalTensor, TPosition, float32
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize_trace

COSTS = dict(copy_model="pipelined",
             mte2_issue_cycles=10, mte2_row_cycles=0, mte2_core_bytes_per_cycle=32,
             mte2_latency_ns=0,
             mte3_issue_cycles=10, mte3_row_cycles=0, mte3_core_bytes_per_cycle=32,
             mte3_latency_ns=0,
             l2_line_bytes=128, gm_serial_granule_bytes=512, gm_serial_cycles=100.0)
QUEUE = load_platform("tiny").with_overrides(aiv_core_num=4, costs=COSTS, l2_rate=1024.0,
                                             hbm_bytes_per_cycle=1e6)
NO_QUEUE = QUEUE.with_overrides(costs={"gm_serial_cycles": 0.0})
N = 8  # fp32 elements per copy: 32 B


def _reads(x, tiling):
    """Two 32-byte copies per core: from a shared offset (every core the same granule at the
    same step) or from the core's own 512-byte granule (``own``)."""
    g = GlobalTensor(float32)
    base = GetBlockIdx() * 128 if tiling["own"] else 0  # 128 fp32 = 512 B apart
    g.SetGlobalBuffer(x + base * 4, 2 * N)
    u = LocalTensor(float32, TPosition.VECCALC, 0, 2 * N)
    DataCopy(u, g, N)
    DataCopy(u[N], g[N], N)


def _run(platform, own: bool):
    x = np.zeros(4 * 128, np.float32)
    return launch(_reads, ["x", {"own": own}], {"x": x}, {}, platform, block_dim=4,
                  mode="timing-only")


def _copies(r, core=0):
    ct = r.trace.cores[core]
    return list(zip(ct.start.tolist(), ct.end.tolist()))


def test_four_cores_on_one_granule_queue_behind_each_other():
    r = _run(QUEUE, own=False)
    # each copy: 4 cores ask for granule 0 at the same step -> at least 4 x 100 = 400 cycles
    # (alone: max(issue 10, 32 B / 32 B per cycle) = 10)
    starts = [s for s, _ in _copies(r)]
    assert [e - s for s, e in _copies(r)][:2] == [400, 400]
    assert starts[1] == starts[0] + 400
    s = summarize_trace(r.trace, QUEUE)
    # 2 copies x (400 - 10) queued cycles on each of the 4 cores
    assert [c["same_granule_cycles"] for c in s["cores"]] == [780] * 4
    assert s["same_granule_cycles"] == 4 * 780
    stalls = [x for x in r.trace.cores[0].stalls if x[3] == "same_granule"]
    assert len(stalls) == 2 and stalls[0][2] - stalls[0][1] == 390


def test_without_the_queue_or_with_own_granules_nothing_waits():
    for platform, own in ((NO_QUEUE, False), (QUEUE, True)):
        r = _run(platform, own)
        assert [e - s for s, e in _copies(r)][:2] == [10, 10], (platform.costs.gm_serial_cycles,
                                                                own)
        assert summarize_trace(r.trace, platform)["same_granule_cycles"] == 0
