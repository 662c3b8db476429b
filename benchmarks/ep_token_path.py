"""Benchmark: the four EP-path kernels of a DeepSeek-V3 layer through ``aicore-sim run``, each
beside a vectorised numpy golden of the same job.

The job of each kernel is the one ``examples/ep_token_path.py --size deepseek`` hands it (4096
tokens, top-8 of 256 experts, H 7168, EP 8 rank 0; each kernel's inputs are the previous
kernels' outputs). A first pass of that chain, in a fresh process, writes the four case files
and ``--inputs`` folders (and warms the page cache and the imports for every row alike). Then,
in ``--repeat`` interleaved rounds (default 3; the goldens' own times vary 2-5x between runs),
per kernel, one at a time:

* the command: ``aicore-sim run CASE.json --inputs DIR --mode timed --no-plot`` started as a
  subprocess from this small driver: wall seconds, peak RSS (``os.wait4``: the largest of the
  command and the record worker it forks), its ``summary.json`` (makespan, every golden exact);
* the golden: in a fresh process (spawn), timed inside it: read the inputs from the same
  ``.npy`` files, compute every output with the operator's ``op_models/<op>/golden.py``, write
  them as ``.npy`` files beside them.

Prints the table and writes ``reports/bench_ep_token_path.md`` (``--no-report``: print only).

    python benchmarks/ep_token_path.py [--size deepseek|tiny] [--repeat N] [--no-report]
                                       [--note TEXT]

Not part of the test suite (a few minutes at the DeepSeek size; the figures need a quiet
machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_bench import _in_fresh_process, machine_line  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TARGET = 5.0  # the acceptance line: the command takes at most 5x the golden of the same job


def _example():
    spec = importlib.util.spec_from_file_location("ep_token_path_example",
                                                  REPO / "examples" / "ep_token_path.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------------------------
# In fresh processes: the chain's first pass, and the golden of one job
# ---------------------------------------------------------------------------------------------


def _prepare(size: str, root: str) -> list[dict[str, Any]]:
    """The example's chain (its four runs) under ``root``: each kernel's case file, inputs
    folder and attributes, for the timed rows."""
    ex = _example()
    rt, steps = ex.run_chain(size, Path(root), "timed", ["--no-plot", "--trace", "none"])
    if len(steps) != len(ex.OPS) or not all(st.ok("timed") for st in steps):
        raise RuntimeError(f"the chain's first pass failed: "
                           f"{[(st.op, st.returncode, st.exact) for st in steps]}")
    return [{"op": st.op, "folder": str(st.folder), "case_file": str(st.case_file),
             "inputs": str(st.input_dir), "attrs": st.attrs,
             "input_mib": sum(f.stat().st_size for f in st.input_dir.glob("*.npy")) / 2**20}
            for st in steps]


def _golden_seconds(job: dict[str, Any]) -> float:
    """Seconds of the job's golden: read every input .npy, compute every output with the
    operator's golden.py, write them; imports and the tiling's import before the clock."""
    import ml_dtypes
    import numpy as np

    from aicore_sim.ops.registry import get_op
    from aicore_sim.sim.platform import load_platform

    bf16 = np.dtype(ml_dtypes.bfloat16)
    op, attrs = job["op"], job["attrs"]
    doc = json.loads(Path(job["case_file"]).read_text())
    platform = load_platform(doc["platform"])
    model = get_op(op)
    if op == "moe_token_permute_with_ep":
        from op_models.moe_token_permute_with_ep.golden import golden
    elif op == "moe_token_unpermute_with_ep":
        from op_models.moe_token_unpermute_with_ep.golden import golden
    elif op == "moe_token_unpermute_with_ep_grad":
        from op_models.moe_token_unpermute_with_ep_grad.golden import golden, normalise_range
    else:
        from op_models.moe_token_permute_with_ep_grad.golden import golden

    t0 = time.perf_counter()
    ins = {}
    for name, spec in doc["inputs"].items():
        if spec is None:
            ins[name] = None
            continue
        a = np.load(Path(job["inputs"]) / f"{name}.npy")
        ins[name] = a.view(bf16) if a.dtype.kind == "V" else a
    s, e = attrs["range"]
    if op == "moe_token_permute_with_ep":
        g = golden(ins["tokens"], ins["indices"], ins["probs"], s, e)
        outs = {k: g[k] for k in ("permute_tokens", "sorted_indices", "permute_probs")}
    elif op == "moe_token_unpermute_with_ep":
        outs = {"unpermuted_tokens": golden(ins["permuted_tokens"], ins["sorted_indices"],
                                            ins["probs"], attrs["num_topk"], s, e)}
    elif op == "moe_token_unpermute_with_ep_grad":
        # the golden reduces probs_grad per hidden chunk of the tiling (hiddenSizeAlign)
        specs = {k: None if v is None else (v.shape, v.dtype) for k, v in ins.items()}
        chunk = model.tiling(specs, attrs, platform)["tiling_data"]["hiddenSizeAlign"]
        start, end, num_out = normalise_range(attrs["range"], ins["sorted_indices"].size)
        pg, prg = golden(ins["unpermuted_tokens_grad"], ins["sorted_indices"],
                         ins["permuted_tokens"], ins["probs"], start=start, end=end,
                         num_out_tokens=num_out, hidden_chunk=chunk)
        outs = {"permuted_tokens_grad": pg, "probs_grad": prg}
    else:
        outs = golden(ins["permuted_tokens_output_grad"], ins["sorted_indices"],
                      ins["permuted_probs_output_grad"], attrs["num_topk"], s, e)
    with tempfile.TemporaryDirectory(dir=job["folder"]) as d:
        for name, arr in outs.items():
            if arr is not None:
                np.save(Path(d) / f"{name}.npy", arr)
        elapsed = time.perf_counter() - t0
    return elapsed


# ---------------------------------------------------------------------------------------------
# In this (small) driver: the timed command
# ---------------------------------------------------------------------------------------------


def _command() -> list[str]:
    here = Path(sys.executable).with_name("aicore-sim")
    if here.exists():
        return [str(here)]
    found = shutil.which("aicore-sim")
    return [found] if found else [sys.executable, "-m", "aicore_sim"]


def run_command(job: dict[str, Any], mode: str = "timed") -> dict[str, Any]:
    """``aicore-sim run`` on the job as a subprocess: wall, peak RSS (wait4), summary.json.
    A job without a case file runs the bundled case ``job["case"]``."""
    out = Path(tempfile.mkdtemp(prefix="bench-run-", dir=job["folder"]))
    shutil.rmtree(out)
    what = ["--case", job["case"]] if "case" in job else \
        [job["case_file"], "--inputs", job["inputs"]]
    cmd = [*_command(), "run", *what, "--mode", mode, "--out", str(out), "--no-plot"]
    os.sync()  # the previous run's files go to disk now, not as writeback during this one
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=so, stderr=se)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read().decode(), se.read().decode()
    summary = json.loads((out / "summary.json").read_text()) if code == 0 else {}
    shutil.rmtree(out, ignore_errors=True)
    golds = summary.get("golden") or {}
    exact_lines = [x for x in stdout.splitlines() if x.startswith("golden ")]
    exact = (code == 0 and bool(golds) and all(g.get("exact") for g in golds.values())
             and len(exact_lines) == len(golds) and all(": exact (" in x for x in exact_lines))
    return {"wall": wall, "peak_mib": usage.ru_maxrss / 1024, "code": code, "stderr": stderr,
            "summary": summary, "exact": exact}


def _shape(job: dict[str, Any]) -> str:
    """The routing's figures, read back from the first (permute) job's case file."""
    doc = json.loads(Path(job["case_file"]).read_text())
    (n, h), (_, k) = doc["inputs"]["tokens"]["shape"], doc["inputs"]["indices"]["shape"]
    s, e = doc["attrs"]["range"]
    return (f"{n} tokens, top-{k} of 256 experts, H {h}, EP 8 rank 0: permuted rows [{s}, {e}) "
            f"of {n * k}")


def _report(rows: list[dict[str, Any]], size: str, routing: str, floor: dict[str, Any],
            note: str, repeat: int) -> str:
    met = [r for r in rows if r["ratio"] <= TARGET]
    lines = [
        "# Benchmark: the EP token path of a DeepSeek-V3 layer, four kernels through "
        "`aicore-sim run`",
        "",
        f"Command: `python benchmarks/ep_token_path.py --size {size} --repeat {repeat}`. The "
        "four jobs are "
        f"those of `examples/ep_token_path.py --size {size}`: one routing ({routing}), "
        "each kernel's inputs the previous kernels' outputs. A first pass of that chain in a fresh "
        "process writes the case files and `--inputs` folders; then per kernel, one at a time, "
        "`aicore-sim run CASE.json --inputs DIR --mode timed --no-plot` (default `--jobs` and "
        "`--trace full`) is started as a subprocess: its wall time includes the interpreter "
        "start, the imports, reading the inputs and writing the run folder; peak RSS is "
        "wait4's (the command and the record worker it forks). The golden is the same job in "
        "numpy in a fresh process, timed inside it (imports excluded): read the inputs from "
        "the same `.npy` files, compute every output with the operator's "
        "`op_models/<op>/golden.py` (vectorised), write them. `exact`: every output of the "
        "timed run equal to its golden bit for bit (the command's own comparison). "
        f"{repeat} interleaved rounds: wall and golden are the medians of their rounds (range "
        "in brackets), the ratio is of the medians, the phases those of the median run, the "
        "peak the largest.",
        "",
        f"| kernel | instructions | inputs MiB | wall s | golden s | ratio (≤ {TARGET:g}x) "
        "| peak RSS MiB | makespan cycles | makespan µs | exact |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        s = r["summary"]
        lines.append(
            f"| {r['op']} | {s.get('instructions', 0):,} | {r['input_mib']:.0f} "
            f"| {r['wall']:.2f} ({r['wall_range'][0]:.2f}–{r['wall_range'][1]:.2f}) "
            f"| {r['golden']:.3f} ({r['golden_range'][0]:.3f}–{r['golden_range'][1]:.3f}) "
            f"| {r['ratio']:.1f}x "
            f"{'met' if r['ratio'] <= TARGET else 'not met'} | {r['peak_mib']:.0f} "
            f"| {s.get('makespan_cycles', 0):,} | {s.get('makespan_us', 0):.1f} "
            f"| {'yes' if r['exact'] else 'NO'} |")
    lines += [
        "",
        f"{len(met)} of {len(rows)} kernels within {TARGET:g}x of their golden"
        + (f" ({', '.join(r['op'] for r in met)})" if met else "") + ".",
        "",
        f"The command's fixed cost, measured in the same run: `aicore-sim run --case "
        f"{floor['case']} --mode timed --no-plot` (32 tokens, H 64: interpreter start, imports, "
        f"a 1,728-instruction simulation, the golden, the run folder with its trace) took "
        f"{floor['wall']:.2f} s (peak RSS {floor['peak_mib']:.0f} MiB). A kernel whose golden "
        f"takes less than a fifth of that cannot meet {TARGET:g}x through the command, whatever "
        "the simulation costs.",
        "",
        "Phases of each timed run (the command's own figures from `summary.json`, seconds):",
        "",
    ]
    for r in rows:
        ph = r["summary"].get("phases_seconds", {})
        lines.append(f"* {r['op']}: " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()))
    lines += ["", machine_line()]
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=("deepseek", "tiny"), default="deepseek")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--note", default="", help="a paragraph appended to the report")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds of every command and golden (default 3): each figure is the "
                         "median of its rounds, the range beside it")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="aicore-bench-ep-") as tmp:
        print(f"first pass of the chain ({args.size}) ...", flush=True)
        jobs = _in_fresh_process(_prepare, args.size, str(Path(tmp) / "chain"))
        routing = _shape(jobs[0])  # read while the chain's folder exists
        runs: list[list[dict[str, Any]]] = [[] for _ in jobs]
        golds: list[list[float]] = [[] for _ in jobs]
        for rnd in range(args.repeat):  # interleaved rounds: a slow spell hits every kernel
            for k, job in enumerate(jobs):
                r = run_command(job)
                if r["code"] != 0:
                    print(f"{job['op']}: exit {r['code']}: {r['stderr'].strip()}",
                          file=sys.stderr)
                    return 1
                gold = _in_fresh_process(_golden_seconds, job)
                runs[k].append(r)
                golds[k].append(gold)
                print(f"round {rnd + 1}: {job['op']:<34} {r['wall']:6.2f} s, golden "
                      f"{gold:5.4f} s, exact {r['exact']}", flush=True)
        for job, rs, gs in zip(jobs, runs, golds):
            by_wall = sorted(rs, key=lambda r: r["wall"])
            r = by_wall[len(rs) // 2]  # the median run (its phases and summary)
            gold = sorted(gs)[len(gs) // 2]
            rows.append({**job, **r, "golden": gold, "ratio": r["wall"] / gold,
                         "wall_range": (by_wall[0]["wall"], by_wall[-1]["wall"]),
                         "golden_range": (min(gs), max(gs)),
                         "peak_mib": max(x["peak_mib"] for x in rs),
                         "exact": all(x["exact"] for x in rs)})
        floor = {"case": "permute_ep_path_tiny", "folder": tmp}
        floor.update(run_command(floor))
        print(f"fixed cost: {floor['case']} {floor['wall']:.2f} s", flush=True)
    text = _report(rows, args.size, routing, floor, args.note, args.repeat)
    print(text)
    if not args.no_report:
        out = REPO / "reports" / "bench_ep_token_path.md"
        tmp_out = out.with_suffix(".tmp")
        tmp_out.write_text(text)
        os.replace(tmp_out, out)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
