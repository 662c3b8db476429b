"""The ``aicore-sim`` command line: run a case, show its tiling, list platforms and cases, and
the subcommands that live beside their subject (``verify``, ``sweep`` / ``search`` /
``report``, ``correlate`` / ``calibrate``, ``validate``).

Step of the flow: the outermost shell; nothing here computes numbers or cycles. The modules,
in the order a command goes through them:

- :mod:`~aicore_sim.cli.console`: ``main`` (parse, dispatch, the exit code and the one line a
  failure prints) and ``entry``, the console script (reached through
  :mod:`aicore_sim.launcher`);
- :mod:`~aicore_sim.cli.parser`: the parser, each subcommand's parser added by its module;
- :mod:`~aicore_sim.cli.options`: the argparse value types and their domains;
- :mod:`~aicore_sim.cli.run`: ``run`` - case, inputs, operator call, launch; with
  :mod:`~aicore_sim.cli.timeline` (``--hotspots``, ``--slack``, ``--cores``, ``--window``,
  ``--ub-plot``), :mod:`~aicore_sim.cli.artefacts` (the run folder after the launch) and
  :mod:`~aicore_sim.cli.verdict` (its exit code);
- :mod:`~aicore_sim.cli.tiling`, :mod:`~aicore_sim.cli.cases` (``cases``, ``platforms``),
  :mod:`~aicore_sim.cli.diff`;
- :mod:`~aicore_sim.cli.common`: what they share (program name, stderr line, ``--platform``,
  bundled cases).
"""

from aicore_sim.cli.console import entry, main
from aicore_sim.cli.parser import build_parser
from aicore_sim.cli.tiling import tiling_of

__all__ = ["build_parser", "entry", "main", "tiling_of"]
