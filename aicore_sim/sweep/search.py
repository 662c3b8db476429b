"""Tiling search for one case (step: sweep execution, a guided sweep).

:func:`search` runs the op's named strategies (``upstream`` first), then up to ``budget``
points of the op's legal tiling space: the whole grid when it fits the budget; otherwise a
seeded random half of the budget, then the neighbours of the best point found (one knob changed
at a time, nearest values first) until the budget is spent. The best point is re-run with
numerics and checked against the golden; the result says how it compares with ``upstream``.
Rows go to ``OUT/results.jsonl`` like a sweep's (so ``aicore-sim report OUT`` works and a
search can be resumed).
"""

from __future__ import annotations

import random
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.sweep.ops import get_op, op_for_case
from aicore_sim.sweep.points import Point, make_point
from aicore_sim.sweep.run import ResultWriter, rank, read_rows, run_points, verify_rows
from aicore_sim.sweep.spec import SpecError
from aicore_sim.sweep.worker import build_platform, columns


@dataclass
class SearchOutcome:
    """Best and upstream rows, speed-up (upstream / best cycles) and the verification."""

    best: dict[str, Any] | None
    upstream: dict[str, Any] | None
    speedup: float | None
    verified: dict[str, Any] | None
    points: int
    space: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    report: Path | None = None
    op: str | None = None

    def text(self) -> str:
        from aicore_sim.sweep.report import tiling_short

        short = tiling_short(self.op)

        def tiling_text(r: dict[str, Any]) -> str:
            from aicore_sim.sweep.report import tiling_text as text

            return text(r, short)

        if self.best is None:
            return "no feasible point ran"
        b, u = self.best, self.upstream
        lines = [f"searched {self.points} points (legal space: {self.space} tilings)"]
        if u is not None:
            lines.append(f"upstream: {u['makespan_cycles']} cycles ({u['makespan_us']:.2f} µs), "
                         f"{tiling_text(u)}, bound by {u['bound_by']}")
        how = "upstream" if (b.get("strategy") == "upstream" and not b.get("overrides")) \
            else f"{b.get('strategy')} + {b.get('overrides') or {}}"
        lines.append(f"best:     {b['makespan_cycles']} cycles ({b['makespan_us']:.2f} µs), "
                     f"{tiling_text(b)} [{how}], bound by {b['bound_by']}")
        if self.speedup is not None:
            lines.append(f"speed-up over upstream: {self.speedup:.4f}x "
                         f"({(1 - 1 / self.speedup) * 100:.2f}% less time)")
        if self.verified is not None:
            lines.append(f"numerics of the best: {self.verified['status']} "
                         f"({self.verified.get('detail')})")
        return "\n".join(lines)


def _neighbours(best: dict[str, int], grid: list[dict[str, int]]) -> list[dict[str, int]]:
    """Grid points that differ from ``best`` in one knob, nearest values first."""
    out = []
    for g in grid:
        diff = [k for k in g if g.get(k) != best.get(k)]
        if len(diff) == 1:
            k = diff[0]
            out.append((abs(g[k] - best.get(k, 0)) / max(1, best.get(k, 1)), g))
    out.sort(key=lambda t: t[0])
    return [g for _, g in out]


def search(case: str, executor: Executor, out: str | Path, *, platform: str = "ascend910b1",
           budget: int = 40, op: str | None = None, case_axes: dict[str, Any] | None = None,
           op_source: str | None = None,
           seed: int | None = None, verify: bool = True, progress: bool = True,
           report: bool = True) -> SearchOutcome:
    """Find the fastest feasible tiling of ``case`` on ``platform`` within ``budget`` points
    (``op`` ``None``: the op of the case, :func:`~aicore_sim.sweep.ops.op_for_case`)."""
    op = op or op_for_case(case)
    space = get_op(op)
    out = Path(out)
    case_axes = dict(case_axes or {})
    base = {"case": case, **case_axes, "platform": platform}
    if op_source is not None:  # every point tiled by the op's own host C++ (run --op-src)
        base["op_source"] = op_source
    plat = build_platform({"platform": platform})
    cobj = space.resolve_case(case, case_axes)
    grid: list[dict[str, int]] = space.search_space(cobj, plat)
    mode = "timing-only"

    def pt(strategy: str, knobs: dict[str, int]) -> Point:
        return make_point(op, mode, seed, {**base, "strategy": strategy, **knobs})

    done = {r["key"]: r for r in read_rows(out)}
    ours = {pt(s, {}).key for s in space.strategies} | {pt("upstream", k).key for k in grid}
    foreign = len(done.keys() - ours)
    if foreign:
        raise SpecError(f"{out}: holds {foreign} results of another search or of another "
                        "simulator build; a search continues only its own: choose another "
                        "folder or empty this one")
    all_rows: list[dict[str, Any]] = []

    def run(points: list[Point]) -> None:
        todo = [p for p in points if p.key not in done]
        with ResultWriter(out, columns(op)) as w:
            rows = run_points(todo, executor, w, progress, desc="search")
        for r in rows:
            done[r["key"]] = r
        all_rows.extend(done[p.key] for p in points if p.key in done)

    strategies = [pt(s, {}) for s in space.strategies]
    left = max(0, budget - len(strategies))
    if len(grid) <= left:
        run(strategies + [pt("upstream", k) for k in grid])
    else:
        rng = random.Random(0)
        first = rng.sample(grid, left // 2)
        run(strategies + [pt("upstream", k) for k in first])
        tried = {p.key for p in strategies} | {pt("upstream", k).key for k in first}
        remaining = left - len(first)
        while remaining > 0:
            ok = [r for r in all_rows if r.get("status") == "ok"]
            if not ok:
                break
            best = min(ok, key=lambda r: r["makespan_cycles"])
            td = best.get("tiling") or {}
            bk = {"cores": best.get("block_dim"), **{k: td.get(k) for k in space.knobs
                                                     if k in td}}
            cand = [k for k in _neighbours(bk, grid) if pt("upstream", k).key not in tried]
            if not cand:
                cand = [k for k in grid if pt("upstream", k).key not in tried]
                rng.shuffle(cand)
            step = cand[:min(remaining, 8)]
            if not step:
                break
            tried |= {pt("upstream", k).key for k in step}
            remaining -= len(step)
            run([pt("upstream", k) for k in step])
    rows = list({r["key"]: r for r in all_rows}.values())
    ok = [r for r in rows if r.get("status") == "ok"]
    best = min(ok, key=rank) if ok else None
    up = done.get(strategies[0].key)
    up = up if up and up.get("status") == "ok" else None
    speed = up["makespan_cycles"] / best["makespan_cycles"] if up and best else None
    ver = None
    if verify and best is not None:
        ver = verify_rows([dict(best, _op=op, _mode=mode, _seed=seed)], executor, out,
                          progress)[0]
    res = SearchOutcome(best, up, speed, ver, len(rows), len(grid), rows, op=op)
    if report:
        from aicore_sim.sweep.report import write_report

        res.report = write_report(out, title=f"search {case} on {platform}", op=op)
    return res
