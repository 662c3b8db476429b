"""``aicore-sim plot``: a run folder's timeline drawn again - other cores, a time window, the
UB curve - from its ``timeline.npz``, without simulating again (step: the command line; the
lanes are :mod:`aicore_sim.views.timeline_file`'s, the figures :mod:`aicore_sim.views.plots`').
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import aicore_sim.cli.timeline as timeline
from aicore_sim.cli.common import subcommand
from aicore_sim.cli.options import nonempty
from aicore_sim.sim.errors import UsageError
from aicore_sim.util.staging import safe_name

PLOT_EXAMPLES = """\
examples:
  aicore-sim run --case p1_deepseek_v3 --trace lanes --out traces/p1
  aicore-sim plot traces/p1 --cores 0 --window 10us:40us
      one core, 30 µs of it: writes traces/p1/timeline_cores-0_window-10us-40us.png
  aicore-sim plot traces/p1 --cores 0-3 --ub-plot --out p1_first4.png
      four cores, and their UB bytes over time in p1_first4_ub.png

Reads only the run folder's timeline.npz (written by every timed 'aicore-sim run'; the trace
file is not needed): redraws in a second or two what run drew into timeline.png. Without
--cores / --window it draws the whole run again, into timeline.png. Each lane of a core
(SCALAR, MTE2, VECTOR, MTE3) shows what the pipe executed and, below it, its stalls coloured
by cause. Exit 0 with the picture written, 2 on a bad argument (a missing folder, a folder
that is not a timed run, a damaged timeline.npz, a core the run lacks, a bad window), with
nothing written.
"""


class _PlotArgError(UsageError):
    """A bad argument of ``plot`` (exit 2, like every usage error)."""


def add_parser(sub: Any) -> None:
    """The ``plot`` subcommand."""
    p = subcommand(sub, "plot", "draw a run folder's timeline again (zoom, cores, UB) without "
                   "simulating", "Draw the timeline of a run folder written by 'aicore-sim "
                   "run' again, from its timeline.npz.", PLOT_EXAMPLES)
    p.add_argument("run_dir", type=nonempty, metavar="RUN_DIR",
                   help="a run folder written by 'aicore-sim run' (timed, not functional)")
    timeline.add_picture_options(p, "the picture", "the UB picture beside it (ub.png, or "
                                 "ub_<zoom>.png for timeline_<zoom>.png, or <name>_ub.png for "
                                 "--out <name>.png)")
    p.add_argument("--out", type=nonempty, metavar="PNG",
                   help="where the picture goes (default: in RUN_DIR, timeline.png for the "
                        "whole run, else timeline_<zoom>.png, <zoom> made of --cores and "
                        "--window)")
    p.set_defaults(func=cmd_plot)


def run_timeline(folder: Path) -> Any:
    """The :class:`~aicore_sim.views.timeline_file.Timeline` of a run folder (a usage error
    naming the folder, or the file, when it has none to draw)."""
    from aicore_sim.views.timeline_file import TIMELINE_FILE, Timeline, TimelineFileError

    if not folder.is_dir():
        raise _PlotArgError(f"RUN_DIR {folder}: "
                            f"{'not a folder' if folder.exists() else 'no such folder'}")
    f = folder / TIMELINE_FILE
    if not f.is_file():
        summary = folder / "summary.json"
        if not summary.is_file():
            raise _PlotArgError(f"RUN_DIR {folder}: not a run folder (no summary.json, no "
                                f"{TIMELINE_FILE})")
        if _functional(summary):
            raise _PlotArgError(f"RUN_DIR {folder}: the run has no timing (functional mode): "
                                "nothing to draw")
        raise _PlotArgError(f"RUN_DIR {folder}: no {TIMELINE_FILE} (every timed 'aicore-sim "
                            "run' writes one; an older run, or another command's folder, has "
                            "none: run it again)")
    try:
        return Timeline.load(f)
    except TimelineFileError as e:
        raise _PlotArgError(f"RUN_DIR {e}") from None


def _functional(summary: Path) -> bool:
    """Whether a run's summary.json is a functional-mode run's (it has no makespan)."""
    from aicore_sim.util import textinput

    try:
        doc = textinput.loads_json(textinput.read_document(summary))
    except (OSError, ValueError) as e:
        raise _PlotArgError(f"RUN_DIR {summary}: unreadable ({e})") from None
    return isinstance(doc, dict) and "makespan_cycles" not in doc


def _default_name(args: argparse.Namespace) -> str:
    """``timeline.png`` for the whole run, else ``timeline_cores-<LIST>_window-<A-B>.png``."""
    parts = ["timeline"]
    if args.cores:
        parts.append(f"cores-{args.cores}")
    if args.window:
        parts.append(f"window-{args.window}")
    return safe_name("_".join(parts)) + ".png"


def cmd_plot(args: argparse.Namespace) -> int:
    folder = Path(args.run_dir)
    tl = run_timeline(folder)
    opts = timeline.plot_options(args, tl)  # --cores / --window against this run
    png = Path(args.out) if args.out else folder / _default_name(args)
    if png.is_dir():
        raise _PlotArgError(f"--out {png}: a folder, not a file name")
    ub = png.with_name(("ub" + png.stem[len("timeline"):] if png.stem.startswith("timeline")
                        else png.stem + "_ub") + ".png") if args.ub_plot else None
    if ub is not None and any(c.ub is None for c in tl.cores):
        raise _PlotArgError(f"--ub-plot: {folder} has no UB curves in its timeline file")
    from aicore_sim.util.claim import claim

    for path in (png, ub):  # writable and locked before the drawing
        if path is not None:
            claim(path, "--out" if args.out else "RUN_DIR")
    from aicore_sim.views.plots import plot_timeline, plot_ub

    plot_timeline(tl, png, title=tl.title or None, **opts)
    written = [str(png)]
    if ub is not None:
        plot_ub(tl, ub, **{k: v for k, v in opts.items() if k == "cores"})
        written.append(str(ub))
    if getattr(args, "window_note", None):
        print(f"note: {args.window_note}")
    print(f"wrote {' and '.join(written)}")
    return 0


__all__ = ["add_parser", "cmd_plot", "run_timeline"]
