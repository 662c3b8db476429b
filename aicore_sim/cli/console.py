"""The process around a command: ``main`` (parse, dispatch, exit code), the error-message
policy, and ``entry``, the console script (step: the command line; its outermost shell).

Exit codes (every command): 0 success, every result trustworthy; 2 a bad input - case file,
parameter, operator argument, platform, output path, or a case too big for the memory - one
line on stderr ``aicore-sim: error: <where>: <rule>`` (with the aclnn code when the operator
API rejected it) and nothing written; 1 a check the user relies on failed (``run``: an output
differs from the golden, a hazard under ``--strict``, ``--check-streams``; ``verify``: an output
failed) or the simulation failed (e.g. a deadlock in the kernel port), or the machine failed
(one line ``error: environment: ...``: a full disk or standard output, a file-size limit, a
closed standard output, an encoding that cannot show a name), or an internal error (one line
asking to report it; ``--debug`` shows the traceback) or the CPU-time limit (RLIMIT_CPU,
SIGXCPU) was reached; 130 / 143 / 131 / 129 interrupted by SIGINT / SIGTERM / SIGQUIT /
SIGHUP (the output folder being written is removed). An error class carries its exit code
(:class:`aicore_sim.sim.errors.SimError`'s ``exit_code``: 2 for an ``InputError``).
"""

from __future__ import annotations

import argparse
import errno
import functools
import os
import re
import signal
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from aicore_sim.cli.common import DEBUG_ENV, PROG, err, visible
from aicore_sim.cli.parser import build_parser
from aicore_sim.ops.registry import OpLoadError
from aicore_sim.sim.errors import SimError
from aicore_sim.util.claim import ClaimError, release_all
from aicore_sim.util.staging import Interrupted, Terminated, install_signal_handlers, stopped_text


def _user_error(e: BaseException) -> str | None:
    """The one-line message of an exception caused by the user's input, else None."""
    if isinstance(e, SimError):
        return f"error: {e.tag}{e}" if e.exit_code == 2 else None
    if isinstance(e, OSError) and e.filename is not None:  # an output or input path
        what = e.strerror or type(e).__name__
        return f"error: {e.filename}: {what}"
    return None


_ENV_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO, errno.EMFILE, errno.ENFILE}


def _environment_error(e: BaseException) -> str | None:
    """The one-line message of a failure of the machine rather than of the input or of the
    simulator - a full disk, a file-size limit, a closed or full standard output, a terminal
    encoding that cannot show a name - else None (exit 1, nothing published)."""
    if isinstance(e, UnicodeEncodeError):
        enc = getattr(sys.stdout, "encoding", None) or e.encoding
        return (f"error: environment: the output encoding {enc} cannot show "
                f"{e.object[e.start:e.end]!r}; set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
    if isinstance(e, OSError) and e.errno is None and re.fullmatch(
            r"\d+ requested and \d+ written", str(e)):  # numpy's short write (tofile, np.save)
        return (f"error: environment: a write was cut short ({e}): a full disk or a file-size "
                "limit")
    if isinstance(e, OSError) and (e.errno in _ENV_ERRNOS or
                                   (e.errno == errno.EBADF and e.filename is None)):
        where = e.filename if e.filename is not None else "an output file"
        return (f"error: environment: cannot write {where}: {e.strerror or e} "
                f"({errno.errorcode.get(e.errno, e.errno)})")
    return None


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser, built once a process (parsing leaves it as it was; a
    process that runs several commands - the test suite's in-process runs - reuses it)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aicore-sim`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_ENV) == "1"
    if "--debug" in argv:  # accepted anywhere on the line
        argv = [a for a in argv if a != "--debug"]
        debug = True
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    if sys.stdout is None:  # started with standard output closed: nowhere to report to
        err("error: environment: standard output is closed; nothing was run")
        return 1
    install_signal_handlers()
    if not debug:  # numpy's overflow / invalid-value warnings are not messages for a user
        warnings.simplefilter("ignore", RuntimeWarning)
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)  # type: ignore[assignment]
    try:
        return _dispatch(args, debug)
    finally:
        sys.stdout = stdout
        release_all()  # the outputs' locks: the next command may write them


class _NamedStdout:
    """Standard output whose failed writes name it (``filename``), so a full or closed
    standard output is told apart from an output file; everything else passes through."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _named(self, call: Any, *a: Any) -> Any:
        try:
            return call(*a)
        except OSError as e:
            if e.filename is None:
                e.filename = "standard output"
            raise

    def write(self, text: str) -> int:
        # names from files reach the terminal with their control characters escaped
        return self._named(self._stream.write, visible(text))

    def flush(self) -> None:
        self._named(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _dispatch(args: argparse.Namespace, debug: bool) -> int:
    """Run the subcommand; every exception becomes its exit code and at most one line."""
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a full or closed standard output fails here, in the contract
        return code
    except ClaimError as e:  # an output refused before the work
        err(f"error: {e}")
        return 2
    except OpLoadError as e:  # an installed plug-in is broken: not the user's input
        err(f"error: {e}")
        return 1
    except Interrupted as e:  # stopped, with what was kept named
        err(str(e))
        return e.code
    except KeyboardInterrupt:
        err(stopped_text("interrupted (SIGINT)"))
        return 130
    except Terminated as e:
        if e.signum == getattr(signal, "SIGXCPU", None):  # the machine's limit, not a stop
            err(stopped_text("error: environment: the CPU-time limit (RLIMIT_CPU) was "
                             "reached"))
            return 1
        err(stopped_text(f"terminated ({e})"))
        return 128 + e.signum
    except BrokenPipeError:  # the reader went away: what was not shown (or written) is lost
        err(stopped_text("error: environment: standard output was closed by its reader "
                         "(broken pipe)"))
        return 1
    except MemoryError:
        err("error: out of memory: the case does not fit in this machine's memory (try a "
             "smaller case, --mode timing-only, --trace lanes, or see --max-memory)")
        return 2
    except SimError as e:
        msg = _user_error(e)
        if msg is not None:
            err(msg)
            return e.exit_code
        err(f"simulation failed: {type(e).__name__}: {e}")
        return e.exit_code
    except Exception as e:  # noqa: BLE001 - no traceback reaches a user unless asked for
        from concurrent.futures.process import BrokenProcessPool

        if isinstance(e, BrokenProcessPool) and not debug:  # killed, or out of memory
            err(stopped_text("error: environment: a worker process died (killed by a signal "
                             "or out of memory)"))
            return 1
        env = _environment_error(e)
        if env is not None and not debug:
            err(env)
            return 1
        msg = _user_error(e)
        if msg is not None:
            err(msg)
            return 2
        if debug:
            raise
        err(f"internal error: {type(e).__name__}: {e} - this is a bug in {PROG}, please "
             "report it with the command line; run again with --debug for the traceback")
        return 1


def entry() -> None:
    """The console script: run :func:`main`, then leave without tearing down the interpreter's
    objects one by one (a big run holds millions; its files are all closed by then)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:  # main() flushed and reported stdout; a closed pipe is not news
            pass
    os._exit(code)

