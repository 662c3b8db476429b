"""The L2 cache in front of HBM (engine/l2.py): re-reads hit and draw no HBM bytes, a small L2
or ``SetL2CacheHint(CACHE_MODE_DISABLE)`` makes them miss, writes are absorbed and written back
in the background once ``l2_size`` bytes of allocating traffic follow them, and a row that
does not start on a line draws its HBM bytes / ``unaligned_512_bandwidth_ratio``.

Platform: ``tiny`` (1 cycle per ns, issue 1 cycle per call, chip HBM 1 B/cycle shared by all
cores) with 4 AIV cores, 128-byte L2 lines and pipelined copies (issue 10, no row cost,
32 B/cycle per core from HBM, no latency); ``l2_rate`` 256 B/cycle shared by the 4 vector
cores of the one AI core: 64 B/cycle per core for hits.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    CacheMode,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    LocalTensor,
    TPosition,
    float32,
)
from aicore_sim.sim.engine import l2
from aicore_sim.sim.engine.core import prepare
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform

COSTS = dict(copy_model="pipelined",
             mte2_issue_cycles=10, mte2_row_cycles=0, mte2_core_bytes_per_cycle=32,
             mte2_latency_ns=0,
             mte3_issue_cycles=10, mte3_row_cycles=0, mte3_core_bytes_per_cycle=32,
             mte3_latency_ns=0,
             l2_line_bytes=128)
L2 = load_platform("tiny").with_overrides(aiv_core_num=4, l2_rate=256.0, costs=COSTS)
NO_L2 = L2.with_overrides(costs={"l2_line_bytes": 0})
N = 256  # fp32 elements per row: 1024 B = 8 lines


def test_platform_rates():
    assert L2.l2_size == 1 << 20
    assert L2.l2_core_bytes_per_cycle == 64.0  # 256 / (4 AIV per AIC)
    assert L2.hbm_bytes_per_cycle == 1.0


def _read_twice(x, tiling):
    """Each core reads its own 1024 B of x twice (the hint, if any, set before both)."""
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(x + GetBlockIdx() * N * 4, N)
    if tiling.get("bypass"):
        g.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
    u = LocalTensor(float32, TPosition.VECCALC, 0, N)
    DataCopy(u, g, N)
    DataCopy(u, g, N)


def _launch(kernel, platform, cores=1, tiling=None, x_len=4 * N, y_len=0):
    tensors = {"x": np.zeros(x_len, np.float32)}
    outputs = {}
    args = ["x"]
    if y_len:
        tensors["y"] = np.zeros(y_len, np.float32)
        outputs["y"] = (np.float32, (y_len,))
        args.append("y")
    return launch(kernel, [*args, tiling or {}], tensors, outputs, platform, block_dim=cores,
                  mode="timing-only")


def _spans(r, core=0):
    ct = r.trace.cores[core]
    return list(zip(ct.start.tolist(), ct.end.tolist()))


def _columns(r, platform):
    """The copies' (gmb, wbb, occ) columns after the L2 model, per core."""
    streams = r.program.streams
    cols, res = l2.apply(streams, [prepare(s, platform) for s in streams], platform)
    return cols, res


def _causes(r, core=0):
    return [(a, b, cause) for _, a, b, cause, _ in r.trace.cores[core].stalls]


WARM = L2.with_overrides(costs={"l2_warm_start": True})


@pytest.mark.parametrize("platform, gmb, occ, hits, spans, causes", [
    # cold: read 1 misses, 8 line fills = 1024 HBM bytes, occupancy max(10, 1024 B / 32) = 32;
    # read 2 hits, max(10, 1024 B / 64 per core) = 16. Read 1 issued at 1 drains 1024 B at
    # 1 B/cycle: [1, 1025) (stretched from 33); read 2 [1025, 1041), no HBM, no stall
    (L2, [1024, 0], [32, 16], 1024, [(1, 1025), (1025, 1041)], [(33, 1025, "gm_bandwidth")]),
    # warm (L2 as the identical launch before left it): read 1's lines were last allocated by
    # that launch's read 2, 1024 B (its rest) + 1024 B (this one's read 1) back < 1 MiB: both
    # reads hit, no HBM byte, 16 cycles each
    (WARM, [0, 0], [16, 16], 2048, [(1, 17), (17, 33)], []),
])
def test_second_read_hits_and_draws_no_hbm(platform, gmb, occ, hits, spans, causes):
    r = _launch(_read_twice, platform)
    cols, res = _columns(r, platform)
    assert (cols[0].gmb, cols[0].occ) == (gmb, occ)
    assert (res.read_bytes, res.hit_bytes) == ([2048], [hits])
    assert (r.trace.l2_read_bytes, r.trace.l2_hit_bytes) == ([2048], [hits])
    assert _spans(r) == spans and _causes(r) == causes
    assert r.trace.makespan == spans[-1][1]


@pytest.mark.parametrize("l2_size, bypass", [
    # L2 of 1024 B: read 1's lines were last allocated 1024 (the launch before's rest) + 1024 B
    # back, not < 1024: a miss, as cold (1024 HBM bytes); read 2 is 1024 B back: a miss too
    (1024, False),
    # a read past L2 allocates nothing, so the launch before left none of its lines there
    (1 << 20, True),
])
def test_a_warm_launch_finds_nothing_it_did_not_leave_in_l2(l2_size, bypass):
    platform = WARM.with_overrides(l2_size=l2_size)
    r = _launch(_read_twice, platform, tiling={"bypass": bypass})
    cols, res = _columns(r, platform)
    assert cols[0].gmb == [1024, 1024]
    assert res.hit_bytes == [0]


def test_a_hit_is_not_stretched_when_several_cores_share_hbm():
    r = _launch(_read_twice, L2, cores=4)
    # read 1 of the 4 cores: 4 x 1024 B share 1 B/cycle: [1, 1 + 4096); read 2 of each hits
    # (its last use of the line is 3 cores x 8 lines + 8 = 32 lines = 4096 B back < 1 MiB)
    for c in range(4):
        assert _spans(r, c) == [(1, 4097), (4097, 4113)]
        assert _causes(r, c) == [(33, 4097, "gm_bandwidth")]
    assert r.trace.l2_hit_bytes == [1024] * 4
    assert r.trace.makespan == 4113
    # without the L2 model read 2 shares HBM four ways too: 4097 + 4096
    r0 = _launch(_read_twice, NO_L2, cores=4)
    assert _spans(r0, 0) == [(1, 4097), (4097, 8193)]
    assert r0.trace.l2_hit_bytes == [0] * 4
    assert r0.trace.makespan == 8193


def test_an_l2_smaller_than_the_working_set_misses():
    small = L2.with_overrides(l2_size=512)
    r = _launch(_read_twice, small)
    cols, res = _columns(r, small)
    # line k of read 2 was last used 8 lines = 1024 B of traffic back: >= 512, a miss
    assert cols[0].gmb == [1024, 1024]
    assert res.hit_bytes == [0]
    assert _spans(r) == [(1, 1025), (1025, 2049)]  # each 1024 B at 1 B/cycle
    assert r.trace.makespan == 2049


def test_cache_mode_disable_makes_the_re_read_miss():
    r = _launch(_read_twice, L2, tiling={"bypass": True})
    cols, res = _columns(r, L2)
    # both reads bypass L2: all 1024 B (32 sectors of 32 B) of each come from HBM
    assert cols[0].gmb == [1024, 1024]
    assert res.hit_bytes == [0]
    assert r.trace.l2_hit_bytes == [0]
    assert _spans(r) == [(1, 1025), (1025, 2049)]


def _bypass_read_at(offset, elements):
    def kernel(x, tiling):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(x, 4 * N)
        g.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        DataCopy(LocalTensor(float32, TPosition.VECCALC, 0, elements), g[offset // 4],
                 elements)

    return kernel


@pytest.mark.parametrize("offset, nbytes, gmb", [
    (0, 512, 512),  # exactly one 512 B granule: whole, no penalty
    (0, 128, 256),  # 128 B of one granule: 128 / 0.5
    (256, 1024, 1536),  # [256, 1280): head 256 B and tail 256 B partial: 1024 + 512 x (2 - 1)
    (0, 1536, 1536),  # three whole granules
])
def test_a_bypassed_read_pays_the_ratio_on_the_granules_it_covers_in_part(offset, nbytes, gmb):
    platform = L2.with_overrides(costs={"bypass_partial_granule_bandwidth_ratio": 0.5,
                                        "gm_serial_granule_bytes": 512})
    r = _launch(_bypass_read_at(offset, nbytes // 4), platform)
    cols, _ = _columns(r, platform)
    assert cols[0].gmb == [gmb]
    # the cached rows' ratio is not the bypassed requests': alone it leaves the bytes whole
    cached_ratio = L2.with_overrides(costs={"unaligned_512_bandwidth_ratio": 0.5,
                                            "gm_serial_granule_bytes": 512})
    r = _launch(_bypass_read_at(offset, nbytes // 4), cached_ratio)
    assert _columns(r, cached_ratio)[0][0].gmb == [nbytes]
    # the same read through L2 starts on a line: its line fills, no penalty
    cached = L2.with_overrides(costs={"unaligned_512_bandwidth_ratio": 0.5})
    assert _columns(_launch(_read_at(offset), cached), cached)[0][0].gmb == [256]


def _bypass_between(x, tiling):
    """Read a (1024 B), read b (4096 B; bypassing L2 or not), read a again."""
    ga, gb = GlobalTensor(float32), GlobalTensor(float32)
    ga.SetGlobalBuffer(x, N)
    gb.SetGlobalBuffer(x + N * 4, 4 * N)
    if tiling["bypass"]:
        gb.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
    u = LocalTensor(float32, TPosition.VECCALC, 0, 4 * N)
    DataCopy(u, ga, N)
    DataCopy(u, gb, 4 * N)
    DataCopy(u, ga, N)


@pytest.mark.parametrize("bypass, gmb, hits", [
    # b allocates 32 lines: a's lines were last used 8 + 32 = 40 lines = 5120 B back >= 2048
    (False, [1024, 4096, 1024], 0),
    # b bypasses: it pushes nothing out; a was last used 8 lines = 1024 B back < 2048: hits
    (True, [1024, 4096, 0], 1024),
])
def test_a_bypassing_copy_evicts_nothing(bypass, gmb, hits):
    platform = L2.with_overrides(l2_size=2048)
    r = _launch(_bypass_between, platform, tiling={"bypass": bypass}, x_len=5 * N)
    cols, res = _columns(r, platform)
    assert cols[0].gmb == gmb
    assert res.hit_bytes == [hits]


def _write_then_read(x, y, tiling):
    """Each core writes its 1024 B of y, then reads two 1024 B rows of x (or y back)."""
    c = GetBlockIdx()
    gx, gy = GlobalTensor(float32), GlobalTensor(float32)
    gx.SetGlobalBuffer(x + c * 2 * N * 4, 2 * N)
    gy.SetGlobalBuffer(y + c * N * 4, N)
    u = LocalTensor(float32, TPosition.VECCALC, 0, N)
    v = LocalTensor(float32, TPosition.VECCALC, 4 * N, N)
    if tiling["write"]:
        DataCopy(gy, v, N)
    if tiling.get("read_back"):
        DataCopy(u, gy, N)
    else:
        DataCopy(u, gx, N)
        DataCopy(u, gx[N], N)


def test_write_back_is_charged_to_the_write_that_dirties_the_line():
    small = L2.with_overrides(l2_size=1024)
    r = _launch(_write_then_read, small, tiling={"write": True}, y_len=N)
    cols, _ = _columns(r, small)
    # the write is absorbed (0 HBM bytes it waits for); its 8 dirty lines are evicted (1024 B =
    # 8 lines of allocating traffic follow each before the kernel ends), so the write starts
    # 1024 B of background HBM load at its own start
    assert cols[0].gmb == [0, 1024, 1024]
    assert cols[0].wbb == [1024, 0, 0]
    # the write-back starts at 1 and drains 1 B alone; from 2 it shares 1 B/cycle with the
    # read's 1024 B: it ends at 2 + 2 x 1023 = 2048, the read's last byte at 2049
    assert _spans(r) == [(1, 33), (2, 2049), (2049, 3073)]
    # a large L2 keeps the lines dirty to the end: no write-back at all
    big = _launch(_write_then_read, L2, tiling={"write": True}, y_len=N)
    cols, _ = _columns(big, L2)
    assert cols[0].wbb == [0, 0, 0]
    assert _spans(big) == [(1, 33), (2, 1026), (1026, 2050)]


def test_a_written_line_read_again_is_a_hit_and_never_written_back():
    platform = L2.with_overrides(l2_size=2048)
    r = _launch(_write_then_read, platform, tiling={"write": True, "read_back": True}, y_len=N)
    cols, res = _columns(r, platform)
    # the read of y follows its write by 8 lines = 1024 B < 2048: every line hits
    assert cols[0].gmb == [0, 0]
    assert cols[0].wbb == [0, 0]
    assert res.hit_bytes == [1024]


def test_background_write_backs_slow_the_reads_of_other_cores():
    small = L2.with_overrides(l2_size=1024)
    # without writes: 2 cores' reads share HBM: read 1 [1, 2049), read 2 [2049, 4097)
    reads = _launch(_write_then_read, small, cores=2, tiling={"write": False}, y_len=2 * N)
    assert reads.trace.makespan == 4097
    # with writes: both writes' dirty lines are evicted by the reads that follow; each write
    # starts its 1024 B of background write-back at cycle 1
    writes = _launch(_write_then_read, small, cores=2, tiling={"write": True}, y_len=2 * N)
    c0, c1 = _columns(writes, small)[0]
    assert (c0.wbb, c1.wbb) == ([1024, 0, 0], [1024, 0, 0])
    # 2048 B of write-back + 2 x 1024 B of read 1 drain at 1 B/cycle: read 1 ends at
    # 1 + 4096 = 4097 on both cores; read 2 then 2 x 1024 B: 6145
    for c in range(2):
        assert _spans(writes, c) == [(1, 33), (2, 4097), (4097, 6145)]
    assert writes.trace.makespan == 6145
    assert writes.trace.makespan - reads.trace.makespan == 2048  # the write-backs' bytes


def _read_at(offset):
    def kernel(x, tiling):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(x, 4 * N)
        DataCopy(LocalTensor(float32, TPosition.VECCALC, 0, 64), g[offset // 4], 64)

    return kernel


@pytest.mark.parametrize("offset, gmb", [
    (0, 256),  # 256 B on lines 0-1: 2 line fills
    (128, 256),  # starts a line (though not 512-aligned): 2 fills, no penalty
    (64, 768),  # [64, 320) touches lines 0-2: 3 fills x 128 B / 0.5
])
def test_a_row_not_starting_on_a_line_pays_the_unaligned_ratio(offset, gmb):
    platform = L2.with_overrides(costs={"unaligned_512_bandwidth_ratio": 0.5})
    r = _launch(_read_at(offset), platform)
    cols, _ = _columns(r, platform)
    assert cols[0].gmb == [gmb]
    # the HBM server serves those bytes at 1 B/cycle from cycle 1
    assert _spans(r) == [(1, 1 + gmb)]


def test_the_slack_scenario_serves_every_re_read_from_l2():
    # with a 512-byte L2 read 2 misses (test above); the --slack scenario "L2 re-reads hit"
    # serves it from L2 (0 HBM bytes, occupancy max(10, 1024 / 64) = 16) and read 1 still
    # misses: the kernel's reuse is 1024 of its 2048 read bytes
    small = L2.with_overrides(l2_size=512)
    r = _launch(_read_twice, small)
    streams = r.program.streams
    cols, res = l2.apply(streams, [prepare(s, small) for s in streams], small, reuse_hits=True)
    assert cols[0].gmb == [1024, 0]
    assert cols[0].occ == [32, 16]
    assert (res.read_bytes, res.hit_bytes) == ([2048], [1024])


def test_the_slack_scenario_leaves_write_backs_as_they_are():
    # a write followed by 2 KiB of other reads on a 1 KiB L2 is written back (1024 B, test
    # above); serving re-reads from L2 does not absorb it: the same write-back bytes
    small = L2.with_overrides(l2_size=1024)
    r = _launch(_write_then_read, small, tiling={"write": True}, y_len=N)
    streams = r.program.streams
    base = l2.apply(streams, [prepare(s, small) for s in streams], small)[0]
    what_if = l2.apply(streams, [prepare(s, small) for s in streams], small,
                       reuse_hits=True)[0]
    assert what_if[0].wbb == base[0].wbb == [1024, 0, 0]


def test_the_summary_says_how_l2_started():
    from aicore_sim.views.summary import format_summary, summarize, summarize_trace

    for platform, start in ((WARM, "warm"), (L2, "cold"), (NO_L2, None)):
        d = summarize_trace(_launch(_read_twice, platform).trace, platform)
        assert d["l2_start"] == start
    text = format_summary(summarize(_launch(_read_twice, WARM)))
    # both reads hit: 2048 of 2048 bytes
    assert ("L2 hit rate of GM->UB bytes: 100.0% (L2 warm at the start: as the same launch "
            "before left it)") in text
