"""Benchmark: ``aicore-sim run`` end to end on real layer shapes, beside a numpy golden.

Each row is the command a user types, run as a subprocess on a case file with ``--inputs``
(inputs written once as .npy files): wall time, peak resident memory (wait4), the phase
breakdown the command records in summary.json, and the ratio to the numpy golden of the
same job (read the inputs, compute both outputs in fp32, write them), timed in this process
in the same run. Results go to reports/bench_op_end_to_end.md.

    python benchmarks/op_end_to_end.py [--cases p1_deepseek_v3 ...] [--modes timed ...]
                                       [--plot both|no|yes] [--no-report]

Not part of the test suite (minutes, and the figures need a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_bench import golden_job, machine_line, make_job, run_cli  # noqa: E402

from op_models.moe_token_unpermute_with_ep_grad import cases  # noqa: E402

DEFAULT_CASES = ["p1_deepseek_v3", "p2_deepseek_v3_noprobs", "qwen3_moe"]
MODES = ["timed", "timing-only", "functional"]
PHASES = ("inputs", "record", "replay", "checks", "golden", "compare", "outputs", "trace",
          "plot")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    ap.add_argument("--plot", choices=("both", "no", "yes"), default="both",
                    help="rows without the plot, with it, or both (default)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per row; the report gives the median and the range")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    plots = {"both": [False, True], "no": [False], "yes": [True]}[args.plot]
    rows = []
    with tempfile.TemporaryDirectory(prefix="aicore-bench-") as tmp:
        for name in args.cases:
            job = make_job(cases.get_case(name), Path(tmp))
            gold = golden_job(job)
            print(f"{name}: numpy golden {gold:.2f} s", flush=True)
            configs = [(m, p) for m in args.modes for p in plots
                       if not (m == "functional" and p)]  # no timeline without timing
            # rounds over all configurations (not N runs of one, then the next): a slow
            # spell of the machine then hits every configuration alike
            runs: dict[tuple, list] = {c: [] for c in configs}
            for _ in range(args.repeat):
                for mode, plot in configs:
                    runs[(mode, plot)].append(run_cli(job, mode, plot, ["--verbose"]))
            for (mode, plot), got in runs.items():
                got.sort(key=lambda x: x["wall"])
                r = got[len(got) // 2]  # the median run (its phases)
                s = r["summary"]
                row = {"case": name, "mode": mode, "plot": plot, "wall": r["wall"],
                       "walls": [x["wall"] for x in got],
                       "golden": gold, "peak_mib": max(x["peak_mib"] for x in got),
                       "inputs_mib": job.input_bytes() / 2**20,
                       "instructions": s["instructions"],
                       "cycles": s.get("makespan_cycles", 0),
                       "phases": s["phases_seconds"], "trace_bytes": s.get("trace_bytes"),
                       "exact": all(g.get("exact") for g in s.get("golden", {}).values())
                       if s.get("golden") else None}
                rows.append(row)
                print(f"  {mode:<12} plot={plot!s:<5} {r['wall']:6.2f} s "
                      f"({r['wall'] / gold:5.1f}x golden), peak {row['peak_mib']:6.0f} MiB, "
                      f"{row['cycles']:,} cycles  [{_phases(row['phases'])}]", flush=True)
    text = _report(rows)
    print(text)
    if not args.no_report:
        out = Path(__file__).resolve().parent.parent / "reports" / "bench_op_end_to_end.md"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)


def _phases(p: dict) -> str:
    return " ".join(f"{k} {p[k]:.2f}" for k in PHASES if k in p)


def _report(rows: list[dict]) -> str:
    lines = [
        "# Benchmark: `aicore-sim run` end to end on ascend910b1",
        "",
        "Command: `python benchmarks/op_end_to_end.py`. Each row is `aicore-sim run CASE.json "
        "--inputs DIR --mode M [--no-plot]` started as a subprocess (default `--jobs`: the "
        "usable CPUs; default `--trace full`); wall time includes Python start-up, reading the "
        "inputs (memory-mapped .npy) and writing the run folder. Peak RSS is wait4's: the "
        "largest of the command and the record worker it forks. The golden is the operator's "
        "numpy golden of the same job in the same run (read inputs, compute both outputs, "
        "write them). Phases are the command's own figures from `summary.json`. With "
        "`--repeat N` the configurations run in N interleaved rounds; the wall is the median "
        "of the N runs (range in brackets), the phases those of the median run, the peak the "
        "largest of the N.",
        "",
        "| case | mode | plot | instructions | wall s | × golden | peak MiB | inputs MiB "
        "| simulated cycles | trace MiB | phases (s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        tb = f"{r['trace_bytes'] / 2**20:.1f}" if r["trace_bytes"] else "-"
        w = r["walls"]
        wall = f"{r['wall']:.2f}" + (f" ({w[0]:.2f}–{w[-1]:.2f})" if len(w) > 1 else "")
        lines.append(
            f"| {r['case']} | {r['mode']} | {'yes' if r['plot'] else 'no'} "
            f"| {r['instructions']:,} | {wall} | {r['wall'] / r['golden']:.1f} "
            f"| {r['peak_mib']:.0f} | {r['inputs_mib']:.0f} | {r['cycles']:,} | {tb} "
            f"| {_phases(r['phases'])} |")
    golds = {r["case"]: r["golden"] for r in rows}
    lines += ["", "Numpy golden (s): " + ", ".join(f"{k} {v:.2f}" for k, v in golds.items()),
              "", machine_line()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
