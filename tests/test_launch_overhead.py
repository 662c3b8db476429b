"""Launch overhead in Task Duration: ``Platform.launch_cycles(block_dim)`` = (launch_fixed_ns +
launch_per_core_ns x (block_dim - 1)) at the clock, added to the makespan as the summary's
``task_cycles`` and the msprof export's ``Task Duration(us)``; the cores' own figures do not
include it.

Platform ``tiny`` (1000 MHz: 1 ns = 1 cycle; copies 100 + bytes cycles; chip HBM 1 B/cycle;
flags and the closing PipeBarrier 1 cycle) with launch_fixed_ns = 5000 and
launch_per_core_ns = 250; the kernel is ``tests.kernels.copy_in`` (one 256 B GM->UB copy per
core, SetFlag / WaitFlag MTE2_MTE3, one 256 B UB->GM copy, TPipe's PIPE_ALL barrier).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from aicore_sim.export.msprof import (
    OP_BASIC_INFO,
    PIPE_UTILIZATION,
    op_basic_info_row,
    write_msprof,
)
from aicore_sim.sim.launch import launch
from aicore_sim.views.summary import summarize, summarize_trace
from tests import kernels
from tests.conftest import TINY

OVERHEAD = TINY.with_overrides(launch_fixed_ns=5000.0, launch_per_core_ns=250.0)


def _run(platform, cores):
    x = np.arange(cores * 64, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", {"n": 64}], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, (cores * 64,))}, platform, block_dim=cores,
                  mode="timing-only")


# makespans on tiny:
# 1 core: GM->UB 100 + 256 = 356 [1, 357), SetFlag [357, 358), WaitFlag [358, 359),
#   UB->GM [359, 715), PipeBarrier [715, 716): 716
# 2 cores: each copy's 256 B shares HBM with the other core's (512 B at 1 B/cycle): GM->UB
#   [1, 513), flags to 515, UB->GM [515, 1027), barrier: 1028
MAKESPAN = {1: 716, 2: 1028}


def test_launch_cycles_arithmetic():
    assert OVERHEAD.launch_cycles(1) == 5000  # the fixed part only
    assert OVERHEAD.launch_cycles(2) == 5250  # 5000 + 250 x 1
    assert OVERHEAD.launch_cycles(48) == 16750  # 5000 + 250 x 47
    # at 500 MHz a ns is half a cycle: (5000 + 250 x 3) x 0.5 = 2875
    assert OVERHEAD.with_overrides(clock_mhz=500.0).launch_cycles(4) == 2875
    # rounded half up: 1.5 ns at 1000 MHz = 2 cycles
    assert TINY.with_overrides(launch_fixed_ns=1.5).launch_cycles(1) == 2


def test_tiny_as_shipped_has_no_overhead():
    assert (TINY.launch_fixed_ns, TINY.launch_per_core_ns) == (0.0, 0.0)
    assert TINY.launch_cycles(1) == TINY.launch_cycles(2) == 0
    r = _run(TINY, 2)
    s = summarize_trace(r.trace, TINY)
    assert s["makespan_cycles"] == MAKESPAN[2]
    assert s["task_cycles"] == MAKESPAN[2]


@pytest.mark.parametrize("cores, task", [
    (1, 716 + 5000),
    (2, 1028 + 5000 + 250),
])
def test_task_cycles_is_makespan_plus_launch_cycles(cores, task):
    r = _run(OVERHEAD, cores)
    assert r.trace.makespan == MAKESPAN[cores]  # the overhead is not in the replay
    s = summarize_trace(r.trace, OVERHEAD)
    assert s["makespan_cycles"] == MAKESPAN[cores]
    assert s["task_cycles"] == task
    assert s["task_us"] == task / 1000.0
    # the cores' own figures leave it out
    assert [c["cycles"] for c in s["cores"]] == [MAKESPAN[cores]] * cores


def test_msprof_task_duration_includes_the_launch_overhead(tmp_path):
    r = _run(OVERHEAD, 2)
    s = summarize(r)
    row = op_basic_info_row(s, "copy_in")
    # (1028 + 5250) cycles / 1000 MHz = 6.278 us
    assert row["Task Duration(us)"] == "6.278000"
    assert row["Block Dim"] == "2"
    assert write_msprof(tmp_path, s, OVERHEAD)[:2] == [PIPE_UTILIZATION, OP_BASIC_INFO]
    with (tmp_path / OP_BASIC_INFO).open() as fh:
        (info,) = list(csv.DictReader(fh))
    assert info["Task Duration(us)"] == "6.278000"
    # PipeUtilization's per-core time is the core's own: 1028 cycles = 1.028 us
    with (tmp_path / PIPE_UTILIZATION).open() as fh:
        cores = list(csv.DictReader(fh))
    assert [c["aiv_total_cycles"] for c in cores] == ["1028", "1028"]
    assert [c["aiv_time(us)"] for c in cores] == ["1.028000", "1.028000"]
    # tiny as shipped: Task Duration is the makespan
    plain = summarize(_run(TINY, 2))
    assert op_basic_info_row(plain, "copy_in")["Task Duration(us)"] == "1.028000"
