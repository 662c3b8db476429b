"""Hot spots: cycles per kernel source line and pipe, like a profiler's source view.

Step of the flow: a pure function of the :class:`~aicore_sim.sim.trace.Trace` and its
:class:`~aicore_sim.sim.sources.Sources` (the kernel line of every instruction), read by the
summary (``hotspots`` in ``summary.json``) and ``aicore-sim run --hotspots N``.

Per (line, pipe), over every core: ``cycles`` (the instructions' execution, i.e. their trace
slices: what the pipe's busy cycles sum), ``gm_stretch_cycles`` (the copies' hold by the shared
HBM bandwidth past their single-core time), ``instructions``, and ``share`` (``cycles`` over
the pipe's busy cycles on all cores, issue work included for SCALAR). Lines are ranked by
``cycles + gm_stretch_cycles``: the time the line kept its pipe occupied. The SCALAR rows
count scalar instructions (GetValue, SetValue, scalar-side flags); the scalar unit's issue
work for the other pipes' instructions is not attributed to lines.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.trace import Trace

DEFAULT_TOP = 20
"""Lines kept in ``summary.json``."""

_NP = len(Pipe)


def line_table(trace: Trace) -> tuple[list[str], np.ndarray] | None:
    """(site labels + ``"unknown"``, int64 array (sites + 1, pipes, 3) of cycles, HBM hold,
    instructions), sites in source order, or None when the trace has no sources."""
    src = trace.sources
    if src is None:
        return None
    n = len(src.table) + 1  # the last row: instructions without a site
    acc = np.zeros((3, n * _NP), np.int64)
    for ct in trace.cores:
        if not ct.index.size:
            continue
        site = src.per_core[ct.core][ct.index].astype(np.int64)
        site[site < 0] = n - 1
        key = site * _NP + ct.pipe.astype(np.int64)
        stretch = ct.gm_stretch
        acc[0] += np.bincount(key, weights=ct.end - ct.start - stretch,
                              minlength=n * _NP).astype(np.int64)
        acc[1] += np.bincount(key, weights=stretch, minlength=n * _NP).astype(np.int64)
        acc[2] += np.bincount(key, minlength=n * _NP)
    # rows in source order (path, line, function), whatever order the sites were met in
    order = sorted(range(n - 1), key=src.table.__getitem__) + [n - 1]
    labels = src.labels() + ["unknown"]
    return ([labels[i] for i in order],
            acc.reshape(3, n, _NP).transpose(1, 2, 0)[order])


def hotspots(trace: Trace, top: int = DEFAULT_TOP) -> list[dict[str, Any]]:
    """The ``top`` (line, pipe) pairs by occupied cycles (see the module docstring)."""
    got = line_table(trace)
    if got is None or top <= 0:
        return []
    labels, t = got
    busy = {p: sum(trace.busy_cycles(p)) for p in Pipe}
    occupied = (t[:, :, 0] + t[:, :, 1]).reshape(-1)
    keep = np.flatnonzero(occupied > 0)
    order = keep[np.lexsort((keep, -occupied[keep]))][:top]
    out = []
    for k in order.tolist():
        site, p = divmod(k, _NP)
        cyc, hold, n = (int(v) for v in t[site, p])
        pipe = Pipe(p)
        out.append({"source": labels[site], "pipe": pipe.name, "cycles": cyc,
                    "gm_stretch_cycles": hold, "instructions": n,
                    "share": cyc / busy[pipe] if busy[pipe] else 0.0})
    return out


def format_hotspots(rows: list[dict[str, Any]]) -> str:
    """A table of hot lines for a terminal."""
    if not rows:
        return "hot spots: none (no timing or no sources)"
    width = max(len(r["source"]) for r in rows)
    lines = ["hot spots (cycles summed over cores; share = of the pipe's busy cycles):",
             f"  {'source':<{width}}  {'pipe':<6} {'cycles':>12} {'share':>6} "
             f"{'HBM hold':>12} {'instrs':>9}"]
    for r in rows:
        lines.append(f"  {r['source']:<{width}}  {r['pipe']:<6} {r['cycles']:>12,} "
                     f"{r['share']:>6.1%} {r['gm_stretch_cycles']:>12,} "
                     f"{r['instructions']:>9,}")
    return "\n".join(lines)


__all__ = ["DEFAULT_TOP", "format_hotspots", "hotspots", "line_table"]
