"""``python -m aicore_sim``: the same command line as the ``aicore-sim`` script."""

from aicore_sim.launcher import entry

entry()
