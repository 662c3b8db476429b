"""Tests of the timeline plots (``aicore_sim/plots.py``): PNGs written, occupancy arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim import plots
from aicore_sim.launch import launch
from aicore_sim.platform import load_platform
from aicore_sim.plots import occupancy, plot_timeline
from tests import kernels

TINY = load_platform("tiny")
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

    code = ("import sys, aicore_sim.launch, aicore_sim.engine; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
