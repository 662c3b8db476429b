"""Simulated figures against the board's: errors, medians, worst cases, optimisation steps.

Step of the flow: after the runs (:mod:`.run`), before the report (:mod:`.report`). Pure
arithmetic on numbers; nothing here simulates.

- The **error** of a figure is ``|ln r|`` with ``r = simulated / board``, shown as a percentage
  ``100 |ln r|`` (symmetric: a figure twice too big and one half too small are both 69.3 %).
- Per column (and per platform, and over all figures): the count, the median error and the
  worst error with its scenario and ``r``.
- Per :class:`~.suite.Step`: the board's gain = board(baseline) / board(optimised) on the step's
  column, the simulated gain the same of ours; the direction is **right** when both gains lie on
  the same side of 1, or, when the board's gain is within ±2 % of 1 (**neutral**: the
  optimisation changed nothing on the board), when the simulated gain is within a factor 1.25
  of it; **within 1.25** when max(gs / gb, gb / gs) <= 1.25.
- **Fitted and held out**: a scenario some timing-model parameter was fitted on
  (``Suite.fitted``) says little about the model's error, so every statistic is given twice:
  over all figures and over the **held-out** ones (scenarios not fitted on). A step with a
  fitted scenario at either end is still counted, and flagged (``fitted_ends``).
- **Held out by source**: scenarios are grouped by their source, a sample on a SoC
  (``Scenario.group``, e.g. ``data_copy@ascend910b1``); a group none of whose scenarios a
  parameter was fitted on is held out as a whole - its neighbours taught the model nothing -
  and the statistics over the held-out groups are the headline (:class:`GroupInfo`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from aicore_sim.validate.suite import Step

__all__ = ["NEUTRAL", "WITHIN", "Cell", "GroupInfo", "Outcome", "Stat", "StepResult", "cells_of",
           "error_of", "exceeded", "held_out", "outcome_of", "stat_of", "stats_by",
           "step_result", "steps_of"]

NEUTRAL = 0.02  # a board gain within 1 ± this is "no change"
WITHIN = 1.25  # the factor a simulated gain (or figure) may be off and still count as close


def error_of(simulated: float, board: float) -> tuple[float, float]:
    """(r, |ln r|) of a simulated figure against the board's (both > 0)."""
    r = simulated / board
    return r, abs(math.log(r))


@dataclass(frozen=True)
class Cell:
    """One board figure of one scenario beside ours."""

    scenario: str
    platform: str
    column: str
    board: float
    simulated: float | None
    ratio: float | None  # simulated / board; None when not compared
    error: float | None  # |ln ratio|; None when not compared
    linearity: float | None = None  # fig(2s) / fig(s) when the scenario ran scaled
    note: str | None = None  # why the figure is left out of the statistics
    fitted: bool = False  # a timing-model parameter was fitted on this scenario

    @property
    def compared(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["error_pct"] = None if self.error is None else 100.0 * self.error
        return d


def cells_of(runs: Iterable[Any], fitted: Collection[str] = ()) -> list[Cell]:
    """A :class:`Cell` per board figure of every run that ran (``runs``: :class:`.run.ScenarioRun`);
    the cells of a scenario named in ``fitted`` are marked ``fitted``.

    A figure is left out of the statistics (``note`` says why) when the scenario's ``notes``
    exclude its column, when we have no simulated figure for its column, or when either figure
    is not positive (no ratio of logs exists)."""
    out: list[Cell] = []
    for run in runs:
        if run.error is not None:
            continue
        sc = run.scenario
        fit = sc.name in fitted
        for bv in sc.board:
            sim = run.figures.get(bv.column)
            lin = run.linearity.get(bv.column) if run.linearity else None
            note = sc.notes.get(bv.column)
            if note is None and sim is None:
                note = "no simulated figure for this column"
            elif note is None and not (sim > 0 and bv.value > 0):
                note = f"not positive (board {bv.value:g}, simulated {sim:g}): no ratio"
            if note is not None:
                out.append(Cell(sc.name, sc.platform, bv.column, float(bv.value), sim, None,
                                None, lin, note, fit))
                continue
            r, err = error_of(sim, float(bv.value))
            out.append(Cell(sc.name, sc.platform, bv.column, float(bv.value), sim, r, err, lin,
                            None, fit))
    return out


def held_out(cells: Iterable[Cell]) -> list[Cell]:
    """The cells of scenarios no parameter was fitted on."""
    return [c for c in cells if not c.fitted]


@dataclass(frozen=True)
class Stat:
    """Count, median and worst error of a group of figures."""

    count: int
    median: float  # |ln r|
    worst: float  # |ln r|
    worst_scenario: str
    worst_ratio: float

    @property
    def median_pct(self) -> float:
        return 100.0 * self.median

    @property
    def worst_pct(self) -> float:
        return 100.0 * self.worst

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "median_pct": self.median_pct, "worst_pct": self.worst_pct}


def stat_of(cells: Sequence[Cell]) -> Stat | None:
    """The :class:`Stat` of the compared cells of ``cells`` (None when there is none). The
    worst is the first cell with the largest error."""
    got = [c for c in cells if c.compared]
    if not got:
        return None
    worst = max(got, key=lambda c: c.error)  # max keeps the first of equals
    return Stat(len(got), float(statistics.median(c.error for c in got)), float(worst.error),
                worst.scenario, float(worst.ratio))


def stats_by(cells: Sequence[Cell], key: Callable[[Cell], str]) -> dict[str, Stat]:
    """A :class:`Stat` per value of ``key`` (first-seen order), groups with no compared cell
    left out."""
    groups: dict[str, list[Cell]] = {}
    for c in cells:
        groups.setdefault(key(c), []).append(c)
    out = {}
    for k, cs in groups.items():
        s = stat_of(cs)
        if s is not None:
            out[k] = s
    return out


@dataclass(frozen=True)
class StepResult:
    """An optimisation step: the board's gain against ours."""

    step: Step
    board_gain: float | None
    sim_gain: float | None
    neutral: bool = False  # the board's gain is within 1 ± NEUTRAL
    right: bool | None = None  # direction right; None when not compared
    within: bool | None = None  # max(gs / gb, gb / gs) <= WITHIN
    note: str | None = None  # why not compared
    fitted_ends: tuple[str, ...] = ()  # the step's scenarios a parameter was fitted on

    @property
    def uses_fitted(self) -> bool:
        return bool(self.fitted_ends)

    def as_dict(self) -> dict[str, Any]:
        st = self.step
        return {"name": st.name, "kind": st.kind, "baseline": st.baseline,
                "optimised": st.optimised, "column": st.column, "board_gain": self.board_gain,
                "sim_gain": self.sim_gain, "neutral": self.neutral, "right": self.right,
                "within": self.within, "note": self.note, "uses_fitted": self.uses_fitted,
                "fitted_ends": list(self.fitted_ends)}


def step_result(step: Step, board_base: float | None, board_opt: float | None,
                sim_base: float | None, sim_opt: float | None) -> StepResult:
    """Gains and verdicts of one step from the four figures (any None or non-positive one
    leaves the step uncompared, with a note)."""
    figs = (board_base, board_opt, sim_base, sim_opt)
    if any(f is None for f in figs):
        return StepResult(step, None, None,
                          note=f"a figure of {step.column} is missing (board or simulated)")
    if not all(f > 0 for f in figs):
        return StepResult(step, None, None, note=f"a figure of {step.column} is not positive")
    gb = board_base / board_opt
    gs = sim_base / sim_opt
    close = max(gs / gb, gb / gs) <= WITHIN
    neutral = abs(gb - 1.0) <= NEUTRAL
    right = close if neutral else ((gb > 1.0) == (gs > 1.0) and gs != 1.0)
    return StepResult(step, gb, gs, neutral, right, close)


def steps_of(steps: Iterable[Step], runs: Iterable[Any], fitted: Collection[str] = ()
             ) -> list[StepResult]:
    """:func:`step_result` of each step from the runs' board and simulated figures (a step
    whose scenario did not run is kept, uncompared, with a note); ``fitted_ends`` names the
    step's scenarios that are in ``fitted``."""
    by_name = {r.name: r for r in runs}
    out = []
    for st in steps:
        ends = tuple(dict.fromkeys(n for n in (st.baseline, st.optimised) if n in fitted))
        a, b = by_name.get(st.baseline), by_name.get(st.optimised)
        missing = [n for n, r in ((st.baseline, a), (st.optimised, b))
                   if r is None or r.error is not None]
        if missing:
            out.append(StepResult(st, None, None, note=f"{', '.join(missing)} did not run",
                                  fitted_ends=ends))
            continue
        res = step_result(st, _board(a, st.column), _board(b, st.column),
                          a.figures.get(st.column), b.figures.get(st.column))
        out.append(replace(res, fitted_ends=ends))
    return out


def _board(run: Any, column: str) -> float | None:
    for bv in run.scenario.board:
        if bv.column == column:
            return float(bv.value)
    return None


@dataclass(frozen=True)
class GroupInfo:
    """One source group of scenarios (a sample on a SoC): its scenarios run, the parameters
    fitted on any of its scenarios (held out when none), and the statistics of its figures."""

    scenarios: tuple[str, ...]
    fitted: tuple[str, ...]
    stat: Stat | None
    task: Stat | None  # its Task Duration figures only

    @property
    def held_out(self) -> bool:
        return not self.fitted

    def as_dict(self) -> dict[str, Any]:
        return {"scenarios": list(self.scenarios), "fitted": list(self.fitted),
                "held_out": self.held_out, "stat": None if self.stat is None
                else self.stat.as_dict(), "task": None if self.task is None
                else self.task.as_dict()}


@dataclass
class Outcome:
    """Everything one validation gives: the runs, their cells, the statistics (over all
    figures, and ``held_*`` over the held-out ones), the steps, the fitted scenarios."""

    runs: list[Any]  # .run.ScenarioRun
    cells: list[Cell]
    columns: dict[str, Stat]
    platforms: dict[str, Stat]
    overall: Stat | None
    steps: list[StepResult]
    suites: list[str]
    wall_s: float = 0.0
    # scenario -> parameters fitted on it, for the runs' scenarios (run order)
    fitted: dict[str, tuple[str, ...]] = field(default_factory=dict)
    held_columns: dict[str, Stat] = field(default_factory=dict)
    held_platforms: dict[str, Stat] = field(default_factory=dict)
    held_overall: Stat | None = None
    # source groups (sample@platform) of the runs, run order, and the statistics over the
    # cells of the held-out ones: the headline
    groups: dict[str, GroupInfo] = field(default_factory=dict)
    group_columns: dict[str, Stat] = field(default_factory=dict)
    group_overall: Stat | None = None

    @property
    def held_groups(self) -> list[str]:
        """The source groups no parameter was fitted on."""
        return [g for g, info in self.groups.items() if info.held_out]

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.runs if r.error is not None]

    def step_counts(self, held_out_only: bool = False) -> tuple[int, int, int]:
        """(steps compared, direction right, within 1.25); with ``held_out_only``, of the
        steps with no fitted scenario at either end."""
        done = [s for s in self.steps if s.right is not None
                and not (held_out_only and s.uses_fitted)]
        return len(done), sum(bool(s.right) for s in done), sum(bool(s.within) for s in done)


def outcome_of(runs: list[Any], steps: Iterable[Step], suites: Sequence[str] = (),
               wall_s: float = 0.0, fitted: Mapping[str, Sequence[str]] | None = None,
               fitted_groups: Mapping[str, Sequence[str]] | None = None) -> Outcome:
    """Compare ``runs`` with their board figures and evaluate ``steps``; ``fitted`` (scenario
    -> parameters fitted on it) splits off the held-out statistics; ``fitted_groups`` (source
    group -> parameters fitted on any of its scenarios, run or not; default: from the runs)
    the held-out groups."""
    fitted = fitted or {}
    cells = cells_of(runs, fitted)
    held = held_out(cells)
    o = Outcome(runs, cells, stats_by(cells, lambda c: c.column),
                stats_by(cells, lambda c: c.platform), stat_of(cells),
                steps_of(steps, runs, fitted), list(suites), wall_s,
                {r.name: tuple(fitted[r.name]) for r in runs if r.name in fitted},
                stats_by(held, lambda c: c.column), stats_by(held, lambda c: c.platform),
                stat_of(held))
    if fitted_groups is None:
        fitted_groups = {}
        for r in runs:
            if r.name in fitted:
                fitted_groups.setdefault(r.scenario.group, []).extend(fitted[r.name])
    group_of = {r.name: r.scenario.group for r in runs}
    members: dict[str, list[str]] = {}
    for r in runs:
        members.setdefault(group_of[r.name], []).append(r.name)
    for g, names in members.items():
        gc = [c for c in cells if group_of[c.scenario] == g]
        o.groups[g] = GroupInfo(tuple(names), tuple(dict.fromkeys(fitted_groups.get(g, ()))),
                                stat_of(gc), stat_of([c for c in gc if c.column == "task_us"]))
    kept = set(o.held_groups)
    by_group = [c for c in cells if group_of[c.scenario] in kept]
    o.group_columns = stats_by(by_group, lambda c: c.column)
    o.group_overall = stat_of(by_group)
    return o


def exceeded(stats: Mapping[str, Stat], max_median: float | None, max_worst: float | None
             ) -> list[str]:
    """One line per column whose median / worst error (in %) exceeds the limits."""
    out = []
    for col, s in stats.items():
        if max_median is not None and s.median_pct > max_median:
            out.append(f"{col}: median |error| {s.median_pct:.1f} % > {max_median:g} %")
        if max_worst is not None and s.worst_pct > max_worst:
            out.append(f"{col}: worst |error| {s.worst_pct:.1f} % > {max_worst:g} % "
                       f"({s.worst_scenario}, r {s.worst_ratio:.3f})")
    return out
