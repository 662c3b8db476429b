"""Shared constants and helpers the tests import (``from tests.conftest import TINY``), in
``tests/`` and in each operator's ``op_models/<op>/tests/``; the fixtures that use them and the
collection order are in the root ``conftest.py``, whose folder holds both test trees.

* :data:`TINY`: the ``tiny`` platform preset (2 AIV cores, 8192 usable UB bytes) the small test
  kernels run on; a frozen :class:`~aicore_sim.sim.platform.Platform`, so one instance is shared.
* :func:`run_cli` (the ``cli`` fixture): the ``aicore-sim`` command line run **in this process**
  (:func:`aicore_sim.cli.main` with its argv), returning exit code, stdout and stderr like
  ``subprocess.run`` does, without paying an interpreter start and the package's imports for
  every call. The global state the command line changes is put back afterwards
  (:func:`_process_state`), and warnings reach its stderr as they would in a plain interpreter,
  so a test that wants exactly one line on stderr still sees a stray warning. Tests that call
  ``main`` directly get the same restoring from an autouse fixture.
* :func:`run_cli_subprocess` (the ``cli_subprocess`` fixture): the same command as a real
  ``python -m aicore_sim`` child, for the few tests whose subject is the process itself (exit
  through the console entry, signals, resource limits, a fresh interpreter discovering
  plug-ins).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aicore_sim import cli as _cli
from aicore_sim.sim.platform import load_platform
from aicore_sim.util import resources as _resources
from aicore_sim.util import staging as _staging

REPO = Path(__file__).resolve().parents[1]

TINY = load_platform("tiny")

# The signals whose handlers the command line installs (aicore_sim.util.staging) or relies on.
_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, *(getattr(signal, n, None) for n in
                                                               ("SIGHUP", "SIGQUIT", "SIGXCPU")))
                 if s is not None)

# The warning filters of a plain ``python`` (docs: "Default Warning Filter"), in order.
_PLAIN_FILTERS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


@dataclass(frozen=True)
class CliResult:
    """What ``subprocess.run(..., capture_output=True, text=True)`` gives, for one command."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # as a plain interpreter shows a warning: on (the command's) stderr
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """Put back what :func:`aicore_sim.cli.main` changes in its process: the SIGINT / SIGTERM /
    SIGHUP / SIGQUIT / SIGXCPU handlers, the cyclic garbage collector's state, the
    ``--max-memory`` cap (:func:`aicore_sim.util.resources.set_limit`), the main-process id
    the signal handlers compare with, the signal they remembered, what the command published and
    ``sys.unraisablehook`` (the warning filters are pytest's per test, and :func:`run_cli`'s)."""
    saved_signals = {s: signal.getsignal(s) for s in _SIGNALS}
    saved_gc = gc.isenabled()
    saved_limit = _resources._LIMIT
    saved_pid, saved_stop = _staging._MAIN_PID, _staging._STOP
    saved_written = list(_staging._WRITTEN)
    saved_hook = sys.unraisablehook
    try:
        yield
    finally:
        for s, handler in saved_signals.items():
            if signal.getsignal(s) is not handler:
                signal.signal(s, handler)
        if saved_gc:
            gc.enable()
        else:
            gc.disable()
        _resources.set_limit(saved_limit)
        _staging._MAIN_PID, _staging._STOP = saved_pid, saved_stop
        _staging._WRITTEN[:] = saved_written
        sys.unraisablehook = saved_hook


def run_cli(*args: object, cwd: str | Path | None = None) -> CliResult:
    """``aicore-sim ARGS`` run in this process (in ``cwd`` when given).

    Restored afterwards, whatever the command did or raised: the working directory, the
    warning filters (``main`` ignores RuntimeWarning), ``COLUMNS`` (set to 80, the width help
    text gets through a pipe) and what :func:`_process_state` lists. A ``SystemExit`` becomes
    the exit code, as in a process; any other exception propagates (a real process would
    print its traceback)."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved_cwd = os.getcwd()
    saved_columns = os.environ.get("COLUMNS")
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ["COLUMNS"] = "80"
        with _process_state(), warnings.catch_warnings(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            warnings.resetwarnings()
            for action, category, module in _PLAIN_FILTERS:
                warnings.filterwarnings(action, category=category, module=module, append=True)
            warnings.showwarning = _show_warning
            try:
                code = _cli.main(argv)
            except SystemExit as e:
                if isinstance(e.code, str):
                    err.write(e.code + "\n")
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        if saved_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved_columns
    return CliResult(argv, int(code), out.getvalue(), err.getvalue())


def run_cli_subprocess(*args: object, cwd: str | Path, pythonpath: tuple[Path, ...] = (),
                       timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """``python -m aicore_sim ARGS`` in a child process (this source tree first on its path,
    after ``pythonpath``), with stdout and stderr captured as text."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, (*pythonpath, REPO))))
    return subprocess.run([sys.executable, "-m", "aicore_sim", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout, **kwargs)
