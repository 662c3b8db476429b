"""The console script's first step: import the command line, which takes a moment (numpy,
matplotlib's neighbours), with Ctrl-C during that moment a clean stop - one line, exit 130 -
instead of a traceback from whichever import it landed in."""

from __future__ import annotations

import os
import sys


def entry() -> None:
    try:
        from aicore_sim.cli import entry as run
    except KeyboardInterrupt:
        sys.stderr.write("aicore-sim: interrupted (SIGINT) while starting; nothing was run\n")
        sys.stderr.flush()
        os._exit(130)
        return
    run()


__all__ = ["entry"]
