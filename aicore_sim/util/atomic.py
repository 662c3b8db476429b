"""The one atomic file write of the package: a file appears complete or not at all.

Step of the flow: the last one - every file a command publishes on its own (a report, a plot,
a trace, a compiled kernel library, a sweep's spec) is written under a hidden temporary name
beside its target and renamed into place once complete; a failure or an interrupt removes the
temporary file. (A run folder is staged as a whole: :mod:`aicore_sim.util.staging`.) The
temporary's name carries its owner, and the temporaries a killed owner left in that folder are
removed first (:mod:`aicore_sim.util.leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from aicore_sim.util import leftovers

__all__ = ["atomic_path", "write_atomic"]


def umask() -> int:
    """The process's file-creation mask (read without changing it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: Path, *, suffix: str = ".tmp", mode: int | None = 0o666,
                before_publish: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Yield a hidden empty file beside ``path`` to write; when the block ends it becomes
    ``path`` (with ``mode`` less the umask; ``None`` keeps the file's own, e.g. a linker's),
    on any exception it is removed. ``before_publish(tmp)`` runs on the complete file just
    before the rename: if it raises, nothing is published. ``suffix`` is one of
    :data:`~aicore_sim.util.leftovers.SUFFIXES`."""
    path = Path(path)
    assert suffix in leftovers.SUFFIXES, suffix
    path.parent.mkdir(parents=True, exist_ok=True)
    leftovers.remove_dead(path.parent)
    fd, name = tempfile.mkstemp(prefix=leftovers.prefix(path.name), suffix=suffix,
                                dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode & ~umask())
        if before_publish is not None:
            before_publish(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: Path, data: str | bytes,
                 before_publish: Callable[[Path], None] | None = None) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path, before_publish=before_publish) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return Path(path)
