"""``python -m aicore_sim``: the same command line as the ``aicore-sim`` script."""

import sys

from aicore_sim.cli import main

sys.exit(main())
