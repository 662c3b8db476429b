"""``aicore-sim validate``: the simulator against on-board figures of sample kernels.

Step of the flow: the outermost shell for validation. It finds the installed suites
(:mod:`.suites`), selects scenarios by name, sample or glob, runs each timing-only
(:mod:`.run`), compares the simulated figures with the board's (:mod:`.compare`) and prints a
table, or one JSON document, and writes a markdown report with a scatter plot
(:mod:`.report`).

Exit codes: 0 every selected scenario ran (and, with ``--max-median`` / ``--max-worst``, no
column's error exceeds them); 1 a scenario failed to run (one line naming it; the others still
run), a limit was exceeded, or a suite cannot be loaded; 2 a bad input (an unknown scenario
name, suite or option; a report path that is a folder): one line on stderr and nothing
written.

:func:`add_parser` is called from :mod:`aicore_sim.cli`; nothing heavy is imported at import
time.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

_EXAMPLES = """\
examples:
  aicore-sim validate --list                          the scenarios, without running them
  aicore-sim validate bank_conflict_ub                one sample's scenarios
  aicore-sim validate 'data_copy_*' --json > v.json   a glob over scenario names
  aicore-sim validate --report reports/fidelity.md    everything; writes .md and .png
  aicore-sim validate --max-median 25 --max-worst 60  a check: exit 1 past those errors

NAME selects scenarios by exact name, by sample name, or as a shell glob over names; without
NAME every scenario of every installed suite runs (suites register in the entry-point group
aicore_sim.validation). Each scenario is launched timing-only on its platform preset; its
figures are read as our msprof export writes PipeUtilization.csv / OpBasicInfo.csv: task_us =
Task Duration (makespan, op head and launch overhead included), aiv_us / mte2_us / mte3_us /
vec_us / scalar_us = aiv_*_time (the pipe's work: executing, held by HBM, data in flight), mean
over the launch's cores, vec_ticks = the vector time in system-counter ticks. Scenarios whose
board figures fitted a parameter are marked (fitted); the 'held out' rows leave them out. A
scenario too long to simulate at full size (scale s < 1) runs at s and 2s: '2s/s' shows
fig(2s) / fig(s) (2.000 when linear) and the figure is extrapolated linearly to full size.

ratio r = simulated / board; |error| = 100 |ln r| (%). Per column, per platform and over all:
count, median and worst. Per optimisation step: board gain = board(baseline) / board(optimised),
simulated gain the same of ours; direction right when both are on the same side of 1 (a board
gain within 2 % of 1 is neutral: the simulated gain must then be within a factor 1.25 of it);
within 1.25 when max(gs/gb, gb/gs) <= 1.25.

exit 0 all selected scenarios ran; 1 one failed (named on stderr; the rest still run) or a
--max-median / --max-worst limit was exceeded; 2 a bad input (nothing written).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``validate`` subcommand to the ``aicore-sim`` subparsers."""
    from aicore_sim.cli.common import add_json_report, subcommand
    from aicore_sim.cli.options import finite_pct, nonempty

    v = subcommand(
        subparsers, "validate", "run the validation suites: simulated against on-board figures",
        "Run sample kernels whose on-board msprof figures are known and compare\nthe simulated "
        "figures per column, per platform and per optimisation step.", _EXAMPLES)
    v.add_argument("names", nargs="*", type=nonempty, metavar="NAME",
                   help="scenario name, sample name or shell glob (default: all scenarios)")
    v.add_argument("--list", action="store_true",
                   help="list the selected scenarios (name, platform, scale, board columns) "
                        "without running them")
    add_json_report(v, "print one JSON document instead of the tables",
                    "also write a markdown report FILE.md and its scatter plot FILE.png "
                    "(replaced if they exist)", "FILE.md")
    v.add_argument("--suite", type=nonempty, metavar="S",
                   help="only the suite S (its entry-point name)")
    v.add_argument("--max-median", type=finite_pct, metavar="PCT",
                   help="exit 1 when a column's median |error| exceeds PCT %%")
    v.add_argument("--max-worst", type=finite_pct, metavar="PCT",
                   help="exit 1 when a column's worst |error| exceeds PCT %%")
    v.add_argument("--hold-out", action="append", type=nonempty, metavar="GROUP", default=[],
                   help="run only the scenarios of source GROUP (a sample on a platform, e.g. "
                        "bank_conflict_ub@ascend910b1) and report its error as held out; a "
                        "group some parameter was fitted on is refused (nothing is refitted); "
                        "repeatable")
    v.add_argument("--write-confidence", type=nonempty, metavar="FILE.json",
                   help="after the whole validation, write what the timing model is validated "
                        "on per platform (the file 'run' states it from: the package's "
                        "aicore_sim/data/validation.json is made this way)")
    v.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    v.set_defaults(func=cmd_validate)
    return v


def _check_report_path(target: str) -> None:
    from aicore_sim.sim.errors import UsageError
    from aicore_sim.validate.report import report_paths

    for p in report_paths(target):
        if p.is_dir():
            raise UsageError(f"--report {target}: {p} is a folder")
        parent = next((q for q in [p.parent, *p.parent.parents] if q.exists()), None)
        if parent is not None and not parent.is_dir():
            raise UsageError(f"--report {target}: {parent} is not a folder")


def _listing(selected: list) -> tuple[list[dict[str, Any]], str]:
    rows, docs = [], []
    for su, sc in selected:
        cols = [b.column for b in sc.board]
        docs.append({"name": sc.name, "suite": su.name, "sample": sc.sample,
                     "platform": sc.platform, "scale": sc.scale, "columns": cols,
                     "description": sc.description})
        rows.append([sc.name, sc.sample, su.name, sc.platform, f"{sc.scale:g}",
                     ", ".join(cols)])
    from aicore_sim.validate.report import _table

    # both names select: 'validate NAME' takes a scenario or a whole sample (or a glob)
    return docs, "\n".join(_table(("scenario", "sample", "suite", "platform", "scale",
                                   "board columns"), rows))


def _held_out_names(suites: list, groups: list[str]) -> list[str]:
    """The scenarios of the source ``groups`` (``sample@platform``); a group that is unknown,
    or that a parameter was fitted on, is a usage error naming the groups that can be held
    out."""
    from aicore_sim.sim.errors import UsageError

    members: dict[str, list[str]] = {}
    fitted: dict[str, list[str]] = {}
    for su in suites:
        for sc in su.scenarios:
            members.setdefault(sc.group, []).append(sc.name)
            if sc.name in su.fitted:
                fitted.setdefault(sc.group, []).extend(su.fitted[sc.name])
    free = [g for g in members if g not in fitted]
    names = []
    for g in groups:
        if g not in members:
            raise UsageError(f"--hold-out {g}: no such source group (sample@platform); groups: "
                             f"{', '.join(members)}")
        if g in fitted:
            raise UsageError(f"--hold-out {g}: parameters were fitted on it "
                             f"({'; '.join(dict.fromkeys(fitted[g]))}) and validate refits "
                             f"nothing; groups held out as they are: {', '.join(free) or 'none'}")
        names += members[g]
    return names


def cmd_validate(args: argparse.Namespace) -> int:
    """Run ``validate``; returns the exit code (0 ran, 1 failed or a limit exceeded, 2 bad
    input)."""
    from aicore_sim.cli.common import err
    from aicore_sim.sim.errors import UsageError
    from aicore_sim.util.claim import claim
    from aicore_sim.validate import suites as found
    from aicore_sim.validate.compare import exceeded
    from aicore_sim.validate.report import (
        document,
        simulator_version,
        text,
        write_report,
    )
    from aicore_sim.validate.run import run_suite

    if args.report:
        _check_report_path(args.report)
        claim(args.report, "--report")  # writable and locked before the work
    if args.write_confidence and (args.names or args.hold_out or args.suite or args.list):
        raise UsageError("--write-confidence: needs the whole validation (no NAME, --hold-out, "
                         "--suite or --list)")
    if args.write_confidence:
        claim(args.write_confidence, "--write-confidence")  # before the work, as --report
    try:
        suites = found.find_suites(args.suite)
    except found.SuiteLoadError as e:
        err(f"error: {e}")
        return 1
    if not suites and not args.list:
        raise UsageError("validate: no validation suite is installed (entry-point group "
                         f"{found.GROUP})")
    if args.hold_out:
        args.names = [*args.names, *_held_out_names(suites, args.hold_out)]
    selected = found.select(suites, args.names)  # UnknownScenarioError: exit 2
    if args.list:
        docs, table = _listing(selected)
        if not suites and not args.json:
            table = f"no validation suite is installed (entry-point group {found.GROUP})"
        print(json.dumps(docs, indent=1) if args.json else table)
        return 0
    t0 = time.time()
    outcome = run_suite(suites, args.names, progress=not args.no_progress,
                        echo=lambda line: err(f"validate: {line}"))
    checks = exceeded(outcome.columns, args.max_median, args.max_worst)
    argv = sys.argv[2:] if len(sys.argv) > 1 and sys.argv[1] == "validate" else args.names
    meta = {"command": "aicore-sim validate " + " ".join(shlex.quote(a) for a in argv),
            "date": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0)),
            "simulator": simulator_version()}
    if args.json:
        print(json.dumps(document(outcome, checks, meta), indent=1))
    else:
        print(text(outcome, checks))
    if args.report:
        md, png = write_report(outcome, Path(args.report), checks, meta)
        if not args.json:
            print(f"report: {md}, {png}")
    if args.write_confidence:
        if outcome.failed:
            err(f"validate: --write-confidence {args.write_confidence}: not written, "
                f"{len(outcome.failed)} scenarios failed")
        else:
            from aicore_sim.validate import confidence

            confidence.write(Path(args.write_confidence), outcome, meta)
            if not args.json:
                print(f"confidence: {args.write_confidence}")
    for c in checks:
        err(f"validate: check failed: {c}")
    return 1 if outcome.failed or checks else 0
