"""The ``aicore-sim`` argument parser: every subcommand's parser, each added by the module of
its command, and argparse's errors as one line (exit 2) (step: the command line).

Option values are checked while the line is parsed, each by its ``type=`` from
:mod:`aicore_sim.cli.options`, whose domains end each option's ``--help``.
"""

from __future__ import annotations

import argparse
from typing import Any

import aicore_sim.cli.cases as cases
import aicore_sim.cli.coverage as coverage
import aicore_sim.cli.diff as diff
import aicore_sim.cli.exec_cmd as exec_cmd
import aicore_sim.cli.plot as plot
import aicore_sim.cli.run as run
import aicore_sim.cli.tiling as tiling
import aicore_sim.cli.ut as ut
from aicore_sim.cli.common import DEBUG_ENV, PROG, err
from aicore_sim.cli.options import state_domains


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog=PROG, formatter_class=fmt,
        description="Cycle-approximate simulator of the Ascend AICore vector core (AIV).",
        epilog="examples:\n  aicore-sim run\n  aicore-sim tiling examples/cases/tiny.json\n"
               "  aicore-sim platforms\n  aicore-sim cases\n"
               "  aicore-sim sweep examples/sweeps/tiny_smoke.toml\n"
               "  aicore-sim search p1_deepseek_v3 --tokens 512\n"
               "  aicore-sim plot traces/RUN --cores 0 --window 10us:40us\n\n"
               "'aicore-sim COMMAND --help' shows the options of one command.")
    p.add_argument("--debug", action="store_true",
                   help=f"show the traceback of an internal error (also {DEBUG_ENV}=1); "
                        "accepted anywhere on the command line")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run.add_parser(sub)  # with --hotspots, --slack, --cores, --window, --ub-plot
    tiling.add_parser(sub)
    cases.add_parsers(sub)  # platforms, cases

    from aicore_sim.verify.cli_verify import add_parser as _add_verify  # verify subcommand

    _add_verify(sub)

    from aicore_sim.sweep.cli_sweep import add_parsers as _add_sweep  # sweep, search, report

    _add_sweep(sub)
    diff.add_parser(sub)
    plot.add_parser(sub)  # a run folder's timeline drawn again
    ut.add_parser(sub)  # upstream's kernel unit tests (gtest)
    exec_cmd.add_parser(sub)  # an operator's aclnn example program
    coverage.add_parser(sub)  # an operator source tree's coverage table

    # correlate, calibrate
    from aicore_sim.correlate.cli_correlate import add_parsers as _add_correlate

    _add_correlate(sub)

    from aicore_sim.validate.cli_validate import add_parser as _add_validate  # validate

    _add_validate(sub)
    state_domains(p)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), for every subcommand too."""

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """A value refused by its ``type=`` (``aicore_sim/cli/options.py``) is named with the
        option and, when the rule does not quote it already, the value itself."""
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as e:
            name = argparse._get_action_name(action)
            if name and e.message and arg_string not in e.message:
                raise argparse.ArgumentError(
                    None, f"argument {name} {arg_string}: {e.message}") from None
            raise

    def error(self, message: str) -> None:  # type: ignore[override]
        # the one line starts "aicore-sim: error: " already; a subcommand adds its name
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        err(f"error: {sub + ': ' if sub else ''}{message} (see '{self.prog} --help')")
        raise SystemExit(2)
