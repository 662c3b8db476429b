"""Timeline plots of a launch: swim lanes per core and pipe, stalls coloured by cause, and
per-core pipe utilisation; UB bytes over time.

Step of the flow: a report after the replay; it draws a
:class:`~aicore_sim.views.timeline_file.Timeline`, built from the
:class:`~aicore_sim.sim.trace.Trace` by ``aicore-sim run`` or read back from a run folder's
``timeline.npz`` by ``aicore-sim plot`` (the engine never imports this module, nor
matplotlib). Each core is a band of four lanes, ``SCALAR``, ``MTE2``, ``VECTOR``, ``MTE3``
(labelled), named as the trace names it (``core<N>.veccore0``). In each lane the upper strip
is what the pipe executed and the lower strip when it stood stalled, coloured by the stall's
cause (:data:`~aicore_sim.sim.trace.STALL_CAUSES`); the legend names the causes drawn.
Rendering is chosen for speed:

- many spans (the whole-chip view): a pixel-occupancy image — each pixel's colour intensity
  is the fraction of its time the lane was busy (stall strip: stalled, in the colour of the
  cause that took most of the pixel) — drawn with one ``imshow``;
- few spans (a zoom): one compound ``Path`` per colour added with ``add_artist``, axis limits
  set by hand (``add_patch`` would walk every vertex to update the limits).

Figures use the Agg canvas directly (no pyplot, no global backend switch). The PNG is written
atomically.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path as MplPath
from matplotlib.transforms import blended_transform_factory, offset_copy

from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.trace import STALL_CAUSES, Trace, core_name
from aicore_sim.util.atomic import atomic_path
from aicore_sim.views.timeline_file import LANES, Timeline, lane_spans, ub_occupancy

COLOURS = {Pipe.SCALAR: "#7f7f7f", Pipe.MTE2: "#1f77b4", Pipe.VECTOR: "#2ca02c",
           Pipe.MTE3: "#ff7f0e"}
CAUSE_COLOURS = {"flag": "#d62728", "queue_full": "#9467bd", "gm_bandwidth": "#8c564b",
                 "auto_sync": "#e377c2", "barrier": "#17becf", "bank_conflict": "#bcbd22",
                 "same_granule": "#393b79", "sync_all": "#000000"}
"""The colour of each stall cause (every name of STALL_CAUSES has one)."""
PATH_LIMIT = 20_000
"""Above this many spans in the window, the timeline is drawn as an occupancy image."""
IMAGE_COLUMNS = 1600
_BUSY = (0.06, 0.62)  # a lane's strips, as fractions of its height: executing
_STALL = (0.66, 0.94)  # stalled
_SUBROWS = 3  # image rows per lane: two executing, one stalled


def occupancy(spans: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Busy fraction of each interval ``[edges[k], edges[k+1])`` for non-overlapping spans."""
    if not spans.size:
        return np.zeros(edges.size - 1)
    start = spans[:, 0].astype(np.float64)
    dur = (spans[:, 1] - spans[:, 0]).astype(np.float64)
    before = np.concatenate([[0.0], np.cumsum(dur)])  # busy time before span i

    def busy_until(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(start, t, side="right") - 1  # last span starting at or before t
        inside = np.where(i >= 0, np.clip(t - start[np.maximum(i, 0)], 0, dur[np.maximum(i, 0)]),
                          0.0)
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)

    b = busy_until(edges.astype(np.float64))
    width = np.diff(edges).astype(np.float64)
    return np.clip(np.diff(b) / np.where(width > 0, width, 1), 0.0, 1.0)


def _rect_path(spans: np.ndarray, y0: float, h: float, scale: float) -> MplPath:
    """One compound path of rectangles [start, end) x [y0, y0 + h), x in µs; ``y0`` a
    number or one per span."""
    n = len(spans)
    x0 = spans[:, 0] * scale
    x1 = np.maximum(spans[:, 1] * scale, x0)
    y0 = np.broadcast_to(np.asarray(y0, np.float64), (n,))
    verts = np.empty((n, 5, 2))
    verts[:, 0] = np.stack([x0, y0], axis=1)
    verts[:, 1] = np.stack([x1, y0], axis=1)
    verts[:, 2] = np.stack([x1, y0 + h], axis=1)
    verts[:, 3] = np.stack([x0, y0 + h], axis=1)
    verts[:, 4] = verts[:, 0]
    codes = np.tile(np.array([MplPath.MOVETO, MplPath.LINETO, MplPath.LINETO, MplPath.LINETO,
                              MplPath.CLOSEPOLY], dtype=np.uint8), n)
    return MplPath(verts.reshape(-1, 2), codes)


def _clip(rows: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """The rows overlapping [t0, t1), their (start, end) clipped to it: (start, end) rows, or
    (pipe, start, end, cause) stall rows."""
    if not rows.size:
        return rows
    a = 0 if rows.shape[1] == 2 else 1  # the start column
    keep = (rows[:, a + 1] > t0) & (rows[:, a] < t1)
    s = rows[keep].copy()
    s[:, a:a + 2] = np.clip(s[:, a:a + 2], t0, t1)
    return s


def _save(fig: Figure, path: Path, dpi: int) -> Path:
    with atomic_path(path, mode=None) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    return path


def _timeline(source: Trace | Timeline, ub: bool = False) -> Timeline:
    return source if isinstance(source, Timeline) else Timeline.from_trace(source, ub=ub)


def timeline_figure(source: Trace | Timeline, cores: Sequence[int] | None = None,
                    window: tuple[float, float] | None = None,
                    title: str | None = None) -> Figure:
    """The figure of :func:`plot_timeline` (not yet drawn to a file)."""
    tl = _timeline(source)
    makespan = max(tl.makespan, 1)
    sel = list(range(len(tl.cores))) if cores is None else [int(c) for c in cores]
    t0, t1 = (0, makespan) if window is None else (int(window[0]), int(window[1]))
    if t1 <= t0:
        raise ValueError(f"window {window}: end must be after start")
    scale = 1.0 / tl.clock_mhz  # cycles -> µs
    spans = {(c, p): _clip(tl.cores[c].spans[p], t0, t1) for c in sel for p in LANES}
    stalls = {c: _clip(tl.cores[c].stalls, t0, t1) for c in sel}
    n_spans = sum(len(s) for s in spans.values())
    n_lanes = len(sel) * len(LANES)
    lane_h = 0.16 if len(sel) > 8 else 0.3
    height = min(max(2.5, n_lanes * lane_h), 24.0)
    fig = Figure(figsize=(14, height + 2.8))
    FigureCanvasAgg(fig)  # Agg canvas of this figure only: no pyplot, no global backend
    ax, axu = fig.subplots(2, 1, gridspec_kw={"height_ratios": [height, 2.2]})
    _margins(fig, len(sel))
    row = {(c, p): k * len(LANES) + j for k, c in enumerate(sel) for j, p in enumerate(LANES)}
    lane_of = np.full(len(Pipe), -1, np.int64)
    for j, p in enumerate(LANES):
        lane_of[int(p)] = j
    shown: set[int] = set()  # causes drawn
    if n_spans > PATH_LIMIT:
        edges = np.linspace(t0, t1, IMAGE_COLUMNS + 1)
        img = np.ones((n_lanes * _SUBROWS, IMAGE_COLUMNS, 3))
        cause_rgb = np.array([to_rgb(CAUSE_COLOURS[c]) for c in STALL_CAUSES])
        for (c, p), s in spans.items():
            y = row[(c, p)] * _SUBROWS
            img[y:y + _SUBROWS - 1] = 1.0 - occupancy(s, edges)[:, None] * \
                (1.0 - np.array(to_rgb(COLOURS[p])))
        for c in sel:
            st = stalls[c]
            for p in LANES:
                mine = st[st[:, 0] == int(p)]
                if not mine.size:
                    continue
                causes = np.unique(mine[:, 3]).tolist()
                occ = np.stack([occupancy(_sorted(mine[mine[:, 3] == k, 1:3]), edges)
                                for k in causes])
                top = occ.argmax(axis=0)
                frac = np.clip(occ.sum(axis=0), 0.0, 1.0)
                rgb = cause_rgb[np.asarray(causes)[top]]
                img[row[(c, p)] * _SUBROWS + _SUBROWS - 1] = 1.0 - frac[:, None] * (1.0 - rgb)
                shown.update(k for k, o in zip(causes, occ) if o.any())
        ax.imshow(np.rint(img * 255).astype(np.uint8), aspect="auto", interpolation="nearest",
                  extent=(t0 * scale, t1 * scale, n_lanes, 0))
        mode = "occupancy image"
    else:
        ys = {c: k * len(LANES) for k, c in enumerate(sel)}
        by_cause: dict[int, list[MplPath]] = {}
        for c in sel:
            st = stalls[c]
            if not st.size:
                continue
            y = ys[c] + lane_of[st[:, 0]] + _STALL[0]
            for k in np.unique(st[:, 3]).tolist():
                m = st[:, 3] == k
                by_cause.setdefault(k, []).append(
                    _rect_path(st[m, 1:3], y[m], _STALL[1] - _STALL[0], scale))
        for k in sorted(by_cause):
            ax.add_artist(PathPatch(MplPath.make_compound_path(*by_cause[k]),
                                    facecolor=CAUSE_COLOURS[STALL_CAUSES[k]], edgecolor="none"))
        shown.update(by_cause)
        for p in LANES:
            paths = [_rect_path(spans[(c, p)], row[(c, p)] + _BUSY[0], _BUSY[1] - _BUSY[0],
                                scale) for c in sel if spans[(c, p)].size]
            if paths:
                ax.add_artist(PathPatch(MplPath.make_compound_path(*paths),
                                        facecolor=COLOURS[p], edgecolor="none"))
        ax.set_xlim(t0 * scale, t1 * scale)
        ax.set_ylim(n_lanes, 0)
        mode = "spans"
    _label_lanes(ax, sel, height)
    ax.set_xlabel("time (µs)")
    handles = [Patch(color=COLOURS[p], label=p.name) for p in LANES]
    handles += [Patch(color=CAUSE_COLOURS[STALL_CAUSES[k]], label=f"stall: {STALL_CAUSES[k]}")
                for k in sorted(shown)]
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7,
              ncol=min(len(handles), 6), frameon=False)
    ax.set_title(title or f"{len(sel)} cores x {len(LANES)} pipes, {n_spans} spans "
                 f"({mode}), makespan {tl.makespan} cycles = {tl.us(tl.makespan):.3f} µs",
                 fontsize=10, loc="left")
    # Per-core utilisation bars (busy cycles / makespan).
    step = max(1, len(sel) // 24)
    width = 0.8 / len(LANES)
    x = np.arange(len(sel))
    for j, p in enumerate(LANES):
        util = [tl.cores[c].busy_cycles(p) / makespan for c in sel]
        axu.bar(x + (j - 1.5) * width, util, width, color=COLOURS[p], label=p.name)
    axu.set_ylim(0, 1.0)
    axu.set_ylabel("busy / makespan")
    axu.set_xticks(x[::step], [core_name(sel[k]) for k in range(0, len(sel), step)],
                   fontsize=6 if len(sel) > 8 else 7, rotation=90 if len(sel) > 8 else 0)
    return fig


def _margins(fig: Figure, n_cores: int) -> None:
    """Margins in inches, set by hand (``tight_layout`` would lay out every label text once
    more: a third of the whole-chip figure's time): left the core and lane names, above the
    title and the legend, between the time axis' labels, below the core names of the bars
    (upright past 8 cores)."""
    w, h = fig.get_size_inches()
    left, right, top = 1.45, 0.15, 0.5
    bottom = 0.95 if n_cores > 8 else 0.35
    gap = 0.75
    axes_h = (h - top - bottom - gap) / 2  # the mean of the two axes' heights
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - top / h,
                        bottom=bottom / h, hspace=gap / axes_h)


def _sorted(spans: np.ndarray) -> np.ndarray:
    return spans[np.argsort(spans[:, 0], kind="stable")]


def _label_lanes(ax, sel: list[int], height: float) -> None:
    """Each lane's pipe name left of it (every lane, while a lane is tall enough to read one;
    else the first core's) and further left the core's name beside its four lanes (every
    ``step``-th core). Plain texts, not ticks: a tick costs ten times a text to build and
    lay out, and the whole-chip view has 4 lanes x 48 cores of them."""
    n_lanes = len(sel) * len(LANES)
    lane_pt = height * 72 / max(n_lanes, 1)
    font = min(7.0, lane_pt * 0.7)
    labelled = range(len(sel)) if font >= 3.5 else range(1)
    font = max(font, 3.5)
    ax.set_yticks([])
    left = blended_transform_factory(ax.transAxes, ax.transData)  # x: axes, y: lanes
    lane_x = offset_copy(left, ax.figure, x=-3, units="points")
    for k in labelled:
        for j, p in enumerate(LANES):
            ax.text(0, k * len(LANES) + j + 0.5, p.name, transform=lane_x, ha="right",
                    va="center", fontsize=font, gid="lane")
    step = max(1, len(sel) // 24)
    # left of the lane names (6 capitals at most, each under 0.75 em wide)
    core_x = offset_copy(left, ax.figure, x=-(7 + 6 * 0.75 * font), units="points")
    for k in range(0, len(sel), step):
        ax.text(0, k * len(LANES) + len(LANES) / 2, core_name(sel[k]), transform=core_x,
                ha="right", va="center", fontsize=7, gid="core")
    for k in range(1, len(sel)):
        ax.axhline(k * len(LANES), color="#999999", lw=0.4)


def plot_timeline(source: Trace | Timeline, path: str | os.PathLike,
                  cores: Sequence[int] | None = None,
                  window: tuple[float, float] | None = None, title: str | None = None,
                  dpi: int = 100) -> Path:
    """Swim lanes (core x pipe) over ``window`` (cycles) plus per-core pipe utilisation bars.

    ``source``: a replay's trace or a :class:`Timeline` (``timeline.npz``); ``cores`` selects
    cores (default all); ``window`` is ``(start, end)`` in cycles (default the whole launch).
    Returns the PNG path, written atomically.
    """
    return _save(timeline_figure(source, cores, window, title), Path(path), dpi)


def ub_figure(source: Trace | Timeline, cores: Sequence[int] | None = None) -> Figure:
    """The figure of :func:`plot_ub`."""
    tl = _timeline(source, ub=True)
    sel = (list(range(len(tl.cores))) if cores is None else [int(c) for c in cores])[:16]
    fig = Figure(figsize=(12, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    scale = 1.0 / tl.clock_mhz
    end = max(tl.makespan, 1)
    for c in sel:
        ub = tl.cores[c].ub
        if ub is None:
            raise ValueError(f"{core_name(c)}: the timeline has no UB curve")
        t, live, reserved = ub
        x = np.append(t, end) * scale
        (line,) = ax.step(x, np.append(live, live[-1]) / 1024, where="post", lw=1,
                          label=core_name(c))
        ax.axhline(reserved / 1024, color=line.get_color(), lw=0.6, ls="--")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("UB KiB (solid: live, dashed: reserved)")
    ax.set_xlim(0, end * scale)
    ax.set_ylim(bottom=0)
    ax.set_title(f"UB occupancy per core ({len(sel)} of {len(tl.cores)} cores)",
                 fontsize=10, loc="left")
    if sel:
        ax.legend(fontsize=7, ncol=min(len(sel), 8), loc="upper right", frameon=False)
    fig.tight_layout()
    return fig


def plot_ub(source: Trace | Timeline, path: str | os.PathLike,
            cores: Sequence[int] | None = None, dpi: int = 100) -> Path:
    """UB bytes over time, one step line per core (live) with its reserved bytes dashed, like
    an on-chip-memory view. At most 16 cores are drawn (the first 16 of ``cores``)."""
    return _save(ub_figure(source, cores), Path(path), dpi)


__all__ = ["CAUSE_COLOURS", "COLOURS", "lane_spans", "occupancy", "plot_timeline", "plot_ub",
           "timeline_figure", "ub_figure", "ub_occupancy"]
