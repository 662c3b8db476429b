"""Hazard checks of a launch, computed from the program, the trace and the two images.

Step of the flow: after the replay, ``launch`` calls :func:`check_trace` and
:func:`compare_images`. Each finding is a :class:`~aicore_sim.program.Hazard`:

- ``race``: two accesses to overlapping bytes (at least one a write) from different pipes of
  one core that no flag, barrier, auto-sync wait or issue order puts in sequence, or from
  different cores (there is no inter-core synchronisation in the modelled kernels);
- ``pending_flag``: a SetFlag that no WaitFlag consumed by kernel end;
- ``double_set``: a SetFlag on a flag that was still set;
- ``timed_differs``: the timed image's output differs from the functional image's.

Ordering is decided with per-core knowledge vectors (vector clocks over the four pipes):
for each instruction, how many instructions of each pipe are known to have completed before
it starts. Pipes are in order, so each pipe's own history is always known.
"""

from __future__ import annotations

import numpy as np

from aicore_sim.isa import Opcode, Pipe, Space
from aicore_sim.memory import UB_ALIGN, MemoryImage
from aicore_sim.program import Hazard
from aicore_sim.trace import CoreTrace, Trace

MAX_REPORTS = 20  # per kind and core; the count of the rest is reported


def _knowledge(ct: CoreTrace) -> dict[int, tuple[int, int, int, int]]:
    """Knowledge vector (per pipe: count of instructions known complete) of each instruction,
    including the instruction itself, keyed by stream index."""
    stream = ct.stream
    order = np.lexsort((ct.end, ct.start))
    seq_of: dict[int, int] = {}
    counts = [0, 0, 0, 0]
    for pos, ins in enumerate(stream):
        seq_of[pos] = counts[ins.pipe]
        counts[ins.pipe] += 1
    wait_src = {int(w): int(s) for w, s in ct.releases}
    pos_by_pipe_seq: dict[tuple[int, int], int] = {(int(stream[p].pipe), s): p
                                                   for p, s in seq_of.items()}
    done: dict[int, tuple[int, int, int, int]] = {}
    last = [(0, 0, 0, 0)] * 4
    # issuer knowledge at each program position = knowledge after the latest S op before it
    s_positions = [p for p, ins in enumerate(stream) if ins.pipe is Pipe.SCALAR]
    s_ptr = np.searchsorted(np.asarray(s_positions, dtype=np.int64),
                            np.arange(len(stream)), side="left") - 1
    for row in order:
        i = int(ct.index[row])
        ins = stream[i]
        p = int(ins.pipe)
        k = list(last[p])
        if p != Pipe.SCALAR and s_ptr[i] >= 0:
            prev_s = s_positions[s_ptr[i]]
            ks = done.get(prev_s)
            if ks is not None:
                k = list(map(max, k, ks))
        if ins.op is Opcode.WAIT_FLAG and i in wait_src:
            ks = done.get(wait_src[i])
            if ks is not None:
                k = list(map(max, k, ks))
        if ins.dep is not None:
            dp = pos_by_pipe_seq.get((int(ins.dep[0]), ins.dep[1]))
            ks = done.get(dp) if dp is not None else None
            if ks is not None:
                k = list(map(max, k, ks))
        if ins.op is Opcode.BARRIER and ins.barrier is None:
            for q in range(4):
                ks = last[q]
                k = list(map(max, k, ks))
        k[p] = seq_of[i] + 1
        done[i] = last[p] = tuple(k)
    return done


def _ub_races(ct: CoreTrace, known: dict[int, tuple[int, int, int, int]], ub_bytes: int
              ) -> list[Hazard]:
    """Unordered UB accesses of one core.

    Shadow state per 32-byte block and per pipe: 1 + the pipe-order number of the latest
    write (``w``) and read (``r``) by that pipe. An access by an instruction that knows ``k``
    (its knowledge vector) conflicts when some pipe's latest write (or, for a write, read) of
    a touched block is beyond what it knows. The own pipe never conflicts: its accesses are
    all in ``k`` already. Checking every pipe's latest access rather than only the last one
    reports the same first race (knowledge is transitive).
    """
    nblk = ub_bytes // UB_ALIGN + 1
    w = np.zeros((4, nblk), np.int64)
    r = np.zeros((4, nblk), np.int64)
    w_pos = np.zeros((4, nblk), np.int64)
    r_pos = np.zeros((4, nblk), np.int64)
    found: list[Hazard] = []
    extra = 0
    stream = ct.stream
    order = np.lexsort((ct.end, ct.start))

    def report(i: int, mx: np.ndarray, k: np.ndarray, pos: np.ndarray, b0: int, b1: int,
               what: str) -> None:
        nonlocal extra
        if len(found) >= MAX_REPORTS:
            extra += 1
            return
        q = int(np.flatnonzero(mx > k)[0])
        j = int(pos[q, b0:b1][int(np.argmax(w[q, b0:b1] if what != "write after read"
                                                else r[q, b0:b1]))])
        a, b = stream[j], stream[i]
        found.append(Hazard(
            "race", ct.core,
            f"{what}: #{j} {a.describe()} and #{i} {b.describe()} are not ordered by any "
            f"flag, barrier or auto-sync wait",
            ((ct.core, j), (ct.core, i))))

    ub = Space.UB
    maxred = np.maximum.reduce  # the ufunc itself: no Python wrapper per call

    def beyond(mx: list[int], k: tuple[int, int, int, int]) -> bool:
        return mx[0] > k[0] or mx[1] > k[1] or mx[2] > k[2] or mx[3] > k[3]

    for row in order:
        i = int(ct.index[row])
        ins = stream[i]
        dst = ins.dst
        srcs = [op for op in ins.src if op.space is ub and op.nbytes]
        if not srcs and (dst is None or dst.space is not ub or not dst.nbytes):
            continue
        p = int(ins.pipe)
        k = known[i]
        mark = k[p]
        for op in srcs:
            b0, b1 = op.addr // UB_ALIGN, -(-op.end // UB_ALIGN)
            mx = maxred(w[:, b0:b1], axis=1).tolist()
            if beyond(mx, k):
                report(i, np.array(mx), np.array(k), w_pos, b0, b1, "read after write")
            r[p, b0:b1] = mark
            r_pos[p, b0:b1] = i
        if dst is not None and dst.space is ub and dst.nbytes:
            b0, b1 = dst.addr // UB_ALIGN, -(-dst.end // UB_ALIGN)
            mx = maxred(w[:, b0:b1], axis=1).tolist()
            if beyond(mx, k):
                report(i, np.array(mx), np.array(k), w_pos, b0, b1, "write after write")
            mx = maxred(r[:, b0:b1], axis=1).tolist()
            if beyond(mx, k):
                report(i, np.array(mx), np.array(k), r_pos, b0, b1, "write after read")
            w[p, b0:b1] = mark
            w_pos[p, b0:b1] = i
    if extra:
        found.append(Hazard("race", ct.core, f"{extra} more UB races not listed"))
    return found


def _gm_races(trace: Trace, known: list[dict]) -> list[Hazard]:
    """Overlapping GM accesses (one a write) from different cores, or unordered pipes."""
    rows = []  # (buf, start, end, core, pipe, stream index, is_write)
    for ct in trace.cores:
        for i in ct.index:
            ins = ct.stream[int(i)]
            if ins.op is Opcode.COPY_UB_TO_GM and ins.dst.nbytes:
                rows.append((ins.dst.buf, ins.dst.addr, ins.dst.end, ct.core, int(ins.pipe),
                             int(i), True))
            elif ins.op is Opcode.COPY_GM_TO_UB and ins.src[0].nbytes:
                s = ins.src[0]
                rows.append((s.buf, s.addr, s.end, ct.core, int(ins.pipe), int(i), False))
    if not any(r[6] for r in rows):
        return []
    rows.sort(key=lambda r: (r[0], r[1]))
    found: list[Hazard] = []
    extra = 0
    active: list[tuple] = []  # accesses of the current buffer whose end is past the cursor
    cur_buf = None
    for r in rows:
        if r[0] != cur_buf:
            cur_buf, active = r[0], []
        active = [a for a in active if a[2] > r[1]]
        for a in active:
            if not (a[6] or r[6]):
                continue
            if a[3] == r[3]:
                if a[4] == r[4]:
                    continue  # same pipe: in order
                ka, kr = known[a[3]][a[5]], known[r[3]][r[5]]
                if kr[a[4]] > ka[a[4]] - 1 or ka[r[4]] > kr[r[4]] - 1:
                    continue  # one is known complete before the other starts
            if len(found) >= MAX_REPORTS:
                extra += 1
                continue
            ca, cr = trace.cores[a[3]], trace.cores[r[3]]
            found.append(Hazard(
                "race", r[3],
                f"GM '{r[0]}' bytes [{max(a[1], r[1])}, {min(a[2], r[2])}): core {a[3]} "
                f"#{a[5]} {ca.stream[a[5]].describe()} and core {r[3]} #{r[5]} "
                f"{cr.stream[r[5]].describe()} are not ordered; the later one in simulated "
                f"time wins", ((a[3], a[5]), (r[3], r[5]))))
        active.append(r)
    if extra:
        found.append(Hazard("race", -1, f"{extra} more GM races not listed"))
    return found


def check_trace(trace: Trace, ub_bytes: int, races: bool = True) -> list[Hazard]:
    """Flag bookkeeping and (optionally) race hazards of a replay."""
    out: list[Hazard] = []
    known = []
    for ct in trace.cores:
        sets = {int(i) for i in ct.index if ct.stream[int(i)].op is Opcode.SET_FLAG}
        pending = sorted(sets - {int(s) for s in ct.releases[:, 1]})
        for i in pending[:MAX_REPORTS]:
            out.append(Hazard("pending_flag", ct.core,
                              f"#{i} {ct.stream[i].describe()} is still set at kernel end",
                              ((ct.core, i),)))
        for i, j in ct.double_sets[:MAX_REPORTS]:
            out.append(Hazard("double_set", ct.core,
                              f"#{i} {ct.stream[i].describe()} sets a flag still set by #{j}",
                              ((ct.core, j), (ct.core, i))))
        if races:
            k = _knowledge(ct)
            known.append(k)
            out.extend(_ub_races(ct, k, ub_bytes))
    if races:
        out.extend(_gm_races(trace, known))
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
