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
from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.validate import suites as suites_mod
from aicore_sim.validate.compare import (
    Outcome,
    cells_of,
    error_of,
    exceeded,
    held_out,
    outcome_of,
    stat_of,
    stats_by,
    step_result,
)
from aicore_sim.validate.report import (
    _stat_rows,
    _step_row,
    decade_label,
    document,
    headline,
    markdown,
    scatter_figure,
    text,
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
from aicore_sim.views.summary import summarize_trace
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
# Fitted and held-out scenarios (hand-made numbers)
# --------------------------------------------------------------------------------------------

FIT = {"a": ("x.issue_cycles (costs/x.toml)", "launch_ns (platforms/x.toml)"),
       "zz": ("not run (costs/x.toml)",)}


def _fitted_outcome() -> Outcome:
    runs = [
        _run("a", "p1", {"task_us": 200.0}, {"task_us": 400.0}),  # fitted: r 2
        _run("b", "p1", {"task_us": 100.0, "mte2_us": 10.0}, {"task_us": 125.0, "mte2_us": 11.0}),
        _run("c", "p2", {"task_us": 50.0}, {"task_us": 62.5}),  # r 1.25
    ]
    steps = [Step("a->b", "k", "a", "b"), Step("b->c", "k", "b", "c")]
    return outcome_of(runs, steps, fitted=FIT)


def test_held_out_statistics_leave_the_fitted_scenarios_out() -> None:
    o = _fitted_outcome()
    assert [c.fitted for c in o.cells] == [True, False, False, False]
    assert [(c.scenario, c.column) for c in held_out(o.cells)] == [
        ("b", "task_us"), ("b", "mte2_us"), ("c", "task_us")]
    assert o.fitted == {"a": FIT["a"]}  # only the scenarios run
    # task_us: all ln 2 (a), ln 1.25 (b), ln 1.25 (c); held out: b and c
    t, ht = o.columns["task_us"], o.held_columns["task_us"]
    assert (t.count, t.median, t.worst, t.worst_scenario, t.worst_ratio) == (
        3, math.log(1.25), math.log(2.0), "a", 2.0)
    assert (ht.count, ht.median, ht.worst, ht.worst_scenario, ht.worst_ratio) == (
        2, math.log(1.25), math.log(1.25), "b", 1.25)
    assert o.held_columns["mte2_us"] == o.columns["mte2_us"]  # b only, either way
    assert o.held_platforms["p1"].count == 2 and o.platforms["p1"].count == 3
    assert o.held_platforms["p1"].median == pytest.approx((math.log(1.25) + math.log(1.1)) / 2)
    assert o.held_platforms["p2"] == o.platforms["p2"]
    # all: ln 1.1, ln 1.25, ln 1.25, ln 2 -> median ln 1.25; held out: ln 1.1, ln 1.25, ln 1.25
    assert (o.overall.count, o.overall.median) == (4, math.log(1.25))
    assert (o.held_overall.count, o.held_overall.median, o.held_overall.worst_scenario) == (
        3, math.log(1.25), "b")


def test_fitted_steps_are_counted_and_flagged() -> None:
    o = _fitted_outcome()
    ab, bc = o.steps
    # a->b: board 2, simulated 3.2 (right, not within); b->c: board 2, simulated 2 (within)
    assert (ab.fitted_ends, ab.uses_fitted, ab.right, ab.within) == (("a",), True, True, False)
    assert (bc.fitted_ends, bc.uses_fitted, bc.right, bc.within) == ((), False, True, True)
    assert o.step_counts() == (2, 2, 1)
    assert o.step_counts(held_out_only=True) == (1, 1, 1)
    assert _step_row(ab)[-1] == "baseline" and _step_row(bc)[-1] == "no"


def test_held_out_in_text_json_and_markdown() -> None:
    o = _fitted_outcome()
    ln2, ln125, ln11 = "69.3 %", "22.3 %", "9.5 %"
    assert _stat_rows(o, split=True)[:4] == [
        ["task_us", "3", ln125, ln2, "a (r 2.000)"],
        ["  held out", "2", ln125, ln125, "b (r 1.250)"],
        ["mte2_us", "1", ln11, ln11, "b (r 1.100)"],
        ["  held out", "1", ln11, ln11, "b (r 1.100)"]]
    assert _stat_rows(o)[0] == ["task_us", "3", ln125, ln2, "a (r 2.000)",
                                "2", ln125, ln125, "b (r 1.250)"]
    out = text(o)
    assert "\na (fitted)  p1 " in out and "\nb           p1 " in out
    assert "held out: the scenarios no parameter was fitted on (1 of the 3 run are fitted" in out
    assert ("\nscenario  parameter (file)\n--------  -----------------------------\n"
            "a         x.issue_cycles (costs/x.toml)\n          launch_ns (platforms/x.toml)\n"
            in out)
    assert ("steps: 2 / 2 direction right, 1 / 2 within 1.25; held out (no fitted end): "
            "1 / 1 right, 1 / 1 within 1.25") in out
    doc = document(o)
    assert doc["fitted"] == {"a": list(FIT["a"])}
    assert [s["fitted"] for s in doc["scenarios"]] == [list(FIT["a"]), [], []]
    held = doc["stats"]["held_out"]
    assert held["all"]["count"] == 3 and held["columns"]["task_us"]["worst_scenario"] == "b"
    assert held["platforms"]["p2"]["count"] == 1 and doc["stats"]["all"]["count"] == 4
    assert [s["fitted_ends"] for s in doc["steps"]] == [["a"], []]
    assert doc["steps_held_out"] == {"compared": 1, "right": 1, "within": 1}
    assert doc["scenarios"][0]["cells"][0]["fitted"] is True
    md = markdown(o)
    assert ("| group | n | median \\|error\\| | worst \\|error\\| | worst scenario (r) | "
            "n (held out) | median (held out) | worst (held out) | "
            "worst held-out scenario (r) |") in md
    assert (f"| task_us | 3 | {ln125} | {ln2} | a (r 2.000) | 2 | {ln125} | {ln125} | "
            "b (r 1.250) |") in md
    assert "## Fitted parameters" in md
    assert "| a | x.issue_cycles (costs/x.toml); launch_ns (platforms/x.toml) |" in md


def test_held_out_by_source_group() -> None:
    # a@p1 is fitted; b@p1 and c@p2 (each scenario its own sample here) are held out whole
    o = _fitted_outcome()
    assert list(o.groups) == ["a@p1", "b@p1", "c@p2"] and o.held_groups == ["b@p1", "c@p2"]
    assert o.groups["a@p1"].fitted == FIT["a"] and not o.groups["a@p1"].held_out
    # held out: task_us of b (r 1.25) and c (r 1.25), mte2_us of b (r 1.1)
    assert (o.group_columns["task_us"].count, o.group_columns["task_us"].median) == (
        2, math.log(1.25))
    assert (o.group_overall.count, o.group_overall.median) == (3, math.log(1.25))
    assert headline(o) == ("held out by source (2 of 3 groups no parameter was fitted on: "
                           "b@p1, c@p2): Task Duration median 22.3 %, worst 22.3 % over 2; "
                           "all columns: 3 figures, median |error| 22.3 %, worst 22.3 % "
                           "(b, r 1.250)")
    assert text(o).splitlines()[0] == headline(o)
    doc = document(o)
    assert doc["headline"] == headline(o) and doc["held_out_groups"]["groups"] == ["b@p1",
                                                                                   "c@p2"]
    assert doc["groups"]["a@p1"]["held_out"] is False
    assert f"**{headline(o)}**" in markdown(o)


def test_a_group_fitted_on_a_scenario_not_run_is_not_held_out() -> None:
    # only b ran, but the suite fitted a parameter on another scenario of b's group
    o = outcome_of([_run("b", "p1", {"task_us": 100.0}, {"task_us": 125.0})], [],
                   fitted_groups={"b@p1": ["x (costs/x.toml)"]})
    assert o.held_groups == [] and o.group_overall is None
    assert headline(o).startswith("held out by source: no group")


def test_no_fitted_scenario_held_out_is_all() -> None:
    o = outcome_of([_run("b", "p", {"task_us": 100.0}, {"task_us": 125.0})], [])
    assert o.fitted == {} and o.held_overall == o.overall and o.held_columns == o.columns
    assert "held out: every scenario (no parameter was fitted on the scenarios run)" in text(o)
    assert "No parameter was fitted on the scenarios run." in markdown(o)


# --------------------------------------------------------------------------------------------
# The text table stays narrow (a failure's message and a left-out reason below it)
# --------------------------------------------------------------------------------------------

LONG = "a message far wider than any column of the table " * 4


def _raises(scale: float) -> LaunchSpec:
    raise RuntimeError(LONG)


def test_failure_and_left_out_reason_print_below_the_table() -> None:
    boom = run_scenario(Scenario("boom", "boom", "tiny", "", _raises, (bv("task_us", 1.0),)))
    assert not boom.ok
    note = _run("n", "tiny", {"task_us": 2.0, "vec_us": 1.0}, {"task_us": 2.0, "vec_us": 1.0},
                notes={"vec_us": LONG})
    lines = text(outcome_of([boom, note], [])).splitlines()
    assert lines[0].startswith("held out by source (2 of 2 groups") and lines[1] == ""
    lines = lines[2:]
    assert lines[:6] == [
        "scenario  platform  scale  column   board  simulated  ratio  |error|       2s/s",
        "--------  --------  -----  -------  -----  ---------  -----  ------------  ----",
        "boom      tiny      1      FAILED   [1]",
        "n         tiny      1      task_us  2      2          1.000  0.0 %",
        "                           vec_us   1      1          -      left out [2]",
        f"[1] boom failed to run: RuntimeError: {LONG.strip()}",
    ]
    assert lines[6] == f"[2] n vec_us left out: {LONG}"
    # markdown keeps them in the row
    md = markdown(outcome_of([boom, note], []))
    assert f"| boom | tiny | 1 | FAILED | RuntimeError: {LONG.strip()} |" in md
    assert f"| left out: {LONG} |" in md


# --------------------------------------------------------------------------------------------
# Scatter axes: major ticks at the decades only, labelled 1, 10, 100, 1e3, ...
# --------------------------------------------------------------------------------------------


def test_decade_labels() -> None:
    got = [decade_label(v) for v in (1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e6)]
    assert got == ["1e-3", "0.01", "0.1", "1", "10", "100", "1e3", "1e4", "1e6"]
    assert [decade_label(v) for v in (2e6, 500.0, 0.0, -10.0, math.inf)] == [""] * 5


def test_scatter_ticks_on_a_wide_range() -> None:
    # lo = 1.6 / 1.6 = 1, hi = 1.25e6 x 1.6 = 2e6: the range that overlapped
    o = outcome_of([_run("s", "p", {"task_us": 1.6}, {"task_us": 1.6}),
                    _run("l", "p", {"task_us": 1.25e6}, {"task_us": 1.25e6})], [])
    fig = scatter_figure(o)
    fig.canvas.draw()
    ax = fig.axes[0]
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        assert (lo, hi) == pytest.approx((1.0, 2e6))
        shown = [(v, t.get_text()) for v, t in zip(axis.get_majorticklocs(),
                                                   axis.get_majorticklabels())
                 if lo * (1 - 1e-9) <= v <= hi]
        assert [t for _, t in shown] == ["1", "10", "100", "1e3", "1e4", "1e5", "1e6"]
        assert [v for v, _ in shown] == pytest.approx([10.0 ** k for k in range(7)])
        assert {t.get_text() for t in axis.get_minorticklabels()} == {""}


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
    fitted = Suite("f", (FULL,), (), {"nope": ("p (costs/x.toml)",), "tiles_full": ()})
    assert check_suite(fitted) == [
        "fitted: unknown scenario 'nope'",
        "fitted: scenario 'tiles_full' names no parameter (a tuple of non-empty strings)"]
    assert Suite("g", (FULL,), ()).fitted == {}  # the field is optional


def test_board_samples_fitted_table() -> None:
    from op_models.board_samples.suite import SUITE as BOARD_SUITE

    assert check_suite(BOARD_SUITE) == []
    assert sorted(BOARD_SUITE.fitted) == sorted([
        "data_copy_s1_a2", "data_copy_s2_a2", "add_c1_a2", "add_c0_a2", "data_copy_s1_950",
        "data_copy_s2_950", "add_c1_950", "add_c2_950", "add_c3_950", "data_copy_s5_950",
        "data_copy_s7_a2", "data_copy_s7_950", "data_copy_s8_950", "data_copy_s8_a2", "add_c3_a2",
        "add_c6_a2", "add_c5_950", "add_c0_950", "add_c2_a2"])
    assert BOARD_SUITE.fitted["data_copy_s2_a2"] == ("mte2.pipeline.row_cycles (costs/a2.toml)",)
    assert BOARD_SUITE.fitted["add_c3_a2"] == ("launch_per_core_ns (platforms/ascend910b1.toml)",
                                               "scalar.kernel_setup_cycles (costs/a2.toml)")
    assert BOARD_SUITE.fitted["add_c2_a2"] == ("scalar.kernel_setup_cycles (costs/a2.toml)",)


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


def test_cli_json_with_a_fitted_scenario(installed, capsys) -> None:
    installed["suites"] = [Suite("fit", SUITE.scenarios, SUITE.steps,
                                 {"tiles_small": ("p (costs/x.toml)",)})]
    assert main(["validate", "tiles_full", "tiles_small", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fitted"] == {"tiles_small": ["p (costs/x.toml)"]}
    assert doc["stats"]["all"]["count"] == 5  # tiles_full: 4 figures, tiles_small: 1
    assert doc["stats"]["held_out"]["all"]["count"] == 4
    assert doc["stats"]["held_out"]["columns"]["task_us"]["count"] == 1
    assert doc["steps"][0]["fitted_ends"] == ["tiles_small"]
    assert doc["steps_held_out"]["compared"] == 0


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


def test_cli_hold_out_a_group(installed, capsys) -> None:
    # groups: tiles@tiny (tiles_full, tiles_half) and tiles_small@tiny, a parameter fitted on
    installed["suites"] = [Suite("fit", SUITE.scenarios, SUITE.steps,
                                 {"tiles_small": ("p (costs/x.toml)",)})]
    assert main(["validate", "--hold-out", "tiles@tiny", "--list", "--json"]) == 0
    assert [d["name"] for d in json.loads(capsys.readouterr().out)] == ["tiles_full",
                                                                        "tiles_half"]
    assert main(["validate", "--hold-out", "tiles_small@tiny"]) == 2
    assert capsys.readouterr().err.strip() == (
        "aicore-sim: error: --hold-out tiles_small@tiny: parameters were fitted on it "
        "(p (costs/x.toml)) and validate refits nothing; groups held out as they are: "
        "tiles@tiny")
    assert main(["validate", "--hold-out", "nope@tiny"]) == 2
    assert "no such source group (sample@platform); groups: tiles@tiny, tiles_small@tiny" in (
        capsys.readouterr().err)


def test_a_scaled_launch_finds_l2_as_its_full_size_would():
    """A warm L2 holds what the launch before left: for a full-size launch whose data exceed
    L2 that is none of what it reads first, so its scaled-down run goes cold."""
    from aicore_sim.validate.run import _l2_as_full_size

    a2 = load_platform("ascend910b1")  # 192 MiB of L2, warm start on
    assert a2.costs.l2_warm_start and a2.l2_size == 192 << 20

    def spec(mib: int) -> LaunchSpec:  # x of `mib` MiB in, z of as many out (also given in)
        n = (mib << 20) // 2
        return LaunchSpec(kernels.double_buffer, [],
                          {"x": np.zeros(n, np.float16), "z": np.zeros(n, np.float16)},
                          {"z": (np.float16, (n,))}, 1)

    # 2 x 1 MiB (z counted once) at scale 1/64 = 128 MiB at full size <= 192: warm kept
    assert _l2_as_full_size(a2, spec(1), 1 / 64).costs.l2_warm_start
    # 2 x 2 MiB at 1/64 = 256 MiB > 192: cold
    assert not _l2_as_full_size(a2, spec(2), 1 / 64).costs.l2_warm_start
    # a full-size launch keeps the platform's L2 as it is
    assert _l2_as_full_size(a2, spec(2), 1.0) is a2
