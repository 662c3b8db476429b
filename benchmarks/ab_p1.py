"""A/B of two source trees on P1: the record pass, and the ``aicore-sim run`` command.

    python benchmarks/ab_p1.py BASE_TREE HEAD_TREE [--rounds 3] [--mode timed]

``BASE_TREE`` / ``HEAD_TREE`` are checkouts (e.g. ``git archive main | tar -x -C base``). For
each round and tree, interleaved: ``aicore-sim run --case p1_deepseek_v3 --mode MODE
--no-plot`` (timing-only unless ``--mode timed``) started from that tree as a subprocess (wall,
CPU and peak RSS of the command and every process it waited for, and the run's own phases from
its summary.json). The record phase is the record pass with ``--jobs`` = the usable CPUs.
Beside them, in the same run, the numpy golden of the same job (P1's inputs read from disk,
both outputs computed and written, in a fresh process: ``cli_bench.golden_job``).
Results: ``reports/source_attribution.md``, ``reports/bench_fidelity_speed.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_bench import golden_job, make_job  # noqa: E402

from op_models.moe_token_unpermute_with_ep_grad import cases  # noqa: E402


def run(tree: Path, out: Path, mode: str) -> tuple[float, float, float, dict]:
    """(wall s, CPU s, peak RSS MiB, phases) of one ``aicore-sim run`` of P1 from ``tree``."""
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "aicore_sim", "run", "--case", "p1_deepseek_v3",
                          "--mode", mode, "--no-plot", "--out", str(out)],
                         cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{tree}: exit {os.waitstatus_to_exitcode(status)}: {err.strip()}")
    cpu = usage.ru_utime + usage.ru_stime
    phases = json.loads((out / "summary.json").read_text())["phases_seconds"]
    return wall, cpu, usage.ru_maxrss / 1024, phases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("head", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mode", choices=("timing-only", "timed"), default="timing-only")
    a = ap.parse_args()
    trees = {"base": a.base.resolve(), "head": a.head.resolve()}
    got: dict[str, list] = {k: [] for k in trees}
    with tempfile.TemporaryDirectory() as tmp:
        gold = golden_job(make_job(cases.get_case("p1_deepseek_v3"), Path(tmp) / "golden"))
        print(f"numpy golden of P1: {gold:.2f} s", flush=True)
        for k in range(a.rounds):
            for name, tree in trees.items():
                wall, cpu, rss, ph = run(tree, Path(tmp) / name, a.mode)
                got[name].append((wall, cpu, rss, ph))
                print(f"round {k + 1} {name} ({a.mode}): wall {wall:.2f} s, cpu {cpu:.2f} s, "
                      f"peak RSS {rss:.0f} MiB, record {ph['record']:.2f} s", flush=True)
    med = {}
    for name, rows in got.items():
        med[name] = [statistics.median(r[i] for r in rows) for i in (0, 1, 2)]
        rec = statistics.median(r[3]["record"] for r in rows)
        print(f"{name}: median wall {med[name][0]:.2f} s, cpu {med[name][1]:.2f} s, peak RSS "
              f"{med[name][2]:.0f} MiB, record {rec:.2f} s")
    print(f"head / base median wall ({a.mode}): {med['head'][0] / med['base'][0]:.3f}; "
          f"head / numpy golden: {med['head'][0] / gold:.1f}")


if __name__ == "__main__":
    main()
