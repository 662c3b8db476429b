"""Hazard checks of a launch, computed from the program, the trace and the two images.

Step of the flow: after the replay, ``launch`` calls :func:`check_trace` and
:func:`compare_images`. Each finding is a :class:`~aicore_sim.sim.program.Hazard`:

- ``race``: two accesses to overlapping bytes (at least one a write) from different pipes of
  one core that no flag, barrier, auto-sync wait or issue order puts in sequence, or from
  different cores that no ``SyncAll`` separates;
- ``pending_flag``: a SetFlag that no WaitFlag consumed by kernel end;
- ``double_set``: a SetFlag on a flag that was still set;
- ``timed_differs``: the timed image's output differs from the functional image's.

Ordering is decided with per-core knowledge vectors (vector clocks over the four pipes):
for each instruction, how many instructions of each pipe are known to have completed before
it starts. Pipes are in order, so each pipe's own history is always known.

How (numpy over flat arrays: Python only reads the instructions' fields, in C-level ``map``
passes, and formats the hazards it reports; sync instructions carry no operands and only
the scalar unit's instructions carry an auto-sync ``dep``, as :mod:`aicore_sim.sim.isa` says):

- Instructions are *processed* in order of (start, end) cycle (stable in trace row order);
  each pipe's own instructions come in its program order. An instruction learns what another
  one knew through an edge from that instruction, used only if that one was processed
  earlier: the latest scalar instruction before it in program order (issue order; pipe
  instructions only), the SetFlag that released a WaitFlag, the producer of a scalar UB
  access (auto-sync ``dep``), and, for ``PipeBarrier<PIPE_ALL>``, the latest processed
  instruction of every pipe. Its knowledge is the maximum over all paths of such edges and
  program-order steps. A best path need not enter any pipe twice (a second visit can be
  replaced by the pipe's own order), so it has at most three cross-pipe edges: three rounds
  of "take the sources' vectors, then running maximum along each pipe", on the instructions
  at edge ends only, give it exactly (:func:`knowledge`).
- UB: an access conflicts with an access of another pipe to a common 32-byte block (at least
  one a write) processed earlier that its knowledge does not cover. Blocks are grouped into
  the intervals between access bounds; only intervals that one pipe writes and another
  touches can hold a race, and only accesses reaching one are looked at. Per interval, a
  running maximum over those accesses in processing order gives each the latest write and
  read of every pipe. The partner named is the latest such access of the lowest-numbered
  unordered pipe.
- GM: copies are sorted by (tensor, start byte); overlapping pairs with a write come from
  ``searchsorted`` ranges, and only those pairs are tested (different cores between the same
  two ``SyncAll`` calls, or different pipes of one core that neither knows complete before the
  other starts); two atomic adds (``SetAtomicAdd``) never race. ``SyncAll`` orders every
  access before it on any core before every access after it on any core (the API issues
  ``PipeBarrier<PIPE_ALL>`` first, so each core's own accesses are complete when it arrives).

Findings come in the order of the straightforward sweep over processing order (per core:
pending flags, double sets, then UB races by instruction, its sources in order, then its
destination write-after-write and write-after-read; then the GM races of all cores in
(tensor, address) order, ties by core and trace row). At most ``MAX_REPORTS`` per kind and
core are listed, then a count (pending flags and double sets: no count).
:func:`check_core` is the per-core part, a pure function of one :class:`CoreTrace`; the GM
check joins the cores' :class:`GmAccesses`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat
from operator import is_, is_not, itemgetter

import numpy as np

from aicore_sim.sim.isa import Instr, Opcode, Operand, Space
from aicore_sim.sim.memory import UB_ALIGN, MemoryImage
from aicore_sim.sim.program import Hazard
from aicore_sim.sim.trace import CoreTrace, Trace, core_name

MAX_REPORTS = 20  # per kind and core; the count of the rest is reported

_OP_ID = {op: n for n, op in enumerate(Opcode)}
_SET, _WAIT, _BARRIER = _OP_ID[Opcode.SET_FLAG], _OP_ID[Opcode.WAIT_FLAG], _OP_ID[Opcode.BARRIER]
_TO_GM, _TO_UB = _OP_ID[Opcode.COPY_UB_TO_GM], _OP_ID[Opcode.COPY_GM_TO_UB]
_SYNC_ALL = _OP_ID[Opcode.SYNC_ALL]
_SYNC = np.zeros(len(_OP_ID), bool)
_SYNC[[_SET, _WAIT, _BARRIER, _SYNC_ALL]] = True  # no operands
_F = Instr._fields
_OP, _DST, _SRC = itemgetter(_F.index("op")), itemgetter(_F.index("dst")), \
    itemgetter(_F.index("src"))
_DEP, _BAR = itemgetter(_F.index("dep")), itemgetter(_F.index("barrier"))
_O = Operand._fields
_SPACE, _BUF = itemgetter(_O.index("space")), itemgetter(_O.index("buf"))
_ADDR, _NB = itemgetter(_O.index("addr")), itemgetter(_O.index("nbytes"))
_RACE_TEXT = ("read after write", "write after write", "write after read")
_HOPS = 3  # cross-pipe edges on a best path (four pipes, each entered once)


def _bytes(it) -> np.ndarray:
    """Ints in range(256) (or bools) from an iterator, as uint8: a bytearray takes them
    several times faster than ``np.fromiter``."""
    return np.frombuffer(bytearray(it), np.uint8)


def _opcodes(stream: list[Instr]) -> np.ndarray:
    return _bytes(map(_OP_ID.__getitem__, map(_OP, stream)))


def _items(seq: list, at: np.ndarray) -> tuple:
    """``seq[i] for i in at`` as a tuple, in one C call."""
    if at.size > 1:
        return itemgetter(*at.tolist())(seq)
    return (seq[int(at[0])],) if at.size else ()


@dataclass
class GmAccesses:
    """The GM copies of one core (a GM->UB copy reads its source, a UB->GM copy writes its
    destination), with what the cross-core check needs."""

    core: int
    buf: list[str]
    start: np.ndarray
    end: np.ndarray
    write: np.ndarray  # bool
    pipe: np.ndarray
    index: np.ndarray  # stream index
    row: np.ndarray  # trace row (the sweep's tie order)
    known: np.ndarray  # (accesses, 4) knowledge vectors
    epoch: np.ndarray  # SyncAll calls before the access on its core
    atomic: np.ndarray  # bool: an atomic add (SetAtomicAdd) to GM


@dataclass
class CoreChecks:
    """What :func:`check_core` found on one core: its hazards (flags, then UB races) and its
    GM accesses for the cross-core check (None without the race analysis)."""

    hazards: list[Hazard]
    gm: GmAccesses | None


class _Layout:
    """Flat arrays of one core's stream and trace, built once.

    ``slot`` numbers the instructions pipe by pipe, each pipe in program order (``first[q]``
    is the first slot of pipe ``q``); ``rank`` is the processing rank (``rows`` if never
    executed); ``proc`` lists the executed stream indices in processing order.
    """

    def __init__(self, ct: CoreTrace, op: np.ndarray) -> None:
        index = ct.index
        n, rows = len(ct.stream), int(index.size)
        pipe = np.full(n, -1, np.int8)
        pipe[index] = ct.pipe
        if rows != n or (pipe < 0).any():  # not every instruction executed: ask the stream
            pipe = np.fromiter(map(int, map(itemgetter(0), ct.stream)), np.int8, n)
        self.proc = index[np.lexsort((ct.end, ct.start))]
        rank = np.full(n, rows, np.int64)
        rank[self.proc] = np.arange(rows)
        by_slot = np.argsort(pipe, kind="stable")
        first = np.zeros(5, np.int64)
        np.cumsum(np.bincount(pipe, minlength=4), out=first[1:])
        slot = np.empty(n, np.int64)
        slot[by_slot] = np.arange(n)
        r = rank[by_slot]
        run = np.diff(pipe[by_slot]) == 0
        if ((np.diff(r) <= 0) & run & (r[1:] < rows)).any():
            raise ValueError(f"core {ct.core}: a pipe's trace rows are not in its program order")
        self.n, self.rows, self.op, self.pipe, self.rank = n, rows, op, pipe.astype(np.int64), rank
        self.slot, self.by_slot, self.first = slot, by_slot, first
        self.seq = slot - first[pipe]


def _edges(ct: CoreTrace, lay: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """(source slot, target slot) of every edge along which knowledge passes (see the module
    docstring), keeping only edges the target's pipe order does not already carry."""
    stream, rank, rows, slot, first = ct.stream, lay.rank, lay.rows, lay.slot, lay.first
    by_slot, op = lay.by_slot, lay.op
    srcs, tgts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]

    def edge(src: np.ndarray, tgt: np.ndarray) -> None:
        ok = (rank[src] < rank[tgt]) & (rank[tgt] < rows)
        srcs.append(slot[src[ok]])
        tgts.append(slot[tgt[ok]])

    # issue order: the latest scalar instruction before each pipe instruction; a pipe's next
    # instruction with the same one learns it through the pipe order already
    s_pos = by_slot[:first[1]]
    if s_pos.size:
        other = by_slot[first[1]:]
        prev = np.cumsum(lay.pipe == 0)[other] - 1  # scalar instructions before, less one
        src = s_pos[prev.clip(0)]
        ok = (prev >= 0) & (rank[src] < rank[other]) & (rank[other] < rows)
        again = np.zeros_like(ok)
        again[1:] = ok[:-1] & (prev[1:] == prev[:-1]) & (lay.pipe[other[1:]]
                                                          == lay.pipe[other[:-1]])
        ok &= ~again
        srcs.append(slot[src[ok]])
        tgts.append(slot[other[ok]])
    rel = ct.releases
    if rel.size:  # the SetFlag that released each WaitFlag (the last one listed)
        w, s = rel[:, 0], rel[:, 1]
        if np.bincount(w).max() > 1:
            _, last = np.unique(w[::-1], return_index=True)
            w, s = w[w.size - 1 - last], s[w.size - 1 - last]
        m = op[w] == _WAIT
        edge(s[m], w[m])
    dep_of = list(map(_DEP, _items(stream, s_pos)))  # auto-sync waits are the scalar unit's
    at = np.flatnonzero(_bytes(map(is_not, dep_of, repeat(None))))
    if at.size:
        deps = _items(dep_of, at)
        dp = np.fromiter(map(int, map(itemgetter(0), deps)), np.int64, at.size)
        dq = np.fromiter(map(itemgetter(1), deps), np.int64, at.size)
        ok = (dq >= 0) & (dq < first[dp + 1] - first[dp])
        edge(by_slot[first[dp[ok]] + dq[ok]], s_pos[at][ok])
    bar = np.flatnonzero(op == _BARRIER)
    drains = list(map(_BAR, _items(stream, bar)))
    bar = bar[_bytes(map(is_, drains, repeat(None))).view(bool)]
    for q in range(4) if bar.size else ():  # PIPE_ALL: the latest processed of each pipe
        run = by_slot[first[q]:first[q + 1]]
        k = np.searchsorted(rank[run], rank[bar]) - 1
        edge(run[k[k >= 0]], bar[k >= 0])
    return np.concatenate(srcs), np.concatenate(tgts)


def _pipe_max(k: np.ndarray, bounds: np.ndarray) -> None:
    """Running maximum along each pipe's columns (``bounds[q]:bounds[q + 1]``), in place."""
    for q in range(4):
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        if hi - lo > 1:
            np.maximum.accumulate(k[:, lo:hi], axis=1, out=k[:, lo:hi])


class _Known:
    """The knowledge vectors of one core (see :func:`knowledge`), computed on the instructions
    at the ends of edges, the only ones that learn or pass on more than their pipe order."""

    def __init__(self, ct: CoreTrace, lay: _Layout) -> None:
        self.lay = lay
        n, first = lay.n, lay.first
        self.dtype = np.int32 if n < 2**31 - 1 else np.int64
        src, tgt = _edges(ct, lay)
        on = np.zeros(n, bool)
        on[src] = True
        on[tgt] = True
        rows = self.rows = np.flatnonzero(on)  # slots, pipe by pipe
        at = np.cumsum(on) - 1
        src, tgt = at[src], at[tgt]
        o = np.argsort(tgt, kind="stable")
        src, tgt = src[o], tgt[o]
        starts = np.flatnonzero(np.concatenate(([True], tgt[1:] != tgt[:-1])))[:tgt.size]
        tgt = tgt[starts]
        own = np.zeros((4, rows.size), self.dtype)
        pipe_of = np.searchsorted(first, rows, "right") - 1
        own[pipe_of, np.arange(rows.size)] = rows - first[pipe_of] + 1
        bounds = np.searchsorted(rows, first)
        k = own
        for _ in range(_HOPS if src.size else 0):
            nxt = own.copy()
            got = np.maximum.reduceat(np.take(k, src, axis=1), starts, axis=1)
            np.maximum(got, np.take(own, tgt, axis=1), out=got)
            for q in range(4):
                nxt[q, tgt] = got[q]
            _pipe_max(nxt, bounds)
            if np.array_equal(nxt, k):
                break
            k = nxt
        self.k = k

    def at(self, pos: np.ndarray) -> np.ndarray:
        """Knowledge vectors of the instructions at stream indices ``pos``: ``(4, pos.size)``.
        An instruction knows what the latest edge end of its pipe up to it knows, and its
        own pipe through itself; nothing if it never executed."""
        lay, rows = self.lay, self.rows
        slot, pipe = lay.slot[pos], lay.pipe[pos]
        if rows.size:
            j = np.searchsorted(rows, slot, "right") - 1
            jc = j.clip(0)
            out = np.take(self.k, jc, axis=1)
            out[:, (j < 0) | (rows[jc] < lay.first[pipe])] = 0  # none of its pipe before it
        else:
            out = np.zeros((4, pos.size), self.dtype)
        out[pipe, np.arange(pos.size)] = lay.seq[pos] + 1
        if lay.rows < lay.n:
            out[:, lay.rank[pos] >= lay.rows] = 0
        return out


def knowledge(ct: CoreTrace) -> np.ndarray:
    """Knowledge vector of each instruction (per pipe: count of instructions known complete
    before it starts, its own pipe counted through itself), shape ``(len(stream), 4)``,
    indexed by stream index; zeros for an instruction that never executed."""
    lay = _Layout(ct, _opcodes(ct.stream))
    return _Known(ct, lay).at(np.arange(lay.n)).T.copy()


class _Accesses:
    """Every operand of the executed instructions: all sources (each instruction's in order),
    then all destinations, each part in stream order; ``gm`` picks the GM side of the copies
    (the source of a GM->UB copy, the destination of a UB->GM copy)."""

    def __init__(self, ct: CoreTrace, lay: _Layout) -> None:
        work = np.flatnonzero(~_SYNC[lay.op] & (lay.rank < lay.rows))
        ins = _items(ct.stream, work)
        src = list(map(_SRC, ins))
        try:
            nsrc = _bytes(map(len, src)).astype(np.int64)
        except ValueError:  # an instruction with 256 sources or more
            nsrc = np.fromiter(map(len, src), np.int64, len(src))
        dst = list(map(_DST, ins))
        has = _bytes(map(is_not, dst, repeat(None))).view(bool)
        ops = list(chain.from_iterable(src))
        ns = len(ops)
        ops.extend(filter(None, dst))  # an Operand (a non-empty tuple) is true, None false
        m = len(ops)
        self.ops = ops
        self.ub = _bytes(map(_SPACE, ops)) == Space.UB
        self.addr = np.fromiter(map(_ADDR, ops), np.int64, m)
        self.nbytes = np.fromiter(map(_NB, ops), np.int64, m)
        self.at = np.concatenate((np.repeat(work, nsrc), work[has]))  # stream index
        self.write = np.zeros(m, bool)
        self.write[ns:] = True
        op = lay.op[work]
        first = np.cumsum(nsrc) - nsrc
        self.gm = np.concatenate((first[(op == _TO_UB) & (nsrc > 0)],
                                  ns + np.flatnonzero(op[has] == _TO_GM)))


def _ub_races(ct: CoreTrace, lay: _Layout, known: _Known, acc: _Accesses, ub_bytes: int
              ) -> list[Hazard]:
    """Unordered UB accesses of one core (see the module docstring for the method).

    An access by an instruction that knows ``k`` conflicts with the latest write (or, for a
    write, read) of a touched block by another pipe if that access is beyond ``k``; checking
    every pipe's latest access rather than only the last one reports the same first race
    (knowledge is transitive).
    """
    nblk = ub_bytes // UB_ALIGN + 1
    sel = np.flatnonzero(acc.ub & (acc.nbytes > 0))
    if not sel.size:
        return []
    addr = acc.addr[sel]
    b0 = addr // UB_ALIGN
    b1 = -(-(addr + acc.nbytes[sel]) // UB_ALIGN)
    if int(b1.max()) > nblk:  # past the end of UB: the blocks that exist
        b0, b1 = np.minimum(b0, nblk), np.minimum(b1, nblk)
        sel, b0, b1 = sel[b1 > b0], b0[b1 > b0], b1[b1 > b0]
        if not sel.size:
            return []
    at, write = acc.at[sel], acc.write[sel]
    # intervals of blocks between access bounds; each access covers a run of them
    cut = np.zeros(nblk + 1, bool)
    cut[b0] = True
    cut[b1] = True
    num = np.cumsum(cut) - 1
    g0, g1 = num[b0], num[b1]
    span = int(num[-1]) + 1
    # a race needs an interval that one pipe writes and another touches: keep the accesses
    # that reach such an interval (no other access can be in a race or be named as a partner)
    row = lay.pipe[at] * (2 * span) + write * span  # row of (pipe, write) in `cover`
    cover = (np.bincount(row + g0, minlength=8 * span)
             - np.bincount(row + g1, minlength=8 * span)).reshape(4, 2, span)
    cover = np.cumsum(cover, axis=2) > 0  # [pipe, write]: intervals it reads / writes
    touch = cover[:, 0] | cover[:, 1]
    shared = (cover[:, 1] & (touch.sum(axis=0) - touch > 0)).any(axis=0)
    below = np.zeros(span + 1, np.int64)  # shared intervals before each interval
    np.cumsum(shared, out=below[1:])
    keep = below[g1] > below[g0]
    if not keep.any():
        return []
    sel, at, write, g0, g1 = sel[keep], at[keep], write[keep], g0[keep], g1[keep]
    # processing order: by instruction, its sources in order, then its destination
    o = np.argsort(lay.rank[at] * 2 + write, kind="stable")
    sel, at, write, g0, g1 = sel[o], at[o], write[o], g0[o], g1[o]
    nacc = sel.size
    width = g1 - g0
    if int(width.max()) == 1:
        pair_acc, pair_seg = np.arange(nacc), g0
    else:
        pair_acc = np.repeat(np.arange(nacc), width)
        pair_seg = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width - g0, width)
        live = shared[pair_seg]
        if not live.all():
            pair_acc, pair_seg = pair_acc[live], pair_seg[live]
    npair = pair_acc.size
    # pairs by interval, each interval's in processing order (the pairs are in that order)
    seg_t = np.int16 if int(num[-1]) < 2**15 else np.int64
    srt = np.argsort(pair_seg.astype(seg_t), kind="stable")
    pa = pair_acc[srt]
    big = lay.n + 1  # > any pipe-order number + 1
    wide = np.int64 if (int(num[-1]) + 2) * big >= 2**31 else np.int32
    shift = pair_seg[srt].astype(wide) * big
    # columns: the (pipe, write) then (pipe, read) kinds that occur; latest[c]: shift + 1 +
    # pipe-order number of the latest access of that kind to the interval so far (the pair
    # itself included: its own pipe never conflicts, being all known)
    kind = lay.pipe[at] + (4 - 4 * write)
    used = np.flatnonzero(np.bincount(kind, minlength=8))
    col_pipe = used % 4
    nw = int(np.count_nonzero(used < 4))
    c = np.empty(8, np.int64)
    c[used] = np.arange(used.size) * npair
    latest = np.zeros((used.size, npair), wide)
    latest.reshape(-1)[c[kind][pa] + np.arange(npair)] = \
        (lay.seq[at] + 1).astype(wide)[pa] + shift
    np.maximum.accumulate(latest, axis=1, out=latest)
    ka = known.at(at)
    k = np.take(ka, pa, axis=1)
    k += shift
    hit_w = np.zeros(nacc, bool)  # read after write, write after write
    hit_r = np.zeros(nacc, bool)  # write after read
    if nw:
        hit_w[pa[(latest[:nw] > k[col_pipe[:nw]]).any(axis=0)]] = True
    if nw < used.size:
        hit_r[pa[(latest[nw:] > k[col_pipe[nw:]]).any(axis=0) & write[pa]]] = True
    codes = np.sort(np.concatenate((np.flatnonzero(hit_w) * 2, np.flatnonzero(hit_r) * 2 + 1)))
    if not codes.size:
        return []
    back = np.empty(npair, np.int64)
    back[srt] = np.arange(npair)
    stream = ct.stream
    found: list[Hazard] = []
    for code in codes[:MAX_REPORTS].tolist():
        a, after_read = divmod(code, 2)
        mine = back[np.searchsorted(pair_acc, a):np.searchsorted(pair_acc, a, "right")]
        cols = slice(nw, None) if after_read else slice(0, nw)
        mx = (latest[cols, mine] - shift[mine]).max(axis=1)
        i = int(at[a])
        q = int(np.argmax(mx > ka[col_pipe[cols], a]))  # the lowest unordered pipe
        j = int(lay.by_slot[lay.first[col_pipe[cols][q]] + mx[q] - 1])
        what = _RACE_TEXT[2 if after_read else int(write[a])]
        found.append(Hazard(
            "race", ct.core,
            f"{what}: #{j} {stream[j].describe()} and #{i} {stream[i].describe()} are not "
            f"ordered by any flag, barrier or auto-sync wait",
            ((ct.core, j), (ct.core, i))))
    if codes.size > MAX_REPORTS:
        found.append(Hazard("race", ct.core,
                            f"{codes.size - MAX_REPORTS} more UB races not listed"))
    return found


def _gm_accesses(ct: CoreTrace, lay: _Layout, known: _Known, acc: _Accesses, op: np.ndarray
                 ) -> GmAccesses:
    sel = acc.gm[acc.nbytes[acc.gm] > 0]
    at = acc.at[sel]
    row = np.empty(lay.n, np.int64)
    row[ct.index] = np.arange(lay.rows)
    ops = acc.ops
    epoch = np.cumsum(op == _SYNC_ALL)[at] if at.size else np.zeros(0, np.int64)
    atomic = np.fromiter((bool(ct.stream[i].atomic) for i in at.tolist()), bool, at.size)
    return GmAccesses(ct.core, [_BUF(ops[j]) for j in sel.tolist()], acc.addr[sel],
                      acc.addr[sel] + acc.nbytes[sel], acc.write[sel],
                      lay.pipe[at], at, row[at], known.at(at).T, epoch, atomic)


def check_core(ct: CoreTrace, ub_bytes: int, races: bool = True) -> CoreChecks:
    """Flag bookkeeping and (optionally) UB races of one core, and its GM accesses: a pure
    function of one core's trace."""
    stream, index = ct.stream, ct.index
    op = _opcodes(stream)
    out: list[Hazard] = []
    still = np.zeros(len(stream), bool)
    still[index[op[index] == _SET]] = True
    still[ct.releases[:, 1]] = False
    for i in np.flatnonzero(still)[:MAX_REPORTS].tolist():
        out.append(Hazard("pending_flag", ct.core,
                          f"#{i} {stream[i].describe()} is still set at kernel end",
                          ((ct.core, i),)))
    for i, j in ct.double_sets[:MAX_REPORTS]:
        out.append(Hazard("double_set", ct.core,
                          f"#{i} {stream[i].describe()} sets a flag still set by #{j}",
                          ((ct.core, j), (ct.core, i))))
    if not races:
        return CoreChecks(out, None)
    lay = _Layout(ct, op)
    known = _Known(ct, lay)
    acc = _Accesses(ct, lay)
    out.extend(_ub_races(ct, lay, known, acc, ub_bytes))
    return CoreChecks(out, _gm_accesses(ct, lay, known, acc, op))


def _gm_races(trace: Trace, tables: list[GmAccesses]) -> list[Hazard]:
    """Overlapping GM accesses (one a write) from different cores, or unordered pipes."""
    if not any(t.write.any() for t in tables):
        return []
    names = sorted(set(chain.from_iterable(t.buf for t in tables)))
    code = {b: n for n, b in enumerate(names)}
    buf = np.fromiter(map(code.__getitem__, chain.from_iterable(t.buf for t in tables)),
                      np.int64, sum(len(t.buf) for t in tables))
    cat = {f: np.concatenate([getattr(t, f) for t in tables])
           for f in ("start", "end", "write", "pipe", "index", "row", "known", "epoch",
                     "atomic")}
    core = np.concatenate([np.full(t.start.size, t.core, np.int64) for t in tables])
    # the sweep order: (tensor, start byte), ties in (core, trace row) order
    o = np.lexsort((cat["row"], core, cat["start"], buf))
    buf, core = buf[o], core[o]
    start, end, write = cat["start"][o], cat["end"][o], cat["write"][o]
    pipe, index, known, epoch = cat["pipe"][o], cat["index"][o], cat["known"][o], cat["epoch"][o]
    # an access overlaps the later ones (in sweep order) of its tensor that start before its
    # end, a contiguous run: a write pairs with all of them, a read with the writes among them
    shift = max(int(end.max()), 1).bit_length()  # key = (tensor, byte) in one int64
    if len(names) >> (62 - shift):
        raise ValueError("GM tensors too large for the race check's sort key")
    key = (buf << shift) | start
    stop = np.searchsorted(key, (buf << shift) | end)
    nxt = np.arange(1, key.size + 1)
    w_at = np.flatnonzero(write)
    lo = np.where(write, nxt, np.searchsorted(w_at, nxt))
    hi = np.where(write, stop, np.searchsorted(w_at, stop))
    count = hi - lo
    a = np.repeat(np.arange(key.size), count)
    off = np.arange(a.size) - np.repeat(np.cumsum(count) - count - lo, count)
    r = np.where(write[a], off, w_at[np.minimum(off, w_at.size - 1)])
    # one core: unordered unless same pipe, or one is known complete before the other starts
    n = np.arange(a.size)
    pa, pr, ka, kr = pipe[a], pipe[r], known[a], known[r]
    ordered = (core[a] == core[r]) & ((pa == pr) | (kr[n, pa] >= ka[n, pa])
                                      | (ka[n, pr] >= kr[n, pr]))
    ordered |= epoch[a] != epoch[r]  # a SyncAll between them (on any two cores)
    atomic = cat["atomic"][o]
    ordered |= atomic[a] & atomic[r]  # two atomic adds: each lands whole, in either order
    a, r = a[~ordered], r[~ordered]
    if not a.size:
        return []
    found: list[Hazard] = []
    for f in np.lexsort((a, r))[:MAX_REPORTS].tolist():
        x, y = int(a[f]), int(r[f])
        cx, cy, ix, iy = int(core[x]), int(core[y]), int(index[x]), int(index[y])
        found.append(Hazard(
            "race", cy,
            f"GM '{names[buf[y]]}' bytes [{max(start[x], start[y])}, {min(end[x], end[y])}): "
            f"{core_name(cx)} #{ix} {trace.cores[cx].stream[ix].describe()} and "
            f"{core_name(cy)} #{iy} "
            f"{trace.cores[cy].stream[iy].describe()} are not ordered; the later one in "
            f"simulated time wins", ((cx, ix), (cy, iy))))
    if a.size > MAX_REPORTS:
        found.append(Hazard("race", -1, f"{a.size - MAX_REPORTS} more GM races not listed"))
    return found


def check_trace(trace: Trace, ub_bytes: int, races: bool = True) -> list[Hazard]:
    """Flag bookkeeping and (optionally) race hazards of a replay."""
    out: list[Hazard] = []
    tables = []
    for ct in trace.cores:
        found = check_core(ct, ub_bytes, races)
        out.extend(found.hazards)
        if found.gm is not None:
            tables.append(found.gm)
    if tables:
        out.extend(_gm_races(trace, tables))
    return out


def compare_images(functional: MemoryImage, timed: MemoryImage, names: list[str]
                   ) -> list[Hazard]:
    """A ``timed_differs`` hazard per GM tensor whose bytes differ between the two images."""
    out = []
    for name in names:
        a, b = functional.gm[name], timed.gm[name]
        if not np.array_equal(a, b):
            first = int(np.flatnonzero(a != b)[0])
            out.append(Hazard("timed_differs", -1,
                              f"GM tensor '{name}' differs between the timed and the functional "
                              f"image (first differing byte {first}): an unsynchronised access "
                              f"changed the result"))
    return out
