"""A validation's outcome as text, JSON, markdown and a board-vs-simulated scatter plot.

Step of the flow: the last one of ``aicore-sim validate``. It reads a
:class:`~.compare.Outcome` only; nothing is simulated or recomputed here.

- :func:`text` - a table per scenario (board, simulated, ratio, |error|, and the linearity
  check fig(2s) / fig(s) of a scenario run scaled), the per-column / per-platform / overall
  statistics, the steps table, the step counts and the wall time;
- :func:`document` - the same as one JSON-ready dict;
- :func:`markdown` - the same as markdown, with the platform presets, the simulator's version
  (and ``git describe`` when run from a checkout), the date and the board figures' sources;
- :func:`scatter_png` - log-log board vs simulated, one colour per column, y = x and the
  factor-1.25 band (the "within 1.25" of the steps);
- :func:`write_report` - ``FILE.md`` and ``FILE.png``, each written atomically.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aicore_sim.staging import write_staged
from aicore_sim.validate.compare import WITHIN, Cell, Outcome, Stat, StepResult
from aicore_sim.validate.suite import COLUMNS

__all__ = ["document", "markdown", "report_paths", "scatter_png", "simulator_version", "text",
           "write_report"]


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


def _scenario_rows(o: Outcome) -> list[list[str]]:
    by_run: dict[str, list[Cell]] = {}
    for c in o.cells:
        by_run.setdefault(c.scenario, []).append(c)
    rows: list[list[str]] = []
    for r in o.runs:
        sc = r.scenario
        head = [sc.name, sc.platform, _scale(sc.scale)]
        if r.error is not None:
            rows.append([*head, "FAILED", r.error, "", "", "", ""])
            continue
        for i, c in enumerate(by_run.get(sc.name, [])):
            lead = head if i == 0 else ["", "", ""]
            lin = "" if c.linearity is None else f"{c.linearity:.3f}"
            if c.compared:
                rows.append([*lead, c.column, _num(c.board), _num(c.simulated), _ratio(c.ratio),
                             _pct(c.error), lin])
            else:
                rows.append([*lead, c.column, _num(c.board), _num(c.simulated), "-",
                             f"left out: {c.note}", lin])
        if not by_run.get(sc.name):
            rows.append([*head, "-", "no board figure", "", "", "", ""])
    return rows


_STAT_HEAD = ("", "n", "median |error|", "worst |error|", "worst scenario (r)")


def _stat_row(label: str, s: Stat) -> list[str]:
    return [label, str(s.count), f"{s.median_pct:.1f} %", f"{s.worst_pct:.1f} %",
            f"{s.worst_scenario} (r {s.worst_ratio:.3f})"]


def _stat_rows(o: Outcome) -> list[list[str]]:
    rows = [_stat_row(col, s) for col, s in o.columns.items()]
    if len(o.platforms) > 1 or not o.columns:
        rows += [_stat_row(f"platform {p}", s) for p, s in o.platforms.items()]
    elif o.platforms:
        p, s = next(iter(o.platforms.items()))
        rows.append(_stat_row(f"platform {p}", s))
    if o.overall is not None:
        rows.append(_stat_row("all", o.overall))
    return rows


_STEP_HEAD = ("step", "kind", "column", "board gain", "sim gain", "direction", "within 1.25")


def _step_row(s: StepResult) -> list[str]:
    st = s.step
    if s.right is None:
        return [st.name, st.kind, st.column, "-", "-", f"not compared: {s.note}", "-"]
    direction = ("right" if s.right else "WRONG") + (" (neutral)" if s.neutral else "")
    return [st.name, st.kind, st.column, f"{s.board_gain:.3f}", f"{s.sim_gain:.3f}", direction,
            "yes" if s.within else "no"]


def _counts_line(o: Outcome) -> str:
    n, right, within = o.step_counts()
    return f"steps: {right} / {n} direction right, {within} / {n} within {WITHIN:g}"


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
    lines = _table(_SCEN_HEAD, _scenario_rows(o))
    lines += ["", "ratio = simulated / board; |error| = 100 |ln ratio|; 2s/s = fig(2s) / fig(s) "
              "of a scenario run at scale s < 1 and extrapolated to 1 (2.000 = linear)", ""]
    stats = _stat_rows(o)
    lines += _table(_STAT_HEAD, stats) if stats else ["no figure compared"]
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
            "linearity": r.linearity,
            "board": [{"column": b.column, "value": b.value, "unit": b.unit, "scope": b.scope,
                       "source": b.source, "commit": b.commit} for b in sc.board],
            "notes": dict(sc.notes),
            "cells": cells.get(sc.name, []),
        })
    n, right, within = o.step_counts()
    return {
        **(meta or {}),
        "suites": o.suites,
        "columns": {k: {"msprof": v[0], "unit": v[1]} for k, v in COLUMNS.items()},
        "scenarios": scenarios,
        "stats": {"columns": {k: s.as_dict() for k, s in o.columns.items()},
                  "platforms": {k: s.as_dict() for k, s in o.platforms.items()},
                  "all": _stat_dict(o.overall)},
        "steps": [s.as_dict() for s in o.steps],
        "steps_compared": n, "steps_right": right, "steps_within": within,
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
    from aicore_sim.platform import load_platform

    rows = []
    for name in names:
        try:
            p = load_platform(name)
        except Exception as e:  # noqa: BLE001 - a report line, not a failure
            rows.append([name, f"cannot load: {e}", "", "", "", "", ""])
            continue
        hbm = p.hbm_bytes_per_cycle * p.clock_mhz * 1e6 / 1e9
        rows.append([name, p.soc, str(p.aiv_core_num), f"{p.clock_mhz:g}", f"{hbm:.0f}",
                     str(p.op_head_cycles), f"{p.system_counter_mhz:g}"])
    return rows


def markdown(o: Outcome, checks: Sequence[str] = (), meta: dict[str, Any] | None = None,
             png_name: str | None = None) -> str:
    """The outcome as a markdown report (see the module docstring)."""
    meta = meta or {}
    ver = meta.get("simulator") or {}
    lines = ["# aicore-sim validate: simulated against on-board figures", ""]
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
                        "system counter MHz"), _platform_rows(platforms))
    lines += ["", "## Scenarios", ""]
    lines += _md_table(_SCEN_HEAD, _scenario_rows(o))
    lines += ["", "## Error per column", ""]
    stats = _stat_rows(o)
    lines += _md_table(("group", *_STAT_HEAD[1:]), stats) if stats else ["No figure compared."]
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


def scatter_png(o: Outcome, label_worst: int = 1) -> bytes:
    """PNG bytes of the log-log scatter of board vs simulated figures (compared cells only);
    the ``label_worst`` figures with the largest errors are named (the tables name the rest)."""
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
        from matplotlib.ticker import FuncFormatter, LogLocator

        plain = FuncFormatter(lambda v, _: f"{v:g}")
        for axis in (ax.xaxis, ax.yaxis):  # decades and 2, 5 between them, as plain numbers
            axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
            axis.set_minor_formatter(plain)
            axis.set_major_formatter(plain)
        ax.legend(fontsize=7, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no figure compared", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("board (us; ticks for vec_ticks)")
    ax.set_ylabel("simulated (us; ticks for vec_ticks)")
    ax.set_title("aicore-sim validate: board vs simulated")
    ax.grid(True, which="both", alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def report_paths(target: str | Path) -> tuple[Path, Path]:
    """(FILE.md, FILE.png) of a ``--report`` argument (``.md`` added when missing)."""
    p = Path(target)
    stem = p.with_suffix("") if p.suffix.lower() == ".md" else p
    return stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".png")


def _write_bytes(path: Path, data: bytes) -> None:
    """``data`` to ``path`` atomically (a hidden temporary file beside it, then a rename)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(name, 0o666 & ~mask)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def write_report(o: Outcome, target: str | Path, checks: Sequence[str] = (),
                 meta: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Write ``FILE.md`` and ``FILE.png`` (both rendered before either is written; each
    written atomically, an existing file replaced); returns their paths."""
    md_path, png_path = report_paths(target)
    md_text = markdown(o, checks, meta, png_path.name)
    png = scatter_png(o)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    _write_bytes(png_path, png)
    write_staged(md_path, md_text)
    return md_path, png_path
