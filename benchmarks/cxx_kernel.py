"""Benchmark: a bundled op's own C++ kernel (``run --kernel-src``) against its Python port.

Each row is the command a user types, ``aicore-sim run CASE.json --inputs DIR --mode M``, as
a subprocess, once with the Python port and once with ``--kernel-src
<ops-transformer>/moe/moe_token_unpermute_with_ep_grad/op_kernel`` (the library already in the
cache), in interleaved rounds: wall seconds (median and range), peak RSS, the record and replay
phases from summary.json, and the numpy golden of the same job timed in the same run. Also:
the first compile of every dtype variant of the seed kernel into an empty cache (in parallel,
one per CPU), and what a cached build costs the command (finding the library: headers and
sources hashed, tiling header read). Results go to reports/bench_cxx_kernel.md.

    python benchmarks/cxx_kernel.py --ops-transformer DIR [--cases p1_deepseek_v3]
                                    [--modes timed timing-only] [--repeat 3] [--no-report]

Needs an ops-transformer checkout (also ``$AICORE_SIM_OPS_TRANSFORMER``) and a C++ compiler.
Not part of the test suite (minutes, and the figures need a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_bench import golden_job, machine_line, make_job, run_cli  # noqa: E402

from aicore_sim.cfront import KernelSource, build  # noqa: E402
from aicore_sim.sim.platform import load_platform  # noqa: E402
from op_models.moe_token_unpermute_with_ep_grad import cases  # noqa: E402

OP = "moe_token_unpermute_with_ep_grad"
ENTRY = OP
DTYPES = ("bfloat16", "float16", "float32")


def _variants(src: KernelSource) -> list[build.Variant]:
    """Every dtype variant of the seed kernel: tokens bf16 / fp16 / fp32, probs none or one
    of the three."""
    plat = load_platform("ascend910b1")
    out = []
    for tok in DTYPES:
        for prb in (None, *DTYPES):
            v, _ = src.variant(ENTRY, plat, {"DTYPE_PERMUTED_TOKENS": tok, "DTYPE_PROBS": prb})
            out.append(v)
    return out


def first_compile(src: KernelSource) -> tuple[int, float]:
    """(variants, seconds) of compiling every variant into an empty cache."""
    with tempfile.TemporaryDirectory(prefix="aicore-cxx-cache-") as cache:
        os.environ[build.CACHE_ENV] = cache
        try:
            variants = _variants(src)
            t0 = time.perf_counter()
            build.shared_objects(variants)
            return len(variants), time.perf_counter() - t0
        finally:
            del os.environ[build.CACHE_ENV]


def cached_lookup(src: KernelSource, repeat: int = 20) -> float:
    """Median seconds of finding one variant's library in a warm cache."""
    plat = load_platform("ascend910b1")
    dt = {"DTYPE_PERMUTED_TOKENS": "bfloat16", "DTYPE_PROBS": "float32"}
    build.shared_object(src.variant(ENTRY, plat, dt)[0])  # warm
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        build.shared_object(src.variant(ENTRY, plat, dt)[0])
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops-transformer", default=os.environ.get("AICORE_SIM_OPS_TRANSFORMER"))
    ap.add_argument("--cases", nargs="+", default=["p1_deepseek_v3"])
    ap.add_argument("--modes", nargs="+", default=["timed", "timing-only"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    if not args.ops_transformer:
        ap.error("--ops-transformer DIR (or $AICORE_SIM_OPS_TRANSFORMER) is required")
    kdir = Path(args.ops_transformer) / "moe" / OP / "op_kernel"
    src = KernelSource.of(kdir)
    n, secs = first_compile(src)
    print(f"first compile of {n} variants: {secs:.1f} s", flush=True)
    lookup = cached_lookup(src)
    print(f"cached build lookup: {lookup * 1000:.1f} ms", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aicore-bench-") as tmp:
        for name in args.cases:
            job = make_job(cases.get_case(name), Path(tmp))
            gold = golden_job(job)
            print(f"{name}: numpy golden {gold:.2f} s", flush=True)
            configs = [(m, c) for m in args.modes for c in (False, True)]
            runs: dict[tuple, list] = {c: [] for c in configs}
            for _ in range(args.repeat):
                for mode, cxx in configs:
                    extra = ["--verbose"] + (["--kernel-src", str(kdir)] if cxx else [])
                    runs[(mode, cxx)].append(run_cli(job, mode, False, extra))
            for (mode, cxx), got in runs.items():
                walls = [g["wall"] for g in got]
                ph = got[0]["summary"].get("wall_seconds", {})
                rows.append({"case": name, "mode": mode, "kernel": "C++" if cxx else "Python",
                             "wall": statistics.median(walls), "lo": min(walls),
                             "hi": max(walls), "rss": max(g["peak_mib"] for g in got) * 2**20,
                             "record": ph.get("record"), "replay": ph.get("replay"),
                             "makespan": got[0]["summary"].get("makespan_cycles"),
                             "golden": gold})
                r = rows[-1]
                print(f"  {mode:12s} {r['kernel']:6s} {r['wall']:.2f} s "
                      f"({r['lo']:.2f}-{r['hi']:.2f}), peak {r['rss'] / 2**30:.2f} GiB, "
                      f"makespan {r['makespan']}", flush=True)
    if not args.no_report:
        out = Path(__file__).resolve().parents[1] / "reports" / "bench_cxx_kernel.md"
        out.write_text(_report(rows, n, secs, lookup, args.repeat))
        print(f"wrote {out}")


def _report(rows: list[dict], n: int, secs: float, lookup: float, repeat: int) -> str:
    lines = ["# The seed op's own C++ kernel against its Python port, through the command", "",
             machine_line(), "",
             f"`python benchmarks/cxx_kernel.py --ops-transformer DIR --repeat {repeat}`: "
             "each row the median of its runs (range in brackets), rounds interleaved; "
             "`--no-plot`; the C++ library already in the cache.", "",
             f"- First compile of the seed kernel's {n} dtype variants into an empty cache "
             f"(in parallel, one per CPU): **{secs:.1f} s**.",
             f"- A cached build (sources and shim hashed, tiling header read, library found): "
             f"**{lookup * 1000:.1f} ms**.", "",
             "| case | mode | kernel | wall s | C++ / port | peak RSS GiB | record s | replay s "
             "| makespan cycles | numpy golden s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    port = {(r["case"], r["mode"]): r["wall"] for r in rows if r["kernel"] == "Python"}
    for r in rows:
        ratio = r["wall"] / port[(r["case"], r["mode"])]
        lines.append(f"| {r['case']} | {r['mode']} | {r['kernel']} | {r['wall']:.2f} "
                     f"({r['lo']:.2f}-{r['hi']:.2f}) | {ratio:.2f}x | {r['rss'] / 2**30:.2f} | "
                     f"{_seconds(r['record'])} | {_seconds(r['replay'])} | {r['makespan']:,} | "
                     f"{r['golden']:.2f} |")
    return "\n".join(lines) + "\n"


def _seconds(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


if __name__ == "__main__":
    main()
