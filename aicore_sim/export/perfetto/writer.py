"""Chrome Trace Event JSON for Perfetto: one process per core, one thread per pipe.

Step of the flow: an exporter after the replay; it reads the :class:`~aicore_sim.trace.Trace`
only and never recomputes a cycle.

Layout of the file (``{"schemaVersion": 2, "displayTimeUnit": "ns", "profilingType": "op",
"traceEvents": [...], "otherData": {...}}``; :data:`HEADER`):

- the first keys are those of msprof op simulator's ``trace.json``: MindStudio Insight imports
  a file as an operator trace only when ``profilingType`` / ``op`` come before the first ``[``;
- process ``"core<core>.veccore0"`` (msprof's simulator name of a vector core) with
  ``pid = core + 1`` (numeric ids with name metadata: Perfetto needs them, Insight reads the
  names);
- threads ``SCALAR``, ``MTE2``, ``VECTOR``, ``MTE3`` (and ``<PIPE> stalls`` where a pipe
  stalled) with ``tid = core * 8 + lane + 1`` — unique across the trace and never 0;
- one complete event (``"ph": "X"``) per executed instruction; the SCALAR thread also carries
  ``issue`` slices (scalar-unit busy time outside scalar instructions, args: ``cycles``);
- stall slices named ``stall: <cause>`` (args: ``what``, ``cycles``) on the pipe's stall thread;
- a flow arrow (``"s"`` → ``"f"``, same ``id``) from every SetFlag to the WaitFlag it released;
- a counter (``"ph": "C"``) ``UB bytes`` per core: ``reserved`` (InitBuffer total) and ``live``
  (buffers between the first and the last instruction touching them).

``otherData`` holds ``clock_mhz``, ``makespan_cycles``, ``cores``, ``detail``, ``events`` (the
number of events in the file), ``dtype`` when the trace has a single one, and the caller's
metadata (case, platform, mode …).

``detail="lanes"`` keeps the processes, the four pipe threads and the instruction slices only
(no stall threads, issue slices, flows or counters): P1 has 0.78 M events instead of 1.88 M.

Args of an instruction slice. Its name is the opcode (``SetFlag<V_MTE2>(3)``,
``PipeBarrier<PIPE_ALL>`` for the sync ops), and its args hold only what is not said elsewhere:

- ``index``: position in the core's stream, the ``#1234`` of hazard and check messages;
- ``cycles``: its duration in cycles (exact; ``dur`` is rounded to whole ns);
- ``bytes`` (payload moved) and ``elements`` (``block_count`` for copies) when non-zero;
  ``repeat`` and ``mask`` for repeat-mode vector instructions;
- ``buffer``: the UB buffer written (or read, when nothing in UB is written); ``src`` / ``dst``:
  the other buffers or GM tensors read / written, by name, when not ``buffer`` itself;
- ``dtype`` of the destination, only when the trace uses more than one (otherwise it is said
  once, as ``otherData.dtype``);
- ``event`` and ``event_id`` for SetFlag / WaitFlag; ``implicit`` and ``label`` when set;
- ``source``: the kernel port's line that issued it, ``"<path>:<line> <function>"`` with the
  path relative to the checkout (``aicore_sim/sources.py``), when the trace has sources.

Dropped from earlier versions as derivable: ``opcode`` (the name), ``start_cycle`` /
``end_cycle`` (``ts * otherData.clock_mhz``, to within a cycle; ``cycles`` is exact), byte
addresses (the ``index`` finds the instruction, and its operands, in the stream), and a
stall's ``cause`` (the name).

Timestamps are µs at the platform clock, quantised to whole ns (3 decimals). Perfetto silently
drops or merges events that break its import rules; :func:`validate_chrome_trace` checks those
rules with the standard library only.

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

import gzip as _gzip
import json
import math
import os
import queue
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

try:  # ISA-L's deflate: the same gzip format, about 4x faster than zlib at level 1
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - zlib is the fallback
    import zlib as _zlib

from aicore_sim.isa import Instr, Opcode, Operand, Pipe, Space, per_object
from aicore_sim.memory import reserved_bytes
from aicore_sim.trace import STALL_CAUSES, CoreTrace, Trace, stall_what

LANES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
"""Thread order inside a core: the order data flows through it."""

HEADER = b'{"schemaVersion":2,"displayTimeUnit":"ns","profilingType":"op",'
"""The keys before ``traceEvents``, as msprof op simulator writes them (Insight's import rule)."""

TIDS_PER_CORE = 8  # 4 pipe threads + 4 stall threads
LARGE_EVENTS = 200_000
"""Above this many events :func:`write_trace` gzips even when the path does not say so."""

DETAILS = ("full", "lanes")
"""Detail levels of :func:`write_trace` (see the module docstring)."""

CHUNK_EVENTS = 16_384
"""Events rendered per chunk: bounds the memory of a write (about 200 bytes per event)."""

GZIP_LEVEL = 1  # speed first: zlib's level 6 is 2.3x slower for a file a third smaller
_QUEUED = 4  # chunks waiting for the writer thread

_CAT = {
    Opcode.COPY_GM_TO_UB: "copy", Opcode.COPY_UB_TO_GM: "copy",
    Opcode.SET_FLAG: "sync", Opcode.WAIT_FLAG: "sync", Opcode.BARRIER: "sync",
    Opcode.SYNC_ALL: "sync",
    Opcode.GET_VALUE_GM: "scalar", Opcode.GET_VALUE_UB: "scalar", Opcode.SET_VALUE_UB: "scalar",
}
_COPIES = (Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM)


def core_label(core: int) -> str:
    """Process name of a core, as msprof's simulator names vector cores."""
    return f"core{core}.veccore0"


def pid_of(core: int) -> int:
    """Process id of a core (never 0)."""
    return core + 1


def tid_of(core: int, pipe: Pipe, stall: bool = False) -> int:
    """Thread id of a core's pipe lane (or of its stall lane): unique, never 0."""
    lane = LANES.index(pipe) + (len(LANES) if stall else 0)
    return core * TIDS_PER_CORE + lane + 1


def _ns(cycles: np.ndarray | int, clock_mhz: float) -> np.ndarray:
    """Cycles to whole nanoseconds (rounded), as int64."""
    return np.rint(np.asarray(cycles, dtype=np.float64) * (1000.0 / clock_mhz)).astype(np.int64)


def _lane_ns(start: np.ndarray, end: np.ndarray, clock_mhz: float) -> tuple[np.ndarray, np.ndarray]:
    """Whole-ns (start, end) of one lane's slices, given in cycles and sorted by start, such that
    each slice lasts at least 1 ns and none starts before the previous one ends.

    Rounding each cycle to the nearest ns would give a 1-cycle slice (0.54 ns at 1850 MHz) no
    extent half of the time, and Perfetto nests a 0-ns slice inside the next one starting at
    the same ns. Here the end is ``x_i = max(E_i, S_i + 1, x_{i-1} + 1)`` (``S``, ``E``: the
    rounded cycles) and the start ``max(S_i, x_{i-1})``: a slice moves later only behind a run
    of sub-ns slices, by at most the ns those were lengthened, and the lane catches up at its
    next gap. The closed form ``x_i = i + max_{j<=i}(A_j - j)``, ``A = max(E, S + 1)``, is one
    cumulative maximum.
    """
    s, e = _ns(start, clock_mhz), _ns(end, clock_mhz)
    if not s.size:
        return s, e
    i = np.arange(s.size, dtype=np.int64)
    x = i + np.maximum.accumulate(np.maximum(e, s + 1) - i)
    s[1:] = np.maximum(s[1:], x[:-1])
    return s, x


def _name(ins: Instr) -> str:
    if ins.op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
        return f"{ins.op.value}<{ins.event.name}>({ins.event_id})"
    if ins.op is Opcode.BARRIER:
        return f"PipeBarrier<PIPE_{ins.barrier.name if ins.barrier is not None else 'ALL'}>"
    return ins.op.value


def instr_args(ins: Instr, index: int, start: int, end: int,
               dtype: bool = True) -> dict[str, Any]:
    """The args of one instruction's slice (see the module docstring for the choice).

    ``dtype=False`` leaves the destination dtype out (a trace with a single dtype says it once,
    in ``otherData``).
    """
    a: dict[str, Any] = {"index": index, "cycles": end - start}
    a.update(_static_args(ins, dtype))
    return a


def _static_args(ins: Instr, dtype: bool) -> dict[str, Any]:
    """The args of an instruction's slice that do not depend on when it ran."""
    a: dict[str, Any] = {}
    if ins.nbytes:
        a["bytes"] = ins.nbytes
    if ins.count:
        a["block_count" if ins.op in _COPIES else "elements"] = ins.count
    if ins.repeat:
        a["repeat"] = ins.repeat
        a["mask"] = ins.mask
    ub = [o.buf for o in (ins.dst, *ins.src) if o is not None and o.space is Space.UB]
    if ub:
        a["buffer"] = buf = ub[0]
        src = [o.buf for o in ins.src]
        if src and src != [buf]:
            a["src"] = ",".join(src)
        if ins.dst is not None and ins.dst.buf != buf:
            a["dst"] = ins.dst.buf
    elif ins.src or ins.dst is not None:
        if ins.src:
            a["src"] = ",".join(o.buf for o in ins.src)
        if ins.dst is not None:
            a["dst"] = ins.dst.buf
    if dtype and ins.dst is not None and ins.dst.dtype is not None:
        a["dtype"] = str(ins.dst.dtype)
    if ins.event is not None:
        a["event"] = ins.event.name
        a["event_id"] = ins.event_id
    if ins.implicit:
        a["implicit"] = True
    if ins.label:
        a["label"] = ins.label
    return a


# --------------------------------------------------------------------------------------------
# Instruction shapes: what the static text of a slice depends on
# --------------------------------------------------------------------------------------------

_F = Instr._fields
_SHAPE_FIELDS = itemgetter(*(_F.index(f) for f in (
    "pipe", "op", "count", "nbytes", "mask", "repeat", "event", "event_id", "barrier",
    "implicit", "label")))
_OPERAND_SHAPE = itemgetter(*(Operand._fields.index(f) for f in ("space", "buf", "dtype")))
_DST, _SRC = _F.index("dst"), _F.index("src")


class _Shapes:
    """Shape ids of instructions; a shape is an Instr without addresses, scalars or strides.

    Interned instructions (one object per distinct Instr, as the record pass stores them) are
    found by ``id``; the key of a shape is built once per object seen (P1: 782k instructions,
    104k objects, 67 shapes). The streams keep the objects alive during the write.
    """

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.first: list[Instr] = []  # one instruction of each shape
        self.by_id: dict[int, int] = {}

    def of(self, stream: list[Instr]) -> np.ndarray:
        """Shape id of every instruction of a stream (int32, by stream index)."""
        return per_object(stream, self.by_id, self._shape, np.int32)

    def _shape(self, ins: Instr) -> int:
        dst = ins[_DST]
        key = (_SHAPE_FIELDS(ins), None if dst is None else _OPERAND_SHAPE(dst),
               tuple(map(_OPERAND_SHAPE, ins[_SRC])))
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = len(self.first)
            self.first.append(ins)
        return sid

    def dtypes(self) -> set[str]:
        return {str(i.dst.dtype) for i in self.first if i.dst is not None
                and i.dst.dtype is not None}


# --------------------------------------------------------------------------------------------
# Rendering rows of events as a byte matrix
# --------------------------------------------------------------------------------------------


def _digit_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three-digit groups as 4-byte little-endian words (the 4th byte is NUL scratch).

    ``_LOW4`` / ``_HIGH4`` are indexed by ``group + 1000 * (a higher group is non-zero)``:
    the first half has no leading zeros (``"  7"``; the lowest group keeps one ``"  0"``, a
    higher one is blank), the second half is zero-filled (``"007"``). ``_FRAC4`` is ``".007"``.
    Padding is NUL, removed once the rows are rendered (a JSON text never holds a raw NUL).
    """
    def words(texts: list[bytes]) -> np.ndarray:
        raw = b"".join(t.ljust(4, b"\0") for t in texts).replace(b" ", b"\0")
        return np.frombuffer(raw, "<u4").copy()

    full = [b"%03d" % i for i in range(1000)]
    lead = [b"%3d" % i for i in range(1000)]
    blank = [b""] + lead[1:]
    return (words(lead + full), words(blank + full), words([b".%03d" % i for i in range(1000)]))


_LOW4, _HIGH4, _FRAC4 = _digit_tables()


def _groups(v: np.ndarray) -> int:
    """Three-digit groups needed for the largest of ``v`` (>= 1)."""
    if not v.size:
        return 1
    if int(v.min()) < 0:
        raise ValueError("negative value in a trace column")
    return max(1, (len(str(int(v.max()))) + 2) // 3)


def _words(m: np.ndarray, col: int) -> np.ndarray:
    """Column ``col`` of the byte matrix ``m`` seen as (unaligned) 4-byte words, one per row."""
    return np.ndarray((m.shape[0],), "<u4", m, col, (m.shape[1],))


def _put_int(m: np.ndarray, col: int, v: np.ndarray, ng: int) -> None:
    """Write non-negative ints ``v`` right-aligned into ``m[:, col:col + 3 * ng]``.

    One 4-byte store per three-digit group, most significant first: each store's NUL scratch
    byte lands where the next one writes, the last one's on ``m[:, col + 3 * ng]``.
    """
    q = [v]
    for _ in range(ng - 1):
        q.append(q[-1] // 1000)
    q.append(None)
    for g in range(ng - 1, -1, -1):
        above = q[g + 1]
        if above is None:
            idx = q[g]
        else:
            idx = q[g] - above * 1000
            idx += 1000 * (above > 0)
        _words(m, col + 3 * (ng - 1 - g))[:] = (_LOW4 if g == 0 else _HIGH4)[idx]


class _Int:
    """A column of non-negative integers (one NUL scratch byte after the digits)."""

    def __init__(self, v: np.ndarray) -> None:
        self.v = np.asarray(v, dtype=np.int64)
        self.ng = _groups(self.v)
        self.width = 3 * self.ng + 1

    def put(self, m: np.ndarray, col: int) -> None:
        _put_int(m, col, self.v, self.ng)


class _Us:
    """A column of whole ns written as µs with three decimals (``12.345``)."""

    def __init__(self, ns: np.ndarray) -> None:
        ns = np.asarray(ns, dtype=np.int64)
        self.q = ns // 1000
        self.r = ns - self.q * 1000
        self.ng = _groups(self.q)
        self.width = 3 * self.ng + 4

    def put(self, m: np.ndarray, col: int) -> None:
        _put_int(m, col, self.q, self.ng)  # its scratch byte is where the "." goes
        _words(m, col + 3 * self.ng)[:] = _FRAC4[self.r]


class _Text:
    """A column of byte strings, NUL-padded: a (k, width) uint8 matrix."""

    def __init__(self, mat: np.ndarray) -> None:
        self.mat = mat
        self.width = mat.shape[1]

    def put(self, m: np.ndarray, col: int) -> None:
        m[:, col:col + self.width] = self.mat


def _text_table(items: list[bytes]) -> np.ndarray:
    """Byte strings as a NUL-padded (n, width) uint8 matrix."""
    arr = np.array(items, dtype=bytes)
    return arr.view(np.uint8).reshape(len(items), arr.dtype.itemsize)


def _render(k: int, parts: list) -> np.ndarray:
    """``k`` rows, each the concatenation of ``parts`` (bytes or columns): a NUL-padded matrix.

    :func:`_compact` turns it into the text (done by the writer thread: NumPy releases the GIL
    there, so the rendering of the next chunk goes on meanwhile).
    """
    widths = [len(p) if isinstance(p, bytes) else p.width for p in parts]
    row = np.zeros(sum(widths), np.uint8)
    col = 0
    for p, w in zip(parts, widths):
        if isinstance(p, bytes):
            row[col:col + w] = np.frombuffer(p, np.uint8)
        col += w
    m = np.empty((k, row.size), np.uint8)
    if not k:
        return m
    m[:] = row
    col = 0
    for p, w in zip(parts, widths):
        if not isinstance(p, bytes):
            p.put(m, col)
        col += w
    return m


def _compact(piece: bytes | np.ndarray) -> bytes | np.ndarray:
    """The text of a chunk: a rendered matrix without its NUL padding (bytes pass through)."""
    if isinstance(piece, np.ndarray):
        flat = piece.reshape(-1)
        return flat[flat != 0]
    return piece


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def _str_table(strings: list[str]) -> np.ndarray:
    """JSON string bodies (escaped, no quotes) of ``strings`` as a UTF-8 :func:`_text_table`."""
    if _NEEDS_ESCAPE.search("".join(strings)):
        strings = [json.dumps(s, ensure_ascii=False)[1:-1] for s in strings]
    try:
        arr = np.array(strings, dtype=bytes)  # ASCII: encoded in C
    except UnicodeEncodeError:
        arr = np.array([s.encode() for s in strings], dtype=bytes)
    return arr.view(np.uint8).reshape(len(strings), arr.dtype.itemsize)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# The events of one core
# --------------------------------------------------------------------------------------------


def _issue_pieces_py(spans: np.ndarray, scalar_ev: list[tuple[int, int]]) -> np.ndarray:
    """Scalar-unit busy spans minus the scalar instructions' own slices (general case)."""
    out: list[tuple[int, int]] = []
    ev = sorted(scalar_ev)
    j = 0
    for a, b in spans.tolist():
        cur = a
        while j < len(ev) and ev[j][1] <= cur:
            j += 1
        k = j
        while k < len(ev) and ev[k][0] < b:
            s, e = ev[k]
            if s > cur:
                out.append((cur, min(s, b)))
            cur = max(cur, e)
            k += 1
        if cur < b:
            out.append((cur, b))
    return np.array([(a, b) for a, b in out if b > a], np.int64).reshape(-1, 2)


def _issue_pieces(spans: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """(start, end) rows of scalar-unit busy time outside the scalar instructions.

    Vectorised for the usual case (spans sorted and disjoint, instructions disjoint): each span
    is cut by the gaps between consecutive instructions.
    """
    spans = np.asarray(spans, np.int64).reshape(-1, 2)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    a, b = spans[:, 0], spans[:, 1]
    if (np.any(s[1:] < e[:-1]) or np.any(e < s) or np.any(a[1:] < b[:-1])
            or np.any(b < a)):
        return _issue_pieces_py(spans, list(zip(s.tolist(), e.tolist())))
    big = np.iinfo(np.int64)
    g0 = np.concatenate([[big.min], e])  # gaps between instructions: [g0, g1)
    g1 = np.concatenate([s, [big.max]])
    j0 = np.searchsorted(g1, a, side="right")
    j1 = np.searchsorted(g0, b, side="left")
    n = np.maximum(j1 - j0, 0)
    which = np.repeat(np.arange(a.size), n)
    gap = np.repeat(j0, n) + (np.arange(which.size) - np.repeat(np.cumsum(n) - n, n))
    lo = np.maximum(a[which], g0[gap])
    hi = np.minimum(b[which], g1[gap])
    keep = hi > lo
    return np.stack([lo[keep], hi[keep]], axis=1)


def _small_unique(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in ``[0, size)``, without a sort."""
    used = np.flatnonzero(np.bincount(codes, minlength=size))
    local = np.zeros(max(size, codes.max() + 1 if codes.size else 0), np.int64)
    local[used] = np.arange(used.size)
    return used, local[codes]


class _Core:
    """The numbers behind one core's events (numpy arrays; no text yet)."""

    def __init__(self, ct: CoreTrace, sid_of: np.ndarray, shapes: _Shapes, clock: float):
        self.ct, self.shapes, self.clock = ct, shapes, clock
        self.sid_of = sid_of  # shape id by stream index
        self.core, self.pid = ct.core, pid_of(ct.core)
        self.sid = sid_of[ct.index] if ct.index.size else np.zeros(0, np.int32)
        self.used, self.local = _small_unique(self.sid, len(shapes.first))  # shapes used here
        # an instruction's slice is its execution: a copy's wait for shared HBM past its
        # single-core time is the gm_bandwidth stall on the stall lane (trace.py)
        end = np.asarray(ct.end, np.int64) - ct.gm_stretch
        self.cycles = end - ct.start
        pipe = np.asarray(ct.pipe)
        self.s_ns, self.e_ns = np.empty_like(self.cycles), np.empty_like(self.cycles)
        r = np.flatnonzero(pipe == int(Pipe.SCALAR))
        self.issue = _issue_pieces(ct.scalar_spans, ct.start[r], ct.end[r])
        # the SCALAR lane holds the scalar instructions and the issue slices: placed together
        both = np.concatenate([ct.start[r], self.issue[:, 0]])
        order = np.argsort(both, kind="stable")
        s, e = _lane_ns(both[order], np.concatenate([end[r], self.issue[:, 1]])[order], clock)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        s, e = s[back], e[back]
        self.s_ns[r], self.e_ns[r] = s[:r.size], e[:r.size]
        self.issue_ns = np.stack([s[r.size:], e[r.size:]], axis=1)
        for p in (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):  # in-order pipes: rows in start order
            r = np.flatnonzero(pipe == int(p))
            self.s_ns[r], self.e_ns[r] = _lane_ns(ct.start[r], end[r], clock)
        self._flows: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def flows(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows (WaitFlag row, SetFlag row) of the arrows drawn (never backward in time)."""
        if self._flows is None:
            ct = self.ct
            rel = np.asarray(ct.releases, np.int64).reshape(-1, 2)
            row_of = np.full(len(ct.stream), -1, np.int64)
            row_of[ct.index] = np.arange(ct.index.size)
            ok = ((rel >= 0) & (rel < len(ct.stream))).all(axis=1)
            rw, rs = row_of[rel[ok, 0]], row_of[rel[ok, 1]]
            ok = (rw >= 0) & (rs >= 0)
            rw, rs = rw[ok], rs[ok]
            ok = self.s_ns[rw] >= self.s_ns[rs]
            self._flows = rw[ok], rs[ok]
        return self._flows

    def counter(self) -> list[tuple[int, int, int]]:
        """(cycle, reserved bytes, live bytes) change points of the core's UB occupancy."""
        ct = self.ct
        if not ct.allocations:
            return []
        reserved = reserved_bytes(ct.allocations)
        size = {a.name: int(a.nbytes) for a in ct.allocations}
        bufs: dict[str, int] = {}
        touch: list[tuple[int, int]] = []  # (used shape, UB buffer) pairs
        for j, sid in enumerate(self.used.tolist()):
            ins = self.shapes.first[sid]
            for o in (*ins.src, ins.dst):
                if o is not None and o.space is Space.UB:
                    touch.append((j, bufs.setdefault(o.buf, len(bufs))))
        table = np.zeros((self.used.size, len(bufs)), bool)
        for j, b in touch:
            table[j, b] = True
        delta: dict[int, int] = {}
        for buf, b in bufs.items():
            rows = table[:, b][self.local]
            t0, t1 = int(ct.start[rows].min()), int(ct.end[rows].max())
            n = size.get(buf, 0)
            delta[t0] = delta.get(t0, 0) + n
            delta[t1] = delta.get(t1, 0) - n
        points = [(0, reserved, 0)]
        live = 0
        for t in sorted(delta):
            live += delta[t]
            if points[-1][0] == t:
                points[-1] = (t, reserved, live)
            else:
                points.append((t, reserved, live))
        return points

    def count(self, detail: str) -> int:
        ct = self.ct
        stall_pipes = _stall_pipes(ct) if detail == "full" else set()
        n = 2 + 2 * (len(LANES) + len(stall_pipes)) + int(ct.index.size)
        if detail == "full":
            n += self.issue.shape[0] + _stall_rows(ct).shape[0] + 2 * self.flows[0].size
            n += len(self.counter())
        return n


def _stall_rows(ct: CoreTrace) -> np.ndarray:
    """The int64 (pipe, start, end, cause, what) rows of a core's stalls."""
    return np.asarray(ct.stall_rows, np.int64).reshape(-1, 5)


def _stall_pipes(ct: CoreTrace) -> set[int]:
    """Pipes of a core that stalled (they get a stall thread)."""
    pipes = np.bincount(_stall_rows(ct)[:, 0], minlength=len(LANES))
    return set(np.flatnonzero(pipes).tolist())


def _stall_table(c: _Core):
    """A core's stalls as columns, or None without stalls: pipe, start, end, kind (index into
    kinds: (pipe, cause)), what (index into words: the ``what`` in words), words.

    The words of a flag stall name the WaitFlag's event and id, which its shape holds: they
    are looked up once per shape, the others once per distinct (cause, what).
    """
    ct = c.ct
    rows = _stall_rows(ct)
    if not rows.shape[0]:
        return None
    nc = len(STALL_CAUSES)
    pipe, cause, w = rows[:, 0], rows[:, 3], rows[:, 4]
    kcodes, kind = _small_unique(pipe * nc + cause, len(LANES) * nc)
    kinds = [(k // nc, STALL_CAUSES[k % nc]) for k in kcodes.tolist()]
    flag = cause == STALL_CAUSES.index("flag")
    if flag.any():  # one WaitFlag of each shape stands for all of them
        rep = np.zeros(len(c.shapes.first), np.int64)
        rep[c.sid_of[::-1]] = np.arange(c.sid_of.size - 1, -1, -1)
        w = w.copy()
        w[flag] = rep[c.sid_of[w[flag]]]
    wcodes, what = np.unique(w * nc + cause, return_inverse=True)
    words = [stall_what(k % nc, k // nc, ct.stream) for k in wcodes.tolist()]
    return pipe, rows[:, 1], rows[:, 2], kind, kinds, what, words


class _Writer:
    """The text of a trace, as a sequence of byte chunks (each event starts with a comma)."""

    def __init__(self, trace: Trace, detail: str, chunk: int,
                 metadata: Mapping[str, Any] | None) -> None:
        if detail not in DETAILS:
            raise ValueError(f"detail must be one of {DETAILS}, not {detail!r}")
        if chunk < 1:
            raise ValueError("chunk_events must be >= 1")
        self.trace, self.detail, self.chunk, self.metadata = trace, detail, chunk, metadata
        self.clock = float(trace.clock_mhz)
        self.shapes = _Shapes()
        self.sids = [self.shapes.of(ct.stream) for ct in trace.cores]
        dtypes = self.shapes.dtypes()
        self.show_dtype = len(dtypes) > 1
        self.dtype = next(iter(dtypes)) if len(dtypes) == 1 else None
        self.events = 0
        self.flow_id = 0
        self._shape_texts: dict[int, tuple[str, Pipe]] = {}

    def cores(self) -> Iterator[_Core]:
        for ct, sid_of in zip(self.trace.cores, self.sids):
            yield _Core(ct, sid_of, self.shapes, self.clock)

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
        return f'],"otherData":{_dumps(other)}}}'.encode()

    # -- one core --------------------------------------------------------------------------

    def _emit(self, k: int, parts: list) -> np.ndarray:
        self.events += k
        return _render(k, parts)

    def _objects(self, events: list[dict[str, Any]]) -> bytes:
        self.events += len(events)
        return "".join("," + _dumps(e) for e in events).encode()

    def _core(self, c: _Core) -> Iterator[bytes | np.ndarray]:
        full = self.detail == "full"
        yield self._metadata(c, full)
        yield from self._instructions(c)
        if full:
            yield from self._issue(c)
            yield from self._stalls(c)
            yield from self._flows(c)
            yield self._objects([
                {"ph": "C", "name": "UB bytes", "pid": c.pid, "ts": int(_ns(t, c.clock)) / 1000,
                 "args": {"reserved": reserved, "live": live}}
                for t, reserved, live in c.counter()])

    def _metadata(self, c: _Core, full: bool) -> bytes:
        core, pid = c.core, c.pid
        stid = tid_of(core, Pipe.SCALAR)
        ev: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": stid,
             "args": {"name": core_label(core)}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": stid,
             "args": {"sort_index": core}}]
        stall_pipes = _stall_pipes(c.ct) if full else set()
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
            args = _dumps(_static_args(ins, self.show_dtype))[1:-1]
            tail = _dumps({"name": _name(ins), "cat": _CAT.get(ins.op, "vector")})[1:-1]
            got = self._shape_texts[sid] = ((("," + args) if args else "") + "}," + tail,
                                            ins.pipe)
        return got

    def _instructions(self, c: _Core) -> Iterator[np.ndarray]:
        if not c.sid.size:
            return
        frags = []
        for sid in c.used.tolist():
            text, pipe = self._shape_text(sid)
            frags.append(f'{text},"pid":{c.pid},"tid":{tid_of(c.core, pipe)}}}'.encode())
        table, local, index = _text_table(frags), c.local, c.ct.index
        src = self._sources(c)
        for r in self._ranges(c.sid.size):
            s = c.s_ns[r]
            source = [] if src is None else [b',"source":"', _Text(src[0][src[1][r]]), b'"']
            yield self._emit(s.size, [
                b',{"ph":"X","ts":', _Us(s), b',"dur":', _Us(c.e_ns[r] - s),
                b',"args":{"index":', _Int(index[r]), b',"cycles":', _Int(c.cycles[r]),
                *source, _Text(table[local[r]])])

    def _sources(self, c: _Core) -> tuple[np.ndarray, np.ndarray] | None:
        """(text table of the sites this core uses, row -> table row), or None without sources."""
        srcs = self.trace.sources
        if srcs is None or c.core >= len(srcs.per_core):
            return None
        site = srcs.per_core[c.core][c.ct.index].astype(np.int64)
        used, row = np.unique(site, return_inverse=True)
        labels = [str(srcs.table[k]) if k >= 0 else "unknown" for k in used.tolist()]
        return _str_table(labels), row.reshape(-1)

    def _issue(self, c: _Core) -> Iterator[np.ndarray]:
        pieces = c.issue
        if not pieces.shape[0]:
            return
        tail = _dumps({"name": "issue", "cat": "scalar", "pid": c.pid,
                       "tid": tid_of(c.core, Pipe.SCALAR)})[1:].encode()
        for r in self._ranges(pieces.shape[0]):
            a, b = pieces[r, 0], pieces[r, 1]
            t0, t1 = c.issue_ns[r, 0], c.issue_ns[r, 1]
            yield self._emit(a.size, [
                b',{"ph":"X","ts":', _Us(t0), b',"dur":', _Us(t1 - t0),
                b',"args":{"cycles":', _Int(b - a), b'},' + tail])

    def _stalls(self, c: _Core) -> Iterator[np.ndarray]:
        st = _stall_table(c)
        if st is None:
            return
        pipe, a, b, kind, kinds, what, words = st
        table = _text_table([_dumps({
            "name": f"stall: {k}", "cat": "stall", "pid": c.pid,
            "tid": tid_of(c.core, Pipe(p), stall=True)})[1:].encode() for p, k in kinds])
        words = _str_table(words)
        s_ns, e_ns = np.empty_like(a), np.empty_like(a)
        for p in np.unique(pipe).tolist():  # one stall lane per pipe, in start order
            rp = np.flatnonzero(pipe == p)
            rp = rp[np.argsort(a[rp], kind="stable")]
            s_ns[rp], e_ns[rp] = _lane_ns(a[rp], b[rp], c.clock)
        for r in self._ranges(a.size):
            t0 = s_ns[r]
            yield self._emit(t0.size, [
                b',{"ph":"X","ts":', _Us(t0), b',"dur":', _Us(e_ns[r] - t0),
                b',"args":{"cycles":', _Int(b[r] - a[r]), b',"what":"', _Text(words[what[r]]),
                b'"},', _Text(table[kind[r]])])

    def _flows(self, c: _Core) -> Iterator[np.ndarray]:
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
            frags.append(_dumps(text)[1:].encode())
        table = _text_table(frags)
        m = rw.size
        frag = np.stack([inv[:m], inv[m:]], axis=1).reshape(-1)  # s, f, s, f ...
        ts = np.stack([c.s_ns[rs], c.s_ns[rw]], axis=1).reshape(-1)
        ids = np.repeat(np.arange(self.flow_id + 1, self.flow_id + 1 + m), 2)
        self.flow_id += m
        for r in self._ranges(m, per=2):
            rr = slice(2 * r.start, 2 * r.stop)
            ph = np.tile(np.frombuffer(b"sf", np.uint8), r.stop - r.start).reshape(-1, 1)
            yield self._emit(ph.shape[0], [
                b',{"ph":"', _Text(ph), b'","id":', _Int(ids[rr]), b',"ts":', _Us(ts[rr]),
                b",", _Text(table[frag[rr]])])



def _iter_text(writer: _Writer) -> Iterator[bytes | np.ndarray]:
    """The whole file's text, chunk by chunk (matrices still padded: see :func:`_compact`)."""
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
    writer = _Writer(trace, detail, CHUNK_EVENTS, metadata)
    return json.loads(b"".join(map(_compact, _iter_text(writer))))


# --------------------------------------------------------------------------------------------
# Writing a file
# --------------------------------------------------------------------------------------------


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


class _Sink:
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
        data = _compact(piece)
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


def _large(trace: Trace, writer: _Writer) -> bool:
    """More than :data:`LARGE_EVENTS` events? (exact count only when a bound cannot tell)."""
    low = trace.instruction_count()
    if writer.detail == "full":
        low += sum(_stall_rows(c).shape[0] for c in trace.cores)
    return low > LARGE_EVENTS or writer.count() > LARGE_EVENTS


def write_trace(trace: Trace | Mapping[str, Any], path: str | os.PathLike,
                gzip: bool | None = None, metadata: Mapping[str, Any] | None = None,
                detail: str = "full", chunk_events: int = CHUNK_EVENTS,
                threaded: bool = True) -> TraceFile:
    """Write the Chrome trace of ``trace`` (or of an already built trace object) atomically.

    ``detail`` is ``"full"`` or ``"lanes"`` (see the module docstring). ``gzip=None`` gzips
    when ``path`` ends with ``.gz`` or when the trace has more than :data:`LARGE_EVENTS`
    events (then ``.gz`` is appended to the path). The text is rendered ``chunk_events``
    events at a time and streamed into the file (compacted, compressed and written by a worker
    thread unless ``threaded=False``), so memory stays O(chunk_events) whatever the trace;
    the text does not depend on ``chunk_events`` or ``threaded``. The file appears complete or
    not at all (temporary file in the same folder + ``os.replace``; removed on any failure,
    interrupts included). Returns a :class:`TraceFile` (``path``, ``bytes``, ``events``).
    """
    path = Path(path)
    writer: _Writer | None = None
    if isinstance(trace, Trace):
        writer = _Writer(trace, detail, chunk_events, metadata)
        if gzip is None:
            gzip = path.suffix == ".gz" or _large(trace, writer)
        pieces: Iterable[bytes | np.ndarray] = _iter_text(writer)
    else:
        if gzip is None:
            gzip = path.suffix == ".gz" or len(trace["traceEvents"]) > LARGE_EVENTS
        pieces = iter([json.dumps(trace, separators=(",", ":")).encode()])
    if gzip and path.suffix != ".gz":
        path = path.with_name(path.name + ".gz")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            sink = _Sink(f, gzip, threaded)
            try:
                for piece in pieces:
                    sink.write(piece)
                sink.close()
            except BaseException:
                sink.abort()
                raise
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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


# --------------------------------------------------------------------------------------------
# Validation of Perfetto's import rules
# --------------------------------------------------------------------------------------------


def _sub_ns(x: float) -> bool:
    return abs(x * 1000 - round(x * 1000)) > 1e-6


def validate_chrome_trace(obj: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems that make Perfetto drop or merge events; an empty list means none.

    Rules checked: every event has a ``ph``; no pid or tid is 0; a tid belongs to one pid only
    (tids are global in Perfetto's JSON import); timestamps and durations have no fraction of a
    nanosecond; ``X`` events have ``dur >= 0`` and never overlap or nest in another ``X``
    event of the same (pid, tid) — two slices starting at the same ns nest, and so does a 0-ns
    slice at the start or end of another; each flow id has one ``s`` and one ``f`` and the
    ``f`` is not earlier than the ``s``; counters carry numeric args.
    """
    events = obj.get("traceEvents") if isinstance(obj, Mapping) else list(obj)
    if not isinstance(events, list):
        return ["no 'traceEvents' list"]
    problems: list[str] = []

    def bad(i: int, msg: str) -> None:
        if len(problems) < 200:
            problems.append(f"event {i}: {msg}")

    owner: dict[int, int] = {}
    slices: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    flows: dict[tuple[str, Any], dict[str, tuple[int, float]]] = {}
    for i, e in enumerate(events):
        if not isinstance(e, Mapping) or "ph" not in e:
            bad(i, "not an object with a 'ph'")
            continue
        ph = e["ph"]
        pid, tid = e.get("pid"), e.get("tid")
        if pid == 0:
            bad(i, "pid 0")
        if tid == 0:
            bad(i, "tid 0")
        if isinstance(tid, int) and isinstance(pid, int):
            if owner.setdefault(tid, pid) != pid:
                bad(i, f"tid {tid} used by pids {owner[tid]} and {pid} (tids must be unique)")
        ts = e.get("ts")
        if ph != "M":
            if not isinstance(ts, (int, float)) or not math.isfinite(ts):
                bad(i, f"{ph} event without a finite ts")
                continue
            if _sub_ns(ts):
                bad(i, f"ts {ts} has a sub-nanosecond fraction")
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                bad(i, f"X event with dur {dur!r} (must be >= 0)")
                continue
            if _sub_ns(dur):
                bad(i, f"dur {dur} has a sub-nanosecond fraction")
            t0 = round(ts * 1000)
            slices.setdefault((pid, tid), []).append((t0, t0 + round(dur * 1000), i))
        elif ph in ("s", "t", "f"):
            key = (str(e.get("cat", "")), e.get("id"))
            if e.get("id") is None:
                bad(i, "flow event without an id")
                continue
            seen = flows.setdefault(key, {})
            if ph in seen:
                bad(i, f"flow id {key[1]} has two '{ph}' events")
            seen[ph] = (i, ts)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, Mapping) or not all(
                    isinstance(v, (int, float)) for v in args.values()):
                bad(i, "counter without numeric args")
    for (pid, tid), rows in slices.items():
        rows.sort()
        for (a0, a1, ia), (b0, b1, ib) in zip(rows, rows[1:]):
            if b0 < a1 and b0 != a0:
                bad(ib, f"X event overlaps event {ia} on pid {pid} tid {tid} "
                        f"([{a0}, {a1}) ns vs start {b0} ns)")
            elif b0 == a0 or (b0 == a1 and (a0 == a1 or b0 == b1)):
                bad(ib, f"X event nests with event {ia} on pid {pid} tid {tid} "
                        f"([{a0}, {a1}) ns and [{b0}, {b1}) ns: a 0-ns slice touching another)")
    for (_cat, fid), seen in flows.items():
        if "s" not in seen or "f" not in seen:
            i = next(iter(seen.values()))[0]
            bad(i, f"flow id {fid} lacks its {'s' if 's' not in seen else 'f'} event")
            continue
        if seen["f"][1] < seen["s"][1]:
            bad(seen["f"][0], f"flow id {fid} points backward in time "
                              f"({seen['s'][1]} -> {seen['f'][1]})")
    return problems


__all__ = [
    "DETAILS",
    "HEADER",
    "LANES",
    "TraceFile",
    "chrome_trace",
    "core_label",
    "instr_args",
    "pid_of",
    "read_trace",
    "tid_of",
    "validate_chrome_trace",
    "write_trace",
]
