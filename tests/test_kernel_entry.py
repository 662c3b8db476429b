"""The kernel entry (``cost.kernel_entry_cycles``): every core's scalar unit first reads the
kernel's parameter block from GM, a data-cache miss that all the launch's cores request at
once, so, as a copy's same-granule rule, it lasts at least cores x ``gm_serial_cycles``; the
part queued behind the other cores is a SCALAR ``same_granule`` stall.

Platform: ``tiny`` (op head 0, issue cost 1 cycle per call, data-cache miss 10 cycles, no
entry read as shipped) with ``kernel_entry_reads = 1`` and 10 cycles per serialised request.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    LocalTensor,
    PipeBarrier,
    TPosition,
    float32,
)
from aicore_sim.sim import cost
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize_trace

TINY = load_platform("tiny")
ENTRY = TINY.with_overrides(kernel_entry_reads=1, costs={"gm_serial_cycles": 10.0})
N = 8  # fp32 elements per core: one 32 B copy


def _copy_in(x, tiling):
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(x + 4 * N * GetBlockIdx(), N)
    DataCopy(LocalTensor(float32, TPosition.VECCALC, 0, N), g, N)
    PipeBarrier(PIPE_ALL)


def _run(platform, cores):
    x = np.zeros(cores * N, np.float32)
    return launch(_copy_in, ["x", {}], {"x": x}, {}, platform, block_dim=cores,
                  mode="timing-only")


def _copy_issue(r, core=0):
    ct = r.trace.cores[core]
    (k,) = [k for k, i in enumerate(ct.index) if ct.stream[int(i)].op is Opcode.COPY_GM_TO_UB]
    return int(ct.start[k])


@pytest.mark.parametrize("cores, entry, queued", [
    (4, 40, 30),  # max(miss 10, 4 cores x 10) = 40, 40 - 10 = 30 of it queued
    (1, 10, 0),  # max(10, 1 x 10) = 10: one core only misses
])
def test_every_core_starts_after_reading_its_parameter_block(cores, entry, queued):
    assert cost.kernel_entry_cycles(ENTRY, cores) == (entry, queued)
    plain, r = _run(TINY, cores), _run(ENTRY, cores)
    for c in range(cores):
        # the copy is issued after the entry: everything moves by it, nothing else changes
        assert _copy_issue(r, c) == _copy_issue(plain, c) + entry
        assert (r.trace.cores[c].busy_cycles(Pipe.SCALAR)
                == plain.trace.cores[c].busy_cycles(Pipe.SCALAR) + entry)
        assert r.trace.cores[c].stall_cycles(Pipe.SCALAR, "same_granule") == queued
    assert r.trace.makespan == plain.trace.makespan + entry
    s = summarize_trace(r.trace, ENTRY)
    assert s["same_granule_cycles"] == cores * queued


def test_the_queued_part_is_named():
    r = _run(ENTRY, 4)
    (row,) = [x for x in r.trace.cores[0].stalls if x[3] == "same_granule"]
    # (pipe, start, end, cause, what): [miss 10, 40) on SCALAR
    assert row == (int(Pipe.SCALAR), 10, 40, "same_granule",
                   "kernel entry: the parameter block's GM granule, read by every core at once")


def test_presets_read_one_granule_and_the_test_platform_none():
    a2 = load_platform("ascend910b1")
    # 48 cores on A2: max(miss 200, 48 x 47.6 = 2284.8) -> 2285 cycles, 2085 queued
    assert cost.kernel_entry_cycles(a2, 48) == (2285, 2085)
    # 950 serialises nothing (gm.serial_cycles_per_request 0): the miss alone
    assert cost.kernel_entry_cycles(load_platform("ascend950pr_9589"), 64) == (200, 0)
    assert cost.kernel_entry_cycles(TINY, 48) == (0, 0)
