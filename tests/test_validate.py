"""``aicore-sim validate``: simulated figures, error statistics, steps, extrapolation, the CLI.

A tiny suite is built here (a double-buffered copy-scale-copy kernel on the ``tiny`` preset,
with board figures chosen by hand), so nothing depends on installed suites or on the timing
model's current values: the expected figures are computed from the launch's own trace.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from aicore_sim.ascendc import (
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    GetBlockIdx,
    GlobalTensor,
    Muls,
    TPipe,
    TPosition,
    TQue,
    float32,
)
from aicore_sim.cli import main
from aicore_sim.export.msprof import pipe_utilization_rows
from aicore_sim.isa import Pipe
from aicore_sim.launch import launch
from aicore_sim.platform import load_platform
from aicore_sim.summary import summarize_trace
from aicore_sim.validate import suites as suites_mod
from aicore_sim.validate.compare import (
    Outcome,
    cells_of,
    error_of,
    exceeded,
    outcome_of,
    stat_of,
    stats_by,
    step_result,
)
from aicore_sim.validate.run import (
    ScenarioRun,
    extrapolate,
    figures_of_summary,
    run_scenario,
    run_suite,
    simulate,
)
from aicore_sim.validate.suite import BoardValue, LaunchSpec, Scenario, Step, Suite
from aicore_sim.validate.suites import UnknownScenarioError, check_suite, select
from tests import kernels

N = 64  # fp32 per tile


def tiles(x, y, tiling) -> None:
    """Core i copies ``base * (i + 1)`` tiles of N fp32 in, doubles them, copies them out,
    through 2-deep VECIN / VECOUT queues (so the cores differ and the mean matters)."""
    core = GetBlockIdx()
    loops = tiling["base"] * (core + 1)
    off = tiling["base"] * core * (core + 1) // 2 * N  # tiles of the cores before
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + off * 4)
    yg.SetGlobalBuffer(y + off * 4)
    pipe = TPipe()
    qin = TQue(TPosition.VECIN, 2, name="qin")
    qout = TQue(TPosition.VECOUT, 2, name="qout")
    pipe.InitBuffer(qin, 2, N * 4)
    pipe.InitBuffer(qout, 2, N * 4)
    for i in range(loops):
        t = qin.AllocTensor(float32)
        DataCopyPad(t, xg[i * N], DataCopyExtParams(1, N * 4, 0, 0), DataCopyPadExtParams())
        qin.EnQue(t)
        t = qin.DeQue(float32)
        o = qout.AllocTensor(float32)
        Muls(o, t, 2.0, N)
        qin.FreeTensor(t)
        qout.EnQue(o)
        o = qout.DeQue(float32)
        DataCopyPad(yg[i * N], o, DataCopyExtParams(1, N * 4, 0, 0))
        qout.FreeTensor(o)


def build(scale: float) -> LaunchSpec:
    """Full size: 4 tiles on core 0, 8 on core 1; ``scale`` keeps that share of the tiles."""
    base = max(1, round(4 * scale))
    total = base * 3 * N  # base + 2 * base tiles
    x = np.arange(total, dtype=np.float32)
    return LaunchSpec(tiles, ["x", "y", {"base": base}], {"x": x, "y": np.zeros_like(x)},
                      {"y": (np.dtype(np.float32), (total,))}, 2)


def bv(column: str, value: float) -> BoardValue:
    unit = "ticks" if column == "vec_ticks" else "us"
    return BoardValue(column, value, unit, "task" if column == "task_us" else "per_core",
                      "examples/x/README.md", "0" * 7)


BOARD = (bv("task_us", 5.0), bv("mte2_us", 3.0), bv("vec_us", 0.2), bv("vec_ticks", 150.0))
FULL = Scenario("tiles_full", "tiles", "tiny", "12 tiles at full size", build, BOARD)
HALF = Scenario("tiles_half", "tiles", "tiny", "the same, run at half size", build, BOARD,
                scale=0.5)
SMALL = Scenario("tiles_small", "tiles_small", "tiny", "a quarter of the tiles",
                 lambda s: build(0.25), (bv("task_us", 2.0),),
                 notes={})
SUITE = Suite("test_suite", (FULL, HALF, SMALL),
              (Step("quarter -> full", "tile size", "tiles_full", "tiles_small"),))


def _deadlock(scale: float) -> LaunchSpec:
    return LaunchSpec(kernels.wait_without_set, [None, None, {}], {}, {}, 1)


BROKEN = Scenario("deadlocks", "broken", "tiny", "a WaitFlag nobody sets", _deadlock,
                  (bv("task_us", 1.0),))


# --------------------------------------------------------------------------------------------
# Simulated figures
# --------------------------------------------------------------------------------------------


def held(c, p) -> int:
    """The pipe time PipeUtilization.csv counts: busy + hold by shared HBM (+ a pipelined
    copy's data in flight, where the trace tells it)."""
    if hasattr(c, "pipe_time_cycles"):
        return c.pipe_time_cycles(p)
    return c.busy_cycles(p) + c.gm_stretch_cycles(p)


def test_figures_are_the_traces_own_numbers() -> None:
    tiny = load_platform("tiny")
    spec = build(1.0)
    r = launch(spec.kernel, spec.args, dict(spec.tensors), dict(spec.outputs), tiny,
               block_dim=2, mode="timing-only")
    cores = r.trace.cores
    assert len(cores) == 2 and cores[0].finish != cores[1].finish  # the mean matters

    # tiny: 1000 MHz (1 cycle = 0.001 us), no op head, system counter 1000 MHz (1 tick/cycle)
    want = {
        "task_us": r.trace.makespan / 1000,
        "aiv_us": (cores[0].finish + cores[1].finish) / 2 / 1000,
        "mte2_us": (held(cores[0], Pipe.MTE2) + held(cores[1], Pipe.MTE2)) / 2 / 1000,
        "mte3_us": (held(cores[0], Pipe.MTE3) + held(cores[1], Pipe.MTE3)) / 2 / 1000,
        "vec_us": (held(cores[0], Pipe.VECTOR) + held(cores[1], Pipe.VECTOR)) / 2 / 1000,
        "scalar_us": (held(cores[0], Pipe.SCALAR) + held(cores[1], Pipe.SCALAR)) / 2 / 1000,
        "vec_ticks": (held(cores[0], Pipe.VECTOR) + held(cores[1], Pipe.VECTOR)) / 2,
    }
    got, n = simulate(FULL, 1.0)
    assert n == 2
    assert got == pytest.approx(want, rel=1e-12)
    assert all(v > 0 for v in got.values())

    # the per-core figures are the mean of what PipeUtilization.csv says per core
    summary = {**summarize_trace(r.trace, tiny), "clock_mhz": tiny.clock_mhz}
    rows = pipe_utilization_rows(summary, tiny.op_head_cycles)
    for col, csv in (("aiv_us", "aiv_time(us)"), ("mte2_us", "aiv_mte2_time(us)"),
                     ("vec_us", "aiv_vec_time(us)"), ("scalar_us", "aiv_scalar_time(us)")):
        assert got[col] == pytest.approx(sum(float(x[csv]) for x in rows) / 2, abs=1e-6)


def test_op_head_and_system_counter() -> None:
    # a 100-cycle op head is in Task Duration, not in aiv_time; a 50 MHz counter at 1000 MHz
    # counts 1 tick per 20 cycles
    p = load_platform("tiny").with_overrides(op_head_cycles=100, system_counter_mhz=50.0)
    spec = build(0.25)
    r = launch(spec.kernel, spec.args, dict(spec.tensors), dict(spec.outputs), p,
               block_dim=2, mode="timing-only")
    got = figures_of_summary(summarize_trace(r.trace, p), p)
    cores = r.trace.cores
    assert got["task_us"] == r.trace.makespan / 1000
    assert got["aiv_us"] == pytest.approx((cores[0].finish + cores[1].finish - 200) / 2 / 1000)
    vec = (held(cores[0], Pipe.VECTOR) + held(cores[1], Pipe.VECTOR)) / 2
    assert got["vec_ticks"] == pytest.approx(vec / 20)


# --------------------------------------------------------------------------------------------
# Extrapolation
# --------------------------------------------------------------------------------------------


def test_extrapolation_arithmetic() -> None:
    # fig(s) + (fig(2s) - fig(s)) (1 - s) / s
    assert extrapolate(1.0, 1.5, 0.25) == 2.5  # 1 + 0.5 * 3
    assert extrapolate(3.0, 5.0, 0.5) == 5.0  # 3 + 2 * 1
    assert extrapolate(10.0, 20.0, 0.1) == pytest.approx(100.0)  # linear through 0


def test_half_scale_gives_the_full_size_figures() -> None:
    half = run_scenario(HALF)
    full = run_scenario(FULL)
    assert half.ok and full.ok
    assert sorted(half.at_scale) == [0.5, 1.0]
    assert half.at_scale[1.0] == full.figures  # the 2s run is the full-size run
    assert half.figures == full.figures  # s = 0.5 extrapolates to fig(2s) exactly
    for col, ratio in half.linearity.items():
        assert ratio == half.at_scale[1.0][col] / half.at_scale[0.5][col]


def test_failed_scenario_is_kept_with_one_line() -> None:
    r = run_scenario(BROKEN)
    assert not r.ok and r.error.startswith("DeadlockError: ") and "\n" not in r.error


# --------------------------------------------------------------------------------------------
# Errors and statistics (hand-made numbers)
# --------------------------------------------------------------------------------------------


def _run(name: str, platform: str, board: dict, sim: dict, notes=None) -> ScenarioRun:
    sc = Scenario(name, name, platform, "", build, tuple(bv(k, v) for k, v in board.items()),
                  notes=notes or {})
    return ScenarioRun(sc, "hand", figures=dict(sim))


def test_error_median_worst() -> None:
    assert error_of(200.0, 100.0) == (2.0, math.log(2.0))
    assert error_of(50.0, 100.0) == (0.5, math.log(2.0))
    runs = [
        _run("a", "p1", {"task_us": 100.0, "mte2_us": 10.0}, {"task_us": 200.0, "mte2_us": 10.0}),
        _run("b", "p1", {"task_us": 100.0, "mte2_us": 10.0}, {"task_us": 50.0, "mte2_us": 12.5}),
        _run("c", "p2", {"task_us": 100.0, "vec_us": 4.0}, {"task_us": 110.0, "vec_us": 1.0},
             notes={"vec_us": "the sample's table has no such column"}),
    ]
    cells = cells_of(runs)
    assert [(c.scenario, c.column) for c in cells] == [
        ("a", "task_us"), ("a", "mte2_us"), ("b", "task_us"), ("b", "mte2_us"),
        ("c", "task_us"), ("c", "vec_us")]
    left_out = cells[-1]
    assert not left_out.compared and left_out.note.startswith("the sample's table")
    cols = stats_by(cells, lambda c: c.column)
    assert list(cols) == ["task_us", "mte2_us"]  # vec_us has no compared figure
    task = cols["task_us"]
    # errors ln 2, ln 2, ln 1.1: median ln 2; the worst is the first of the two ln 2 (a, r 2)
    assert (task.count, task.median, task.worst) == (3, math.log(2.0), math.log(2.0))
    assert (task.worst_scenario, task.worst_ratio) == ("a", 2.0)
    assert task.median_pct == 100.0 * math.log(2.0)
    mte2 = cols["mte2_us"]
    # errors 0 and ln 1.25: median their mean, worst b with r 1.25
    assert (mte2.count, mte2.median, mte2.worst) == (2, math.log(1.25) / 2, math.log(1.25))
    assert (mte2.worst_scenario, mte2.worst_ratio) == ("b", 1.25)
    plat = stats_by(cells, lambda c: c.platform)
    assert plat["p1"].count == 4 and plat["p2"].count == 1
    assert plat["p2"].median == math.log(1.1)
    overall = stat_of(cells)
    # ln 2, 0, ln 2, ln 1.25, ln 1.1: median ln 1.25
    assert (overall.count, overall.median) == (5, math.log(1.25))
    assert exceeded(cols, 50.0, None) == ["task_us: median |error| 69.3 % > 50 %"]
    assert exceeded(cols, None, 69.4) == []
    assert exceeded(cols, None, 20.0)[1].startswith("mte2_us: worst |error| 22.3 % > 20 %")


def test_non_positive_figures_are_left_out() -> None:
    cells = cells_of([_run("z", "p", {"mte3_us": 5.0}, {"mte3_us": 0.0})])
    assert not cells[0].compared and "not positive" in cells[0].note
    assert stat_of(cells) is None


# --------------------------------------------------------------------------------------------
# Steps (hand-made numbers)
# --------------------------------------------------------------------------------------------

STEP = Step("s", "tile size", "a", "b")


@pytest.mark.parametrize("figs, gb, gs, neutral, right, within", [
    ((200, 100, 300, 150), 2.0, 2.0, False, True, True),
    ((200, 100, 110, 100), 2.0, 1.1, False, True, False),  # right way, too little
    ((200, 100, 90, 100), 2.0, 0.9, False, False, False),  # wrong way
    ((100, 200, 90, 100), 0.5, 0.9, False, True, False),  # a slow-down both ways
    ((100, 100, 100, 100), 1.0, 1.0, True, True, True),
    ((101, 100, 110, 100), 1.01, 1.1, True, True, True),  # neutral: 1.1 / 1.01 <= 1.25
    ((101, 100, 130, 100), 1.01, 1.3, True, False, False),  # neutral: 1.3 / 1.01 > 1.25
    ((101.5, 100, 90, 100), 1.015, 0.9, True, True, True),  # neutral: 1.015 / 0.9 <= 1.25
    ((200, 100, 100, 100), 2.0, 1.0, False, False, False),  # no gain at all is not "right"
    ((100, 100, 125, 100), 1.0, 1.25, True, True, True),  # exactly a factor 1.25
])
def test_step_verdicts(figs, gb, gs, neutral, right, within) -> None:
    r = step_result(STEP, *map(float, figs))
    assert r.board_gain == pytest.approx(gb) and r.sim_gain == pytest.approx(gs)
    assert (r.neutral, r.right, r.within) == (neutral, right, within)


def test_step_without_figures_is_not_compared() -> None:
    r = step_result(STEP, 100.0, None, 1.0, 1.0)
    assert r.right is None and "missing" in r.note


def test_step_counts_from_runs() -> None:
    runs = [_run("a", "p", {"task_us": 200.0}, {"task_us": 300.0}),
            _run("b", "p", {"task_us": 100.0}, {"task_us": 150.0}),
            _run("c", "p", {"task_us": 100.0}, {"task_us": 400.0})]
    steps = [Step("a->b", "k", "a", "b"), Step("a->c", "k", "a", "c"),
             Step("a->x", "k", "a", "x")]
    o = outcome_of(runs, steps)
    assert isinstance(o, Outcome)
    # a->b: gains 2 and 2; a->c: board 2, simulated 0.75 (wrong way); a->x: x did not run
    assert [s.right for s in o.steps] == [True, False, None]
    assert o.step_counts() == (2, 1, 1)


# --------------------------------------------------------------------------------------------
# Suites and selection
# --------------------------------------------------------------------------------------------


def test_selection_by_name_sample_and_glob() -> None:
    names = [sc.name for _, sc in select([SUITE], ["tiles_half"])]
    assert names == ["tiles_half"]
    assert [sc.name for _, sc in select([SUITE], ["tiles"])] == ["tiles_full", "tiles_half"]
    assert [sc.name for _, sc in select([SUITE], ["*_s*"])] == ["tiles_small"]
    assert len(select([SUITE], [])) == 3
    with pytest.raises(UnknownScenarioError, match="'nope'.*known samples: tiles, tiles_small"):
        select([SUITE], ["nope"])


def test_suite_checks() -> None:
    assert check_suite(SUITE) == []
    bad = Suite("bad", (FULL, FULL, Scenario("u", "u", "tiny", "", build,
                                             (BoardValue("bogus", 1, "us", "task", "", ""),))),
                (Step("x", "k", "tiles_full", "missing"),))
    problems = check_suite(bad)
    assert any("listed twice" in p for p in problems)
    assert any("unknown column 'bogus'" in p for p in problems)
    assert any("unknown scenario 'missing'" in p for p in problems)


def test_run_suite_with_steps() -> None:
    o = run_suite(SUITE, ["tiles_full", "tiles_small"])
    assert [r.name for r in o.runs] == ["tiles_full", "tiles_small"] and not o.failed
    (st,) = o.steps
    full, small = o.runs
    assert st.sim_gain == full.figures["task_us"] / small.figures["task_us"]
    assert st.board_gain == 5.0 / 2.0


# --------------------------------------------------------------------------------------------
# The command line (in process, the suite finder replaced by the in-test suite)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def installed(monkeypatch):
    chosen = {"suites": [SUITE]}

    def find(only=None):
        found = [s for s in chosen["suites"] if only is None or s.name == only]
        if only is not None and not found:
            raise suites_mod.UsageError(f"--suite {only}: no such validation suite")
        return found

    monkeypatch.setattr(suites_mod, "find_suites", find)
    return chosen


def test_cli_unknown_name_exit_2_nothing_written(installed, tmp_path, capsys) -> None:
    rc = main(["validate", "nope", "--report", str(tmp_path / "r.md"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "'nope'" in err and "tiles, tiles_small" in err
    assert list(tmp_path.iterdir()) == []
    assert main(["validate", "--suite", "other", "--no-progress"]) == 2


def test_cli_list(installed, capsys) -> None:
    assert main(["validate", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tiles_half" in out and "0.5" in out and "task_us, mte2_us, vec_us, vec_ticks" in out
    assert main(["validate", "--list", "--json", "tiles"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in docs] == ["tiles_full", "tiles_half"]


def test_cli_text_and_json(installed, capsys) -> None:
    assert main(["validate", "tiles_half", "tiles_small", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "tiles_half" in out and "2s/s" in out and "median |error|" in out
    assert main(["validate", "tiles_full", "tiles_small", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in doc["scenarios"]] == ["tiles_full", "tiles_small"]
    assert doc["steps_compared"] == 1 and doc["failed"] == []
    task = doc["scenarios"][0]["cells"][0]
    assert task["column"] == "task_us" and task["board"] == 5.0
    assert task["ratio"] == task["simulated"] / 5.0
    assert doc["stats"]["columns"]["task_us"]["count"] == 2


def test_cli_report_writes_md_and_png(installed, tmp_path, capsys) -> None:
    target = tmp_path / "sub" / "fidelity.md"
    target.parent.mkdir()
    target.write_text("old")  # replaced, as verify --report replaces its files
    assert main(["validate", "tiles_full", "--report", str(target), "--no-progress"]) == 0
    md = target.read_text()
    assert "tiles_full" in md and "## Platform presets" in md and "fidelity.png" in md
    assert (tmp_path / "sub" / "fidelity.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in target.parent.iterdir()) == ["fidelity.md", "fidelity.png"]
    capsys.readouterr()
    (tmp_path / "dir.md").mkdir()
    assert main(["validate", "tiles_full", "--report", str(tmp_path / "dir.md"),
                 "--no-progress"]) == 2  # a folder is no report file
    assert "is a folder" in capsys.readouterr().err


def test_cli_failed_scenario_exit_1_others_run(installed, capsys) -> None:
    installed["suites"] = [SUITE, Suite("broken", (BROKEN,), ())]
    rc = main(["validate", "deadlocks", "tiles_small", "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "validate: deadlocks: failed to run: DeadlockError" in err
    assert "1 / 2 scenarios ran (1 failed: deadlocks)" in out


def test_cli_max_median_makes_it_a_check(installed, capsys) -> None:
    far = Scenario("far", "far", "tiny", "a board figure no simulation comes near", build,
                   (bv("task_us", 1e6),))
    installed["suites"] = [Suite("far", (far,), ())]
    assert main(["validate", "--no-progress", "--max-median", "1e9"]) == 0
    assert main(["validate", "--no-progress", "--max-median", "50"]) == 1
    assert "check failed: task_us: median |error|" in capsys.readouterr().err
    assert main(["validate", "--no-progress", "--max-worst", "-1"]) == 2


def test_suites_found_through_entry_points(monkeypatch) -> None:
    import importlib.metadata as md

    eps = [md.EntryPoint("mine", "tests.test_validate:SUITE", suites_mod.GROUP)]
    monkeypatch.setattr(suites_mod, "entry_points", lambda: eps)
    assert suites_mod.find_suites() == [SUITE]
    assert suites_mod.find_suites("test_suite") == [SUITE]  # the Suite's own name works too
    with pytest.raises(suites_mod.UsageError, match="--suite x: no such validation suite"):
        suites_mod.find_suites("x")
    eps[:] = [md.EntryPoint("bad", "tests.test_validate:BOARD", suites_mod.GROUP)]
    with pytest.raises(suites_mod.SuiteLoadError, match="'bad'.*tuple, not"):
        suites_mod.find_suites()
    eps[:] = [md.EntryPoint("gone", "tests.no_such_module:SUITE", suites_mod.GROUP)]
    with pytest.raises(suites_mod.SuiteLoadError, match="cannot be loaded: ModuleNotFound"):
        suites_mod.find_suites()


def test_this_projects_suites_are_read_from_pyproject() -> None:
    own = suites_mod._source_tree_eps()
    assert own is not None  # the tests run from the source tree
    assert all(e.group == suites_mod.GROUP for e in own)
