"""The numbers behind one core's events, as numpy arrays and no text yet (step: the Perfetto
export): instruction shapes (what the static text of a slice depends on), the slices' ns on
each lane, issue slices, flows, the UB counter, the stall table."""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from aicore_sim.export.perfetto.schema import LANES, lane_ns, pid_of
from aicore_sim.sim.isa import Instr, Operand, Pipe, Space, per_object
from aicore_sim.sim.memory import reserved_bytes
from aicore_sim.sim.trace import STALL_CAUSES, CoreTrace, stall_what

# --------------------------------------------------------------------------------------------
# Instruction shapes: what the static text of a slice depends on
# --------------------------------------------------------------------------------------------


_F = Instr._fields
_SHAPE_FIELDS = itemgetter(*(_F.index(f) for f in (
    "pipe", "op", "count", "nbytes", "mask", "repeat", "event", "event_id", "barrier",
    "implicit", "label")))
_OPERAND_SHAPE = itemgetter(*(Operand._fields.index(f) for f in ("space", "buf", "dtype")))
_DST, _SRC = _F.index("dst"), _F.index("src")


class Shapes:
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
# The events of one core
# --------------------------------------------------------------------------------------------


def issue_pieces_py(spans: np.ndarray, scalar_ev: list[tuple[int, int]]) -> np.ndarray:
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


def issue_pieces(spans: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
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
        return issue_pieces_py(spans, list(zip(s.tolist(), e.tolist())))
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


def small_unique(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in ``[0, size)``, without a sort."""
    used = np.flatnonzero(np.bincount(codes, minlength=size))
    local = np.zeros(max(size, codes.max() + 1 if codes.size else 0), np.int64)
    local[used] = np.arange(used.size)
    return used, local[codes]


class Core:
    """The numbers behind one core's events (numpy arrays; no text yet)."""

    def __init__(self, ct: CoreTrace, sid_of: np.ndarray, shapes: Shapes, clock: float):
        self.ct, self.shapes, self.clock = ct, shapes, clock
        self.sid_of = sid_of  # shape id by stream index
        self.core, self.pid = ct.core, pid_of(ct.core)
        self.sid = sid_of[ct.index] if ct.index.size else np.zeros(0, np.int32)
        self.used, self.local = small_unique(self.sid, len(shapes.first))  # shapes used here
        # an instruction's slice is its execution: a copy's wait for shared HBM past its
        # single-core time is the gm_bandwidth stall on the stall lane (trace.py)
        end = np.asarray(ct.end, np.int64) - ct.gm_stretch
        self.cycles = end - ct.start
        pipe = np.asarray(ct.pipe)
        self.s_ns, self.e_ns = np.empty_like(self.cycles), np.empty_like(self.cycles)
        r = np.flatnonzero(pipe == int(Pipe.SCALAR))
        self.issue = issue_pieces(ct.scalar_spans, ct.start[r], ct.end[r])
        # the SCALAR lane holds the scalar instructions and the issue slices: placed together
        both = np.concatenate([ct.start[r], self.issue[:, 0]])
        order = np.argsort(both, kind="stable")
        s, e = lane_ns(both[order], np.concatenate([end[r], self.issue[:, 1]])[order], clock)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        s, e = s[back], e[back]
        self.s_ns[r], self.e_ns[r] = s[:r.size], e[:r.size]
        self.issue_ns = np.stack([s[r.size:], e[r.size:]], axis=1)
        for p in (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):  # in-order pipes: rows in start order
            r = np.flatnonzero(pipe == int(p))
            self.s_ns[r], self.e_ns[r] = lane_ns(ct.start[r], end[r], clock)
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
        stall_pipes = stalled_pipes(ct) if detail == "full" else set()
        n = 2 + 2 * (len(LANES) + len(stall_pipes)) + int(ct.index.size)
        if detail == "full":
            n += self.issue.shape[0] + stall_rows(ct).shape[0] + 2 * self.flows[0].size
            n += len(self.counter())
        return n


def stall_rows(ct: CoreTrace) -> np.ndarray:
    """The int64 (pipe, start, end, cause, what) rows of a core's stalls."""
    return np.asarray(ct.stall_rows, np.int64).reshape(-1, 5)


def stalled_pipes(ct: CoreTrace) -> set[int]:
    """Pipes of a core that stalled (they get a stall thread)."""
    pipes = np.bincount(stall_rows(ct)[:, 0], minlength=len(LANES))
    return set(np.flatnonzero(pipes).tolist())


def stall_table(c: Core):
    """A core's stalls as columns, or None without stalls: pipe, start, end, kind (index into
    kinds: (pipe, cause)), what (index into words: the ``what`` in words), words.

    The words of a flag stall name the WaitFlag's event and id, which its shape holds: they
    are looked up once per shape, the others once per distinct (cause, what).
    """
    ct = c.ct
    rows = stall_rows(ct)
    if not rows.shape[0]:
        return None
    nc = len(STALL_CAUSES)
    pipe, cause, w = rows[:, 0], rows[:, 3], rows[:, 4]
    kcodes, kind = small_unique(pipe * nc + cause, len(LANES) * nc)
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
