"""The project's own double-buffered Add in Ascend C (examples/cpp/add_double_buffer) against
the Python port of the best-practice sample it follows (op_models/board_samples/add.py,
case 4): the same instructions, the same cycles, the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.ascendc.host import TilingStruct
from aicore_sim.cfront import KernelSource
from aicore_sim.sim.platform import load_platform
from aicore_sim.sim.program import stream_difference
from aicore_sim.sim.recording import Recording
from op_models.board_samples.add import add_custom
from tests.cxx import needs_cxx

KERNEL = Path(__file__).resolve().parents[1] / "examples" / "cpp" / "add_double_buffer" / \
    "add_double_buffer.cpp"


pytestmark = needs_cxx


@pytest.fixture(autouse=True)
def _cache(cxx_cache):
    return cxx_cache


@dataclass
class AddDoubleBufferTilingData(TilingStruct):
    totalM: int  # noqa: N815 - the C++ struct's field names
    totalN: int  # noqa: N815
    splitM: int  # noqa: N815
    dataCopyLen: int  # noqa: N815


def add_double_buffer(x, y, z, tiling: AddDoubleBufferTilingData) -> None:
    """The C++ entry's Python counterpart: the board sample's port, case 4."""
    add_custom(x, y, z, tiling.totalM, tiling.totalN, tiling.splitM, 1, tiling.dataCopyLen,
               SCENARIO=4)


@pytest.mark.parametrize("platform", ["ascend910b1", "ascend910b4"])
def test_own_add_equals_the_board_samples_port(platform):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4096)).astype(np.float16)
    y = rng.standard_normal((40, 4096)).astype(np.float16)
    td = AddDoubleBufferTilingData(totalM=40, totalN=4096, splitM=8, dataCopyLen=8192)

    def launch(source):
        return Recording(add_double_buffer, ["x", "y", "z", td],
                         {"x": x, "y": y, "z": np.zeros_like(x)},
                         {"z": (np.dtype(np.float16), (40, 4096))}, load_platform(platform),
                         block_dim=8, kernel_source=source)

    port, cxx = launch(None), launch(KernelSource.of(KERNEL))
    assert stream_difference(port.program.streams, cxx.program.streams) is None
    # each core: 5 rows x 4096 = 20480 elements in chunks of 8192 -> 3 chunks of 12 calls
    # (2 copies in, Add, copy out, 8 flags), 4 flags up front, 4 waits after, the final
    # barrier: 36 + 9 = 45 instructions
    assert [len(s) for s in cxx.program.streams] == [45] * 8
    assert cxx.trace.makespan == port.trace.makespan
    assert np.array_equal(cxx.outputs["z"], (x.astype(np.float32) + y).astype(np.float16))
    assert cxx.hazards == [] and port.hazards == []


def test_the_example_case_file_runs_exact(tmp_path, capsys):
    from aicore_sim.cli import main

    case = KERNEL.parent / "add_double_buffer.json"
    assert main(["run", str(case), "--out", str(tmp_path / "r"), "--no-plot", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "8 cores, 360 instructions" in out  # 8 x 45
    assert "makespan 3843 cycles" in out  # its 640 KiB of inputs read from a warm L2
    assert "golden z: exact (163840 elements)" in out  # 40 x 4096


def test_the_example_run_cold(tmp_path, capsys):
    from aicore_sim.cli import main

    case = KERNEL.parent / "add_double_buffer.json"
    assert main(["run", str(case), "--out", str(tmp_path / "r"), "--no-plot", "--jobs", "1",
                 "--trace", "none", "--l2-start", "cold"]) == 0
    out = capsys.readouterr().out
    # its 640 KiB of inputs from HBM, not from the warm L2 (3843 cycles, above)
    assert "makespan 4749 cycles" in out
    assert "L2 hit rate of GM->UB bytes: 0.0% (L2 cold at the start)" in out
    assert "HBM traffic 640.0 KiB" in out
