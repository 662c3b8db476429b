"""Pipelined copies (copy_model "pipelined", cost/price.py and engine/core.py): a GM->UB copy holds
MTE2 for max(issue + row x (rows - 1), bytes / core rate) and its data is visible a latency
later; the next copy starts meanwhile. SetFlag, and so the pipe waiting on it, waits for
visibility; MTE2's pipe time is the union of [start, visible).

Platform: ``tiny`` (1 cycle per ns; issue cost 1 cycle per call; SetFlag / WaitFlag 1 cycle;
Add 10 + n / 8 cycles) with round copy parameters: issue 10, row 5, 32 B/cycle per core,
latency 100. HBM is made so fast (10^6 B/cycle) that it never stretches a copy: a 256 B
transfer drains in 1 cycle, far inside its own occupancy.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    Add,
    DataCopy,
    DataCopyPad,
    DataCopyPadParams,
    DataCopyParams,
    GlobalTensor,
    HardEvent,
    LocalTensor,
    SetFlag,
    TPosition,
    WaitFlag,
    float32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize_trace

PIPELINE = dict(copy_model="pipelined",
                mte2_issue_cycles=10, mte2_row_cycles=5, mte2_core_bytes_per_cycle=32,
                mte2_latency_ns=100,
                mte3_issue_cycles=10, mte3_row_cycles=5, mte3_core_bytes_per_cycle=32,
                mte3_latency_ns=100)
PIPELINED = load_platform("tiny").with_overrides(hbm_bytes_per_cycle=1e6, costs=PIPELINE)
CURVE = load_platform("tiny").with_overrides(hbm_bytes_per_cycle=1e6)  # tiny as shipped
N = 64  # fp32 elements per copy: 256 B


def _three_copies_then_add(x, tiling):
    """Three 256 B GM->UB copies back to back, SetFlag / WaitFlag MTE2_V, Add of the first
    two tiles."""
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(x, 4 * N)
    for k in range(3):
        DataCopy(LocalTensor(float32, TPosition.VECCALC, k * 256, N), g[k * N], N)
    if tiling["sync"]:
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
    a = LocalTensor(float32, TPosition.VECCALC, 0, N)
    b = LocalTensor(float32, TPosition.VECCALC, 256, N)
    c = LocalTensor(float32, TPosition.VECCALC, 1024, N)
    Add(c, a, b, N)


def _run(kernel, platform, tiling=None):
    x = np.zeros(4 * N, np.float32)
    return launch(kernel, ["x", tiling or {}], {"x": x}, {}, platform, block_dim=1,
                  mode="timing-only")


def _rows(r):
    """(op, start, end, visible) per executed instruction, in completion order per pipe."""
    ct = r.trace.cores[0]
    return [(ct.stream[int(i)].op, int(s), int(e), int(v))
            for i, s, e, v in zip(ct.index, ct.start, ct.end, ct.visible)]


def _of(rows, op):
    return [row[1:] for row in rows if row[0] is op]


def test_copies_occupy_mte2_for_their_issue_and_overlap_their_latency():
    r = _run(_three_copies_then_add, PIPELINED, {"sync": True})
    rows = _rows(r)
    # each copy: max(issue 10 + 5 x 0 rows, 256 B / 32) = 10 cycles, visible 100 later.
    # Issued at 1, 2, 3 (1 cycle each); copy k starts when copy k-1 frees MTE2 (not when its
    # data is visible): [1, 11) vis 111, [11, 21) vis 121, [21, 31) vis 131
    assert _of(rows, Opcode.COPY_GM_TO_UB) == [(1, 11, 111), (11, 21, 121), (21, 31, 131)]
    starts = [s for s, _, _ in _of(rows, Opcode.COPY_GM_TO_UB)]
    visible = [v for _, _, v in _of(rows, Opcode.COPY_GM_TO_UB)]
    assert starts[1] < visible[0] and starts[2] < visible[1]
    # SetFlag(MTE2_V) leaves MTE2's queue when the last copy is visible (131), 1 cycle
    assert _of(rows, Opcode.SET_FLAG) == [(131, 132, 132)]
    # WaitFlag on VECTOR, issued at 5, waits for the flag at 132, then 1 cycle
    assert _of(rows, Opcode.WAIT_FLAG) == [(132, 133, 133)]
    # Add of 64 fp32: 10 + 64 / 8 = 18 cycles from 133
    assert _of(rows, Opcode.ADD) == [(133, 151, 151)]
    ct = r.trace.cores[0]
    assert [(p, a, b, cause) for p, a, b, cause, _ in ct.stalls] == [
        (int(Pipe.VECTOR), 5, 132, "flag")]
    assert r.trace.makespan == 151
    assert r.hazards == []


def test_mte2_pipe_time_is_the_union_of_start_to_visible():
    r = _run(_three_copies_then_add, PIPELINED, {"sync": True})
    ct = r.trace.cores[0]
    # [1, 111) u [11, 121) u [21, 131) = [1, 131): 130 cycles; the SetFlag is left out
    assert ct.pipe_time_cycles(Pipe.MTE2) == 130
    # busy: 3 x 10 cycles of copies + 1 of SetFlag [131, 132)
    assert ct.busy_cycles(Pipe.MTE2) == 31
    s = summarize_trace(r.trace, PIPELINED)
    assert s["cores"][0]["pipe_time_cycles"]["MTE2"] == 130
    assert s["cores"][0]["busy_cycles"]["MTE2"] == 31


def test_removing_the_flag_pair_lets_the_add_start_early_and_is_a_race():
    r = _run(_three_copies_then_add, PIPELINED, {"sync": False})
    rows = _rows(r)
    assert _of(rows, Opcode.COPY_GM_TO_UB) == [(1, 11, 111), (11, 21, 121), (21, 31, 131)]
    # Add issued at 4 (3 copies at 1 cycle each, then it): it starts at once, 18 cycles,
    # long before its sources (visible at 111 and 121) have arrived
    assert _of(rows, Opcode.ADD) == [(4, 22, 22)]
    races = r.hazards_of("race")
    assert races, r.hazards
    assert all("GM2UB" in h.message and "Add" in h.message for h in races)


def test_the_curve_model_gives_other_numbers():
    """The test that fails without pipelining: the curve model (tiny: 100 + bytes cycles,
    latency inside the occupancy) serialises the copies."""
    rows = _rows(_run(_three_copies_then_add, CURVE, {"sync": True}))
    # 100 + 256 = 356 cycles each, visible at their end: [1, 357), [357, 713), [713, 1069)
    assert _of(rows, Opcode.COPY_GM_TO_UB) == [(1, 357, 357), (357, 713, 713),
                                               (713, 1069, 1069)]
    assert _of(rows, Opcode.SET_FLAG) == [(1069, 1070, 1070)]
    assert _of(rows, Opcode.ADD) == [(1071, 1089, 1089)]  # WaitFlag [1070, 1071), 18 cycles
    pipelined = _rows(_run(_three_copies_then_add, PIPELINED, {"sync": True}))
    assert _of(pipelined, Opcode.ADD) != _of(rows, Opcode.ADD)


def _multi_row(rows, block_len):
    def kernel(x, tiling):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(x, rows * block_len // 4)
        u = LocalTensor(float32, TPosition.VECCALC, 0, rows * block_len // 4)
        DataCopyPad(u, g, DataCopyParams(rows, block_len, 0, 0), DataCopyPadParams())

    return kernel


@pytest.mark.parametrize("rows, block_len, occ", [
    (4, 64, 25),  # issue 10 + row 5 x 3 = 25 > 256 B / 32 = 8: issue-bound
    (8, 32, 45),  # 10 + 5 x 7 = 45 > 256 / 32 = 8
    (1, 1024, 32),  # 10 + 0 = 10 < 1024 / 32 = 32: bandwidth-bound
    (4, 1024, 128),  # 10 + 5 x 3 = 25 < 4096 / 32 = 128
])
def test_multi_row_occupancy_is_issue_plus_rows_or_bytes_over_rate(rows, block_len, occ):
    x = np.zeros(rows * block_len // 4, np.float32)
    r = launch(_multi_row(rows, block_len), ["x", {}], {"x": x}, {}, PIPELINED, block_dim=1,
               mode="timing-only")
    (copy,) = [i for i in r.program.streams[0] if i.op is Opcode.COPY_GM_TO_UB]
    assert cost.occupancy_cycles(copy, PIPELINED) == occ
    assert cost.latency_cycles(copy, PIPELINED) == 100
    # issued at 1: [1, 1 + occ), visible 100 later
    assert _of(_rows(r), Opcode.COPY_GM_TO_UB) == [(1, 1 + occ, 1 + occ + 100)]
    # the curve model: 100 + bytes, no latency after it
    assert cost.occupancy_cycles(copy, CURVE) == 100 + rows * block_len
    assert cost.latency_cycles(copy, CURVE) == 0


def _write_back(nbytes):
    def kernel(z, tiling):
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(z, nbytes // 4)
        DataCopy(g, LocalTensor(float32, TPosition.VECCALC, 0, nbytes // 4), nbytes // 4)

    return kernel


@pytest.mark.parametrize("overlaps, nbytes, row", [
    # latency after the stream: [1, 1 + occ), visible 100 later
    (False, 256, (1, 11, 111)),  # occ = max(issue 10, 256 / 32 = 8) = 10
    (False, 8192, (1, 257, 357)),  # occ = max(10, 8192 / 32 = 256) = 256
    # latency beside the stream: visible max(occ, 100) after the start
    (True, 256, (1, 11, 101)),  # max(10, 100) = 100: a small write is still seen late
    (True, 8192, (1, 257, 257)),  # max(256, 100) = 256: the last byte's ack is the end
])
def test_a_write_whose_latency_overlaps_its_stream_is_visible_at_the_later_of_the_two(
        overlaps, nbytes, row):
    platform = PIPELINED.with_overrides(costs={"mte3_latency_overlaps_stream": overlaps})
    z = np.zeros(nbytes // 4, np.float32)
    r = launch(_write_back(nbytes), ["z", {}], {"z": z}, {"z": (z.dtype, z.shape)}, platform,
               block_dim=1, mode="timing-only")
    assert _of(_rows(r), Opcode.COPY_UB_TO_GM) == [row]


@pytest.mark.parametrize("nbytes, row", [
    # the MTE waits for the write's response: occupancy = latency 100 + max(issue 10, bytes /
    # 32), visible at its end
    (256, (1, 111, 111)),  # 100 + max(10, 8) = 110: a small write pays the whole floor
    (8192, (1, 357, 357)),  # 100 + max(10, 256) = 356
])
def test_a_write_whose_latency_holds_the_pipe_pays_a_floor_under_every_copy(nbytes, row):
    platform = PIPELINED.with_overrides(costs={"mte3_latency_holds_pipe": True})
    z = np.zeros(nbytes // 4, np.float32)
    r = launch(_write_back(nbytes), ["z", {}], {"z": z}, {"z": (z.dtype, z.shape)}, platform,
               block_dim=1, mode="timing-only")
    assert _of(_rows(r), Opcode.COPY_UB_TO_GM) == [row]
    copy = next(i for i in r.program.streams[0] if i.op is Opcode.COPY_UB_TO_GM)
    assert cost.latency_cycles(copy, platform) == 0  # nothing after the occupancy


def test_copy_latencies_are_nanoseconds_at_the_platform_clock():
    # tiny runs at 1000 MHz (100 ns = 100 cycles); at 2000 MHz the same 100 ns are 200 cycles,
    # while issue, rows and bytes per cycle stay core cycles
    fast = PIPELINED.with_overrides(clock_mhz=2000.0)
    r = _run(_three_copies_then_add, fast, {"sync": True})
    copy = next(i for i in r.program.streams[0] if i.op is Opcode.COPY_GM_TO_UB)
    assert cost.latency_cycles(copy, fast) == 200
    assert cost.latency_cycles(copy, PIPELINED) == 100
    assert cost.occupancy_cycles(copy, fast) == cost.occupancy_cycles(copy, PIPELINED) == 10


def test_a_latency_cannot_both_overlap_the_stream_and_hold_the_pipe():
    import tomllib

    from aicore_sim.sim.cost import params

    with (params._COSTS_DIR / "a2.toml").open("rb") as fh:
        doc = tomllib.load(fh)
    doc["mte3"]["pipeline"]["latency_overlaps_stream"] = True  # a2 holds: both now
    with pytest.raises(ValueError, match="exclude each other"):
        params._costs_from_doc(doc)


def test_an_override_cannot_set_both_latency_forms():
    with pytest.raises(ValueError, match="'mte3_latency_overlaps_stream' and "
                                         "'mte3_latency_holds_pipe' exclude each other"):
        PIPELINED.with_overrides(costs={"mte3_latency_overlaps_stream": True,
                                        "mte3_latency_holds_pipe": True})
