"""Check: the four MoE ops' upstream C++ kernels against their Python ports, everywhere.

For each op, every bundled case and every case of its equivalence matrix (on the matrix's
own platforms, and its axis combinations again on ``ascend950pr_9589``), bundled cases on
``ascend910b1`` and ``ascend950pr_9589``, in the ``timed`` and ``timing-only`` modes: the launch
through the Python port and through ``<ops-transformer>/moe/<op>/op_kernel`` compiled against
the shim must record equal instruction streams (opcode, operands, buffer names), give the same
makespan and (timed) bit-identical outputs. Prints one line per difference and a table of
counts; writes reports/cxx_equivalence.md.

    python benchmarks/cxx_equivalence.py --ops-transformer DIR [--ops OP ...] [--no-report]

Needs an ops-transformer checkout (also ``$AICORE_SIM_OPS_TRANSFORMER``) and a C++ compiler.
Not part of the test suite (about ten minutes; tests/test_cfront_upstream.py runs a sample).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_bench import machine_line  # noqa: E402

from aicore_sim.cfront import KernelSource  # noqa: E402
from aicore_sim.ops import registry  # noqa: E402
from aicore_sim.sim.platform import load_platform  # noqa: E402
from aicore_sim.sim.program import stream_difference  # noqa: E402
from aicore_sim.verify.matrix import expand, load_matrix  # noqa: E402

OPS = ("moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
       "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad")
PLATFORMS = ("ascend910b1", "ascend950pr_9589")
MODES = ("timed", "timing-only")


def compare(model, case, platform, source: KernelSource, label: str) -> str:
    """``equal``, ``refused`` (the port's own call refuses the case) or what differs."""
    try:
        inputs = model.case_inputs(case)
        _, attrs = model.case_specs(case)
        pc = model.prepare(inputs, attrs, platform)
    except Exception:  # noqa: BLE001 - the operator refuses the case for both
        return "refused"
    verdicts = []
    for mode in MODES:
        port = model.execute(pc, mode=mode)
        cxx = model.execute(pc, mode=mode, kernel_source=source)
        d = stream_difference(port.program.streams, cxx.program.streams)
        if d is not None:
            verdicts.append(f"{mode}: stream differs at core {d[0]} #{d[1]}")
        if port.trace is not None and port.trace.makespan != cxx.trace.makespan:
            verdicts.append(f"{mode}: makespan {port.trace.makespan} vs {cxx.trace.makespan}")
        if mode == "timed":
            for k, a in port.outputs.items():
                b = cxx.outputs.get(k)
                if (a is None) != (b is None) or (a is not None and (
                        a.shape != b.shape or not np.array_equal(a.view(np.uint8),
                                                                 b.view(np.uint8)))):
                    verdicts.append(f"{mode}: output {k} differs")
    if verdicts:
        print(f"  DIFF {label}: {'; '.join(verdicts)}", flush=True)
        return "; ".join(verdicts)
    return "equal"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops-transformer", default=os.environ.get("AICORE_SIM_OPS_TRANSFORMER"))
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    if not args.ops_transformer:
        ap.error("--ops-transformer DIR (or $AICORE_SIM_OPS_TRANSFORMER) is required")
    rows = []
    t_all = time.perf_counter()
    for op in args.ops:
        model = registry.get_op(op)
        source = KernelSource.of(Path(args.ops_transformer) / "moe" / op / "op_kernel")
        groups: dict[str, list[tuple]] = {"bundled cases": [], "matrix": [],
                                          "matrix axes on ascend950pr_9589": []}
        for name, case in model.cases().items():
            for plat in PLATFORMS:
                groups["bundled cases"].append((case, load_platform(plat), f"{name} {plat}"))
        mcs = expand(load_matrix(model.equivalence_matrix))
        seen = set()
        for mc in mcs:
            groups["matrix"].append((model.matrix_case(mc), mc.platform, mc.name))
            key = repr(sorted(mc.axes.items()))
            if key not in seen:
                seen.add(key)
                groups["matrix axes on ascend950pr_9589"].append(
                    (model.matrix_case(mc), load_platform("ascend950pr_9589"),
                     f"{mc.name} on ascend950pr_9589"))
        for group, items in groups.items():
            t0 = time.perf_counter()
            got = [compare(model, c, p, source, f"{op} {label}") for c, p, label in items]
            rows.append({"op": op, "group": group, "cases": len(items),
                         "equal": got.count("equal"), "refused": got.count("refused"),
                         "differ": len(got) - got.count("equal") - got.count("refused"),
                         "wall": time.perf_counter() - t0})
            r = rows[-1]
            print(f"{op:34s} {group:34s} {r['cases']:4d} cases: {r['equal']} equal, "
                  f"{r['differ']} differ, {r['refused']} refused by the op ({r['wall']:.0f} s)",
                  flush=True)
    wall = time.perf_counter() - t_all
    if not args.no_report:
        out = Path(__file__).resolve().parents[1] / "reports" / "cxx_equivalence.md"
        out.write_text(_report(rows, wall))
        print(f"wrote {out}")


def _report(rows: list[dict], wall: float) -> str:
    lines = ["# Upstream C++ kernels against the Python ports", "", machine_line(), "",
             "`python benchmarks/cxx_equivalence.py --ops-transformer DIR` (ops-transformer at "
             "5778144): each case launched through the port and through the op's own "
             "`op_kernel` sources compiled against the shim, in the timed and timing-only "
             "modes; *equal* = the instruction streams equal (opcode, operands, buffer names), "
             "the same makespan in both modes and bit-identical outputs (timed). Bundled cases "
             "run on ascend910b1 and ascend950pr_9589; matrices on their own platforms, then "
             "their axis combinations on ascend950pr_9589.", "",
             "| op | cases from | cases | equal | differ | refused by the op | wall s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['group']} | {r['cases']} | {r['equal']} | "
                     f"{r['differ']} | {r['refused']} | {r['wall']:.0f} |")
    total = sum(r["cases"] for r in rows)
    equal = sum(r["equal"] for r in rows)
    lines += ["", f"In all: {equal} of {total} cases equal in both modes "
              f"({sum(r['differ'] for r in rows)} differ), {wall:.0f} s."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
