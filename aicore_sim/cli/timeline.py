"""Command-line parts of ``run`` that act on timelines: ``--hotspots``, ``--slack``,
``--cores``, ``--window``, ``--ub-plot``.

Step of the flow: called by :mod:`aicore_sim.cli.run` (``add_run_options`` when it builds
``run``, ``finish_run`` before it writes ``summary.json``, ``report_lines`` when it prints).
Nothing here computes a cycle: hot spots come from ``hotspots.py``, slack replays from
``slack.py``, figures from ``plots.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aicore_sim.cli.options import (
    MAX_CORES,
    core_ranges,
    cores,
    count,
    window,
    window_ends,
)
from aicore_sim.sim.errors import UsageError as _CliUsage


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
                        "pipe free and 2x faster, HBM unlimited, every GM re-read an L2 hit, "
                        "no GM granule queues and no UB bank conflicts, and print the makespan "
                        "each gives after the run's verdict, a scenario that ends later apart "
                        "with its reason (summary.json 'slack'); one replay per scenario, run "
                        "--jobs at a time")
    add_picture_options(g)


def add_picture_options(g: Any, png: str = "timeline.png", ub: str = "ub.png") -> None:
    """``--cores``, ``--window``, ``--ub-plot``: what the timeline pictures show (``run`` and
    ``plot`` take the same options; ``png`` and ``ub`` name the pictures in their help)."""
    g.add_argument("--cores", type=cores, metavar="LIST",
                   help=f"cores drawn in {png}, e.g. 0,5 or 0-3,8 (default all)")
    g.add_argument("--window", type=window, metavar="A:B",
                   help=f"time window of {png}: cycles (1000:5000) or µs with a unit "
                        "(0.5us:2.7us); either end may be left out; each end a finite "
                        "number >= 0, the end after the start")
    g.add_argument("--ub-plot", action="store_true",
                   help=f"also write {ub}: UB bytes in use over time per core (reserved by "
                        "InitBuffer, and live: buffers between their first and last use)")


def parse_cores(text: str, n: int) -> list[int]:
    """``"0,5"`` / ``"0-3,8"`` as core numbers, each below ``n``
    (:func:`aicore_sim.cli.options.core_ranges` checks the text; no range is expanded before its
    ends are known to be cores)."""
    try:
        ranges = core_ranges(text)
    except ValueError as e:
        raise _Usage(f"--cores {text}: {e}") from None
    bad = [b for _, b in ranges if b >= n]
    if bad:
        raise _Usage(f"--cores {text}: cores are 0..{n - 1}, not {bad[0]}")
    return sorted({c for a, b in ranges for c in range(a, b + 1)})


_FAR = float(2 ** 62)  # cycles: beyond every simulated run


def parse_window(text: str, clock_mhz: float, makespan: int) -> tuple[int, int]:
    """``"A:B"`` in cycles, or with a ``us`` / ``µs`` / ``ns`` unit, as a cycle range (each
    end a finite number >= 0: :func:`aicore_sim.cli.options.window_ends`)."""
    try:
        parts = window_ends(text)
    except ValueError as e:
        raise _Usage(f"--window {text}: {e}") from None
    scale = {"": 1.0, "us": clock_mhz, "ns": clock_mhz / 1000}
    # an end past any time a run can reach (up to infinity once scaled: 1e308 us) is that
    # far: the window then runs to the run's end
    ends = [(0 if k == 0 else makespan) if p is None else
            int(round(min(p[0] * scale[p[1]], _FAR))) for k, p in enumerate(parts)]
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
    """``cores`` / ``window`` keywords of :func:`aicore_sim.views.plots.plot_timeline`."""
    out: dict[str, Any] = {}
    if getattr(args, "cores", None):
        out["cores"] = parse_cores(args.cores, len(trace.cores))
    if getattr(args, "window", None):
        first, last = window_ends(args.window)
        scale = {"": 1.0, "us": trace.clock_mhz, "ns": trace.clock_mhz / 1000}
        if last is None and first is not None and \
                min(first[0] * scale[first[1]], _FAR) >= trace.makespan:
            # an open end after the run's end: the whole run, and a note (not a refusal after
            # the work)
            args.window_note = (f"--window {args.window}: starts after the run ends (makespan "
                                f"{trace.makespan} cycles); timeline.png shows the whole run")
        else:
            out["window"] = parse_window(args.window, trace.clock_mhz, trace.makespan)
    return out


def finish_run(args: argparse.Namespace, result: Any, summary: dict[str, Any], folder: Path,
               jobs: int, background: dict[str, Any], lanes: Any = None) -> list[str]:
    """Everything this module adds to a run's folder and summary; returns the files written.
    ``lanes``: the run's :class:`~aicore_sim.views.timeline_file.Timeline`, when built."""
    from aicore_sim.views import rundiff

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
        from aicore_sim.views.hotspots import hotspots

        summary["hotspots"] = hotspots(trace, n)
    if getattr(args, "slack", False):
        from aicore_sim.views import slack

        rows = slack.slack(result, jobs=jobs)
        summary["slack"] = {"rows": rows, "lever": slack.lever(rows)}
    if getattr(args, "ub_plot", False):
        from aicore_sim.views.plots import plot_ub

        plot_ub(trace if lanes is None else lanes, folder / "ub.png",
                **{k: v for k, v in plot_options(args, trace).items() if k == "cores"})
        files.append("ub.png")
    return files


def report_lines(args: argparse.Namespace, summary: dict[str, Any]) -> list[str]:
    """What ``run`` prints after the summary for this module's options."""
    out = []
    n = getattr(args, "hotspots", None)
    if n:
        from aicore_sim.views.hotspots import format_hotspots

        out.append(format_hotspots(summary.get("hotspots", [])[:n]))
    if "slack" in summary:
        from aicore_sim.views.slack import format_slack

        out.append(format_slack(summary["slack"]["rows"], summary["makespan_cycles"],
                                summary.get("bound_by")))
    return out


UsageError = _Usage

__all__ = ["UsageError", "add_picture_options", "add_run_options", "check_run_options",
           "finish_run", "idle_options", "parse_cores", "parse_window", "plot_options",
           "report_lines"]
