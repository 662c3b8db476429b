"""Timeline plots of a launch: swim lanes per core and pipe, and per-core pipe utilisation.

Step of the flow: a report after the replay; it reads the :class:`~aicore_sim.sim.trace.Trace`
only (the engine never imports this module, nor matplotlib). Rendering is chosen for speed:

- many spans (the whole-chip view): a pixel-occupancy image — each pixel's colour intensity
  is the fraction of its time the lane was busy — drawn with one ``imshow``;
- few spans (a zoom): one compound ``Path`` per colour added with ``add_artist``, axis limits
  set by hand (``add_patch`` would walk every vertex to update the limits).

Stalls are drawn in grey under the busy spans in the zoom view. Figures use the Agg canvas
directly (no pyplot, no global backend switch). The PNG is written atomically.
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

from aicore_sim.sim.isa import Pipe, Space
from aicore_sim.sim.memory import reserved_bytes
from aicore_sim.sim.trace import CoreTrace, Trace
from aicore_sim.util.atomic import atomic_path

LANES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
COLOURS = {Pipe.SCALAR: "#7f7f7f", Pipe.MTE2: "#1f77b4", Pipe.VECTOR: "#2ca02c",
           Pipe.MTE3: "#ff7f0e"}
STALL_COLOUR = "#d0d0d0"
PATH_LIMIT = 20_000
"""Above this many spans in the window, the timeline is drawn as an occupancy image."""
IMAGE_COLUMNS = 1600


def lane_spans(core: CoreTrace, pipe: Pipe) -> np.ndarray:
    """(start, end) rows of the busy spans of one lane (what the pipe executed), sorted by
    start."""
    if pipe is Pipe.SCALAR:
        s = core.scalar_spans.reshape(-1, 2)
    else:  # execution only: a copy's hold by shared HBM is drawn as its stall
        r = core.rows(pipe)
        s = (np.stack([core.start[r], core.end[r] - core.gm_stretch[r]], axis=1) if r.size
             else np.zeros((0, 2)))
    s = np.asarray(s, dtype=np.int64)
    return s[np.argsort(s[:, 0], kind="stable")] if s.size else s.reshape(0, 2)


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
    """One compound path of rectangles [start, end) x [y0, y0 + h), x in µs."""
    n = len(spans)
    x0 = spans[:, 0] * scale
    x1 = np.maximum(spans[:, 1] * scale, x0)
    verts = np.empty((n, 5, 2))
    verts[:, 0] = np.stack([x0, np.full(n, y0)], axis=1)
    verts[:, 1] = np.stack([x1, np.full(n, y0)], axis=1)
    verts[:, 2] = np.stack([x1, np.full(n, y0 + h)], axis=1)
    verts[:, 3] = np.stack([x0, np.full(n, y0 + h)], axis=1)
    verts[:, 4] = verts[:, 0]
    codes = np.tile(np.array([MplPath.MOVETO, MplPath.LINETO, MplPath.LINETO, MplPath.LINETO,
                              MplPath.CLOSEPOLY], dtype=np.uint8), n)
    return MplPath(verts.reshape(-1, 2), codes)


def _clip(spans: np.ndarray, t0: int, t1: int) -> np.ndarray:
    if not spans.size:
        return spans
    keep = (spans[:, 1] > t0) & (spans[:, 0] < t1)
    s = spans[keep].copy()
    np.clip(s, t0, t1, out=s)
    return s


def _save(fig: Figure, path: Path, dpi: int) -> Path:
    with atomic_path(path, mode=None) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    return path


def plot_timeline(trace: Trace, path: str | os.PathLike, cores: Sequence[int] | None = None,
                  window: tuple[float, float] | None = None, title: str | None = None,
                  dpi: int = 100) -> Path:
    """Swim lanes (core x pipe) over ``window`` (cycles) plus per-core pipe utilisation bars.

    ``cores`` selects cores (default all); ``window`` is ``(start, end)`` in cycles (default the
    whole launch). Returns the PNG path, written atomically.
    """
    path = Path(path)
    makespan = max(trace.makespan, 1)
    sel = list(range(len(trace.cores))) if cores is None else [int(c) for c in cores]
    t0, t1 = (0, makespan) if window is None else (int(window[0]), int(window[1]))
    if t1 <= t0:
        raise ValueError(f"window {window}: end must be after start")
    scale = 1.0 / trace.clock_mhz  # cycles -> µs
    spans = {(c, p): _clip(lane_spans(trace.cores[c], p), t0, t1) for c in sel for p in LANES}
    n_spans = sum(len(s) for s in spans.values())
    n_lanes = len(sel) * len(LANES)
    lane_h = 0.16 if len(sel) > 8 else 0.3
    height = min(max(2.5, n_lanes * lane_h), 24.0)
    fig = Figure(figsize=(14, height + 2.8))
    FigureCanvasAgg(fig)  # Agg canvas of this figure only: no pyplot, no global backend
    ax, axu = fig.subplots(2, 1, gridspec_kw={"height_ratios": [height, 2.2]})
    row = {(c, p): k * len(LANES) + j for k, c in enumerate(sel) for j, p in enumerate(LANES)}
    if n_spans > PATH_LIMIT:
        edges = np.linspace(t0, t1, IMAGE_COLUMNS + 1)
        img = np.ones((n_lanes, IMAGE_COLUMNS, 3))
        for (c, p), s in spans.items():
            occ = occupancy(s, edges)[:, None]
            rgb = np.array(to_rgb(COLOURS[p]))
            img[row[(c, p)]] = 1.0 - occ * (1.0 - rgb)
        ax.imshow(img, aspect="auto", interpolation="nearest",
                  extent=(t0 * scale, t1 * scale, n_lanes, 0))
        mode = "occupancy image"
    else:
        for p in LANES:
            paths = []
            stall_paths = []
            for c in sel:
                y = row[(c, p)]
                s = spans[(c, p)]
                if s.size:
                    paths.append(_rect_path(s, y + 0.1, 0.8, scale))
                st = np.array([(a, b) for q, a, b, _, _ in trace.cores[c].stalls if q == int(p)],
                              dtype=np.int64).reshape(-1, 2)
                st = _clip(st, t0, t1)
                if st.size:
                    stall_paths.append(_rect_path(st, y + 0.35, 0.3, scale))
            if stall_paths:
                ax.add_artist(PathPatch(MplPath.make_compound_path(*stall_paths),
                                        facecolor=STALL_COLOUR, edgecolor="none"))
            if paths:
                ax.add_artist(PathPatch(MplPath.make_compound_path(*paths),
                                        facecolor=COLOURS[p], edgecolor="none"))
        ax.set_xlim(t0 * scale, t1 * scale)
        ax.set_ylim(n_lanes, 0)
        mode = "spans"
    step = max(1, len(sel) // 24)
    ticks = [k * len(LANES) + len(LANES) / 2 for k in range(0, len(sel), step)]
    ax.set_yticks(ticks, [f"AIV {sel[k]}" for k in range(0, len(sel), step)])
    for k in range(1, len(sel)):
        ax.axhline(k * len(LANES), color="#999999", lw=0.4)
    ax.set_xlabel("time (µs)")
    handles = [Patch(color=COLOURS[p], label=p.name) for p in LANES]
    if mode == "spans":
        handles.append(Patch(color=STALL_COLOUR, label="stall"))
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8,
              ncol=len(handles), frameon=False)
    ax.set_title(title or f"{len(sel)} cores x {len(LANES)} pipes, {n_spans} spans "
                 f"({mode}), makespan {trace.makespan} cycles = {trace.us(trace.makespan):.3f} µs",
                 fontsize=10, loc="left")
    # Per-core utilisation bars (busy cycles / makespan).
    width = 0.8 / len(LANES)
    x = np.arange(len(sel))
    for j, p in enumerate(LANES):
        util = [trace.cores[c].busy_cycles(p) / makespan for c in sel]
        axu.bar(x + (j - 1.5) * width, util, width, color=COLOURS[p], label=p.name)
    axu.set_ylim(0, 1.0)
    axu.set_ylabel("busy / makespan")
    axu.set_xticks(x[::step], [str(sel[k]) for k in range(0, len(sel), step)], fontsize=7)
    axu.set_xlabel("AIV core")
    fig.tight_layout()
    return _save(fig, path, dpi)


def ub_occupancy(core: CoreTrace) -> tuple[np.ndarray, np.ndarray, int]:
    """(cycles, live bytes) change points of a core's UB, and its reserved bytes.

    ``reserved``: the bytes ``InitBuffer`` set aside (static for the launch). ``live``: the
    bytes of the buffers between the first instruction touching them and the end of the last
    one — what the kernel actually holds at each moment.
    """
    size = {a.name: int(a.nbytes) for a in core.allocations}
    reserved = reserved_bytes(core.allocations)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    if core.index.size:
        ids = np.fromiter(map(id, core.stream), np.int64, len(core.stream))[core.index]
        objs, inv = np.unique(ids, return_inverse=True)
        inv = inv.reshape(-1)
        lo = np.full(objs.size, np.iinfo(np.int64).max)
        hi = np.full(objs.size, np.iinfo(np.int64).min)
        np.minimum.at(lo, inv, core.start)
        np.maximum.at(hi, inv, core.end)
        row_of = np.zeros(objs.size, np.int64)
        row_of[inv] = np.arange(inv.size)
        for k, r in enumerate(row_of.tolist()):
            ins = core.stream[int(core.index[r])]
            for o in (ins.dst, *ins.src):
                if o is not None and o.buf in size and o.space is Space.UB:
                    first[o.buf] = min(first.get(o.buf, int(lo[k])), int(lo[k]))
                    last[o.buf] = max(last.get(o.buf, int(hi[k])), int(hi[k]))
    delta: dict[int, int] = {0: 0}
    for buf, t0 in first.items():
        delta[t0] = delta.get(t0, 0) + size[buf]
        delta[last[buf]] = delta.get(last[buf], 0) - size[buf]
    t = np.array(sorted(delta), np.int64)
    live = np.cumsum([delta[int(x)] for x in t]).astype(np.int64)
    return t, live, reserved


def plot_ub(trace: Trace, path: str | os.PathLike, cores: Sequence[int] | None = None,
            dpi: int = 100) -> Path:
    """UB bytes over time, one step line per core (live) with its reserved bytes dashed, like
    an on-chip-memory view. At most 16 cores are drawn (the first 16 of ``cores``)."""
    path = Path(path)
    sel = (list(range(len(trace.cores))) if cores is None else [int(c) for c in cores])[:16]
    fig = Figure(figsize=(12, 4.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    scale = 1.0 / trace.clock_mhz
    end = max(trace.makespan, 1)
    for c in sel:
        t, live, reserved = ub_occupancy(trace.cores[c])
        x = np.append(t, end) * scale
        (line,) = ax.step(x, np.append(live, live[-1]) / 1024, where="post", lw=1,
                          label=f"AIV {c}")
        ax.axhline(reserved / 1024, color=line.get_color(), lw=0.6, ls="--")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("UB KiB (solid: live, dashed: reserved)")
    ax.set_xlim(0, end * scale)
    ax.set_ylim(bottom=0)
    ax.set_title(f"UB occupancy per core ({len(sel)} of {len(trace.cores)} cores)",
                 fontsize=10, loc="left")
    if sel:
        ax.legend(fontsize=7, ncol=min(len(sel), 8), loc="upper right", frameon=False)
    fig.tight_layout()
    return _save(fig, path, dpi)


__all__ = ["lane_spans", "occupancy", "plot_timeline", "plot_ub", "ub_occupancy"]
