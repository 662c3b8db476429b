"""How long ``aicore-sim plot`` takes to redraw a run folder, as a user runs it.

Each figure is the command started from a shell (``python -m aicore_sim``: interpreter start,
imports, reading ``timeline.npz``, drawing, writing the PNG), timed as a subprocess with its
peak RSS (``wait4``), best and median of ``--repeat`` runs. Beside it, the floors: the
interpreter with numpy alone, and loading the folder's ``timeline.npz`` without drawing::

    aicore-sim run --case p1_deepseek_v3 --trace none --out traces/p1
    python benchmarks/plot_run_dir.py traces/p1 --cores 0 --window 10us:40us

prints a markdown table (``reports/bench_plot_run_dir.md`` records one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one subprocess; its failure stops the benchmark."""
    with tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=se)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            se.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {se.read().decode().strip()}")
    return wall, usage.ru_maxrss / 1024


def row(name: str, cmd: list[str], repeat: int) -> str:
    runs = [timed(cmd) for _ in range(repeat)]
    walls = [w for w, _ in runs]
    return (f"| {name} | {min(walls):.2f} | {statistics.median(walls):.2f} | "
            f"{max(m for _, m in runs):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--cores", default="0")
    ap.add_argument("--window", default="10us:40us")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    py = sys.executable
    tl = args.run_dir / "timeline.npz"
    with tempfile.TemporaryDirectory() as tmp:
        zoom, whole = str(Path(tmp) / "zoom.png"), str(Path(tmp) / "whole.png")
        rows = [
            row("python + numpy import (floor)", [py, "-c", "import numpy"], args.repeat),
            row("load timeline.npz only", [py, "-c", "import sys; from aicore_sim.views."
                "timeline_file import Timeline; Timeline.load(sys.argv[1])", str(tl)],
                args.repeat),
            row(f"`plot --cores {args.cores} --window {args.window}`",
                [py, "-m", "aicore_sim", "plot", str(args.run_dir), "--cores", args.cores,
                 "--window", args.window, "--out", zoom], args.repeat),
            row("`plot` (every core, whole run)",
                [py, "-m", "aicore_sim", "plot", str(args.run_dir), "--out", whole],
                args.repeat),
            row("`plot --ub-plot` (every core, whole run)",
                [py, "-m", "aicore_sim", "plot", str(args.run_dir), "--ub-plot", "--out",
                 whole], args.repeat),
        ]
        sizes = (os.path.getsize(zoom), os.path.getsize(whole))
    print(f"run folder: {args.run_dir.name}, timeline.npz {tl.stat().st_size / 2**20:.1f} MiB; "
          f"PNGs: zoom {sizes[0] / 1024:.0f} KiB, whole {sizes[1] / 1024:.0f} KiB\n")
    print("| command (subprocess) | best s | median s | peak RSS MiB |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
