"""``aicore-sim plot`` (``aicore_sim/cli/plot.py``) and the run folder's ``timeline.npz``
(``aicore_sim/views/timeline_file.py``): a redraw equals what ``run`` drew, stalls by cause in
the legend, cores named as the trace names them, bad run folders refused (exit 2, one line,
nothing written)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.trace import STALL_CAUSES
from aicore_sim.views import plots
from aicore_sim.views.timeline_file import TIMELINE_FILE, Timeline, lane_spans
from tests import kernels
from tests.conftest import TINY, run_cli

PNG = b"\x89PNG\r\n\x1a\n"
PIPES = ["SCALAR", "MTE2", "VECTOR", "MTE3"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The bundled case 'tiny' on the 2-core tiny platform, with its trace file."""
    out = tmp_path_factory.mktemp("plot") / "run"
    r = run_cli("run", "--platform", "tiny", "--out", out, "--jobs", "1", "--ub-plot")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def copy_in():
    """Two cores each copying 256 B in and out through one 1 B/cycle HBM (the tiny preset):
    per core, stalls of three causes at known cycles (see test_legend_lists_the_causes)."""
    n = 64
    x = np.arange(2 * n, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, (2 * n,))}, TINY, block_dim=2).trace


def test_plot_redraws_what_run_drew(run_dir, tmp_path, cli) -> None:
    r = cli("plot", run_dir, "--ub-plot", "--out", tmp_path / "again.png")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {tmp_path / 'again.png'} and {tmp_path / 'again_ub.png'}\n"
    # the same lanes, spans, stalls, title and labels: the same PNGs, byte for byte
    assert (tmp_path / "again.png").read_bytes() == (run_dir / "timeline.png").read_bytes()
    assert (tmp_path / "again_ub.png").read_bytes() == (run_dir / "ub.png").read_bytes()


def test_zoom_is_the_options_of_run(run_dir, tmp_path, cli) -> None:
    r = cli("plot", run_dir, "--cores", "1", "--window", "0.5us:2us")
    name = "timeline_cores-1_window-0.5us-2us.png"  # the default: in the run folder
    assert r.returncode == 0 and r.stdout == f"wrote {run_dir / name}\n", r.stderr
    # --cores / --window parsed as run parses them: core 1, cycles 500..2000 at 1000 MHz
    tl = Timeline.load(run_dir / TIMELINE_FILE)
    plots.plot_timeline(tl, tmp_path / "z.png", cores=[1], window=(500, 2000), title=tl.title)
    assert (run_dir / name).read_bytes() == (tmp_path / "z.png").read_bytes()
    (run_dir / name).unlink()


def test_timeline_file_round_trip(copy_in, tmp_path) -> None:
    tl = Timeline.from_trace(copy_in, title="t")
    back = Timeline.load(tl.save(tmp_path / TIMELINE_FILE))
    with np.load(tmp_path / TIMELINE_FILE) as z:
        # the two cores replayed as one group: one copy of the arrays, core 1 leads to 0
        assert z["lead"].tolist() == [0, 0] and "spans_1" not in z.files
    assert (back.clock_mhz, back.makespan, back.title) == (1000.0, copy_in.makespan, "t")
    for ct, c in zip(copy_in.cores, back.cores):
        for p in Pipe:
            if p in plots.COLOURS:
                assert c.spans[p].tolist() == lane_spans(ct, p).tolist()
                assert c.busy_cycles(p) == ct.busy_cycles(p)
        assert c.stalls.tolist() == ct.stall_rows[:, :4].tolist()
        assert [a.tolist() if isinstance(a, np.ndarray) else a for a in c.ub] == \
            [a.tolist() if isinstance(a, np.ndarray) else a for a in plots.ub_occupancy(ct)]


def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_legend_lists_the_causes(copy_in, monkeypatch) -> None:
    # per core (start, end): MTE2 gm_bandwidth (357, 513): the copy's single-core end 1 + 100
    # + 256 B, then both cores' 512 B through 1 B/cycle; MTE3 flag (3, 514) for MTE2's
    # SetFlag; SCALAR barrier (4, 514) and (514, 1027) at PIPE_ALL; MTE3 gm_bandwidth
    # (871, 1027)
    assert sorted({tuple(r) for ct in copy_in.cores for r in ct.stall_rows[:, :4].tolist()}) == [
        (0, 4, 514, 4), (0, 514, 1027, 4), (2, 357, 513, 2), (3, 3, 514, 0),
        (3, 871, 1027, 2)]
    stall = [f"stall: {c}" for c in ("flag", "gm_bandwidth", "barrier")]  # STALL_CAUSES order
    assert _legend(plots.timeline_figure(copy_in)) == PIPES + stall
    monkeypatch.setattr(plots, "PATH_LIMIT", 0)  # the occupancy image names the same
    assert _legend(plots.timeline_figure(copy_in)) == PIPES + stall
    monkeypatch.undo()
    # [0, 357): the flag and the first barrier; the HBM hold starts at 357, outside
    assert _legend(plots.timeline_figure(copy_in, window=(0, 357))) == \
        PIPES + ["stall: flag", "stall: barrier"]
    # [514, 1028): the flag ended at 514; the second barrier and MTE3's HBM hold
    assert _legend(plots.timeline_figure(copy_in, window=(514, 1028))) == \
        PIPES + ["stall: gm_bandwidth", "stall: barrier"]
    assert set(plots.CAUSE_COLOURS) == set(STALL_CAUSES)


def _texts(fig, gid: str) -> list[str]:
    """The lane (``gid="lane"``) or core (``"core"``) names written left of the lanes."""
    return [t.get_text() for t in fig.axes[0].texts if t.get_gid() == gid]


def test_each_lane_is_labelled(copy_in) -> None:
    fig = plots.timeline_figure(copy_in, cores=[1])
    assert _texts(fig, "lane") == PIPES and _texts(fig, "core") == ["core1.veccore0"]
    assert _texts(plots.timeline_figure(copy_in), "lane") == PIPES + PIPES  # every core's


def test_core_names_are_the_traces(run_dir) -> None:
    trace = json.loads((run_dir / "trace.json").read_text())
    procs = [e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"]
    assert procs == ["core0.veccore0", "core1.veccore0"]
    tl = Timeline.load(run_dir / TIMELINE_FILE)
    fig = plots.timeline_figure(tl)
    assert _texts(fig, "core") == procs
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == procs
    assert [t.get_text() for t in plots.ub_figure(tl).axes[0].get_legend().get_texts()] == procs


def _bad_folders(run_dir, root):
    """(RUN_DIR, words of its one-line refusal) for each way a folder can be unplottable."""
    def copy(name, change):
        d = root / name
        shutil.copytree(run_dir, d)
        change(d / TIMELINE_FILE)
        return d

    functional = root / "functional"
    assert run_cli("run", "--platform", "tiny", "--mode", "functional", "--out", functional,
                   "--jobs", "1").returncode == 0
    (root / "empty").mkdir()
    (root / "file").write_text("x")
    data = (run_dir / TIMELINE_FILE).read_bytes()
    return [
        (root / "missing", "no such folder"),
        (root / "file", "not a folder"),
        (root / "empty", "not a run folder (no summary.json, no timeline.npz)"),
        (functional, "the run has no timing (functional mode)"),
        (copy("old", lambda f: f.unlink()),
         "no timeline.npz (every timed 'aicore-sim run' writes one"),
        (copy("cut", lambda f: f.write_bytes(data[:len(data) // 2])),
         "not a timeline file of 'aicore-sim run' (BadZipFile"),
        (copy("foreign", lambda f: shutil.copy(run_dir / "streams.npz", f)),
         "not a timeline file of 'aicore-sim run' ('format' is not"),
        (copy("npy", lambda f: np.save(open(f, "wb"), np.zeros(3))),
         "not a timeline file of 'aicore-sim run' (one .npy array"),
    ]


def test_bad_run_dir_exits_2_with_one_line(run_dir, tmp_path, cli) -> None:
    for folder, words in _bad_folders(run_dir, tmp_path):
        before = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None
        r = cli("plot", folder, "--ub-plot")
        assert r.returncode == 2 and r.stdout == "", (folder, r.stderr)
        assert r.stderr.count("\n") == 1 and f"RUN_DIR {folder}" in r.stderr, r.stderr
        assert words in r.stderr, r.stderr
        if before is not None:  # nothing written
            assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("args, words", [
    (["--cores", "2"], "--cores 2: cores are 0..1, not 2"),
    (["--window", "9:3"], "--window 9:3: the end must be after the start"),
])
def test_bad_zoom_exits_2(run_dir, args, words, cli) -> None:
    before = sorted(p.name for p in run_dir.iterdir())
    r = cli("plot", run_dir, *args)
    assert r.returncode == 2 and words in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_help_explains_with_an_example(cli) -> None:
    r = cli("plot", "--help")
    assert r.returncode == 0
    assert "aicore-sim plot traces/p1 --cores 0 --window 10us:40us" in r.stdout
    assert "--ub-plot" in r.stdout and "--out PNG" in r.stdout
    assert "plot" in cli("--help").stdout
