"""Sweep throughput: timing-only points per minute on the P1 shape cut to 512 tokens.

Run from the repository root: ``python benchmarks/sweep_throughput.py [--workers 2]``. Two
sweeps of 120 points each, both through the normal runner on a local process pool:

* ``what-if``: 8 tilings (E overrides) x 5 HBM bandwidths x 3 clocks - the usual shape of a
  hardware what-if study; points that differ only in timing fields replay one recorded program;
* ``tilings``: 30 distinct tilings (E x hidden chunk x R) x 4 HBM bandwidths - record-heavy.

Prints points/min and writes ``reports/bench_sweep_throughput.md``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform as _pl
import shutil
import tempfile
import time
from pathlib import Path

from aicore_sim.sweep.run import make_executor, run_sweep
from aicore_sim.sweep.spec import parse_spec

REPO = Path(__file__).resolve().parents[1]

SPECS = {
    "what-if": {
        "sweep": {"name": "bench what-if"},
        "axes": {"case": ["p1_deepseek_v3"], "tokens_num": [512], "platform": ["ascend910b1"],
                 "hbm_gbps": [600, 900, 1200, 1600, 2400], "clock_mhz": [1500, 1850, 2200]},
        "tiling": {"indicesReserveNum": ["auto", 8, 16, 24, 32, 48, 64, 80]},
    },
    "tilings": {
        "sweep": {"name": "bench tilings"},
        "axes": {"case": ["p1_deepseek_v3"], "tokens_num": [512], "platform": ["ascend910b1"],
                 "hbm_gbps": [900, 1200, 1600, 2400]},
        "tiling": {"indicesReserveNum": [8, 24, 40, 56, 88],
                   "hiddenSizeAlign": [7168, 3584, 2560],
                   "inputReserveNum": [1, 2]},
    },
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "reports" / "bench_sweep_throughput.md"))
    a = ap.parse_args()
    results = []
    for name, doc in SPECS.items():
        spec = parse_spec(doc, name)
        tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        try:
            t0 = time.perf_counter()
            with make_executor(a.workers) as ex:
                res = run_sweep(spec, tmp, ex, progress=False, report=False)
            wall = time.perf_counter() - t0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        st: dict[str, int] = {}
        for r in res.rows:
            st[r["status"]] = st.get(r["status"], 0) + 1
        reused = sum(1 for r in res.rows if r.get("record_reused"))
        rate = len(res.rows) / wall * 60
        results.append((name, len(res.rows), st, reused, wall, rate))
        print(f"{name}: {len(res.rows)} points {st}, {reused} replays of a cached record, "
              f"{wall:.1f} s wall incl. pool start -> {rate:.0f} points/min")
    lines = ["# Sweep throughput benchmark", "",
             "`python benchmarks/sweep_throughput.py --workers 2`: timing-only points of "
             "p1_deepseek_v3 cut to 512 tokens on ascend910b1, local process pool "
             f"({a.workers} workers, spawn), wall time including pool start-up.", "",
             "| sweep | points | status | replays of a cached record | wall (s) | points/min |",
             "|---|---|---|---|---|---|"]
    for name, n, st, reused, wall, rate in results:
        lines.append(f"| {name} | {n} | {st} | {reused} | {wall:.1f} | {rate:.0f} |")
    lines += ["", f"Machine: {os.cpu_count()} CPUs, Python {_pl.python_version()}, measured "
              f"{time.strftime('%Y-%m-%d')}. Targets with 2 workers: >= 60 points/min (the "
              "sweep issue), >= 150 points/min for the tilings sweep (the speed issue).", ""]
    Path(a.out).write_text("\n".join(lines))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
