"""Benchmark: MoeTokenUnpermuteWithEpGrad P1 and P2 end to end on ascend910b1.

Each case runs in its own subprocess (so its peak memory is its own) through the one-call API
in the chosen mode, and the figures go to reports/bench_op_end_to_end.md: wall time split
into record / replay / checks, simulated cycles and µs at the preset clock, % of the HBM
roofline, what bounds the kernel, hazards and peak resident memory.

    python benchmarks/op_end_to_end.py [--cases p1_deepseek_v3 p2_deepseek_v3_noprobs]
                                       [--modes timed timing-only] [--no-report]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
from aicore_sim.summary import summarize
from op_models.moe_token_unpermute_with_ep_grad import run_case
case, mode = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
outs, res, inputs = run_case(case, platform="ascend910b1", mode=mode)
wall = time.perf_counter() - t0
s = summarize(res)
print(json.dumps({
    "case": case, "mode": mode, "wall": wall, "split": res.wall,
    "instructions": res.program.instruction_count, "cycles": res.cycles, "us": res.us,
    "roofline": s.get("hbm_roofline_pct", 0.0), "gbps": s.get("achieved_gbps", 0.0),
    "bound_by": (s.get("bound_by") or {}).get("pipe", "-"),
    "hazards": s["hazard_counts"],
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["p1_deepseek_v3", "p2_deepseek_v3_noprobs"])
    ap.add_argument("--modes", nargs="+", default=["timed", "timing-only"])
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    rows = []
    for case in args.cases:
        for mode in args.modes:
            out = subprocess.run([sys.executable, "-c", _CHILD, case, mode], check=True,
                                 capture_output=True, text=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"{case} {mode}: {row['wall']:.1f} s, {row['cycles']:,} cycles, "
                  f"{row['us']:.1f} us, {row['roofline']:.1f}% roofline, "
                  f"peak {row['peak_mib']:.0f} MiB", flush=True)
    lines = [
        "# Benchmark: MoeTokenUnpermuteWithEpGrad end to end on ascend910b1",
        "",
        "Command: `python benchmarks/op_end_to_end.py` (one subprocess per row; bundled cases,"
        " inputs from `cases.make_inputs`, races checked).",
        "",
        "| case | mode | instructions | wall s (record / replay / checks / timed replay) "
        "| simulated cycles | µs at 1850 MHz | HBM roofline | bound by | hazards | peak MiB |",
        "|---|---|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        sp = r["split"]
        split = " / ".join(f"{sp.get(k, 0.0):.1f}"
                           for k in ("record", "replay", "checks", "timed_replay"))
        lines.append(
            f"| {r['case']} | {r['mode']} | {r['instructions']:,} | {r['wall']:.1f} ({split}) "
            f"| {r['cycles']:,} | {r['us']:.1f} | {r['roofline']:.1f} % | {r['bound_by']} "
            f"| {r['hazards'] or 'none'} | {r['peak_mib']:.0f} |")
    lines += ["", "Targets to be pushed later (issue): P1 <= 20 s with numerics, <= 6 s "
              "timing-only.", "", f"Measured {time.strftime('%Y-%m-%d')} on "
              f"{os.cpu_count()} CPUs."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_report:
        out = Path(__file__).resolve().parent.parent / "reports" / "bench_op_end_to_end.md"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)


if __name__ == "__main__":
    main()
