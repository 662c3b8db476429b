"""``python -m aicore_sim.cli``: the same command line as ``python -m aicore_sim``."""

from aicore_sim.cli.console import entry

entry()
