"""Command-line parts that act on timelines: ``run --hotspots/--slack/--cores/--window/--ub-plot``
and the ``diff`` subcommand.

Step of the flow: called by ``cli.py`` (``add_run_options`` when it builds ``run``,
``finish_run`` before it writes ``summary.json``, ``report_lines`` when it prints, and
``add_parsers`` for ``diff``). Nothing here computes a cycle: hot spots come from
``hotspots.py``, slack replays from ``slack.py``, diffs from ``rundiff.py``, figures from
``plots.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aicore_sim.cli_types import MAX_CORES, cores, count, nonempty, nonneg_int, window
from aicore_sim.errors import UsageError as _CliUsage

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


class _Usage(_CliUsage):
    """A bad option value of this module (exit 2, like every usage error)."""


# --------------------------------------------------------------------------------------------
# run options
# --------------------------------------------------------------------------------------------


def add_run_options(r: argparse.ArgumentParser) -> None:
    """The ``run`` options of this module."""
    g = r.add_argument_group("timeline analysis")
    g.add_argument("--hotspots", type=count, metavar="N",
                   help="print the N >= 1 source lines (per pipe) that kept a pipe busy "
                        "longest, cycles summed over cores; summary.json keeps max(N, 20) of "
                        "them")
    g.add_argument("--slack", action="store_true",
                   help="what-if slack: replay the recorded streams (timing only) with each "
                        "pipe free and 2x faster, and with HBM unlimited, and print the "
                        "makespan each gives (summary.json 'slack'); one replay per scenario, "
                        "run --jobs at a time")
    g.add_argument("--cores", type=cores, metavar="LIST",
                   help="cores drawn in timeline.png, e.g. 0,5 or 0-3,8 (default all)")
    g.add_argument("--window", type=window, metavar="A:B",
                   help="time window of timeline.png: cycles (1000:5000) or µs with a unit "
                        "(0.5us:2.7us); either end may be left out; each end a finite "
                        "number >= 0, the end after the start")
    g.add_argument("--ub-plot", action="store_true",
                   help="also write ub.png: UB bytes in use over time per core (reserved by "
                        "InitBuffer, and live: buffers between their first and last use)")


def parse_cores(text: str, n: int) -> list[int]:
    """``"0,5"`` / ``"0-3,8"`` as core numbers, each below ``n``
    (:func:`aicore_sim.cli_types.core_ranges` checks the text; no range is expanded before its
    ends are known to be cores)."""
    from aicore_sim.cli_types import core_ranges

    try:
        ranges = core_ranges(text)
    except ValueError as e:
        raise _Usage(f"--cores {text}: {e}") from None
    bad = [b for _, b in ranges if b >= n]
    if bad:
        raise _Usage(f"--cores {text}: cores are 0..{n - 1}, not {bad[0]}")
    return sorted({c for a, b in ranges for c in range(a, b + 1)})


def parse_window(text: str, clock_mhz: float, makespan: int) -> tuple[int, int]:
    """``"A:B"`` in cycles, or with a ``us`` / ``µs`` / ``ns`` unit, as a cycle range (each
    end a finite number >= 0: :func:`aicore_sim.cli_types.window_ends`)."""
    from aicore_sim.cli_types import window_ends

    try:
        parts = window_ends(text)
    except ValueError as e:
        raise _Usage(f"--window {text}: {e}") from None
    scale = {"": 1.0, "us": clock_mhz, "ns": clock_mhz / 1000}
    ends = [(0 if k == 0 else makespan) if p is None else int(round(p[0] * scale[p[1]]))
            for k, p in enumerate(parts)]
    if ends[1] <= ends[0]:
        raise _Usage(f"--window {text}: the end must be after the start")
    return ends[0], ends[1]


def check_run_options(args: argparse.Namespace) -> None:
    """Refuse bad option values before anything runs (exit 2)."""
    if getattr(args, "cores", None):
        parse_cores(args.cores, MAX_CORES)


def idle_options(args: argparse.Namespace, mode: str) -> list[str]:
    """This module's options that do nothing in this combination, one note each."""
    out = []
    if mode == "functional":  # no timing: no timeline, no hot spots, no slack, no UB curve
        given = [o for o, v in (("--hotspots", args.hotspots), ("--slack", args.slack),
                                ("--cores", args.cores), ("--window", args.window),
                                ("--ub-plot", args.ub_plot)) if v]
        if given:
            out.append(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} nothing in "
                       "functional mode (no timing)")
        return out
    if args.no_plot and args.window:
        out.append("--window does nothing with --no-plot (it zooms timeline.png)")
    if args.no_plot and args.cores and not args.ub_plot:
        out.append("--cores does nothing with --no-plot (it picks the cores of timeline.png "
                   "and ub.png)")
    return out


def plot_options(args: argparse.Namespace, trace: Any) -> dict[str, Any]:
    """``cores`` / ``window`` keywords of :func:`aicore_sim.plots.plot_timeline`."""
    out: dict[str, Any] = {}
    if getattr(args, "cores", None):
        out["cores"] = parse_cores(args.cores, len(trace.cores))
    if getattr(args, "window", None):
        from aicore_sim.cli_types import window_ends

        first, last = window_ends(args.window)
        scale = {"": 1.0, "us": trace.clock_mhz, "ns": trace.clock_mhz / 1000}
        if last is None and first is not None and \
                int(round(first[0] * scale[first[1]])) >= trace.makespan:
            # an open end after the run's end: the whole run, and a note (not a refusal after
            # the work)
            args.window_note = (f"--window {args.window}: starts after the run ends (makespan "
                                f"{trace.makespan} cycles); timeline.png shows the whole run")
        else:
            out["window"] = parse_window(args.window, trace.clock_mhz, trace.makespan)
    return out


def start_streams(program: Any, folder: Path, jobs: int) -> Any:
    """Start writing ``streams.npz`` (``rundiff.save_streams``) beside the replay: a
    :class:`~aicore_sim.background.Background` job (in this process with ``--jobs 1``)."""
    from aicore_sim import rundiff
    from aicore_sim.background import Background

    return Background(lambda: rundiff.save_streams(folder / rundiff.STREAMS_FILE,
                                                   program.streams, program.sources),
                      enabled=jobs > 1)


def finish_run(args: argparse.Namespace, result: Any, summary: dict[str, Any], folder: Path,
               jobs: int, background: dict[str, Any]) -> list[str]:
    """Everything this module adds to a run's folder and summary; returns the files written."""
    from aicore_sim import rundiff

    files: list[str] = []
    trace = result.trace
    if "streams" in background:
        background.pop("streams").result()
        files.append(rundiff.STREAMS_FILE)
    if trace is None:
        return files
    summary["source_lines"] = rundiff.source_lines(trace)
    n = getattr(args, "hotspots", None)
    if n is not None and n > len(summary.get("hotspots", [])):
        from aicore_sim.hotspots import hotspots

        summary["hotspots"] = hotspots(trace, n)
    if getattr(args, "slack", False):
        from aicore_sim import slack

        rows = slack.slack(result.program.streams, result.platform, trace.makespan, jobs=jobs,
                           allocations=result.program.allocations)
        summary["slack"] = {"rows": rows, "lever": slack.lever(rows)}
    if getattr(args, "ub_plot", False):
        from aicore_sim.plots import plot_ub

        plot_ub(trace, folder / "ub.png", **{k: v for k, v in plot_options(args, trace).items()
                                             if k == "cores"})
        files.append("ub.png")
    return files


def report_lines(args: argparse.Namespace, summary: dict[str, Any]) -> list[str]:
    """What ``run`` prints after the summary for this module's options."""
    out = []
    n = getattr(args, "hotspots", None)
    if n:
        from aicore_sim.hotspots import format_hotspots

        out.append(format_hotspots(summary.get("hotspots", [])[:n]))
    if "slack" in summary:
        from aicore_sim.slack import format_slack

        out.append(format_slack(summary["slack"]["rows"], summary["makespan_cycles"]))
    return out


# --------------------------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------------------------


def add_parsers(sub: Any) -> None:
    """The ``diff`` subcommand."""
    d = sub.add_parser("diff", help="compare two runs (or two sweep points)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=DIFF_EXAMPLES,
                       description="Compare two run folders written by 'aicore-sim run'.")
    d.add_argument("runs", nargs="+", type=nonempty, metavar="RUN",
                   help="two run folders, or one sweep results.jsonl (or its folder) with "
                        "--points")
    d.add_argument("--points", nargs=2, type=nonempty, metavar=("P1", "P2"),
                   help="keys (or unique key prefixes) of two points of the sweep results")
    d.add_argument("--json", action="store_true",
                   help="print the diff as JSON (every figure as {a, b, delta})")
    d.add_argument("--report", type=nonempty, metavar="FILE.md",
                   help="also write a markdown report and, beside it, FILE.png (paired bars "
                        "per pipe, largest hot-line deltas)")
    d.add_argument("--lines", type=nonneg_int, default=10, metavar="N",
                   help="hot-line deltas listed (an integer >= 0; default 10)")
    d.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from aicore_sim import rundiff

    try:
        if args.points:
            if len(args.runs) != 1:
                raise _Usage("with --points give one sweep results.jsonl (or its folder)")
            a, b = rundiff.sweep_points(args.runs[0], list(args.points))
        else:
            if len(args.runs) != 2:
                raise _Usage(f"expected two run folders, got {len(args.runs)}")
            a, b = rundiff.Run.folder(args.runs[0]), rundiff.Run.folder(args.runs[1])
        d = rundiff.diff_runs(a, b, top_lines=args.lines)
    except (rundiff.RunFolderError, _Usage) as e:
        print(f"aicore-sim: error: {e}", file=sys.stderr)
        return 2
    if args.report:
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


UsageError = _Usage

__all__ = ["UsageError", "add_parsers", "add_run_options", "check_run_options", "cmd_diff",
           "finish_run", "parse_cores", "parse_window", "plot_options", "report_lines",
           "start_streams"]
