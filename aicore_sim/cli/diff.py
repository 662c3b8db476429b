"""``aicore-sim diff``: two run folders (or two points of a sweep) compared (step: the command
line; the comparison is :mod:`aicore_sim.views.rundiff`'s)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aicore_sim.cli.common import add_json_report, subcommand
from aicore_sim.cli.options import nonempty, nonneg_int
from aicore_sim.sim.errors import UsageError

DIFF_EXAMPLES = """\
examples:
  aicore-sim run --out traces/a && aicore-sim run --platform ascend910b4 --out traces/b
  aicore-sim diff traces/a traces/b                 changed figures, hot lines, divergence
  aicore-sim diff traces/a traces/b --json          {"makespan_cycles": {"a", "b", "delta"}, ...}
  aicore-sim diff traces/a traces/b --report traces/ab.md   markdown + traces/ab.png
  aicore-sim diff reports/p1/results.jsonl --points 3f2a 9c01   two sweep points (key prefixes)

Compares makespan, per-pipe busy cycles and utilisation, bound-by, stall causes, bytes, UB
high-water mark, per-core imbalance and hot-line cycles (summary.json), and where each core's
instruction stream first diverges (streams.npz: index and source line). Exit 0 when nothing
differs, 1 when something does, 2 on a bad argument (missing or unreadable folder).
"""


class _DiffArgError(UsageError):
    """A bad argument of ``diff`` (exit 2, like every usage error)."""


def add_parser(sub: Any) -> None:
    """The ``diff`` subcommand."""
    d = subcommand(sub, "diff", "compare two runs (or two sweep points)",
                   "Compare two run folders written by 'aicore-sim run'.", DIFF_EXAMPLES)
    d.add_argument("runs", nargs="+", type=nonempty, metavar="RUN",
                   help="two run folders, or one sweep results.jsonl (or its folder) with "
                        "--points")
    d.add_argument("--points", nargs=2, type=nonempty, metavar=("P1", "P2"),
                   help="keys (or unique key prefixes) of two points of the sweep results")
    add_json_report(d, "print the diff as JSON (every figure as {a, b, delta})",
                    "also write a markdown report and, beside it, FILE.png (paired bars per "
                    "pipe, largest hot-line deltas)", "FILE.md")
    d.add_argument("--lines", type=nonneg_int, default=10, metavar="N",
                   help="hot-line deltas listed (an integer >= 0; default 10)")
    d.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from aicore_sim.views import rundiff

    try:
        if args.points:
            if len(args.runs) != 1:
                raise _DiffArgError("with --points give one sweep results.jsonl (or its folder)")
            a, b = rundiff.sweep_points(args.runs[0], list(args.points))
        else:
            if len(args.runs) != 2:
                raise _DiffArgError(f"expected two run folders, got {len(args.runs)}")
            a, b = rundiff.Run.folder(args.runs[0]), rundiff.Run.folder(args.runs[1])
        d = rundiff.diff_runs(a, b, top_lines=args.lines)
    except (rundiff.RunFolderError, _DiffArgError) as e:
        print(f"aicore-sim: error: {e}", file=sys.stderr)
        return 2
    if args.report:
        from aicore_sim.util.claim import claim

        claim(args.report, "--report")
        report = Path(args.report)
        png = report.with_suffix(".png")
        report.parent.mkdir(parents=True, exist_ok=True)
        rundiff.plot_diff(d, png)
        report.write_text(rundiff.markdown(d, png.name))
    if args.json:
        print(json.dumps(d, indent=1))
    else:
        print(rundiff.format_diff(d))
        if args.report:
            print(f"wrote {args.report} and {Path(args.report).with_suffix('.png')}")
    return 1 if d["differs"] else 0


__all__ = ["add_parser", "cmd_diff"]
