"""Scenarios -> simulated figures: run each scenario timing-only and read the columns.

Step of the flow: after the suites' selection (:mod:`.suites`) and before the comparison
(:mod:`.compare`). Each scenario is launched as its ``build(scale)`` says, on its platform
preset, in ``timing-only`` mode; its figures are the columns of :data:`~.suite.COLUMNS`, taken
exactly as our msprof CSV export (:mod:`aicore_sim.export.msprof`) defines them from the summary
(:func:`aicore_sim.views.summary.summarize_trace`), so a user holding our ``PipeUtilization.csv``
beside the board's sees the same numbers:

- ``task_us`` = the summary's ``task_cycles`` (makespan, op head included, plus the launch
  overhead) / clock (``OpBasicInfo.csv`` Task Duration);
- ``aiv_us`` = the core's cycles from its start (after the op head) to its last completion /
  clock, mean over the launch's cores (``aiv_time(us)``);
- ``mte2_us`` / ``mte3_us`` / ``vec_us`` / ``scalar_us`` = the pipe time the export writes
  (busy cycles plus the copies' hold by shared HBM, ``gm_stretch_cycles``, and, where the
  summary gives ``pipe_time_cycles``, those) / clock, mean over the cores
  (``aiv_<pipe>_time(us)``);
- ``vec_ticks`` = the VECTOR time above in system-counter ticks: cycles / clock MHz x
  ``platform.system_counter_mhz``, mean over the cores (what ``GetSystemCycle`` spans count).

A scenario with ``scale`` s < 1 runs at s and 2s; per column the ratio fig(2s) / fig(s) is the
linearity check (2.0 when the figure grows linearly with the work) and the figure reported is
the linear extrapolation to full size, fig(s) + (fig(2s) - fig(s)) x (1 - s) / s. Such a
launch runs with the L2 the full-size one would find: cold when its full-size data exceed
the L2 size (a warm L2 would hold none of what the full launch reads first).
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aicore_sim.validate.suite import LaunchSpec, Scenario

__all__ = ["ScenarioRun", "extrapolate", "figures_of_summary", "run_scenario", "run_scenarios",
           "run_suite", "simulate"]

_PIPES = {"mte2_us": "MTE2", "mte3_us": "MTE3", "vec_us": "VECTOR", "scalar_us": "SCALAR"}


@dataclass
class ScenarioRun:
    """The simulated figures of one scenario (``error`` set when it could not run)."""

    scenario: Scenario
    suite: str
    figures: dict[str, float] = field(default_factory=dict)  # full size (extrapolated if s < 1)
    at_scale: dict[float, dict[str, float]] = field(default_factory=dict)  # raw runs by scale
    # fig(2s) / fig(s) per column, s < 1 only (None where fig(s) is 0)
    linearity: dict[str, float | None] = field(default_factory=dict)
    cores: int = 0
    wall_s: float = 0.0
    error: str | None = None

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def ok(self) -> bool:
        return self.error is None


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def figures_of_summary(summary: Mapping[str, Any], platform: Any) -> dict[str, float]:
    """The columns' simulated values of one launch from its summary (see the module
    docstring: the arithmetic of :func:`aicore_sim.export.msprof.pipe_utilization_rows` and
    :func:`~aicore_sim.export.msprof.op_basic_info_row`, kept in floats, not six-decimal
    text)."""
    clock = float(platform.clock_mhz)
    head = int(platform.op_head_cycles)
    cores = summary["cores"]

    def held(core: Mapping[str, Any], pipe: str) -> int:
        # the pipe time PipeUtilization.csv writes (trace.CoreTrace.pipe_time_cycles)
        return int(core["pipe_time_cycles"][pipe])

    out = {"task_us": int(summary["task_cycles"]) / clock,
           "aiv_us": _mean([max(int(c["cycles"]) - head, 0) / clock for c in cores])}
    for col, pipe in _PIPES.items():
        out[col] = _mean([held(c, pipe) / clock for c in cores])
    out["vec_ticks"] = _mean([held(c, "VECTOR") / clock * float(platform.system_counter_mhz)
                              for c in cores])
    return out  # a column of COLUMNS missing here is reported as "no simulated figure"


def simulate(scenario: Scenario, scale: float) -> tuple[dict[str, float], int]:
    """Launch ``scenario`` at ``scale`` timing-only; (its figures, its core count)."""
    from aicore_sim.sim.launch import launch
    from aicore_sim.sim.platform import load_platform
    from aicore_sim.views.summary import summarize_trace

    spec = scenario.build(scale)
    platform = _l2_as_full_size(load_platform(scenario.platform), spec, scale)
    result = launch(spec.kernel, spec.args, dict(spec.tensors), dict(spec.outputs), platform,
                    block_dim=spec.block_dim, mode="timing-only")
    summary = summarize_trace(result.trace, platform)
    return figures_of_summary(summary, platform), len(summary["cores"])


def _l2_as_full_size(platform, spec: LaunchSpec, scale: float):
    """``platform``, run cold when ``spec`` is a scaled-down launch (``scale`` < 1) whose
    full-size data would not fit L2: a warm L2 (``costs.l2_warm_start``) holds what the launch
    before left, which for a full-size launch that streams more than L2 holds is none of what
    it reads first, while the scaled-down launch's few megabytes would all be there."""
    if scale >= 1.0 or not platform.costs.l2_warm_start:
        return platform
    held = sum(int(a.nbytes) for a in spec.tensors.values())
    held += sum(np.dtype(d).itemsize * math.prod(shape)
                for name, (d, shape) in spec.outputs.items() if name not in spec.tensors)
    if held / scale <= platform.l2_size:
        return platform
    return platform.with_overrides(costs={"l2_warm_start": False})


def extrapolate(at_s: float, at_2s: float, s: float) -> float:
    """The linear extrapolation to scale 1 of a figure measured at scales ``s`` and ``2s``:
    fig(s) + (fig(2s) - fig(s)) (1 - s) / s, computed as the equal
    (fig(s) (2s - 1) + fig(2s) (1 - s)) / s, which gives fig(2s) exactly when s = 0.5."""
    return (at_s * (2.0 * s - 1.0) + at_2s * (1.0 - s)) / s


def run_scenario(scenario: Scenario, suite: str = "",
                 sim: Callable[[Scenario, float], tuple[dict[str, float], int]] = simulate
                 ) -> ScenarioRun:
    """Run one scenario (twice when its scale is below 1); a failure is kept in ``error``
    (one line: the exception's type and message) rather than raised."""
    run = ScenarioRun(scenario, suite)
    t0 = time.perf_counter()
    s = float(scenario.scale)
    try:
        if s >= 1.0:
            run.figures, run.cores = sim(scenario, 1.0)
            run.at_scale[1.0] = dict(run.figures)
        else:
            a, run.cores = sim(scenario, s)
            b, _ = sim(scenario, 2 * s)
            run.at_scale = {s: a, 2 * s: b}
            run.linearity = {k: (b[k] / a[k] if a[k] else None) for k in a}
            run.figures = {k: extrapolate(a[k], b[k], s) for k in a}
    except Exception as e:  # noqa: BLE001 - one scenario's failure must not stop the rest
        if os.environ.get("AICORE_SIM_DEBUG") == "1":
            traceback.print_exc(file=sys.stderr)
        run.error = f"{type(e).__name__}: {' '.join(str(e).split())}"
    run.wall_s = time.perf_counter() - t0
    return run


def run_scenarios(selected: Sequence[tuple[Any, Scenario]], progress: bool = True,
                  echo: Callable[[str], None] | None = None) -> list[ScenarioRun]:
    """Run every (suite, scenario) in order, with a tqdm bar on stderr (one line per
    scenario when stderr is not a terminal); ``echo`` gets one line per failed scenario."""
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    bar = tqdm(total=len(selected), unit="scenario", file=sys.stderr, dynamic_ncols=True,
               disable=not progress or not tty)
    runs: list[ScenarioRun] = []
    try:
        for i, (suite, sc) in enumerate(selected):
            bar.set_postfix_str(sc.name, refresh=True)
            r = run_scenario(sc, getattr(suite, "name", str(suite or "")))
            runs.append(r)
            if progress and not tty:
                state = "ok" if r.ok else "FAILED"
                print(f"[{i + 1}/{len(selected)}] {sc.name}: {state} ({r.wall_s:.1f} s)",
                      file=sys.stderr, flush=True)
            if not r.ok and echo is not None:
                with bar.external_write_mode(file=sys.stderr):  # the line above the bar
                    echo(f"{sc.name}: failed to run: {r.error}")
            bar.update(1)
    finally:
        bar.close()
    return runs


def run_suite(suites: Any, names: Sequence[str] = (), progress: bool = False,
              echo: Callable[[str], None] | None = None) -> Any:
    """Select ``names`` (all when empty: :func:`.suites.select`) from ``suites`` (one
    :class:`~.suite.Suite` or several), run them and compare them with the board: the
    :class:`.compare.Outcome`. The steps are those whose two scenarios were both selected;
    the suites' ``fitted`` scenarios are held apart in the statistics."""
    from aicore_sim.validate.compare import outcome_of
    from aicore_sim.validate.suite import Suite
    from aicore_sim.validate.suites import select, steps_for

    if isinstance(suites, Suite):
        suites = [suites]
    t0 = time.perf_counter()
    selected = select(suites, names)
    runs = run_scenarios(selected, progress, echo)
    steps = steps_for(suites, [sc.name for _, sc in selected])
    fitted = {name: tuple(params) for su in suites for name, params in su.fitted.items()}
    groups: dict[str, list[str]] = {}  # a group is fitted when any of its scenarios is
    for su in suites:
        for sc in su.scenarios:
            if sc.name in fitted:
                groups.setdefault(sc.group, []).extend(fitted[sc.name])
    return outcome_of(runs, steps, [s.name for s in suites], time.perf_counter() - t0, fitted,
                      groups)
