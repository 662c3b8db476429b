"""A trace file (step: the Perfetto export): :func:`write_trace` streams the writer's chunks
into it - compacted, gzipped (level 1; ISA-L's deflate when the ``isal`` package is there, else
zlib) and written by a worker thread, the file appearing whole or not at all - and
:func:`read_trace` loads one back."""

from __future__ import annotations

import gzip as _gzip
import json
import os
import queue
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:  # ISA-L's deflate: the same gzip format, about 4x faster than zlib at level 1
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - zlib is the fallback
    import zlib as _zlib

from aicore_sim.export.perfetto.events import stall_rows
from aicore_sim.export.perfetto.rows import compact
from aicore_sim.export.perfetto.writer import CHUNK_EVENTS, Writer, iter_text
from aicore_sim.sim.trace import Trace
from aicore_sim.util.atomic import atomic_path

LARGE_EVENTS = 200_000
"""Above this many events :func:`write_trace` gzips even when the path does not say so."""

GZIP_LEVEL = 1  # speed first: zlib's level 6 is 2.3x slower for a file a third smaller
_QUEUED = 4  # chunks waiting for the writer thread


@dataclass(frozen=True)
class TraceFile:
    """What :func:`write_trace` wrote.

    ``path``: the file (``.gz`` appended when the trace was gzipped for its size); ``bytes``:
    its size on disk; ``events``: the number of trace events in it. ``name`` is the file name,
    and a TraceFile is path-like (``open(written)`` works).
    """

    path: Path
    bytes: int
    events: int

    @property
    def name(self) -> str:
        return self.path.name

    def __fspath__(self) -> str:
        return os.fspath(self.path)


class Sink:
    """A file receiving chunks: compacted, gzip-compressed (level 1) or not, and written.

    With ``threaded`` the work runs in a worker thread fed by a queue of at most
    ``_QUEUED`` chunks, so memory stays O(chunk). NumPy's compaction, the compressor and the
    file writes release the GIL: they overlap the rendering of the next chunks.
    """

    def __init__(self, f, gzip: bool, threaded: bool = True) -> None:
        self.f = f
        self.z = _zlib.compressobj(GZIP_LEVEL, _zlib.DEFLATED, 31) if gzip else None
        self.size = 0
        self.error: BaseException | None = None
        self.q: queue.Queue | None = None
        if threaded:
            self.q = queue.Queue(maxsize=_QUEUED)
            self.thread = threading.Thread(target=self._run, name="trace-writer", daemon=True)
            self.thread.start()

    def _out(self, piece: bytes | np.ndarray) -> None:
        data = compact(piece)
        if self.z is not None:
            data = self.z.compress(data)
        if len(data):
            self.f.write(data)
            self.size += len(data)

    def _run(self) -> None:
        assert self.q is not None
        while (piece := self.q.get()) is not None:
            if self.error is None:
                try:
                    self._out(piece)
                except BaseException as exc:  # reported to the rendering thread
                    self.error = exc

    def write(self, piece: bytes | np.ndarray) -> None:
        if self.error is not None:
            raise self.error
        if self.q is None:
            self._out(piece)
        else:
            self.q.put(piece)

    def _stop(self) -> None:
        if self.q is not None and self.thread.is_alive():
            self.q.put(None)
            self.thread.join()

    def close(self) -> None:
        """Flush everything; raises what the worker met."""
        self._stop()
        if self.error is not None:
            raise self.error
        if self.z is not None:
            tail = self.z.flush()
            self.f.write(tail)
            self.size += len(tail)

    def abort(self) -> None:
        """Stop the worker, dropping what is queued (the caller removes the file)."""
        if self.q is not None:
            self.error = self.error or RuntimeError("aborted")
            self._stop()


def _large(trace: Trace, writer: Writer) -> bool:
    """More than :data:`LARGE_EVENTS` events? (exact count only when a bound cannot tell)."""
    low = trace.instruction_count()
    if writer.detail == "full":
        low += sum(stall_rows(c).shape[0] for c in trace.cores)
    return low > LARGE_EVENTS or writer.count() > LARGE_EVENTS


def write_trace(trace: Trace | Mapping[str, Any], path: str | os.PathLike,
                gzip: bool | None = None, metadata: Mapping[str, Any] | None = None,
                detail: str = "full", chunk_events: int = CHUNK_EVENTS,
                threaded: bool = True) -> TraceFile:
    """Write the Chrome trace of ``trace`` (or of an already built trace object) atomically.

    ``detail`` is ``"full"`` or ``"lanes"`` (see :mod:`aicore_sim.export.perfetto`).
    ``gzip=None`` gzips when ``path`` ends with ``.gz`` or when the trace has more than
    :data:`LARGE_EVENTS` events (then ``.gz`` is appended to the path). The text is rendered
    ``chunk_events`` events at a time and streamed into the file (compacted, compressed and
    written by a worker thread unless ``threaded=False``), so memory stays O(chunk_events)
    whatever the trace; the text does not depend on ``chunk_events`` or ``threaded``. The file
    appears complete or not at all (:func:`aicore_sim.util.atomic.atomic_path`). Returns a
    :class:`TraceFile` (``path``, ``bytes``, ``events``).
    """
    path = Path(path)
    writer: Writer | None = None
    if isinstance(trace, Trace):
        writer = Writer(trace, detail, chunk_events, metadata)
        if gzip is None:
            gzip = path.suffix == ".gz" or _large(trace, writer)
        pieces: Iterable[bytes | np.ndarray] = iter_text(writer)
    else:
        if gzip is None:
            gzip = path.suffix == ".gz" or len(trace["traceEvents"]) > LARGE_EVENTS
        pieces = iter([json.dumps(trace, separators=(",", ":")).encode()])
    if gzip and path.suffix != ".gz":
        path = path.with_name(path.name + ".gz")
    with atomic_path(path, mode=None) as tmp, open(tmp, "wb") as f:
        sink = Sink(f, gzip, threaded)
        try:
            for piece in pieces:
                sink.write(piece)
            sink.close()
        except BaseException:
            sink.abort()
            raise
    events = writer.events if writer is not None else len(trace["traceEvents"])
    return TraceFile(path, sink.size, events)


def read_trace(path: str | os.PathLike) -> dict[str, Any]:
    """Load a trace written by :func:`write_trace` (``.json`` or ``.json.gz``)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = _gzip.decompress(raw)
    return json.loads(raw)
