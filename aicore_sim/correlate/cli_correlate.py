"""``aicore-sim correlate`` and ``aicore-sim calibrate``: the simulator against a board's profile.

Step of the flow: the outermost shell. ``correlate`` reads a simulated run folder and a
board's ``msprof op`` folder (:mod:`aicore_sim.correlate.opprof`), compares them
(:mod:`~aicore_sim.correlate.compare`) and reports (:mod:`~aicore_sim.correlate.report`).
``calibrate`` fits cost knobs to one or more profiled launches
(:mod:`~aicore_sim.correlate.calibrate`) and writes a platform overlay.

Exit codes: 0 done; 1 ``calibrate``'s fit leaves a fitted pipe off by more than
``MAX_RESIDUAL`` (a factor 1.5 in log terms; nothing written unless ``--keep-anyway``); 2 a
bad input (missing folder or file, missing column, non-numeric cell, block count mismatch,
bad case or platform): one line on stderr naming the file and the rule, and nothing written.

:func:`add_parsers` is called from :mod:`aicore_sim.cli`; nothing heavy is imported at import
time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

_CORRELATE_EXAMPLES = """\
examples:
  aicore-sim run my_case.json --platform ascend910b2 --out runs/b2
  msprof op --output=prof ./my_app                (on the board: profile the same launch)
  aicore-sim correlate runs/b2 prof/OPPROF_20260628073932_HAMRWXWPXODRZODT
  aicore-sim correlate runs/b2 prof/OPPROF_... --op MoeTokenUnpermuteWithEpGrad --launch 1
  aicore-sim correlate runs/b2 prof/OPPROF_... --json > ratios.json

RUN_DIR is the folder of 'aicore-sim run' (its PipeUtilization.csv and OpBasicInfo.csv).
OPPROF_DIR is searched recursively for PipeUtilization*.csv / OpBasicInfo*.csv; with several
operators or launches (OPPROF_.../<OpName>/<index>/), --op and --launch choose one, or give
the launch's folder itself. Ratio = simulated / measured busy time per block and pipe
(SCALAR, MTE2, VECTOR, MTE3), plus core time and task duration. Writes a markdown report, its
JSON and a scatter plot (default RUN_DIR/correlate.{md,json,png}). See docs/correlate.md.
"""

_CALIBRATE_EXAMPLES = """\
examples:
  aicore-sim calibrate prof/OPPROF_a:my_case.json --platform ascend910b2 --out b2.toml
  aicore-sim calibrate prof/OPPROF_a:case_a.json prof/OPPROF_b:case_b.json \\
      --platform ascend910b2 --out b2.toml
  aicore-sim run my_case.json --platform '{"preset": "ascend910b2", "overlay": "b2.toml"}'

Each OPPROF_DIR:CASE pairs a board's msprof op folder (one launch: give its folder when it
holds several) with the case that produced it (a case file or a bundled case name). The fit
scales the MTE2 and MTE3 copy curves and the vector costs and sets the HBM efficiency, by least
squares on the logs of simulated / measured busy time per pipe, re-simulating each launch.
With several launches, each one is also left out in turn and predicted from a fit to the
others (the held-out error). See docs/correlate.md.
"""


def add_parsers(subparsers: Any) -> None:
    """Add ``correlate`` and ``calibrate`` to the ``aicore-sim`` subparsers."""
    from aicore_sim.cli.common import add_json_report, subcommand
    from aicore_sim.cli.options import nonempty

    c = subcommand(
        subparsers, "correlate", "compare a simulated run with a board's msprof op profile",
        "Per-pipe and per-core ratios of measured (msprof op) to simulated busy time, task "
        "duration against makespan, block-dim and clock checks.", _CORRELATE_EXAMPLES)
    c.add_argument("run_dir", type=nonempty, metavar="RUN_DIR",
                   help="folder written by 'aicore-sim run'")
    c.add_argument("opprof_dir", type=nonempty, metavar="OPPROF_DIR",
                   help="msprof op output folder")
    c.add_argument("--op", type=nonempty, metavar="NAME",
                   help="operator to pick when OPPROF_DIR holds several (folder or Op Name)")
    c.add_argument("--launch", type=nonempty, metavar="INDEX",
                   help="launch index to pick when the operator ran several times (0, 1 ...)")
    add_json_report(c, "print the comparison as one JSON object instead of the table",
                    "markdown report path; FILE's .json and .png are written beside it "
                    "(default RUN_DIR/correlate.md)", "FILE")
    c.set_defaults(func=cmd_correlate)

    k = subcommand(
        subparsers, "calibrate", "fit cost knobs to measured launches; write a platform overlay",
        "Fit per-pipe cost scales and the HBM efficiency to msprof op profiles of known cases; "
        "report the error per pipe before and after; write a platform overlay TOML that "
        "--platform loads.", _CALIBRATE_EXAMPLES)
    k.add_argument("pairs", nargs="+", type=nonempty, metavar="OPPROF_DIR:CASE",
                   help="a measured launch folder and the case (file or bundled name) it ran")
    k.add_argument("--platform", type=nonempty, metavar="P", required=True,
                   help="the platform the board is (preset, TOML path or JSON object); the "
                        "overlay is relative to it")
    k.add_argument("--out", type=nonempty, metavar="FILE", required=True,
                   help="overlay TOML to write")
    k.add_argument("--op", type=nonempty, metavar="NAME", default=None,
                   help="operator model of the cases (default: the bundled operator)")
    k.add_argument("--json", action="store_true", help="print the fit as one JSON object")
    k.add_argument("--keep-anyway", action="store_true",
                   help="write the overlay (exit 0, with a warning) even when the fit leaves "
                        "a fitted pipe (MTE2, VECTOR, MTE3) off by more than a factor 1.5 (mean "
                        "|ln(simulated / measured)| above ln 1.5); without it such a fit exits 1 "
                        "and writes "
                        "nothing")
    k.set_defaults(func=cmd_calibrate)


def cmd_correlate(args: argparse.Namespace) -> int:
    """Run ``correlate``; returns the exit code."""
    from aicore_sim.cli.common import err
    from aicore_sim.correlate.compare import correlate
    from aicore_sim.correlate.opprof import OpprofError, choose, read_launch
    from aicore_sim.correlate.report import text, write_reports

    try:
        run_dir = Path(args.run_dir)
        if not run_dir.is_dir():
            raise OpprofError(f"{run_dir}: not a folder (give the folder 'aicore-sim run' "
                              f"wrote)")
        if not any(run_dir.glob("PipeUtilization*.csv")):
            raise OpprofError(f"{run_dir / 'PipeUtilization.csv'}: missing ('aicore-sim run' "
                              f"writes it in timed and timing-only mode)")
        simulated = read_launch(run_dir, label="run")
        measured = choose(Path(args.opprof_dir), args.op, args.launch)
        result = correlate(measured, simulated)
        report = Path(args.report) if args.report else run_dir / "correlate.md"
        if report.suffix.lower() != ".md":
            raise OpprofError(f"--report {report}: must end with .md (the .json and .png go "
                              f"beside it)")
    except OpprofError as e:
        err(f"error: {e}")
        return 2
    from aicore_sim.util.claim import claim

    claim(report, "--report")
    written = write_reports(result, report)
    if args.json:
        print(json.dumps(result))
    else:
        print(text(result))
        print(f"wrote {', '.join(str(p) for p in written)}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run ``calibrate``; returns the exit code."""
    from aicore_sim.cli.common import err
    from aicore_sim.correlate.calibrate import CalibrateError, calibrate_main
    from aicore_sim.correlate.opprof import OpprofError
    from aicore_sim.ops.casefile import CaseFileError

    try:
        return calibrate_main(args)
    except (OpprofError, CalibrateError, CaseFileError) as e:
        err(f"error: {e}")
        return 2


__all__ = ["add_parsers", "cmd_calibrate", "cmd_correlate"]
