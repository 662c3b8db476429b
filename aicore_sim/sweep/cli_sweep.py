"""The ``aicore-sim sweep | search | report`` subcommands (step: the command line).

Parsers and handlers live here; ``aicore_sim/cli/parser.py`` only hooks them in. Exit codes
follow the rest of the CLI: 0 done, 2 a bad spec, option or case (one line naming the field), 1 a
failure.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicore_sim.cli.common import OP_SRC_HELP, host_tiling_of, op_source
from aicore_sim.cli.options import (
    MAX_POINTS,
    budget,
    count,
    nonempty,
    nonneg_int,
    scheduler,
    workers,
)
from aicore_sim.util.background import usable_cpus
from aicore_sim.util.claim import claim
from aicore_sim.util.staging import Interrupted, Terminated

if TYPE_CHECKING:
    from aicore_sim.sweep.rows import Tally

_SWEEP_EXAMPLES = """\
examples:
  aicore-sim sweep examples/sweeps/tiny_smoke.toml --out reports/tiny_smoke
  aicore-sim sweep examples/sweeps/p1_tiling.toml --workers 2 --verify
  aicore-sim sweep SPEC --out DIR --resume               continue a killed sweep
  aicore-sim sweep SPEC --scheduler local:2              a new Dask LocalCluster of 2 workers
  aicore-sim sweep SPEC --scheduler tcp://host:8786      an existing Dask cluster

The spec format (TOML or JSON) is documented in aicore_sim/sweep/spec.py and examples/sweeps/.
Writes into --out: results.jsonl + results.csv (one row per point, appended as points finish),
verify.jsonl (--verify), spec.json, report.md, heatmap.png, pareto.png, bound_by.png.
Exit 1 when a point failed (status error), no point gave figures (every one invalid or
infeasible), or a --verify check failed.
"""

_SEARCH_EXAMPLES = """\
examples:
  aicore-sim search p1_deepseek_v3 --tokens 512 --budget 40
  aicore-sim search mixtral --platform ascend950pr_9589 --budget 60 --workers 2
  aicore-sim search my_case.json --platform ascend910b3

Runs the op's named strategies (upstream first) and up to --budget points of the legal tiling
space (whole grid if it fits, else random half + neighbours of the best), verifies the best
against the golden and prints its speed-up over upstream.
"""

_REPORT_EXAMPLES = """\
examples:
  aicore-sim report reports/tiny_smoke
  aicore-sim report reports/p1/results.jsonl --out reports/p1_again --heatmap strategy,hbm_gbps
"""


def _usage(msg: str) -> Exception:
    from aicore_sim.sim.errors import UsageError

    return UsageError(msg)




def _slug(text: str) -> str:
    """The spec's name as one folder name under reports/ (no separators, no ``..``, no hidden
    name: a name like ``..`` must not put the results beside the user's own files)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).lstrip(".").strip("-") or "sweep"


def cmd_sweep(args: argparse.Namespace) -> int:
    from aicore_sim.sweep.run import make_executor, run_sweep
    from aicore_sim.sweep.spec import SpecError, load_spec

    try:
        spec = load_spec(args.spec)
    except SpecError as e:  # the file's own errors name it already
        msg = str(e)
        raise _usage(msg if msg.startswith(f"{args.spec}: ") else f"{args.spec}: {msg}"
                     ) from None
    from aicore_sim.sweep.worker import check_platforms

    try:
        check_platforms(spec.axes)
    except ValueError as e:
        raise _usage(f"{args.spec}: {e}") from None
    if args.scheduler is not None:  # refused before the header line, not after it
        import importlib.util

        if importlib.util.find_spec("distributed") is None:
            raise _usage("--scheduler needs dask[distributed] (pip install "
                         "'dask[distributed]')")
    n = spec.size  # counted, not built: the product of the axes' lengths
    if n > args.max_points:
        raise _usage(f"{args.spec}: {n} points, above the limit of {args.max_points} (rule "
                     "max_points); cut an axis, or raise the limit with --max-points N")
    out = Path(args.out) if args.out else Path("reports") / _slug(spec.name)
    claim(out, "--out")  # checked writable and locked against a second sweep, before the work
    from aicore_sim.sweep.run import check_out

    try:
        check_out(spec, out, args.resume)  # before a line is printed or a file written
    except SpecError as e:
        raise _usage(str(e)) from None
    print(f"sweep {spec.name}: {n} points, mode {spec.mode}, results in {out}/",
          file=sys.stderr)
    try:
        with make_executor(args.workers, args.scheduler, spec.op) as ex:
            res = run_sweep(spec, out, ex, resume=args.resume, verify=args.verify,
                            progress=not args.no_progress, report=not args.no_report,
                            max_batch=args.batch, keep_rows=False)
    except SpecError as e:
        raise _usage(str(e)) from None
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted (SIGINT); kept {_kept(out)} rows for --resume",
                          130) from None
    except Terminated as e:
        if e.signum == getattr(signal, "SIGXCPU", None):  # the machine's limit: exit 1
            raise Interrupted(f"error: environment: the CPU-time limit (RLIMIT_CPU) was "
                              f"reached; kept {_kept(out)} rows for --resume", 1) from None
        raise Interrupted(f"terminated ({e}); kept {_kept(out)} rows for --resume",
                          128 + e.signum) from None
    ran = res.ran  # counted as they were written: the rows themselves are not kept
    rate = ran.n / res.wall_s * 60 if res.wall_s else 0.0
    print(f"{ran.n} points run ({', '.join(f'{v} {k}' for k, v in ran.counts.items())}), "
          f"{res.skipped} skipped as already done, {res.wall_s:.1f} s ({rate:.0f} points/min)")
    for v in res.verified:
        print(f"verify {v.get('label') or v['key']} [{v['key'][:8]}]: {v['status']} "
              f"({v.get('detail')})")
    if res.report is not None:
        print(f"report: {res.report}")
    bad = any(v["status"] != "verified" for v in res.verified)
    # the exit code follows every point's final state, not only the points this run ran (a
    # --resume after a failure)
    return 1 if _points_failed(res.tally) or bad else 0


def _kept(out: Path) -> int:
    """Rows a stopped sweep left in its folder (whole lines of results.jsonl)."""
    try:
        text = (out / "results.jsonl").read_text(encoding="utf-8")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if line.strip().endswith("}"))


def _points_failed(tally: Tally) -> bool:
    """Print (one line on stdout, after the tally and the verify lines: stderr holds the
    sweep's header line) and return whether the points run are no result: a point ended in
    ``error`` (a simulation failure, not an infeasible or invalid tiling), or points ran and
    not one gave figures (``tally``: every point's last row)."""
    counts = tally.counts
    e = tally.first_error
    if e is not None:
        print(f"check failed: {counts['error']} of {tally.n} points failed (status error), "
              f"first {e.get('key')}: {' '.join(str(e.get('error')).split())}")
        return True
    if tally.n and not counts.get("ok"):
        print(f"check failed: no point gave figures "
              f"({', '.join(f'{v} {k}' for k, v in counts.items())}); see the rule and error "
              "columns of results.jsonl")
        return True
    return False


def cmd_search(args: argparse.Namespace) -> int:
    from aicore_sim.sweep.run import make_executor
    from aicore_sim.sweep.search import search
    from aicore_sim.sweep.spec import SpecError

    case_axes: dict[str, Any] = {}
    if args.tokens is not None:
        case_axes["tokens_num"] = args.tokens
    from aicore_sim.sweep.ops import get_op, op_for_case

    args.op = args.op or op_for_case(args.case)
    try:
        op = get_op(args.op)
    except ValueError as e:
        raise _usage(f"--op {args.op}: {e}") from None
    from aicore_sim.sweep.points import case_file_platform

    if args.platform is None:  # the case file's own platform, else the default preset
        args.platform = case_file_platform(args.case) or "ascend910b1"
    try:
        from aicore_sim.sweep.worker import build_platform

        platform = build_platform({"platform": args.platform})
    except (KeyError, ValueError, OSError) as e:
        raise _usage(f"--platform {args.platform}: {e.args[0] if e.args else e}") from None
    try:
        case = op.resolve_case(args.case, case_axes)
    except (KeyError, ValueError, OSError) as e:
        raise _usage(f"CASE {args.case}: {e.args[0] if e.args else e}") from None
    op.check_resources(case, platform)  # refuse up front what cannot fit in memory
    host = op_source(args)  # --op-src: checked before any work
    label = f"search-{_slug(Path(args.case).stem)}-{_slug(Path(args.platform).stem)}"
    if args.tokens is not None:
        label += f"-n{args.tokens}"
    out = Path(args.out) if args.out else Path("reports") / label
    claim(out, "--out")
    try:
        with make_executor(args.workers, args.scheduler, args.op) as ex:
            with host_tiling_of(args):  # --op-src: the op's own host tiling C++
                res = search(args.case, ex, out, platform=args.platform, budget=args.budget,
                             op=args.op, case_axes=case_axes, seed=args.seed,
                             verify=not args.no_verify, progress=not args.no_progress,
                             op_source=None if host is None else str(host.op_dir))
    except SpecError as e:
        raise _usage(str(e)) from None
    print(res.text())
    if res.report is not None:
        print(f"report: {res.report}")
    if res.best is None:
        counts: dict[str, int] = {}
        for r in res.rows:
            counts[r.get("status", "?")] = counts.get(r.get("status", "?"), 0) + 1
        errors = [r for r in res.rows if r.get("status") == "error"]
        first = (f", first {errors[0].get('key')}: {' '.join(str(errors[0].get('error')).split())}"
                 if errors else "")
        print(f"check failed: no point of the search gave figures "
              f"({', '.join(f'{v} {k}' for k, v in counts.items()) or 'none ran'}){first}")
        return 1
    if res.verified is None or res.verified["status"] == "verified":
        return 0
    detail = " ".join(str(res.verified.get("detail")).split())
    print(f"check failed: the best point's numerics were not verified "
          f"({res.verified['status']}: {detail})")
    return 1


def cmd_report(args: argparse.Namespace) -> int:
    from aicore_sim.sweep.report import write_report

    src = Path(args.results)
    folder = src.parent if src.is_file() else src
    if not (folder / "results.jsonl").exists():
        raise _usage(f"RESULTS {args.results}: no results.jsonl there")
    from aicore_sim.sweep.report import summarise_groups
    from aicore_sim.sweep.run import read_rows

    rows = read_rows(folder)
    if not rows:
        raise _usage(f"RESULTS {folder / 'results.jsonl'}: no line is a result row (the file "
                     "is empty, corrupt or not a sweep's)")
    try:  # the rows must carry what the report reads, checked before a file is written
        summarise_groups(list({r["key"]: r for r in rows}.values()), {})
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _usage(f"RESULTS {folder / 'results.jsonl'}: not a sweep's result rows "
                     f"({type(e).__name__}: {e})") from None
    claim(Path(args.out) if args.out else folder, "--out")
    heat = None
    if args.heatmap:
        heat = [h.strip() for h in args.heatmap.split(",")]
        if len(heat) != 2:
            raise _usage(f"--heatmap {args.heatmap}: give two axes, e.g. "
                         "indicesReserveNum,inputReserveNum")
    path = write_report(folder, args.out, heatmap=heat)
    print(f"report: {path}")
    return 0


def _exec_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=workers, default=min(2, usable_cpus()), metavar="N",
                   help="local worker processes (default 2, or 1 on a one-CPU machine; 0 = run "
                        "in this process)")
    p.add_argument("--scheduler", type=scheduler, metavar="ADDRESS",
                   help="run on a Dask cluster: a scheduler address (tcp://host:8786) or "
                        "local:N for a new LocalCluster of N >= 1 workers")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_parsers(sub: Any) -> None:
    """Add ``sweep``, ``search`` and ``report`` to the CLI's subparsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    s = sub.add_parser("sweep", help="run a design-space sweep (tilings, platforms, cases)",
                       formatter_class=fmt, epilog=_SWEEP_EXAMPLES,
                       description="Run every point of a sweep spec (timing-only by default).")
    s.add_argument("spec", type=nonempty, metavar="SPEC", help="sweep file (.toml or .json)")
    s.add_argument("--out", type=nonempty, metavar="DIR",
                   help="results folder (default reports/<spec name>)")
    _exec_opts(s)
    s.add_argument("--verify", action="store_true",
                   help="re-run the best points of every group with numerics; check vs golden")
    s.add_argument("--resume", action="store_true",
                   help="skip points already in DIR/results.jsonl")
    s.add_argument("--batch", type=count, default=32, metavar="N",
                   help="max points per task (points sharing a recorded program), an integer "
                        ">= 1 (default 32)")
    s.add_argument("--max-points", type=count, default=MAX_POINTS, metavar="N",
                   help="refuse (exit 2, before any work) a spec of more than N >= 1 points "
                        f"(default {MAX_POINTS}; counted as the product of the axes' lengths)")
    s.add_argument("--no-report", action="store_true", help="skip the report at the end")
    s.set_defaults(func=cmd_sweep)

    q = sub.add_parser("search", help="find the fastest legal tiling of one case",
                       formatter_class=fmt, epilog=_SEARCH_EXAMPLES,
                       description="Search the tiling space of one case; verify the best.")
    q.add_argument("case", type=nonempty, metavar="CASE", help="bundled case name or case file")
    q.add_argument("--op-src", type=nonempty, metavar="DIR", help=OP_SRC_HELP)
    q.add_argument("--platform", type=nonempty, default=None, metavar="P",
                   help="preset name, preset TOML path or a JSON object of fields, as for "
                        "'run' (default: the case file's platform, else ascend910b1)")
    q.add_argument("--budget", type=budget, default=40, metavar="N",
                   help=f"max points to simulate, 1 to {MAX_POINTS} (default 40)")
    q.add_argument("--tokens", type=count, metavar="N", help="cut the case to N >= 1 tokens")
    q.add_argument("--out", type=nonempty, metavar="DIR",
                   help="results folder (default reports/search-<case>-<platform>)")
    q.add_argument("--seed", type=nonneg_int, help="input seed (default: the case's)")
    q.add_argument("--op", type=nonempty, metavar="NAME",
                   help="the operator whose tiling space is searched (default: the op of CASE)")
    q.add_argument("--no-verify", action="store_true", help="skip the numerics check")
    _exec_opts(q)
    q.set_defaults(func=cmd_search)

    r = sub.add_parser("report", help="markdown + PNG report of sweep results",
                       formatter_class=fmt, epilog=_REPORT_EXAMPLES,
                       description="Write report.md and charts from a results folder.")
    r.add_argument("results", type=nonempty, metavar="RESULTS",
                   help="results folder or its results.jsonl")
    r.add_argument("--out", type=nonempty, metavar="DIR",
                   help="where to write (default: the results folder)")
    r.add_argument("--heatmap", type=nonempty, metavar="X,Y", help="two axes for the heatmap")
    r.set_defaults(func=cmd_report)
