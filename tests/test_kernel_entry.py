"""The kernel entry (``cost.kernel_entry_cycles``): every core's scalar unit first does its
set-up work (``costs.kernel_setup_cycles``), then reads the kernel's parameter block from GM, a
data-cache miss that all the launch's cores request at once, served one at a time as a copy's
same-granule requests: the k-th core has it after max(miss, k x ``gm_serial_cycles``), every
core charged the mean over the launch; the part queued behind the other cores is a SCALAR
``same_granule`` stall.

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
    (4, 25, 15),  # mean of max(miss 10, k x 10), k = 1..4: (10 + 20 + 30 + 40) / 4 = 25; 15 queued
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
    # (pipe, start, end, cause, what): [miss 10, 25) on SCALAR
    assert row == (int(Pipe.SCALAR), 10, 25, "same_granule",
                   "kernel entry: the parameter block's GM granule, read by every core at once")


def test_presets_read_one_granule_and_the_test_platform_none():
    a2 = load_platform("ascend910b1")
    # 48 cores on A2: set-up 729 + the read's mean, (4 x 200 + 47.6 x (5 + ... + 48)) / 48 =
    # 56,301.6 / 48 = 1172.95 -> 1902 cycles, 1172.95 - 200 -> 973 queued
    assert cost.kernel_entry_cycles(a2, 48) == (1902, 973)
    # one core: 729 + the miss 200
    assert cost.kernel_entry_cycles(a2, 1) == (929, 0)
    # 950 serialises nothing (gm.serial_cycles_per_request 0): set-up (carried) + the miss
    assert cost.kernel_entry_cycles(load_platform("ascend950pr_9589"), 64) == (929, 0)
    assert cost.kernel_entry_cycles(TINY, 48) == (0, 0)


def test_the_set_up_comes_first_and_is_not_queued():
    setup = ENTRY.with_overrides(costs={"kernel_setup_cycles": 5})
    # 5 of set-up, then the read: 5 + 25 = 30, the same 15 queued, at the end of the entry
    assert cost.kernel_entry_cycles(setup, 4) == (30, 15)
    r = _run(setup, 4)
    assert _copy_issue(r) == _copy_issue(_run(ENTRY, 4)) + 5
    (row,) = [x for x in r.trace.cores[0].stalls if x[3] == "same_granule"]
    assert row[1:3] == (15, 30)
    # without a parameter block to read, the set-up alone
    assert cost.kernel_entry_cycles(setup.with_overrides(kernel_entry_reads=0), 4) == (5, 0)
