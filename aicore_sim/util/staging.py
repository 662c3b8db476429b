"""Output staging: a command's results appear whole or not at all.

Step of the flow: the last one - every command that writes a folder (``run``) or a report
(``verify``) builds it under a hidden temporary name next to its target and renames it into
place only when everything is written, so a failure, Ctrl-C or ``kill`` leaves nothing behind
(neither a half-written folder nor the hidden temporary one). SIGKILL, which no process can
catch, leaves the hidden folder: its name carries its owner, and the next command staging in
that folder (or claiming an output there) removes it (:mod:`aicore_sim.util.leftovers`).

:func:`install_signal_handlers` turns SIGTERM (and SIGHUP, SIGQUIT, SIGXCPU) into
:class:`Terminated`, an
exception like ``KeyboardInterrupt`` for SIGINT, so the ``finally`` blocks that remove the
temporary folder run on every way a command can be stopped short of SIGKILL. Forked children
(background phases, record ranges) do not clean up: they die at once as the default action
would have made them (Ctrl-C they leave to the parent), and the parent removes the folder.

Python only prints an exception raised where it cannot propagate (a ``__del__`` method, the
hooks ``os.fork`` runs in the parent), so a signal that lands there would be lost and the run
would finish as if never stopped. The handlers therefore also remember the signal: nothing is
published (:func:`publish`, :func:`write_staged`) once one has arrived, and such a swallowed
stop is not printed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aicore_sim.util import leftovers
from aicore_sim.util.atomic import write_atomic


class Interrupted(BaseException):
    """A command stopped by a signal after it had kept something (a sweep's finished rows):
    the message says what, ``code`` is the exit code (130 / 128 + signal)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Terminated(BaseException):
    """The process received SIGTERM, SIGHUP, SIGQUIT or SIGXCPU (raised in the main process
    only)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __reduce__(self) -> tuple:  # re-raised in the parent by a forked child's pipe
        return (Terminated, (self.signum,))


_MAIN_PID: int | None = None
_STOP: int | None = None  # the signal that asked the main process to stop, once one has
_WRITTEN: list[Path] = []  # what this command has published so far
_other_hook = sys.__unraisablehook__  # the unraisable hook in place before ours


def _stop_exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _on_signal(signum: int, frame: object) -> None:
    global _STOP
    if os.getpid() != _MAIN_PID:  # a forked child
        if signum == signal.SIGINT:  # Ctrl-C reaches the whole group: the parent acts on it
            return
        signal.signal(signum, signal.SIG_DFL)  # die as the default action would
        os.kill(os.getpid(), signum)
        return
    _STOP = signum
    raise _stop_exception(signum)


def _quiet_about_stops(unraisable: Any) -> None:
    """``sys.unraisablehook``: a stop raised where Python could only print it (it is
    remembered in ``_STOP`` and acted on at the next publish) is not printed."""
    if _STOP is not None and isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
        return
    _other_hook(unraisable)


def raise_if_stopped() -> None:
    """Raise the stop a signal asked for, had the exception been swallowed where it was
    first raised."""
    if _STOP is not None:
        raise _stop_exception(_STOP)


def install_signal_handlers() -> None:
    """Make SIGINT raise ``KeyboardInterrupt`` and SIGTERM / SIGHUP / SIGQUIT / SIGXCPU (the
    soft CPU-time limit, RLIMIT_CPU) :class:`Terminated` in this (the main) process, and
    remember the signal (see the module's docstring)."""
    global _MAIN_PID, _STOP, _other_hook
    _MAIN_PID, _STOP = os.getpid(), None
    _WRITTEN.clear()
    for sig in (signal.SIGINT, signal.SIGTERM, *(getattr(signal, n, None) for n in
                                                  ("SIGHUP", "SIGQUIT", "SIGXCPU"))):
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(sig, _on_signal)
    if sys.unraisablehook is not _quiet_about_stops:
        _other_hook = sys.unraisablehook
        sys.unraisablehook = _quiet_about_stops


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish_modes(folder: Path) -> None:
    """Give a temp-built folder and its files the usual modes (mkdtemp makes them 0700)."""
    mask = _umask()
    for p in [folder, *folder.rglob("*")]:
        p.chmod((0o777 if p.is_dir() else 0o666) & ~mask)


def check_target_folder(out: Path, option: str = "--out") -> None:
    """A target folder must not exist, or be an empty folder (OSError subclasses otherwise)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(17, f"{option} exists and is not an empty folder", str(out))


def unique_stamp(folder: Path, stem: str, suffixes: tuple[str, ...] = ("",),
                 prefix: str = "") -> Path:
    """``folder/<prefix><time to the millisecond>-<stem>`` (``-2``, ``-3`` … appended while any
    of ``<path><suffix>`` exists)."""
    t = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"
    base = prefix + (f"{stamp}-{stem}" if stem else stamp)
    out, k = folder / base, 1
    while any(Path(f"{out}{s}").exists() for s in suffixes):
        k += 1
        out = folder / f"{base}-{k}"
    return out


def new_stage(out: Path) -> Path:
    """A new hidden empty folder next to ``out`` (``.<name>.<owner>.<random>.tmp``); the hidden
    temporaries a killed command left there are removed first."""
    made = not out.parent.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    leftovers.remove_dead(out.parent)
    try:
        return Path(tempfile.mkdtemp(prefix=leftovers.prefix(out.name), suffix=".tmp",
                                     dir=out.parent))
    except OSError:
        if made:  # nothing is left behind: not even the folder made for it
            with contextlib.suppress(OSError):
                out.parent.rmdir()
        raise


def publish(tmp: Path, out: Path) -> None:
    """Rename the finished stage ``tmp`` to ``out`` (missing, or an empty folder), unless a
    stop was asked for meanwhile."""
    raise_if_stopped()
    _publish_modes(tmp)
    if out.exists():
        out.rmdir()  # empty (checked by the caller before the work)
    tmp.rename(out)
    _WRITTEN.append(out)


def stopped_text(how: str) -> str:
    """The line a stopped command ends with: what it had published before the stop (a signal
    that lands while the last lines print), else that nothing was written."""
    if _WRITTEN:
        return f"{how} after writing {', '.join(map(str, _WRITTEN))}, which is complete"
    return f"{how}; nothing was written"


def discard(tmp: Path) -> None:
    shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """Yield a hidden empty folder next to ``out``; on success it becomes ``out`` (which must
    be missing or an empty folder), on any exception it is removed."""
    tmp = new_stage(out)
    try:
        yield tmp
        publish(tmp, out)
    except BaseException:
        discard(tmp)
        raise


def write_staged(path: Path, text: str, check: Any = None) -> None:
    """Write ``text`` to ``path`` atomically (a hidden temporary file, then a rename).

    ``check(tmp_path)``, when given, reads the complete temporary file before the rename: if it
    raises, nothing is published."""
    def before_publish(tmp: Path) -> None:
        if check is not None:
            check(tmp)
        raise_if_stopped()

    write_atomic(path, text, before_publish)
    _WRITTEN.append(path)




def safe_name(text: str) -> str:
    """``text`` as one path component: characters other than letters, digits, ``_ . -``
    become ``-``, leading dots are dropped (no separators, no ``..``, no hidden name), and a
    name past :data:`NAME_MAX` characters is cut, with a digest of the whole kept so that
    two long names stay two (a file system refuses names past 255 bytes)."""
    import hashlib
    import re

    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).lstrip(".").strip("-")
    if len(name) > NAME_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = f"{name[:NAME_MAX - 11]}-{digest}"
    return name or "case"


NAME_MAX = 96
"""Characters of a name :func:`safe_name` keeps (room left for a time stamp and suffixes)."""


def inside(folder: Path, path: Path) -> Path:
    """``path`` resolved, checked to lie under ``folder`` (ValueError otherwise)."""
    root = folder.resolve()
    p = (folder / path).resolve()
    if p != root and root not in p.parents:
        raise ValueError(f"{path}: resolves outside {folder}")
    return p


__all__ = ["Interrupted", "Terminated", "check_target_folder", "discard", "inside",
           "install_signal_handlers", "new_stage", "publish", "raise_if_stopped", "safe_name",
           "staged_folder", "stopped_text", "unique_stamp", "write_staged"]
