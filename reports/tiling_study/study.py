"""Tiling study: upstream vs best found tiling for four model cases on three SoCs.

Re-run with ``python reports/tiling_study/study.py [--tokens 4096] [--budget 30] [--workers 2]``
from the repository root. Each (case, platform) pair is one ``aicore-sim search`` (rows, report
and charts in ``reports/tiling_study/<case>-<platform>/``); ``summary.md`` collects the table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from aicore_sim.registry import default_op
from aicore_sim.sweep.report import tiling_text
from aicore_sim.sweep.run import make_executor
from aicore_sim.sweep.search import search

CASES = ("p1_deepseek_v3", "p2_deepseek_v3_noprobs", "mixtral", "qwen3_moe")
PLATFORMS = ("ascend910b1", "ascend910b3", "ascend950pr_9589")
HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    with make_executor(a.workers) as ex:
        for case in CASES:
            for plat in PLATFORMS:
                out = HERE / f"{case}-{plat}"
                r = search(case, ex, out, platform=plat, budget=a.budget,
                           case_axes={"tokens_num": a.tokens}, progress=False)
                print(f"== {case} on {plat}\n{r.text()}", flush=True)
                rows.append({"case": case, "platform": plat, "points": r.points,
                             "space": r.space, "upstream": r.upstream, "best": r.best,
                             "speedup": r.speedup,
                             "verified": (r.verified or {}).get("status")})
    wall = time.perf_counter() - t0
    (HERE / "summary.json").write_text(json.dumps(rows, indent=1, default=str) + "\n")
    write_summary(rows, a.tokens, a.budget, a.workers, wall)


def write_summary(rows: list[dict], tokens: int, budget: int, workers: int, wall: float) -> None:
    """``summary.md``: one table row per (case, platform) search."""
    lines = ["| case | platform | points (legal space) | upstream cycles (µs) | upstream tiling "
             "| upstream bound by, % roofline | best cycles (µs) | best tiling | best bound by, "
             "% roofline | speed-up | verified |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    short = default_op().tiling_space.tiling_short  # E, R, EA, hA of the cases' operator
    for r in rows:
        u, b = r["upstream"], r["best"]
        lines.append(
            f"| {r['case']} | {r['platform']} | {r['points']} ({r['space']}) | "
            f"{u['makespan_cycles']} ({u['makespan_us']:.1f}) | {tiling_text(u, short)} | "
            f"{u['bound_by']}, {u['hbm_roofline_pct']:.1f}% | "
            f"{b['makespan_cycles']} ({b['makespan_us']:.1f}) | {tiling_text(b, short)} | "
            f"{b['bound_by']}, {b['hbm_roofline_pct']:.1f}% | {r['speedup']:.3f}× | "
            f"{r['verified']} |")
    lines.append(f"\n{tokens} tokens per case, budget {budget} points per search, "
                 f"{workers} workers, {wall:.0f} s wall.\n")
    (HERE / "summary.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
