"""Text, markdown, JSON and a scatter plot of a correlation (``aicore-sim correlate``).

Step of the flow: the last one; it formats the object of
:func:`aicore_sim.correlate.compare.correlate` and computes nothing new.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aicore_sim.correlate.opprof import PIPES
from aicore_sim.util.atomic import atomic_path, write_atomic

_NOT_SEEN = ("The model cannot see L2 hit rates, UB bank conflicts, instruction-cache misses or "
             "the scalar unit's stall breakdown (msprof's `aiv_scalar_*_stall_time`, "
             "`aiv_icache_miss_rate`, `ResourceConflictRatio.csv`, `L2Cache.csv`): a ratio far "
             "from 1 on one pipe points at one of them, or at a cost the platform files "
             "miss. See docs/correlate.md.")


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _mhz(x: float | None) -> str:
    return "clock not given" if not x else f"{x:g} MHz"


def _rows(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [*((p, result["per_pipe"][p]) for p in PIPES), ("core time", result["core_time"])]


def text(result: dict[str, Any]) -> str:
    """A few lines for a terminal: the per-pipe table, task duration and flags."""
    m, s = result["measured"], result["simulated"]
    freq = f", {m['freq_mhz']:g} MHz" if m["freq_mhz"] else ""
    lines = [f"measured {m['pipe_file']} ({m['blocks']} blocks{freq}) vs simulated "
             f"{s['folder']} ({s['blocks']} cores, {_mhz(s['freq_mhz'])})",
             f"{'pipe':<10} {'cores':>5} {'median':>8} {'min':>8} {'max':>8}  worst core"]
    for name, st in _rows(result):
        worst = "-" if st["worst_core"] is None else \
            f"{st['worst_core']} ({_r(st['worst_ratio'])})"
        lines.append(f"{name:<10} {st['cores']:>5} {_r(st['ratio_median']):>8} "
                     f"{_r(st['ratio_min']):>8} {_r(st['ratio_max']):>8}  {worst}")
    td = result["task_duration"]
    lines.append(f"task duration: measured {_us(td['measured_us'])} us, simulated "
                 f"{_us(td['simulated_us'])} us, ratio {_r(td['ratio'])}")
    lines += [f"flag: {f}" for f in result["flags"]]
    lines.append("ratio = simulated / measured busy time (us) per block; > 1: the model is "
                 "slower than the board")
    return "\n".join(lines)


def markdown(result: dict[str, Any], plot_name: str | None) -> str:
    """The report as markdown (tables of the text form plus the per-core figures)."""
    m, s = result["measured"], result["simulated"]
    out = ["# Measured vs simulated", "",
           f"- measured: `{m['pipe_file']}` (launch `{m['launch']}`, op "
           f"`{m['op_name'] or '-'}`, {m['blocks']} vector blocks, Block Dim "
           f"{m['block_dim'] if m['block_dim'] is not None else '-'}, "
           f"{_mhz(m['freq_mhz'])})",
           f"- simulated: `{s['folder']}` ({s['blocks']} cores, {_mhz(s['freq_mhz'])})", "",
           "Ratio = simulated / measured busy time of the pipe on one block (msprof "
           "`aiv_<pipe>_time(us)`; core time: `aiv_time(us)`). Above 1: the model is slower "
           "than the board.", "",
           "| pipe | cores | median | min | max | worst core (ratio) | measured us (sum) | "
           "simulated us (sum) |", "|---|---:|---:|---:|---:|---|---:|---:|"]
    for name, st in _rows(result):
        worst = "-" if st["worst_core"] is None else \
            f"{st['worst_core']} ({_r(st['worst_ratio'])})"
        out.append(f"| {name} | {st['cores']} | {_r(st['ratio_median'])} | "
                   f"{_r(st['ratio_min'])} | {_r(st['ratio_max'])} | {worst} | "
                   f"{_us(st['measured_us'])} | {_us(st['simulated_us'])} |")
    td = result["task_duration"]
    out += ["", f"Task duration: measured {_us(td['measured_us'])} us, simulated (makespan) "
                f"{_us(td['simulated_us'])} us, ratio {_r(td['ratio'])}.", ""]
    if result["flags"]:
        out += ["## Flags", "", *(f"- {f}" for f in result["flags"]), ""]
    if plot_name:
        out += [f"![measured vs simulated per core and pipe]({plot_name})", ""]
    out += ["## Per core (ratio)", "",
            "| core | block | " + " | ".join(PIPES) + " | core time |",
            "|---:|---|" + "---:|" * (len(PIPES) + 1)]
    for c in result["per_core"]:
        cells = [_r(c[p]["ratio"]) for p in PIPES] + [_r(c["core_time"]["ratio"])]
        out.append(f"| {c['core']} | {c['block_id']} {c['sub_block_id']} | "
                   + " | ".join(cells) + " |")
    out += ["", "## What the model cannot see", "", _NOT_SEEN, ""]
    return "\n".join(out)


def scatter(result: dict[str, Any], path: Path) -> None:
    """Measured vs simulated µs, one point per core and pipe, log-log, with the y = x line."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 5.5))
    ax = fig.add_subplot()
    lo, hi = float("inf"), 0.0
    for pipe in PIPES:
        pts = [(c[pipe]["simulated_us"], c[pipe]["measured_us"]) for c in result["per_core"]
               if c[pipe]["ratio"] is not None and c[pipe]["measured_us"]]
        if not pts:
            continue
        xs, ys = zip(*pts)
        ax.scatter(xs, ys, s=14, alpha=0.75, label=f"{pipe} (median "
                   f"{result['per_pipe'][pipe]['ratio_median']:.3f})")
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    if hi > 0:
        ax.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color="0.5", lw=1, ls="--",
                label="measured = simulated")
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            # minor ticks labelled at 2 and 5 of each decade only (readable, not crowded)
            axis.set_minor_formatter(FuncFormatter(
                lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "25" else ""))
        ax.legend(fontsize=8)
    ax.set_xlabel("simulated busy time per core (us)")
    ax.set_ylabel("measured busy time per core (us)")
    ax.set_title("measured vs simulated, per core and pipe", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")


def write_reports(result: dict[str, Any], md_path: Path) -> list[Path]:
    """The markdown at ``md_path``, the JSON and the PNG beside it (same stem); each file
    appears whole or not at all. Returns the paths written."""
    md_path.parent.mkdir(parents=True, exist_ok=True)
    js, png = md_path.with_suffix(".json"), md_path.with_suffix(".png")
    with atomic_path(png) as tmp:
        scatter(result, tmp)
    write_atomic(js, json.dumps(result, indent=1) + "\n")
    write_atomic(md_path, markdown(result, png.name))
    return [md_path, js, png]


__all__ = ["markdown", "scatter", "text", "write_reports"]
