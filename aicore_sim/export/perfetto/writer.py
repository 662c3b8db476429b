"""The text of a whole trace, chunk by chunk, and :func:`chrome_trace`, the same text parsed
back (step: the Perfetto export; the file is :mod:`~aicore_sim.export.perfetto.sink`'s).

How it scales. :func:`write_trace` never builds one Python object per event: it renders each
kind of event of a core from the Trace's numpy arrays, ``chunk_events`` rows at a time, as a
NUL-padded byte matrix — one row per event; numbers written as digits by table look-ups on
whole columns; the static text of an event (name, cat, pid, tid, the args that do not vary)
built once per distinct instruction *shape* (an instruction without its addresses: 67 in P1)
and gathered by row. A worker thread drops the padding, gzips (level 1; ISA-L's deflate when
the ``isal`` package is there, else zlib) and writes, while the next chunk is rendered; the
text is never held whole, so memory is O(chunk_events). Per core the events come in a fixed
order (metadata, instruction slices in the Trace's row order, issue slices, stalls, flows,
counter), which the chunking does not change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from aicore_sim.export.perfetto.events import Core, Shapes, stall_table, stalled_pipes
from aicore_sim.export.perfetto.rows import (
    Int,
    Text,
    Us,
    compact,
    dumps,
    render,
    str_table,
    text_table,
)
from aicore_sim.export.perfetto.schema import (
    CAT,
    DETAILS,
    HEADER,
    LANES,
    core_label,
    instr_name,
    lane_ns,
    static_args,
    tid_of,
    to_ns,
)
from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.trace import Trace

CHUNK_EVENTS = 16_384
"""Events rendered per chunk: bounds the memory of a write (about 200 bytes per event)."""


class Writer:
    """The text of a trace, as a sequence of byte chunks (each event starts with a comma)."""

    def __init__(self, trace: Trace, detail: str, chunk: int,
                 metadata: Mapping[str, Any] | None) -> None:
        if detail not in DETAILS:
            raise ValueError(f"detail must be one of {DETAILS}, not {detail!r}")
        if chunk < 1:
            raise ValueError("chunk_events must be >= 1")
        self.trace, self.detail, self.chunk, self.metadata = trace, detail, chunk, metadata
        self.clock = float(trace.clock_mhz)
        self.shapes = Shapes()
        self.sids = [self.shapes.of(ct.stream) for ct in trace.cores]
        dtypes = self.shapes.dtypes()
        self.show_dtype = len(dtypes) > 1
        self.dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
        self.events = 0
        self.flow_id = 0
        self._shape_texts: dict[int, tuple[str, Pipe]] = {}

    def cores(self) -> Iterator[Core]:
        for ct, sid_of in zip(self.trace.cores, self.sids):
            yield Core(ct, sid_of, self.shapes, self.clock)

    def count(self) -> int:
        """Events the file will hold (computed without rendering)."""
        return sum(c.count(self.detail) for c in self.cores())

    def chunks(self) -> Iterator[bytes | np.ndarray]:
        for c in self.cores():
            yield from self._core(c)

    def tail(self) -> bytes:
        tr = self.trace
        other: dict[str, Any] = {
            "clock_mhz": self.clock, "makespan_cycles": tr.makespan, "cores": len(tr.cores),
            "time_unit": "us (cycles in args)", "detail": self.detail, "events": self.events}
        if self.dtype is not None:
            other["dtype"] = self.dtype
        if self.metadata:
            other.update(self.metadata)
        return f'],"otherData":{dumps(other)}}}'.encode()

    # -- one core --------------------------------------------------------------------------

    def _emit(self, k: int, parts: list) -> np.ndarray:
        self.events += k
        return render(k, parts)

    def _objects(self, events: list[dict[str, Any]]) -> bytes:
        self.events += len(events)
        return "".join("," + dumps(e) for e in events).encode()

    def _core(self, c: Core) -> Iterator[bytes | np.ndarray]:
        full = self.detail == "full"
        yield self._metadata(c, full)
        yield from self._instructions(c)
        if full:
            yield from self._issue(c)
            yield from self._stalls(c)
            yield from self._flows(c)
            yield self._objects([
                {"ph": "C", "name": "UB bytes", "pid": c.pid, "ts": int(to_ns(t, c.clock)) / 1000,
                 "args": {"reserved": reserved, "live": live}}
                for t, reserved, live in c.counter()])

    def _metadata(self, c: Core, full: bool) -> bytes:
        core, pid = c.core, c.pid
        stid = tid_of(core, Pipe.SCALAR)
        ev: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": stid,
             "args": {"name": core_label(core)}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": stid,
             "args": {"sort_index": core}}]
        stall_pipes = stalled_pipes(c.ct) if full else set()
        for k, p in enumerate(LANES):
            lanes = [(tid_of(core, p), p.name, 2 * k)]
            if int(p) in stall_pipes:
                lanes.append((tid_of(core, p, stall=True), f"{p.name} stalls", 2 * k + 1))
            for tid, name, order in lanes:
                ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": name}})
                ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": order}})
        return self._objects(ev)

    def _ranges(self, n: int, per: int = 1) -> Iterator[slice]:
        """Slices of ``n`` rows of ``per`` events each, at most ``chunk`` events a slice."""
        step = max(1, self.chunk // per)
        for a in range(0, n, step):
            yield slice(a, min(a + step, n))

    def _shape_text(self, sid: int) -> tuple[str, Pipe]:
        """The static end of a shape's slices, up to its pid (cached), and its pipe."""
        got = self._shape_texts.get(sid)
        if got is None:
            ins = self.shapes.first[sid]
            args = dumps(static_args(ins, self.show_dtype))[1:-1]
            tail = dumps({"name": instr_name(ins), "cat": CAT.get(ins.op, "vector")})[1:-1]
            got = self._shape_texts[sid] = ((("," + args) if args else "") + "}," + tail,
                                            ins.pipe)
        return got

    def _instructions(self, c: Core) -> Iterator[np.ndarray]:
        if not c.sid.size:
            return
        frags = []
        for sid in c.used.tolist():
            text, pipe = self._shape_text(sid)
            frags.append(f'{text},"pid":{c.pid},"tid":{tid_of(c.core, pipe)}}}'.encode())
        table, local, index = text_table(frags), c.local, c.ct.index
        src = self._sources(c)
        for r in self._ranges(c.sid.size):
            s = c.s_ns[r]
            source = [] if src is None else [b',"source":"', Text(src[0][src[1][r]]), b'"']
            yield self._emit(s.size, [
                b',{"ph":"X","ts":', Us(s), b',"dur":', Us(c.e_ns[r] - s),
                b',"args":{"index":', Int(index[r]), b',"cycles":', Int(c.cycles[r]),
                *source, Text(table[local[r]])])

    def _sources(self, c: Core) -> tuple[np.ndarray, np.ndarray] | None:
        """(text table of the sites this core uses, row -> table row), or None without sources."""
        srcs = self.trace.sources
        if srcs is None or c.core >= len(srcs.per_core):
            return None
        site = srcs.per_core[c.core][c.ct.index].astype(np.int64)
        used, row = np.unique(site, return_inverse=True)
        labels = [str(srcs.table[k]) if k >= 0 else "unknown" for k in used.tolist()]
        return str_table(labels), row.reshape(-1)

    def _issue(self, c: Core) -> Iterator[np.ndarray]:
        pieces = c.issue
        if not pieces.shape[0]:
            return
        tail = dumps({"name": "issue", "cat": "scalar", "pid": c.pid,
                       "tid": tid_of(c.core, Pipe.SCALAR)})[1:].encode()
        for r in self._ranges(pieces.shape[0]):
            a, b = pieces[r, 0], pieces[r, 1]
            t0, t1 = c.issue_ns[r, 0], c.issue_ns[r, 1]
            yield self._emit(a.size, [
                b',{"ph":"X","ts":', Us(t0), b',"dur":', Us(t1 - t0),
                b',"args":{"cycles":', Int(b - a), b'},' + tail])

    def _stalls(self, c: Core) -> Iterator[np.ndarray]:
        st = stall_table(c)
        if st is None:
            return
        pipe, a, b, kind, kinds, what, words = st
        table = text_table([dumps({
            "name": f"stall: {k}", "cat": "stall", "pid": c.pid,
            "tid": tid_of(c.core, Pipe(p), stall=True)})[1:].encode() for p, k in kinds])
        words = str_table(words)
        s_ns, e_ns = np.empty_like(a), np.empty_like(a)
        for p in np.unique(pipe).tolist():  # one stall lane per pipe, in start order
            rp = np.flatnonzero(pipe == p)
            rp = rp[np.argsort(a[rp], kind="stable")]
            s_ns[rp], e_ns[rp] = lane_ns(a[rp], b[rp], c.clock)
        for r in self._ranges(a.size):
            t0 = s_ns[r]
            yield self._emit(t0.size, [
                b',{"ph":"X","ts":', Us(t0), b',"dur":', Us(e_ns[r] - t0),
                b',"args":{"cycles":', Int(b[r] - a[r]), b',"what":"', Text(words[what[r]]),
                b'"},', Text(table[kind[r]])])

    def _flows(self, c: Core) -> Iterator[np.ndarray]:
        rw, rs = c.flows
        if not rw.size:
            return
        first = self.shapes.first
        ws, ss = c.sid[rw].astype(np.int64), c.sid[rs].astype(np.int64)
        n_shapes = len(first)
        # the static end of an "s" per (wait shape, set shape), of an "f" per wait shape
        keys, inv = np.unique(np.concatenate([ws * n_shapes + ss, -1 - ws]),
                              return_inverse=True)
        frags = []
        for key in keys.tolist():
            w = first[-1 - key] if key < 0 else first[key // n_shapes]
            on = w if key < 0 else first[key % n_shapes]
            ev = w.event
            text = {"bp": "e"} if key < 0 else {}
            text.update(name=f"flag {ev.name if ev is not None else ''}({w.event_id})",
                        cat="flag", pid=c.pid, tid=tid_of(c.core, on.pipe))
            frags.append(dumps(text)[1:].encode())
        table = text_table(frags)
        m = rw.size
        frag = np.stack([inv[:m], inv[m:]], axis=1).reshape(-1)  # s, f, s, f ...
        ts = np.stack([c.s_ns[rs], c.s_ns[rw]], axis=1).reshape(-1)
        ids = np.repeat(np.arange(self.flow_id + 1, self.flow_id + 1 + m), 2)
        self.flow_id += m
        for r in self._ranges(m, per=2):
            rr = slice(2 * r.start, 2 * r.stop)
            ph = np.tile(np.frombuffer(b"sf", np.uint8), r.stop - r.start).reshape(-1, 1)
            yield self._emit(ph.shape[0], [
                b',{"ph":"', Text(ph), b'","id":', Int(ids[rr]), b',"ts":', Us(ts[rr]),
                b",", Text(table[frag[rr]])])



def iter_text(writer: Writer) -> Iterator[bytes | np.ndarray]:
    """The whole file's text, chunk by chunk (matrices still padded: see :func:`compact`)."""
    yield HEADER + b'"traceEvents":['
    first = True
    for piece in writer.chunks():
        if first and len(piece):  # the first event has no comma before it
            first = False
            if isinstance(piece, np.ndarray):
                piece[0, 0] = 0
            else:
                piece = piece[1:]
        if len(piece):
            yield piece
    yield writer.tail()


def chrome_trace(trace: Trace, metadata: Mapping[str, Any] | None = None,
                 detail: str = "full") -> dict[str, Any]:
    """The Chrome Trace Event object of ``trace``, in memory (for small traces and tests).

    The same text :func:`write_trace` writes, parsed back.
    """
    writer = Writer(trace, detail, CHUNK_EVENTS, metadata)
    return json.loads(b"".join(map(compact, iter_text(writer))))
