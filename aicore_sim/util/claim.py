"""Outputs claimed before the work: resolved, checked writable and locked against a second
writer (step: the set-up of every command that writes).

:func:`claim` is called by every command for every path it will write (a run folder, a
report's stem, a sweep's results folder, a calibration overlay, a dump folder) before any
work starts. It refuses, with :class:`ClaimError` (exit 2, one line naming the option, the
path and the rule), a name that does not name an entry of its folder (``.``, ``..``, a
symbolic link resolving elsewhere), a folder that cannot be written, and a path another
``aicore-sim`` holds. The hold is an OS lock (``fcntl.flock``) on a hidden lock file next to
the output, ``.<name>.aicore-sim.lock``: the kernel drops it when the holder ends however it
ends, so a crashed holder leaves at worst an unlocked file that the next claim takes over.
:func:`release_all` (the command line calls it when a command ends) removes the lock files
and the folders a claim made that stayed empty.

A command killed with SIGKILL cannot clean up: once a claim holds its lock it removes, in the
output's folder (and in the output itself when it is a folder, such as a sweep's), what
killed commands left there - the lock files no process holds and the hidden temporaries of
owners that have ended (:func:`aicore_sim.util.leftovers.remove_dead`); nothing of a live
command.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path

from aicore_sim.util import leftovers

LOCK_SUFFIX = ".aicore-sim.lock"
_BUSY_TRIES = 3  # a held lock is tried again this many times, 10 ms apart, before refusing


class ClaimError(Exception):
    """An output path refused before the work (exit 2)."""

    exit_code = 2


# (lock path, fd, folders the claim made, pid of the claimer), newest last
_HELD: list[tuple[Path, int, list[Path], int]] = []


def lock_path(path: Path) -> Path:
    """The lock file of output ``path``: hidden, next to it."""
    return path.parent / f".{path.name}{LOCK_SUFFIX}"


def _holder(lock: Path) -> str:
    try:
        pid = lock.read_text(encoding="ascii").partition("\n")[0].strip()
    except (OSError, UnicodeDecodeError):
        return "another aicore-sim"
    return f"another aicore-sim (pid {pid})" if pid.isdigit() else "another aicore-sim"


def _made_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones made, outermost first."""
    missing = []
    p = folder
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    made = []
    for d in reversed(missing):
        os.mkdir(d)
        made.append(d)
    return made


def _remove_made(made: list[Path]) -> None:
    for d in reversed(made):
        with contextlib.suppress(OSError):
            d.rmdir()


def claim(path: str | Path, option: str) -> Path:
    """Claim output ``path`` (given as ``option`` on the command line) for this process; the
    path, absolute (its name kept: the output is created there). ClaimError when refused."""
    raw = str(path)
    p = Path(os.path.abspath(raw))
    if Path(raw).name in ("", ".", "..") or raw.rstrip("/").endswith(("/.", "/..")) or \
            raw in (".", ".."):
        raise ClaimError(f"{option} {raw}: names no entry of its folder (rule output_name)")
    parent = p.parent.resolve()
    if p.is_symlink() and p.resolve().parent != parent:
        raise ClaimError(f"{option} {raw}: a symbolic link resolving outside its folder "
                         f"{p.parent} (rule output_name)")
    p = parent / p.name
    probe = parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ClaimError(f"{option} {raw}: {probe} is not a folder (rule output_folder)")
    try:
        made = _made_parents(parent)
    except OSError as e:
        raise ClaimError(f"{option} {raw}: cannot create folder {parent} ({e.strerror}) "
                         "(rule output_writable)") from None
    lock = lock_path(p)
    busy = moved = 0
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            _remove_made(made)
            raise ClaimError(f"{option} {raw}: folder {parent} is not writable "
                             f"({e.strerror or errno.errorcode.get(e.errno)}) "
                             "(rule output_writable)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: by a command writing the output, or for an instant by a
            try:  # claim removing a killed command's lock file (no longer at the path then)
                held = os.path.samestat(os.fstat(fd), os.stat(lock))
            except OSError:
                held = False
            busy, moved = busy + held, moved + (not held)
            if busy > _BUSY_TRIES or moved > 100:
                who = _holder(lock)
                os.close(fd)
                _remove_made(made)
                raise ClaimError(f"{option} {raw}: {who} is writing it; wait for it to end or "
                                 f"choose another {option} (rule output_busy)") from None
            os.close(fd)
            time.sleep(0 if not held else 0.01)
            continue
        try:  # the file locked is still the one at the path (not removed by its last holder)
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{leftovers.tag()}\n".encode())
    except OSError:
        pass  # for the second writer's message and for the claims after a SIGKILL
    if not os.access(parent, os.W_OK | os.X_OK):
        _release(lock, fd, made)
        raise ClaimError(f"{option} {raw}: folder {parent} is not writable "
                         "(rule output_writable)")
    _HELD.append((lock, fd, made, os.getpid()))
    for folder in (parent, p):
        remove_dead(folder)
    return p


def _remove_unheld_lock(lock: Path) -> bool:
    """Remove lock file ``lock`` if the claimer it names has ended and no process holds it
    (a killed command's); whether removed. A claim that opened it meanwhile finds it is no
    longer the file at the path, and makes a new one."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        lines = os.read(fd, 200).decode("ascii", "replace").split("\n")
        who = leftovers.parse_tag(lines[1]) if len(lines) > 1 else None
        if who is None or not leftovers.owner_ended(*who):
            return False  # a live claimer's, or one claiming it now (not yet written)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: refused
        if not os.path.samestat(os.fstat(fd), os.stat(lock)):
            return False
        os.unlink(lock)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_dead(folder: Path) -> list[str]:
    """Remove, in ``folder``, what killed commands left: lock files no process holds and
    hidden temporaries whose owner has ended; their names (none when ``folder`` is not a
    folder)."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    gone = leftovers.remove_dead(folder)
    with contextlib.suppress(OSError):
        for e in os.scandir(folder):
            if e.name.startswith(".") and e.name.endswith(LOCK_SUFFIX) and \
                    e.is_file(follow_symlinks=False) and _remove_unheld_lock(Path(e.path)):
                gone.append(e.name)
    return sorted(gone)


def _release(lock: Path, fd: int, made: list[Path]) -> None:
    with contextlib.suppress(OSError):
        if os.path.samestat(os.fstat(fd), os.stat(lock)):
            os.unlink(lock)
    with contextlib.suppress(OSError):
        os.close(fd)
    _remove_made(made)


def release_all() -> None:
    """Give up every claim this process made (a forked child leaves its parent's alone):
    lock files removed, folders made for them removed when still empty."""
    pid = os.getpid()
    keep = [h for h in _HELD if h[3] != pid]
    for lock, fd, made, owner in reversed(_HELD):
        if owner == pid:
            _release(lock, fd, made)
    _HELD[:] = keep


__all__ = ["LOCK_SUFFIX", "ClaimError", "claim", "lock_path", "release_all", "remove_dead"]
