"""Count what source attribution costs the record pass, in machine instructions (callgrind).

This checks one internal budget (attribution under 5 % of the record pass), so it counts that
phase inside one process; what users get from the command is measured by
``op_end_to_end.py`` (the ``aicore-sim`` command as a subprocess, beside the numpy golden).

Wall and CPU times on a shared 2-CPU machine vary by more than the budget being checked (5 %
of the record pass), so this counts instructions instead: ``valgrind --tool=callgrind`` runs
one process that builds P1's shape cut to ``--tokens`` tokens and records it, exiting right
after the record pass ("record") or right before it ("setup"); the record pass is the
difference. Each count is taken twice: *with* attribution (the code as it is) and *without*
(``CoreRecorder.emit`` with its source lines cut out, and ``calls()`` giving no site for any
position, so the step making site ids has nothing to look up).

Counts are exact for one build, but two builds differing only in code that is not run differ
by up to about 0.25 %: CPython's type attribute cache is indexed by object addresses, and any
change moves them. So every figure is taken on several address layouts (``--pads``: a padding
allocation of that many strings before the imports) and reported per layout.

Usage: ``python benchmarks/source_attribution_count.py [--tokens 1024] [--pads 0 1 2]
[--jobs 1] [--mode timing-only]``; about 4 minutes per count at 1024 tokens, two at a time.
Needs valgrind. Results: reports/source_attribution.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST, LAST = "    f = _getframe(depth)\n", "    self.sites.append(f.f_lasti)\n"


def _child(variant: str, stage: str, tokens: int, mode: str, jobs: int) -> None:
    """One counted process (run under callgrind by the parent)."""
    import inspect
    import textwrap

    import numpy as np

    from aicore_sim.sim import program

    if variant == "without":
        src = textwrap.dedent(inspect.getsource(program.CoreRecorder.emit))
        if FIRST not in src or LAST not in src:
            sys.exit("CoreRecorder.emit changed: the source lines to cut are not found")
        cut = src[:src.index(FIRST)] + src[src.index(LAST) + len(LAST):]
        ns: dict = {}
        exec(compile(cut, "emit_without_sources", "exec"), vars(program), ns)

        def calls(self):
            none = np.full(len(self.stream), -1, np.int64)
            return none, none.copy()

        program.CoreRecorder.emit = ns["emit"]
        program.CoreRecorder.calls = calls

    import aicore_sim.sim.recording
    from aicore_sim.ops.opmodel import call
    from aicore_sim.sim.platform import load_platform
    from op_models.moe_token_unpermute_with_ep_grad import cases
    from op_models.moe_token_unpermute_with_ep_grad.model import MODEL

    case = cases.get_case("p1_deepseek_v3").with_(name="counted", tokens_num=tokens)
    inputs = MODEL.case_inputs(case, 1)
    record = program.record

    def stop(*a, **k):
        if stage == "setup":
            raise SystemExit
        p = record(*a, **k)
        known = sum(int((s >= 0).sum()) for s in p.sources.per_core)
        print(f"instructions {p.instruction_count} with_site {known}", flush=True)
        raise SystemExit

    aicore_sim.sim.recording.program.record = stop
    try:
        call(MODEL, inputs, MODEL.case_specs(case)[1], load_platform("ascend910b1"), mode=mode,
             jobs=jobs)
    except SystemExit:
        pass


def _count(pad: int, variant: str, stage: str, args: argparse.Namespace
           ) -> tuple[list[int], str]:
    """Instructions of each process of one counted run (the record's forked children
    included), and what it printed."""
    out = Path(tempfile.mkdtemp(prefix="cg-"))
    env = dict(os.environ, PAD=str(pad), PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p",
           sys.executable, __file__, "--child", variant, stage, str(args.tokens), args.mode,
           str(args.jobs)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    counts = [int(m.group(1).replace(",", "")) for m in
              re.finditer(r"Collected : ([\d,]+)", run.stderr)]
    shutil.rmtree(out, ignore_errors=True)
    if run.returncode or not counts:
        sys.exit(f"counted run failed ({variant} {stage} pad {pad}): {run.stderr[-400:]}")
    return counts, run.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--pads", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=1, help="record processes (the command's "
                    "default is the usable CPUs)")
    ap.add_argument("--mode", default="timing-only", choices=["timing-only", "timed"])
    args = ap.parse_args()
    if args.child:
        variant, stage, tokens, mode, jobs = args.child
        padding = [("x" * (7 * k)) + str(k) for k in range(int(os.environ["PAD"]) * 97)]
        _child(variant, stage, int(tokens), mode, int(jobs))
        del padding  # held until here: it moves the addresses of everything allocated after it
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind not found: this benchmark counts instructions with callgrind")
    jobs = [(pad, v, s) for pad in args.pads for v in ("with", "without")
            for s in ("record", "setup")]
    with ThreadPoolExecutor(2) as pool:  # the machine has 2 CPUs; counts do not depend on it
        done = dict(zip(jobs, pool.map(lambda j: _count(*j, args), jobs)))
    print(f"P1's shape at {args.tokens} tokens, {args.mode}, --jobs {args.jobs}\n")
    print("| layout | instructions | without (Ir) | with (Ir) | cost | of without | of with |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for pad in args.pads:
        rec = {}
        for v in ("with", "without"):
            (setup,), _ = done[(pad, v, "setup")]
            counts, _ = done[(pad, v, "record")]
            # a forked child's count starts from its parent's at the fork, which is the
            # setup's (the fork comes first thing in the record pass)
            rec[v] = sum(counts) - len(counts) * setup
        cost = rec["with"] - rec["without"]
        n, with_site = map(int, re.findall(r"\d+", done[(pad, "with", "record")][1]))
        if with_site != n:
            sys.exit(f"layout {pad}: {n - with_site} of {n} instructions have no source")
        print(f"| {pad} | {n:,} | {rec['without']:,} | "
              f"{rec['with']:,} | {cost:,} | {100 * cost / rec['without']:+.2f} % | "
              f"{100 * cost / rec['with']:.2f} % |")

if __name__ == "__main__":
    main()
