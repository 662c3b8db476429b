"""Hidden temporaries named after their owner; the ones a dead owner left behind removed.

Step of the flow: the set-up and the last step of every command that writes. A command builds
its outputs under hidden temporary names beside them (a staged run folder,
:mod:`aicore_sim.util.staging`; an atomic file's temporary, :mod:`aicore_sim.util.atomic`)
and removes them however it stops - except under SIGKILL, which no process can catch. So each
temporary carries its owner in its name, ``.<name>.<pid>-<start>-<host>.<random><suffix>``:
the process id, the process's start time (clock ticks after boot, ``/proc/<pid>/stat``: a pid
reused by a later process is not taken for the owner) and a digest of the boot and the pid
namespace (a folder shared with another machine or container holds pids that mean nothing
here). :func:`remove_dead` - run when a command claims an output, stages a folder or writes a
file atomically - removes, in that folder, the temporaries whose owner is known to have ended.
A live owner's are never touched; neither is one whose owner cannot be judged from here
(another host, no ``/proc``): left rather than risk a live one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from pathlib import Path

SUFFIXES = (".tmp", ".so", ".o", ".png")
"""How the temporaries end (a compiler or a plotting library reads the file type from it)."""

_TAG = r"(?P<pid>\d+)-(?P<start>\d+)-(?P<host>[0-9a-f]{6})"
_NAME = re.compile(r"^\.(?P<name>.+)\." + _TAG + r"\.[a-z0-9_]{8}(?:"
                   + "|".join(re.escape(s) for s in SUFFIXES) + ")$")

_TAGS: dict[int, str] = {}  # pid -> its tag (a forked child has a tag of its own)
_HOST: list[str] = []


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from the third field (state) on; None if unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    return text.rsplit(")", 1)[-1].split()


def start_time(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (None: unknown)."""
    f = _stat_fields(pid)
    try:
        return int(f[19]) if f else None  # field 22 of proc(5); f[0] is field 3
    except (IndexError, ValueError):
        return None


def host() -> str:
    """Six hex digits naming this boot of this machine and this pid namespace."""
    if not _HOST:
        parts = []
        for read in (lambda: Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
                     lambda: str(os.stat("/proc/self/ns/pid").st_ino)):
            try:
                parts.append(read())
            except OSError:
                parts.append("")
        _HOST.append(hashlib.sha256("/".join(parts).encode()).hexdigest()[:6]
                     if any(parts) else "000000")
    return _HOST[0]


def tag() -> str:
    """This process's owner tag: ``<pid>-<start time>-<host>``."""
    pid = os.getpid()
    if pid not in _TAGS:
        _TAGS[pid] = f"{pid}-{start_time(pid) or 0}-{host()}"
    return _TAGS[pid]


def prefix(name: str) -> str:
    """The start of a hidden temporary's name for output ``name`` owned by this process
    (``tempfile`` appends the random part and the suffix)."""
    return f".{name}.{tag()}."


def owner(name: str) -> tuple[int, int, str] | None:
    """(pid, start time, host) of the temporary called ``name``; None for other names."""
    m = _NAME.match(name)
    return (int(m["pid"]), int(m["start"]), m["host"]) if m else None


def parse_tag(text: str) -> tuple[int, int, str] | None:
    """(pid, start time, host) of an owner tag (:func:`tag`'s text); None if it is not one."""
    m = re.fullmatch(_TAG, text.strip())
    return (int(m["pid"]), int(m["start"]), m["host"]) if m else None


def owner_ended(pid: int, start: int, where: str) -> bool:
    """Whether the process that made a temporary tagged ``pid``, ``start``, ``where`` has
    ended for certain: this host, and no such process (none with that pid, a zombie, or
    another process that reused the pid)."""
    if where != host() or where == "000000" or start == 0:
        return False  # cannot be judged from here
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists (another user's)
    f = _stat_fields(pid)
    if f is None:  # it exists but cannot be seen (another user's, hidden): not judged
        return False
    if f[0] in ("Z", "X"):  # killed, not yet reaped by its parent
        return True
    try:
        return int(f[19]) != start  # the pid is another process's now
    except (IndexError, ValueError):
        return False


def remove_dead(folder: Path) -> list[str]:
    """Remove, in ``folder``, the hidden temporaries whose owner has ended; their names."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    gone = []
    for e in entries:
        if not e.name.startswith("."):
            continue
        who = owner(e.name)
        if who is None or not owner_ended(*who):
            continue
        with contextlib.suppress(OSError):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            gone.append(e.name)
    return gone


__all__ = ["SUFFIXES", "host", "owner", "owner_ended", "parse_tag", "prefix", "remove_dead",
           "start_time", "tag"]
