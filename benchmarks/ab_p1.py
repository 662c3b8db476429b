"""A/B of two source trees on P1: the record pass, and the ``aicore-sim run`` command.

    python benchmarks/ab_p1.py BASE_TREE HEAD_TREE [--rounds 3]

``BASE_TREE`` / ``HEAD_TREE`` are checkouts (e.g. ``git archive main | tar -x -C base``). For
each round and tree, interleaved: ``aicore-sim run --case p1_deepseek_v3 --mode timing-only
--no-plot`` started from that tree as a subprocess (wall, and CPU of the command and every
process it waited for, and the run's own phases from its summary.json). The record phase is
the record pass with ``--jobs`` = the usable CPUs. Results: ``reports/source_attribution.md``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(tree: Path, out: Path) -> tuple[float, float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "aicore_sim", "run", "--case", "p1_deepseek_v3",
                        "--mode", "timing-only", "--no-plot", "--out", str(out)],
                       cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{tree}: exit {p.returncode}: {p.stderr.strip()}")
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    phases = json.loads((out / "summary.json").read_text())["phases_seconds"]
    return wall, cpu, phases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("head", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    trees = {"base": a.base.resolve(), "head": a.head.resolve()}
    got: dict[str, list] = {k: [] for k in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.rounds):
            for name, tree in trees.items():
                wall, cpu, ph = run(tree, Path(tmp) / name)
                got[name].append((wall, cpu, ph))
                print(f"round {k + 1} {name}: wall {wall:.2f} s, cpu {cpu:.2f} s, record "
                      f"{ph['record']:.2f} s, total phases {ph['total']:.2f} s", flush=True)
    for name, rows in got.items():
        med = [statistics.median(r[i] for r in rows) for i in (0, 1)]
        rec = statistics.median(r[2]["record"] for r in rows)
        print(f"{name}: median wall {med[0]:.2f} s, cpu {med[1]:.2f} s, record {rec:.2f} s")


if __name__ == "__main__":
    main()
