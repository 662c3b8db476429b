"""Sweep report: markdown + PNG charts from result rows (step: reports; reads rows only).

``write_report(folder)`` reads ``results.jsonl`` (and ``verify.jsonl`` when present) and writes,
each file atomically (temporary file + rename):

* ``report.md`` - per group (everything but the tiling: case, platform, what-ifs): upstream vs
  best tiling, speed-up, % of HBM roofline, UB high-water, the pipe that bounds the best point
  and why, its verification; counts per status and per infeasibility rule;
* ``heatmap.png`` - best simulated time over two chosen axes, one panel per group;
* ``pareto.png`` - simulated time (relative to upstream) against UB high-water, with each
  group's Pareto front;
* ``bound_by.png`` - per-pipe utilisation of each group's best point.

Nothing here computes cycles: every number comes from the rows. matplotlib runs on the Agg
canvas without pyplot state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sweep.rows import read_rows
from aicore_sim.util.atomic import atomic_path, write_atomic

PIPES = ("SCALAR", "MTE2", "VECTOR", "MTE3")
MAX_PANELS = 12


def _rows(folder: Path, name: str) -> list[dict[str, Any]]:
    return read_rows(folder / name)


def tiling_short(op: str | None) -> tuple[tuple[str, ...], ...]:
    """``(tiling field, label)`` pairs the op's rows are shown with
    (``TilingSpace.tiling_short``); none for an unknown op."""
    if not op:
        return ()
    from aicore_sim.sweep.ops import get_op

    try:
        return tuple(get_op(op).tiling_short)
    except ValueError:
        return ()


def _save(fig: Any, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")


def is_upstream(r: dict[str, Any]) -> bool:
    """The row ran the ported host tiling unchanged."""
    return r.get("strategy") == "upstream" and not r.get("overrides")


def tiling_text(r: dict[str, Any], short: Sequence[tuple[str, ...]] = ()) -> str:
    """Short text of the tiling a row used: the op's ``short`` fields (``(field, label)`` or
    ``(field, label, loop-count field)``: ``hA=2048x2`` when that count is > 1; e.g. E, R, EA,
    hA), then the cores."""
    td = r.get("tiling") or {}
    if not td:
        return "-"
    parts = []
    for k, label, *loops in short:
        if k in td:
            text = f"{label}={td[k]}"
            if loops and td.get(loops[0], 1) > 1:
                text += f"x{td[loops[0]]}"
            parts.append(text)
    parts.append(f"cores={r.get('block_dim')}")
    return " ".join(parts)


def rank(r: dict[str, Any]) -> tuple:
    """Fastest first; on a tie the unchanged upstream tiling wins."""
    return (r["makespan_cycles"], not is_upstream(r), r["key"])


def summarise_groups(rows: list[dict[str, Any]], verified: dict[str, dict[str, Any]]
                     ) -> list[dict[str, Any]]:
    """Per group: upstream row, best row, speed-up, verification of the best."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r.get("group") or "", []).append(r)
    out = []
    for g, rs in groups.items():
        ok = [r for r in rs if r.get("status") == "ok"]
        best = min(ok, key=rank) if ok else None
        up = next((r for r in ok if is_upstream(r)), None)
        speed = (up["makespan_cycles"] / best["makespan_cycles"]
                 if up and best and best["makespan_cycles"] else None)
        out.append({"group": g, "points": len(rs), "ok": len(ok), "upstream": up,
                    "best": best, "speedup": speed,
                    "verified": verified.get(best["key"]) if best else None})
    return out


def _auto_axes(rows: list[dict[str, Any]]) -> list[str]:
    varying: dict[str, set[str]] = {}
    for r in rows:
        for k, v in (r.get("axes") or {}).items():
            varying.setdefault(k, set()).add(json.dumps(v))
    cands = [k for k, v in varying.items() if len(v) > 1]
    pref = [k for k in cands if k not in ("case", "platform")] + \
        [k for k in cands if k in ("case", "platform")]
    return pref[:2]


def _sortable(v: Any) -> tuple:
    return (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))


def plot_heatmap(rows: list[dict[str, Any]], axes: Sequence[str], path: Path) -> bool:
    """Best time over axes (x, y), one panel per group (x = first axis); False if not drawn."""
    from matplotlib.figure import Figure

    if len(axes) != 2:
        return False
    x, y = axes
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r.get("group") or "", []).append(r)
    # panels: groups, unless the heatmap axes themselves define the groups
    names = list(groups)[:MAX_PANELS]
    if not names:
        return False
    ncol = min(3, len(names))
    nrow = -(-len(names) // ncol)
    # constrained layout makes room for each panel's colour bar and its label (with the
    # default layout the label ran into the next panel's y axis)
    fig = Figure(figsize=(5.6 * ncol, 4.0 * nrow), layout="constrained")
    for i, g in enumerate(names):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        rs = groups[g]
        xs = sorted({json.dumps((r.get("axes") or {}).get(x, "-")) for r in rs},
                    key=lambda s: _sortable(json.loads(s)))
        ys = sorted({json.dumps((r.get("axes") or {}).get(y, "-")) for r in rs},
                    key=lambda s: _sortable(json.loads(s)))
        grid = np.full((len(ys), len(xs)), np.nan)
        for r in rs:
            if r.get("status") != "ok":
                continue
            a = r.get("axes") or {}
            i_x = xs.index(json.dumps(a.get(x, "-")))
            i_y = ys.index(json.dumps(a.get(y, "-")))
            v = r["makespan_us"]
            if np.isnan(grid[i_y, i_x]) or v < grid[i_y, i_x]:
                grid[i_y, i_x] = v
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
        ax.set_xticks(range(len(xs)), [json.loads(s) for s in xs], rotation=45, fontsize=7)
        ax.set_yticks(range(len(ys)), [json.loads(s) for s in ys], fontsize=7)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(g[:60], fontsize=8)
        for (iy, ix), v in np.ndenumerate(grid):
            ax.text(ix, iy, "x" if np.isnan(v) else f"{v:.1f}", ha="center", va="center",
                    fontsize=6, color="red" if np.isnan(v) else "white")
        fig.colorbar(im, ax=ax, label="best simulated time (µs)")
    fig.suptitle(f"simulated time over {x} × {y} (x: infeasible or not run)", fontsize=10)
    _save(fig, path)
    return True


def _front(pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for ub, t in sorted(pts):
        if not out or t < out[-1][1]:
            out.append((ub, t))
    return out


def plot_pareto(summary: list[dict[str, Any]], rows: list[dict[str, Any]], path: Path) -> bool:
    """Time relative to the group's upstream (or best) point against UB high-water."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    drawn = False
    for s in summary[:MAX_PANELS]:
        ref = s["upstream"] or s["best"]
        if ref is None:
            continue
        pts = [(r["ub_high_water_bytes"] / 1024, r["makespan_cycles"] / ref["makespan_cycles"])
               for r in rows if r.get("group") == s["group"] and r.get("status") == "ok"]
        sc = ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, alpha=0.5,
                        label=s["group"][:50])
        f = _front(pts)
        ax.plot([p[0] for p in f], [p[1] for p in f], "-", color=sc.get_facecolor()[0])
        drawn = True
    if not drawn:
        return False
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("UB high-water (KiB per core)")
    ax.set_ylabel("simulated time / upstream")
    ax.set_title("Pareto: simulated time vs UB used (lines: fronts)")
    ax.legend(fontsize=6, loc="best")
    _save(fig, path)
    return True


def plot_bound_by(summary: list[dict[str, Any]], path: Path) -> bool:
    """Per-pipe utilisation of each group's best point."""
    from matplotlib.figure import Figure

    best = [s for s in summary if s["best"] is not None][:MAX_PANELS * 2]
    if not best:
        return False
    fig = Figure(figsize=(max(6, 0.9 * len(best) + 2), 4.5))
    ax = fig.add_subplot(1, 1, 1)
    w = 0.8 / len(PIPES)
    xs = np.arange(len(best))
    for i, p in enumerate(PIPES):
        ax.bar(xs + i * w, [s["best"].get(f"util_{p}") or 0 for s in best], w, label=p)
    ax.set_xticks(xs + 0.4 - w / 2, [f"{s['group'][:28]}\n({s['best'].get('bound_by')})"
                                     for s in best], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("utilisation of the best point")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("what bounds each best point (label: bound-by pipe)")
    _save(fig, path)
    return True


def _fmt_row(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    return f"{r['makespan_cycles']} ({r['makespan_us']:.2f} µs)"


def write_report(folder: str | Path, out: str | Path | None = None,
                 heatmap: Sequence[str] | None = None, title: str | None = None,
                 op: str | None = None) -> Path:
    """Write ``report.md`` and the charts for the results in ``folder``; return report.md."""
    folder = Path(folder)
    out = Path(out) if out is not None else folder
    out.mkdir(parents=True, exist_ok=True)
    raw = _rows(folder, "results.jsonl")
    rows = list({r["key"]: r for r in raw}.values())
    verified = {v["key"]: v for v in _rows(folder, "verify.jsonl")}
    summary = summarise_groups(rows, verified)
    spec: dict[str, Any] = {}
    if (folder / "spec.json").exists():
        spec = json.loads((folder / "spec.json").read_text())
    title = title or spec.get("name") or folder.name
    short = tiling_short(op or spec.get("op") or next((r["op"] for r in rows if r.get("op")),
                                                      None))
    heat = list(heatmap or spec.get("heatmap") or _auto_axes(rows))

    status: dict[str, int] = {}
    rules: dict[str, int] = {}
    for r in rows:
        status[r.get("status", "?")] = status.get(r.get("status", "?"), 0) + 1
        if r.get("status") == "infeasible":
            for rule in str(r.get("rule") or "?").split(","):
                rules[rule] = rules.get(rule, 0) + 1
    lines = [f"# Sweep report: {title}", "",
             f"{len(rows)} points: " + ", ".join(f"{v} {k}" for k, v in sorted(status.items())),
             "", "## Best tiling vs upstream, per group", "",
             "| group | upstream cycles | best cycles | speed-up | best tiling | bound by | "
             "% HBM roofline (up → best) | UB high-water (best) | verified |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        b, u = s["best"], s["upstream"]
        sp = f"{s['speedup']:.3f}×" if s["speedup"] else "-"
        roof = (f"{u['hbm_roofline_pct']:.1f} → " if u else "") + \
            (f"{b['hbm_roofline_pct']:.1f}" if b else "-")
        how = "-" if b is None else ("upstream" if is_upstream(b) else
                                     f"{b['strategy']} {json.dumps(b.get('overrides') or {})}")
        v = s["verified"]
        lines.append(
            f"| {s['group']} | {_fmt_row(u)} | {_fmt_row(b)} | {sp} | "
            f"{how}: {tiling_text(b, short) if b else '-'} | {b.get('bound_by') if b else '-'} | "
            f"{roof} | {b.get('ub_high_water_bytes') if b else '-'} | "
            f"{v['status'] if v else 'not run'} |")
    lines += ["", "## What bounds each best point", ""]
    for s in summary:
        if s["best"] is not None:
            lines.append(f"* **{s['group']}**: {s['best'].get('bound_by_why') or '-'}")
    if rules:
        lines += ["", "## Infeasible points by rule", "", "| rule | points |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(rules.items())]
    errors = [r for r in rows if r.get("status") == "error"]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"* `{r['key']}` {r.get('group')}: {r.get('error')}" for r in errors[:20]]
    charts = []
    if plot_heatmap(rows, heat, out / "heatmap.png"):
        charts.append(("heatmap.png", f"best simulated time over {heat[0]} × {heat[1]}"))
    if plot_pareto(summary, rows, out / "pareto.png"):
        charts.append(("pareto.png", "simulated time vs UB high-water, Pareto fronts"))
    if plot_bound_by(summary, out / "bound_by.png"):
        charts.append(("bound_by.png", "per-pipe utilisation of each best point"))
    if charts:
        lines += ["", "## Charts", ""]
        lines += [f"![{c}]({f})" for f, c in charts]
    lines += ["", "Rows: `results.jsonl` / `results.csv` (one per point); verification: "
              "`verify.jsonl`.", ""]
    path = out / "report.md"
    write_atomic(path, "\n".join(lines))
    return path
