"""Benchmark: how ``aicore-sim run`` grows with the work (P1 at 1024 ... 8192 tokens).

P1's shape (DeepSeek-V3: topK 8, hidden 7168, bf16 tokens, fp32 probs) at 1024, 2048, 4096
and 8192 tokens, each run as the command a user types (``--inputs``, ``--no-plot``, default
``--jobs`` and ``--trace full``) in timing-only and timed mode. Reports wall time and peak
RSS, both per simulated instruction, and the least-squares slope of log(wall) and log(RSS)
against log(instructions): a slope of 1 is linear growth. Results go to
reports/bench_op_growth.md.

    python benchmarks/op_growth.py [--tokens 1024 2048 4096 8192] [--modes timing-only timed]

Not part of the test suite (several minutes; 8192 tokens needs ~5 GB of disk for inputs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_bench import golden_job, machine_line, make_job, run_cli  # noqa: E402

from op_models.moe_token_unpermute_with_ep_grad import cases  # noqa: E402


def slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--modes", nargs="+", default=["timing-only", "timed"])
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    base = cases.get_case("p1_deepseek_v3")
    rows = []
    with tempfile.TemporaryDirectory(prefix="aicore-growth-") as tmp:
        for n in args.tokens:
            case = base.with_(name=f"p1_{n}_tokens", tokens_num=n)
            job = make_job(case, Path(tmp))
            gold = golden_job(job)
            for mode in args.modes:
                r = run_cli(job, mode, plot=False)
                s = r["summary"]
                row = {"tokens": n, "mode": mode, "wall": r["wall"], "peak_mib": r["peak_mib"],
                       "instructions": s["instructions"], "golden": gold,
                       "data_mib": (job.input_bytes() + (case.flat_size * case.hidden * 2
                                    if mode != "timing-only" else 0)) / 2**20}
                rows.append(row)
                print(f"{n:>5} tokens {mode:<12} {row['instructions']:>10,} instr "
                      f"{r['wall']:6.2f} s ({r['wall'] / gold:4.1f}x golden) "
                      f"{r['peak_mib']:6.0f} MiB", flush=True)
            # the next size's inputs replace these (disk)
            for f in job.inputs.glob("*.npy"):
                f.unlink()
    text = _report(rows, args.modes)
    print(text)
    if not args.no_report:
        out = Path(__file__).resolve().parent.parent / "reports" / "bench_op_growth.md"
        tmp_out = out.with_suffix(".tmp")
        tmp_out.write_text(text)
        os.replace(tmp_out, out)


def _report(rows: list[dict], modes: list[str]) -> str:
    lines = [
        "# Benchmark: growth of `aicore-sim run` with the work (P1 shape, 1024-8192 tokens)",
        "",
        "Command: `python benchmarks/op_growth.py`. Each row is `aicore-sim run CASE.json "
        "--inputs DIR --mode M --no-plot` as a subprocess (default `--jobs`, `--trace full`); "
        "peak RSS is wait4's (the largest process). Data = inputs, plus the output in timed "
        "mode. The golden is the operator's numpy golden of the same job in the same run "
        "(read inputs, compute both outputs, write them).",
        "",
        "| tokens | mode | instructions | wall s | × golden | µs / instruction | peak MiB "
        "| data MiB | KiB RSS / instruction |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tokens']} | {r['mode']} | {r['instructions']:,} | {r['wall']:.2f} "
            f"| {r['wall'] / r['golden']:.1f} | {r['wall'] / r['instructions'] * 1e6:.2f} "
            f"| {r['peak_mib']:.0f} "
            f"| {r['data_mib']:.0f} | {r['peak_mib'] * 1024 / r['instructions']:.2f} |")
    lines.append("")
    for mode in modes:
        sel = [r for r in rows if r["mode"] == mode]
        if len(sel) >= 2:
            n = [r["instructions"] for r in sel]
            lines.append(
                f"- {mode}: slope of log wall vs log instructions "
                f"**{slope(n, [r['wall'] for r in sel]):.2f}**, of log peak RSS "
                f"**{slope(n, [r['peak_mib'] for r in sel]):.2f}** (1 = linear).")
    lines += ["", machine_line()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
