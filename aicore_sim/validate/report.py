"""A validation's outcome as text, JSON, markdown and a board-vs-simulated scatter plot.

Step of the flow: the last one of ``aicore-sim validate``. It reads a
:class:`~.compare.Outcome` only; nothing is simulated or recomputed here.

- :func:`text` - a table per scenario (board, simulated, ratio, |error|, and the linearity
  check fig(2s) / fig(s) of a scenario run scaled; a failure's message and a left-out figure's
  reason on their own lines below it, so the table stays narrow), the per-column /
  per-platform / overall statistics over all figures and over the held-out ones (scenarios no
  parameter was fitted on), the fitted scenarios and their parameters, the steps table (a step
  with a fitted end flagged), the step counts and the wall time;
- :func:`document` - the same as one JSON-ready dict;
- :func:`markdown` - the same as markdown, with the platform presets (and whether a launch
  starts with L2 warm), the simulator's version
  (and ``git describe`` when run from a checkout), the date and the board figures' sources;
- :func:`scatter_png` - log-log board vs simulated, one colour per column, y = x and the
  factor-1.25 band (the "within 1.25" of the steps);
- :func:`write_report` - ``FILE.md`` and ``FILE.png``, each written atomically.
"""

from __future__ import annotations

import contextlib
import io
import math
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aicore_sim.util.atomic import write_atomic
from aicore_sim.util.staging import write_staged
from aicore_sim.validate.compare import WITHIN, Cell, Outcome, Stat, StepResult
from aicore_sim.validate.suite import COLUMNS

__all__ = ["decade_label", "document", "markdown", "report_paths", "scatter_figure",
           "scatter_png", "simulator_version", "text", "write_report"]


# --------------------------------------------------------------------------------------------
# Numbers and tables
# --------------------------------------------------------------------------------------------


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1e5:  # whole units: 1239700, not 1.2397e+06
        return f"{x:.0f}" if abs(x) < 1e15 else f"{x:.4e}"
    return f"{x:.5g}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100.0 * x:.1f} %"


def _scale(s: float) -> str:
    return f"{s:g}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers).rstrip(), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r).rstrip() for r in rows]
    return out


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return out


_SCEN_HEAD = ("scenario", "platform", "scale", "column", "board", "simulated", "ratio",
              "|error|", "2s/s")
_FITTED_MARK = " (fitted)"  # after the name of a scenario a parameter was fitted on


def _scenario_rows(o: Outcome, inline: bool = True) -> tuple[list[list[str]], list[str]]:
    """The scenario table's rows, and (``inline`` False) the lines below it: each failure's
    message and each left-out figure's reason, numbered [k] where the row refers to them
    (``inline`` True puts them in the row, for markdown)."""
    by_run: dict[str, list[Cell]] = {}
    for c in o.cells:
        by_run.setdefault(c.scenario, []).append(c)
    rows: list[list[str]] = []
    below: list[str] = []

    def ref(line: str) -> str:
        below.append(f"[{len(below) + 1}] {line}")
        return f"[{len(below)}]"

    for r in o.runs:
        sc = r.scenario
        name = sc.name + (_FITTED_MARK if sc.name in o.fitted else "")
        head = [name, sc.platform, _scale(sc.scale)]
        if r.error is not None:
            msg = r.error if inline else ref(f"{sc.name} failed to run: {r.error}")
            rows.append([*head, "FAILED", msg, "", "", "", ""])
            continue
        for i, c in enumerate(by_run.get(sc.name, [])):
            lead = head if i == 0 else ["", "", ""]
            lin = "" if c.linearity is None else f"{c.linearity:.3f}"
            if c.compared:
                rows.append([*lead, c.column, _num(c.board), _num(c.simulated), _ratio(c.ratio),
                             _pct(c.error), lin])
            else:
                why = (f"left out: {c.note}" if inline else
                       "left out " + ref(f"{sc.name} {c.column} left out: {c.note}"))
                rows.append([*lead, c.column, _num(c.board), _num(c.simulated), "-", why, lin])
        if not by_run.get(sc.name):
            rows.append([*head, "-", "no board figure", "", "", "", ""])
    return rows, below


_STAT_HEAD = ("", "n", "median |error|", "worst |error|", "worst scenario (r)")
_HELD_HEAD = ("n (held out)", "median (held out)", "worst (held out)",
              "worst held-out scenario (r)")
_HELD_ROW = "  held out"  # text: the held-out row under each group's row


def _stat_cells(s: Stat | None) -> list[str]:
    if s is None:
        return ["0", "-", "-", "-"]
    return [str(s.count), f"{s.median_pct:.1f} %", f"{s.worst_pct:.1f} %",
            f"{s.worst_scenario} (r {s.worst_ratio:.3f})"]


def _stat_rows(o: Outcome, split: bool = False) -> list[list[str]]:
    """Per column, per platform and over all: the statistics over all figures, then over the
    held-out ones, in further columns (``_HELD_HEAD``), or (``split``, the narrow text form)
    on a row of their own under the group's."""
    groups: list[tuple[str, Stat, Stat | None]] = [
        *((col, s, o.held_columns.get(col)) for col, s in o.columns.items()),
        *((f"platform {p}", s, o.held_platforms.get(p)) for p, s in o.platforms.items())]
    if o.overall is not None:
        groups.append(("all", o.overall, o.held_overall))
    rows = []
    for label, s, held in groups:
        if split:
            rows += [[label, *_stat_cells(s)], [_HELD_ROW, *_stat_cells(held)]]
        else:
            rows.append([label, *_stat_cells(s), *_stat_cells(held)])
    return rows


def headline(o: Outcome) -> str:
    """The held-out figure by source: the statistics over the groups (a sample on a SoC) no
    parameter was fitted on, Task Duration first."""
    held = o.held_groups
    if not o.groups:
        return "held out by source: nothing ran"
    if not held:
        return ("held out by source: no group - a parameter was fitted on every group run "
                "(sample@platform), so every figure below includes fitted ones")
    task = o.group_columns.get("task_us")
    s = o.group_overall
    words = (f"{s.count} figures, median |error| {s.median_pct:.1f} %, worst "
             f"{s.worst_pct:.1f} % ({s.worst_scenario}, r {s.worst_ratio:.3f})"
             if s else "no figure compared")
    task_words = (f"Task Duration median {task.median_pct:.1f} %, worst {task.worst_pct:.1f} % "
                  f"over {task.count}" if task else "Task Duration: no held-out figure")
    return (f"held out by source ({len(held)} of {len(o.groups)} groups no parameter was "
            f"fitted on: {', '.join(held)}): {task_words}; all columns: {words}")


def _group_rows(o: Outcome) -> list[list[str]]:
    rows = []
    for g, info in o.groups.items():
        t = "-" if info.task is None else f"{info.task.median_pct:.1f} %"
        a = "-" if info.stat is None else f"{info.stat.median_pct:.1f} %"
        rows.append([g, str(len(info.scenarios)), "yes" if info.held_out else "no",
                     str(len(info.fitted)), t, a])
    return rows


_GROUP_HEAD = ("group (sample@platform)", "scenarios", "held out", "parameters fitted",
               "task_us median", "all median")


def _held_line(o: Outcome) -> str:
    if not o.fitted:
        return "held out: every scenario (no parameter was fitted on the scenarios run)"
    return (f"held out: the scenarios no parameter was fitted on ({len(o.fitted)} of the "
            f"{len(o.runs)} run are fitted, marked '{_FITTED_MARK.strip()}')")


def _fitted_rows(o: Outcome) -> list[list[str]]:
    rows = []
    for name, params in o.fitted.items():
        rows += [[name if i == 0 else "", p] for i, p in enumerate(params)]
    return rows


_STEP_HEAD = ("step", "kind", "column", "board gain", "sim gain", "direction", "within 1.25",
              "uses fitted")


def _fitted_end(s: StepResult) -> str:
    st = s.step
    ends = [w for w, n in (("baseline", st.baseline), ("optimised", st.optimised))
            if n in s.fitted_ends]
    return "both" if len(ends) == 2 else (ends[0] if ends else "no")


def _step_row(s: StepResult) -> list[str]:
    st = s.step
    if s.right is None:
        return [st.name, st.kind, st.column, "-", "-", f"not compared: {s.note}", "-",
                _fitted_end(s)]
    direction = ("right" if s.right else "WRONG") + (" (neutral)" if s.neutral else "")
    return [st.name, st.kind, st.column, f"{s.board_gain:.3f}", f"{s.sim_gain:.3f}", direction,
            "yes" if s.within else "no", _fitted_end(s)]


def _counts_line(o: Outcome) -> str:
    n, right, within = o.step_counts()
    hn, hright, hwithin = o.step_counts(held_out_only=True)
    return (f"steps: {right} / {n} direction right, {within} / {n} within {WITHIN:g}; "
            f"held out (no fitted end): {hright} / {hn} right, {hwithin} / {hn} within "
            f"{WITHIN:g}")


def _ran_line(o: Outcome) -> str:
    failed = o.failed
    line = f"{len(o.runs) - len(failed)} / {len(o.runs)} scenarios ran"
    if failed:
        line += f" ({len(failed)} failed: {', '.join(failed)})"
    return line + f"; wall {o.wall_s:.1f} s"


# --------------------------------------------------------------------------------------------
# Text and JSON
# --------------------------------------------------------------------------------------------


def text(o: Outcome, checks: Sequence[str] = ()) -> str:
    """The terminal form of an outcome (see the module docstring)."""
    rows, below = _scenario_rows(o, inline=False)
    lines = [headline(o), ""] + _table(_SCEN_HEAD, rows) + below
    lines += ["", "ratio = simulated / board; |error| = 100 |ln ratio|; 2s/s = fig(2s) / fig(s) "
              "of a scenario run at scale s < 1 and extrapolated to 1 (2.000 = linear)", ""]
    stats = _stat_rows(o, split=True)
    lines += _table(_STAT_HEAD, stats) if stats else ["no figure compared"]
    lines.append(_held_line(o))
    if o.fitted:
        lines += ["", "fitted: the parameters fitted on a scenario's board figures"]
        lines += _table(("scenario", "parameter (file)"), _fitted_rows(o))
    if o.groups:
        lines += ["", "sources: a group is held out when no parameter was fitted on any of "
                      "its scenarios"]
        lines += _table(_GROUP_HEAD, _group_rows(o))
    if o.steps:
        lines += [""] + _table(_STEP_HEAD, [_step_row(s) for s in o.steps])
        lines.append(_counts_line(o))
    lines.append(_ran_line(o))
    lines += [f"check failed: {c}" for c in checks]
    return "\n".join(lines)


def _stat_dict(s: Stat | None) -> dict[str, Any] | None:
    return None if s is None else s.as_dict()


def document(o: Outcome, checks: Sequence[str] = (), meta: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """The outcome as one JSON-ready dict."""
    cells: dict[str, list[dict[str, Any]]] = {}
    for c in o.cells:
        cells.setdefault(c.scenario, []).append(c.as_dict())
    scenarios = []
    for r in o.runs:
        sc = r.scenario
        scenarios.append({
            "name": sc.name, "suite": r.suite, "sample": sc.sample, "platform": sc.platform,
            "scale": sc.scale, "description": sc.description, "cores": r.cores,
            "wall_s": round(r.wall_s, 4), "error": r.error, "figures": r.figures,
            "at_scale": {f"{s:g}": f for s, f in r.at_scale.items()},
            "linearity": r.linearity, "fitted": list(o.fitted.get(sc.name, ())),
            "board": [{"column": b.column, "value": b.value, "unit": b.unit, "scope": b.scope,
                       "source": b.source, "commit": b.commit} for b in sc.board],
            "notes": dict(sc.notes),
            "cells": cells.get(sc.name, []),
        })
    n, right, within = o.step_counts()
    hn, hright, hwithin = o.step_counts(held_out_only=True)
    return {
        **(meta or {}),
        "suites": o.suites,
        "columns": {k: {"msprof": v[0], "unit": v[1]} for k, v in COLUMNS.items()},
        "scenarios": scenarios,
        "fitted": {k: list(v) for k, v in o.fitted.items()},
        "headline": headline(o),
        "groups": {g: info.as_dict() for g, info in o.groups.items()},
        "held_out_groups": {"groups": o.held_groups,
                            "columns": {k: s.as_dict() for k, s in o.group_columns.items()},
                            "all": _stat_dict(o.group_overall)},
        "stats": {"columns": {k: s.as_dict() for k, s in o.columns.items()},
                  "platforms": {k: s.as_dict() for k, s in o.platforms.items()},
                  "all": _stat_dict(o.overall),
                  "held_out": {"columns": {k: s.as_dict() for k, s in o.held_columns.items()},
                               "platforms": {k: s.as_dict()
                                             for k, s in o.held_platforms.items()},
                               "all": _stat_dict(o.held_overall)}},
        "steps": [s.as_dict() for s in o.steps],
        "steps_compared": n, "steps_right": right, "steps_within": within,
        "steps_held_out": {"compared": hn, "right": hright, "within": hwithin},
        "failed": o.failed,
        "checks_failed": list(checks),
        "wall_s": round(o.wall_s, 3),
    }


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def simulator_version() -> dict[str, str | None]:
    """The package version, and ``git describe`` of the checkout it runs from (None when it
    does not run from one, or git is missing)."""
    import importlib.metadata as md

    try:
        version: str | None = md.version("aicore-sim")
    except md.PackageNotFoundError:
        version = None
    root = Path(__file__).resolve().parents[2]
    commit = None
    if (root / ".git").exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            p = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root,
                               capture_output=True, text=True, timeout=10)
            if p.returncode == 0 and p.stdout.strip():
                commit = p.stdout.strip()
    return {"version": version, "commit": commit}


def _platform_rows(names: Sequence[str]) -> list[list[str]]:
    from aicore_sim.sim.platform import load_platform

    rows = []
    for name in names:
        try:
            p = load_platform(name)
        except Exception as e:  # noqa: BLE001 - a report line, not a failure
            rows.append([name, f"cannot load: {e}", "", "", "", "", "", ""])
            continue
        hbm = p.hbm_bytes_per_cycle * p.clock_mhz * 1e6 / 1e9
        l2 = ("none" if p.costs.l2_line_bytes <= 0
              else "warm" if p.costs.l2_warm_start else "cold")
        rows.append([name, p.soc, str(p.aiv_core_num), f"{p.clock_mhz:g}", f"{hbm:.0f}",
                     str(p.op_head_cycles), f"{p.system_counter_mhz:g}", l2])
    return rows


def markdown(o: Outcome, checks: Sequence[str] = (), meta: dict[str, Any] | None = None,
             png_name: str | None = None) -> str:
    """The outcome as a markdown report (see the module docstring)."""
    meta = meta or {}
    ver = meta.get("simulator") or {}
    lines = ["# aicore-sim validate: simulated against on-board figures", "",
             f"**{headline(o)}**", ""]
    lines.append(f"- date: {meta.get('date', time.strftime('%Y-%m-%d %H:%M:%S'))}")
    v = ver.get("version") or "unknown"
    lines.append(f"- simulator: aicore-sim {v}" +
                 (f" ({ver['commit']})" if ver.get("commit") else ""))
    if meta.get("command"):
        lines.append(f"- command: `{meta['command']}`")
    lines.append(f"- suites: {', '.join(o.suites) or 'none'}; {_ran_line(o)}")
    lines.append("- ratio r = simulated / board; |error| = 100 |ln r|; per-core columns are the "
                 "mean over the launch's cores; 2s/s = fig(2s) / fig(s) of a scenario run at "
                 "scale s < 1 and extrapolated linearly to full size (2.000 = linear)")
    lines += ["", "## Platform presets", ""]
    platforms = list(dict.fromkeys(r.scenario.platform for r in o.runs))
    lines += _md_table(("preset", "soc", "AIV cores", "clock MHz", "HBM GB/s", "op head cycles",
                        "system counter MHz", "L2 at a launch's start"),
                       _platform_rows(platforms))
    lines.append("")
    lines.append("L2 at a launch's start: warm = as the same launch before left it, as `msprof "
                 "op` measures after its warm-up runs (a scenario run scaled down starts cold "
                 "when its full-size data exceed L2); cold = empty.")
    lines += ["", "## Scenarios", ""]
    lines += _md_table(_SCEN_HEAD, _scenario_rows(o)[0])
    if o.groups:
        lines += ["", "## Sources", "", "A group (a sample on a SoC) is held out when no "
                  "parameter was fitted on any of its scenarios; the headline is over those.",
                  ""]
        lines += _md_table(_GROUP_HEAD, _group_rows(o))
    lines += ["", "## Error per column", ""]
    stats = _stat_rows(o)
    lines += (_md_table(("group", *_STAT_HEAD[1:], *_HELD_HEAD), stats) if stats
              else ["No figure compared."])
    lines += ["", _held_line(o) + "."]
    lines += ["", "## Fitted parameters", ""]
    if o.fitted:
        lines += ["Timing-model parameters derived from these scenarios' board figures (the "
                  "derivation is beside each value in the cost and platform data files); the "
                  "held-out columns above and the held-out step counts leave these scenarios "
                  "out.", ""]
        lines += _md_table(("scenario", "parameters (file)"),
                           [[k, "; ".join(v)] for k, v in o.fitted.items()])
    else:
        lines.append("No parameter was fitted on the scenarios run.")
    if png_name:
        lines += ["", f"![board vs simulated]({png_name})"]
    if o.steps:
        lines += ["", "## Optimisation steps", ""]
        lines += _md_table(_STEP_HEAD, [_step_row(s) for s in o.steps])
        lines += ["", _counts_line(o) + " (direction right: both gains on the same side of 1; "
                  "a board gain within 2 % of 1 is neutral and needs the simulated gain within "
                  "a factor 1.25 of it)"]
    if checks:
        lines += ["", "## Checks failed", ""] + [f"- {c}" for c in checks]
    lines += ["", "## Board figures' sources", ""]
    rows = []
    for r in o.runs:
        srcs = list(dict.fromkeys(f"{b.source} @ {b.commit}" for b in r.scenario.board))
        rows.append([r.scenario.name, r.scenario.sample, r.scenario.description,
                     "; ".join(srcs)])
    lines += _md_table(("scenario", "sample", "description", "source @ commit"), rows)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Scatter
# --------------------------------------------------------------------------------------------


def decade_label(v: float) -> str:
    """The label of a decade tick: 0.01, 0.1, 1, 10, 100, then 1e3, 1e4, ... (and 1e-3 ...);
    '' for a value that is no power of 10."""
    if not (v > 0 and math.isfinite(v)):
        return ""
    k = round(math.log10(v))
    if not math.isclose(v, 10.0 ** k, rel_tol=1e-9):
        return ""
    return f"{10.0 ** k:g}" if -2 <= k <= 2 else f"1e{k}"


def _decade_axes(ax: Any) -> None:
    """Major ticks at the decades only, labelled by :func:`decade_label`; unlabelled minor
    ticks at 2..9 (labels between decades overlap on a wide range)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10.0, subs=(1.0,), numticks=40))
        axis.set_major_formatter(FuncFormatter(lambda v, _: decade_label(v)))
        axis.set_minor_locator(LogLocator(base=10.0, subs=tuple(range(2, 10)), numticks=40))
        axis.set_minor_formatter(NullFormatter())


def scatter_figure(o: Outcome, label_worst: int = 1) -> Any:
    """The matplotlib ``Figure`` of :func:`scatter_png`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 6.0), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    got = [c for c in o.cells if c.compared]
    for col in COLUMNS:
        cs = [c for c in got if c.column == col]
        if cs:
            ax.scatter([c.board for c in cs], [c.simulated for c in cs], s=28, alpha=0.85,
                       label=f"{col} ({COLUMNS[col][0]})")
    if got:
        lo = min(min(c.board, c.simulated) for c in got) / 1.6
        hi = max(max(c.board, c.simulated) for c in got) * 1.6
        xs = [lo * (hi / lo) ** (i / 64) for i in range(65)]
        ax.plot(xs, xs, color="black", lw=1, label="y = x")
        ax.fill_between(xs, [x / WITHIN for x in xs], [x * WITHIN for x in xs], color="grey",
                        alpha=0.2, lw=0, label=f"within a factor {WITHIN:g}")
        labelled: set[tuple[float, float]] = set()
        for c in sorted(got, key=lambda c: -c.error):
            if len(labelled) >= label_worst or (c.board, c.simulated) in labelled:
                continue  # the worst few, one label per point
            labelled.add((c.board, c.simulated))
            right = math.log(c.board / lo) > 0.6 * math.log(hi / lo)
            ax.annotate(f"{c.scenario} {c.column}", (c.board, c.simulated), fontsize=7,
                        xytext=(0, -12), textcoords="offset points",
                        ha="right" if right else "left")  # under the point, inside the axes
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _decade_axes(ax)
        ax.legend(fontsize=7, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no figure compared", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("board (us; ticks for vec_ticks)")
    ax.set_ylabel("simulated (us; ticks for vec_ticks)")
    ax.set_title("aicore-sim validate: board vs simulated")
    ax.grid(True, which="both", alpha=0.3)
    return fig


def scatter_png(o: Outcome, label_worst: int = 1) -> bytes:
    """PNG bytes of the log-log scatter of board vs simulated figures (compared cells only);
    the ``label_worst`` figures with the largest errors are named (the tables name the rest)."""
    buf = io.BytesIO()
    scatter_figure(o, label_worst).savefig(buf, format="png")
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def report_paths(target: str | Path) -> tuple[Path, Path]:
    """(FILE.md, FILE.png) of a ``--report`` argument (``.md`` added when missing)."""
    p = Path(target)
    stem = p.with_suffix("") if p.suffix.lower() == ".md" else p
    return stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".png")




def write_report(o: Outcome, target: str | Path, checks: Sequence[str] = (),
                 meta: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Write ``FILE.md`` and ``FILE.png`` (both rendered before either is written; each
    written atomically, an existing file replaced); returns their paths."""
    md_path, png_path = report_paths(target)
    md_text = markdown(o, checks, meta, png_path.name)
    png = scatter_png(o)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(png_path, png)
    write_staged(md_path, md_text)
    return md_path, png_path
