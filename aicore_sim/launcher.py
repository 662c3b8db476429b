"""The console script's first step: import the command line, which takes a moment (numpy,
matplotlib's neighbours), with Ctrl-C during that moment a clean stop - one line, exit 130 -
instead of a traceback from whichever import it landed in; SIGTERM / SIGHUP / SIGQUIT /
SIGXCPU likewise (until the command installs its own handlers), and a Ctrl-C while the
command line is parsed."""

from __future__ import annotations

import os
import sys


def _stopped_while_starting(signum: int, frame: object) -> None:
    import signal

    name = signal.Signals(signum).name
    if signum == getattr(signal, "SIGXCPU", None):
        sys.stderr.write("aicore-sim: error: environment: the CPU-time limit (RLIMIT_CPU) was "
                         "reached while starting; nothing was run\n")
        sys.stderr.flush()
        os._exit(1)
    sys.stderr.write(f"aicore-sim: terminated ({name}) while starting; nothing was run\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def entry() -> None:
    import signal

    for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGXCPU"):  # the command line installs its
        sig = getattr(signal, name, None)                      # own once imported
        if sig is not None:
            signal.signal(sig, _stopped_while_starting)
    try:
        from aicore_sim.cli import entry as run
    except KeyboardInterrupt:
        sys.stderr.write("aicore-sim: interrupted (SIGINT) while starting; nothing was run\n")
        sys.stderr.flush()
        os._exit(130)
        return
    try:
        run()
    except KeyboardInterrupt:  # outside the command (while its line is parsed): one line
        from aicore_sim.util.staging import stopped_text

        sys.stderr.write(f"aicore-sim: {stopped_text('interrupted (SIGINT)')}\n")
        sys.stderr.flush()
        os._exit(130)


__all__ = ["entry"]
