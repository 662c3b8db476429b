"""Tests of the timeline plots (``aicore_sim/views/plots.py``): PNGs written, occupancy
arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.views import plots
from aicore_sim.views.plots import occupancy, plot_timeline
from tests import kernels
from tests.conftest import TINY

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def trace():
    n, loops = 64, 4
    x = np.arange(n * loops, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": n, "loops": loops}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (n * loops,))}, TINY,
               block_dim=1)
    return r.trace


def test_paths_view(tmp_path, trace) -> None:
    p = plot_timeline(trace, tmp_path / "t.png")
    assert p.read_bytes()[:8] == PNG and p.stat().st_size > 5000
    assert [x.name for x in tmp_path.iterdir()] == ["t.png"]  # no temp file left


def test_occupancy_image_view(tmp_path, trace, monkeypatch) -> None:
    monkeypatch.setattr(plots, "PATH_LIMIT", 0)
    p = plot_timeline(trace, tmp_path / "sub" / "t.png")
    assert p.read_bytes()[:8] == PNG and p.stat().st_size > 5000


def test_zoom(tmp_path, trace) -> None:
    p = plot_timeline(trace, tmp_path / "z.png", cores=[0], window=(0, trace.makespan // 3))
    assert p.read_bytes()[:8] == PNG
    with pytest.raises(ValueError, match="window"):
        plot_timeline(trace, tmp_path / "bad.png", window=(10, 10))


def test_occupancy_fractions() -> None:
    spans = np.array([[0, 10], [20, 25]])
    edges = np.array([0, 10, 20, 30, 40])
    assert occupancy(spans, edges).tolist() == [1.0, 0.0, 0.5, 0.0]
    # a span across a pixel edge is split between the two pixels
    assert occupancy(np.array([[5, 15]]), np.array([0, 10, 20])).tolist() == [0.5, 0.5]
    assert occupancy(np.zeros((0, 2), np.int64), edges).tolist() == [0.0] * 4


def test_plots_is_not_imported_by_the_engine() -> None:
    import subprocess
    import sys

    code = ("import sys, aicore_sim.sim.launch, aicore_sim.sim.engine; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_ub_occupancy_of_copy_cast(tmp_path) -> None:
    n = 64
    x = np.arange(n, dtype=np.float16)
    r = launch(kernels.copy_cast, ["x", "y", {"n": n}], {"x": x, "y": np.zeros(n, np.float32)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1)
    t, live, reserved = plots.ub_occupancy(r.trace.cores[0])
    assert reserved == 64 * 2 + 64 * 4  # in16 (64 fp16) + out32 (64 fp32) = 384 bytes
    copy_in, cast, copy_out = (r.trace.time_of(0, i) for i in (0, 3, 6))
    # in16 is live from its GM->UB copy to the end of the Cast that reads it; out32 from the
    # Cast that writes it to the end of the UB->GM copy
    assert t.tolist() == [0, copy_in[0], cast[0], cast[1], copy_out[1]]
    assert live.tolist() == [0, 128, 384, 256, 0]
    p = plots.plot_ub(r.trace, tmp_path / "ub.png")
    assert p.read_bytes()[:8] == PNG


def test_lane_spans_leave_the_hbm_hold_to_the_stall() -> None:
    n = 64
    x = np.arange(2 * n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (2 * n,))}, TINY, block_dim=2)  # two cores share 1 B/cycle
    for ct in r.trace.cores:
        spans = plots.lane_spans(ct, Pipe.MTE2)
        assert int((spans[:, 1] - spans[:, 0]).sum()) == ct.busy_cycles(Pipe.MTE2)
    assert sum(ct.gm_stretch_cycles(Pipe.MTE2) for ct in r.trace.cores) > 0
