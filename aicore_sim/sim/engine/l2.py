"""The chip's L2 cache in front of HBM, as the copies of one launch use it.

Step of the flow: after ``core.prepare`` has priced every instruction and before the replay,
:func:`apply` splits each GM copy's bytes into L2 hits and HBM traffic and re-prices it: a read
that hits costs no HBM bandwidth and (pipelined copies) streams at the core's L2 rate; a read
that misses fills whole lines from HBM; writes are absorbed by L2 (write-back) and reach HBM
only when later allocations evict their line. ``Instr.cache`` = ``CACHE_DISABLE``
(``SetL2CacheHint``) makes a copy go to HBM without allocating: its bytes (rounded to 32-byte
sectors) are all HBM traffic and it evicts nothing.

The model (parameters: ``platform.l2_size``, ``costs.l2_line_bytes``; docs/model.md):

- **Order.** The cores' copies are merged into one sequence by their progress through their
  own streams (copy k of a core's n at k / n): the SPMD cores of a launch run at about the
  same pace. The order is fixed before the replay, so the replay stays one pass and cores
  with equal timelines can still be replayed once (groups.py).
- **Lines.** Every row of a copy (blockCount rows of blockLen bytes, srcStride / dstStride
  apart) touches the L2 lines it overlaps, as up to three units: its first line, the run of
  lines inside it and its last line. A run is one unit (a row read again whole hits as one,
  at a fraction of the cost of line by line); a later row covering a different run of the
  same lines is taken as a miss (pessimistic: such partial re-reads are rare in kernels).
- **Hits.** An access hits when the line's last allocating access (a cached read or a write)
  is less than ``l2_size`` bytes of allocating line traffic back in the sequence (an LRU
  cache's reuse distance, counting every allocating line access as a line of traffic: exact
  for streaming and tiled re-reads, pessimistic when many accesses repeat the same lines in
  between).
- **Warm start** (``costs.l2_warm_start``): the launch finds L2 as the same launch run just
  before it left it, as ``msprof op`` measures a kernel after its warm-up runs. A line's first
  access hits when its last allocating access in that launch is less than ``l2_size`` of
  allocating traffic back (the rest of that launch after it, then this one up to the access):
  a launch whose data fits L2 reads it all from L2; one that streams more than L2 holds
  (a scan) finds none of its first lines there. The previous launch's dirty lines are taken
  as written back in its own time.
- **Alignment.** A miss of a row whose GM address does not start a line draws its bytes
  / ``unaligned_512_bandwidth_ratio`` from HBM (the cost file's alignment factor); a read that
  bypasses L2 pays ``bypass_partial_granule_bandwidth_ratio`` on its bytes in GM granules
  (``serial_granule_bytes``) it covers only in part (:func:`_partial_granule_bytes`): no L2
  fill merges such a request with its neighbours.
- **Same-address serialisation.** Requests to one GM granule (``serial_granule_bytes``: 512
  on A2/A3) from many cores at once are served one at a time: a copy whose first row's
  granule k > 1 cores request at the same step of their streams (the same copy ordinal) holds
  its MTE for at least k x ``serial_cycles_per_request``; the excess is a ``same_granule``
  stall row (``conf``).
- **Write-back.** A written line is written back to HBM (one line of HBM traffic) when
  ``l2_size`` bytes of allocating traffic follow the write before the line is accessed again;
  lines still dirty when the kernel ends cost nothing. The write-back loads HBM in the
  background (``wbb``), started with the write that dirtied the line (the same bytes, earlier
  than the eviction: a copy's HBM load then depends on its own core's stream only, so SPMD
  cores keep equal timelines); nothing waits for it.

Per copy position the result replaces ``gmb`` (HBM bytes it waits for: misses' line fills,
bypassed bytes), ``wbb`` (the write-backs it sets off) and, for reads, ``occ``
(``cost.copy_occupancy_many`` of its miss and hit bytes). The fraction of read bytes that hit
is kept per core in ``hit_bytes`` / ``read_bytes``
for the summary.
"""

from __future__ import annotations

import numpy as np

from aicore_sim.sim import cost
from aicore_sim.sim.engine.core import Columns
from aicore_sim.sim.isa import CACHE_DISABLE, Instr, Opcode, Pipe

_READ, _WRITE = Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM
_SECTOR = 32  # bytes: GM traffic moves in 32-byte pieces (cost.GM_GRANULE_BYTES)


class L2Result:
    """Per core: read bytes and the part of them that hit in L2 (for the summary)."""

    __slots__ = ("read_bytes", "hit_bytes")

    def __init__(self, cores: int) -> None:
        self.read_bytes = [0] * cores
        self.hit_bytes = [0] * cores


def _geometry(objs: list[Instr]) -> np.ndarray:
    """Per copy instruction: (rows, row bytes, pitch, GM address, tensor id, is write,
    allocates), as an int64 array of 7 columns (built column by column: one pass per field)."""
    write = np.fromiter((o.op is _WRITE for o in objs), bool, len(objs))
    gm = [o.dst if w else o.src[0] for o, w in zip(objs, write.tolist())]
    params = [o.params for o in objs]
    multi = np.fromiter((len(p) >= 4 for p in params), bool, len(objs))
    p4 = np.array([p[:4] if len(p) >= 4 else (1, 0, 0, 0) for p in params], np.int64)
    nbytes = np.fromiter((o.nbytes for o in objs), np.int64, len(objs))
    rows = np.where(multi, p4[:, 0], 1)
    length = np.where(multi, p4[:, 1], nbytes)
    gap = np.where(multi, np.where(write, p4[:, 3], p4[:, 2]), 0)
    names = [g.buf for g in gm]
    tensors = {name: k for k, name in enumerate(dict.fromkeys(names))}
    tid = np.fromiter(map(tensors.__getitem__, names), np.int64, len(objs))
    addr = np.fromiter((g.addr for g in gm), np.int64, len(objs))
    bypass = np.fromiter((o.cache == CACHE_DISABLE for o in objs), bool, len(objs))
    return np.stack([rows, length, length + gap, addr, tid, write, write | ~bypass], 1
                    ).astype(np.int64)


def _copies(streams: list[list[Instr]], columns: list[Columns]):
    """Per GM copy of every core (positions whose instruction draws GM bytes): core, position,
    order key, and its geometry (:func:`_geometry`, computed once per distinct object: the
    record pass interns equal instructions)."""
    core, pos, key, ordinal, objs = [], [], [], [], []
    for c, (stream, cols) in enumerate(zip(streams, columns)):
        pipe = np.frombuffer(bytes(cols.pipe_of), np.uint8)
        gmb = cols.gmb
        cand = np.flatnonzero((pipe == int(Pipe.MTE2)) | (pipe == int(Pipe.MTE3))).tolist()
        found = np.array([i for i in cand if gmb[i]], np.int64)
        n = found.size
        if not n:
            continue
        core.append(np.full(n, c, np.int64))
        pos.append(found)
        key.append((np.arange(n) + 0.5) / n)
        ordinal.append(np.arange(n))
        objs.extend(map(stream.__getitem__, found.tolist()))
    if not objs:
        return None
    ids = np.fromiter(map(id, objs), np.int64, len(objs))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    table = _geometry([objs[i] for i in first.tolist()])
    return (np.concatenate(core), np.concatenate(pos), np.concatenate(key),
            np.concatenate(ordinal), table[inverse.reshape(-1)])


def apply(streams: list[list[Instr]], columns: list[Columns], platform,
          reuse_hits: bool = False) -> tuple[list[Columns], L2Result]:
    """``columns`` with every GM copy re-priced through the L2 model (see the module);
    ``reuse_hits``: as if L2 held every line for re-reading - every re-access hits, first
    reads still miss (or, warm, hit as the warm rule says), writes are written back as they
    are (the bound ``--slack`` replays: the reuse the kernel has, served in full)."""
    line = int(platform.costs.l2_line_bytes)
    warm = bool(platform.costs.l2_warm_start)
    result = L2Result(len(streams))
    copies = _copies(streams, columns) if line > 0 else None
    if copies is None:
        return columns, result
    cap = float(platform.l2_size)
    hit_cap = float("inf") if reuse_hits else cap
    core, pos, key, ordinal, geo = copies
    keep = (geo[:, 0] > 0) & (geo[:, 1] > 0)
    core, pos, key, ordinal, geo = core[keep], pos[keep], key[keep], ordinal[keep], geo[keep]
    rows, length, pitch, addr, tid = geo[:, :5].T
    write, alloc = geo[:, 5].astype(bool), geo[:, 6].astype(bool)
    order = np.lexsort((pos, core, key))  # the merged sequence of copies
    rows, length, pitch, addr, tid, ordinal = (
        a[order] for a in (rows, length, pitch, addr, tid, ordinal))
    write, alloc, copy_core = write[order], alloc[order], core[order]
    # rows: copy number and first byte of each row
    copy_of_row = np.repeat(np.arange(order.size), rows)
    first_row = np.repeat(np.cumsum(rows) - rows, rows)
    r_in_copy = np.arange(copy_of_row.size) - first_row
    row_start = addr[copy_of_row] + r_in_copy * pitch[copy_of_row]
    row_end = row_start + length[copy_of_row]
    # accesses: each row's lines in address order, as units of its first line, its run of
    # interior lines (one unit: rows re-read whole share it) and its last line
    l0, l1 = row_start // line, (row_end - 1) // line
    head = np.stack([l0, np.ones_like(l0)], 1)
    mid_n = np.maximum(l1 - l0 - 1, 0)
    mid = np.stack([l0 + 1, mid_n], 1)
    tail = np.stack([l1, (l1 > l0).astype(np.int64)], 1)
    units = np.stack([head, mid, tail], 1)  # (rows, 3, (first line, lines))
    present = units[:, :, 1] > 0
    row_of = np.repeat(np.arange(row_start.size), present.sum(1))
    first, count = units[present][:, 0], units[present][:, 1]
    nbytes = (np.minimum(row_end[row_of], (first + count) * line)
              - np.maximum(row_start[row_of], first * line))
    cp = copy_of_row[row_of]
    if int(tid.max(initial=0)) >= 1 << 7 or int(first.max(initial=0)) >= 1 << 34:
        raise ValueError("L2 model: more than 128 GM tensors or 2 TiB of lines in one launch")
    lid = (tid[cp] << 56) | (first << 22) | np.minimum(count, (1 << 22) - 1)
    is_alloc = alloc[cp]
    n = lid.size
    # allocating line traffic up to each access (bypassed accesses push no line out)
    traffic = np.cumsum(np.where(is_alloc, count, 0), dtype=np.float64) * line
    # the same line's accesses in sequence order; the latest allocating access before each
    by_line = np.lexsort((np.arange(n), lid))
    sl = lid[by_line]
    new_group = np.ones(n, bool)
    new_group[1:] = sl[1:] != sl[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    a_pos = np.where(is_alloc[by_line], np.arange(n), -1)
    last_alloc = np.maximum.accumulate(a_pos)  # within the group only if >= group_start
    prev_alloc = np.concatenate(([-1], last_alloc[:-1]))
    prev_alloc[(prev_alloc < group_start)] = -1
    hit_sorted = np.zeros(n, bool)
    ok = prev_alloc >= 0
    hit_sorted[ok] = (traffic[by_line[ok]] - traffic[by_line[prev_alloc[ok]]]) < hit_cap
    if warm:
        # a line's first access: its last allocating access in the identical launch before
        ends = np.flatnonzero(np.concatenate((new_group[1:], [True])))
        last = last_alloc[ends]  # the latest allocating access up to each line's last one
        last[last < group_start[ends]] = -1  # ... unless it is another line's
        before = last[np.cumsum(new_group) - 1]
        first = ~ok & (before >= 0)
        back = traffic[-1] - traffic[by_line[before[first]]] + traffic[by_line[first]]
        hit_sorted[first] = back < cap
    hit = np.empty(n, bool)
    hit[by_line] = hit_sorted
    hit &= is_alloc  # a bypassed access goes to HBM whatever L2 holds
    w = write[cp]
    # HBM bytes of each access: cached read misses fill the line; bypassed accesses move
    # their bytes in 32-byte sectors; writes and hits cost no HBM now
    sectors = -(-nbytes // _SECTOR) * _SECTOR
    hbm = np.where(w | hit, 0, np.where(is_alloc, count * line, sectors)).astype(np.float64)
    # a cached row whose GM address is not on a line draws HBM less efficiently (cost file
    # [gm] unaligned_512_bandwidth_ratio, as the single-core copy cost applies it); a bypassed
    # read's bytes in granules it covers only in part do too, at the family's ratio for
    # requests no L2 fill merges ([gm] bypass_partial_granule_bandwidth_ratio,
    # :func:`_partial_granule_bytes`)
    ratio = float(platform.costs.unaligned_512_bandwidth_ratio)
    if 0.0 < ratio < 1.0:
        hbm[is_alloc & ((row_start[row_of] % line) != 0)] /= ratio
    extra = None
    bypass_ratio = float(platform.costs.bypass_partial_granule_bandwidth_ratio)
    if 0.0 < bypass_ratio < 1.0:
        bypass_read = ~(alloc | write)[copy_of_row]
        if bypass_read.any():
            part = _partial_granule_bytes(row_start, row_end,
                                          int(platform.costs.gm_serial_granule_bytes))
            extra = np.bincount(copy_of_row, weights=np.where(bypass_read, part, 0)
                                * (1.0 / bypass_ratio - 1.0), minlength=order.size)
    # write-backs: a write whose line is not accessed again within the capacity
    nxt_sorted = np.concatenate((by_line[1:], [-1]))
    nxt_sorted[np.concatenate((~new_group[1:], [False])) == 0] = -1
    nxt = np.empty(n, np.int64)
    nxt[by_line] = nxt_sorted
    wi = np.flatnonzero(w)
    kept = (nxt[wi] >= 0) & ((traffic[np.maximum(nxt[wi], 0)] - traffic[wi]) < cap)
    evicted = wi[~kept]
    # evicted before the kernel ends: capacity's worth of allocating traffic follows it
    evicted = evicted[traffic[evicted] + cap <= traffic[-1]]
    # charged to the write that dirtied the line: the same bytes reach HBM, earlier (a copy's
    # HBM load then depends on its own core's stream, so SPMD cores keep equal timelines)
    wb = np.bincount(cp[evicted], weights=count[evicted], minlength=order.size
                     ).astype(np.int64) * line
    # per copy
    ncopy = order.size
    hbm_f = np.bincount(cp, weights=hbm, minlength=ncopy)
    if extra is not None:
        hbm_f += extra
    hbm_copy = np.rint(hbm_f).astype(np.int64)
    hit_copy = np.bincount(cp, weights=np.where(hit & ~w, nbytes, 0),
                           minlength=ncopy).astype(np.int64)
    # the core receives only the bytes it asked for (the rest of a line fill stays in L2)
    miss_copy = np.bincount(cp, weights=np.where(~hit & ~w, sectors, 0),
                            minlength=ncopy).astype(np.int64)
    read_copy = np.bincount(cp, weights=np.where(~w, nbytes, 0), minlength=ncopy)
    # the curve model's single-core occupancy has no miss / hit split: only HBM bytes change
    occ_new = None
    reads = ~write
    if platform.costs.copy_model == "pipelined":
        occ_new = cost.copy_occupancy_many(platform, True, rows, miss_copy, hit_copy)
    queued = _granule_queue(platform, copy_core, ordinal, tid, addr)
    serial = None if queued is None else cost.granule_queue_cycles(platform, queued, write)
    opos = pos[order]
    out = list(columns)
    by_core = np.argsort(copy_core, kind="stable")
    bounds = np.searchsorted(copy_core[by_core], np.arange(len(streams) + 1))
    for c in range(len(streams)):
        sel = by_core[bounds[c]:bounds[c + 1]]
        if not sel.size:
            continue
        cols = out[c]
        gmb, wbb = list(cols.gmb), list(cols.wbb)
        for i, g, b in zip(opos[sel].tolist(), hbm_copy[sel].tolist(), wb[sel].tolist()):
            gmb[i] = g
            wbb[i] = b
        change = {"gmb": gmb, "wbb": wbb}
        r = sel[reads[sel]]
        if occ_new is not None and r.size:
            occ = change["occ"] = list(cols.occ)
            for i, o in zip(opos[r].tolist(), occ_new[r].tolist()):
                occ[i] = o
        q = sel[serial[sel] > 0] if serial is not None else sel[:0]
        if q.size:  # copies queued behind other cores on a granule: at least k x t
            occ = change.setdefault("occ", list(cols.occ))
            conf = change["conf"] = list(cols.conf)
            for i, t in zip(opos[q].tolist(), serial[q].tolist()):
                if t > occ[i]:
                    conf[i] = t - occ[i]
                    occ[i] = t
        out[c] = cols._replace(**change)
        result.read_bytes[c] = int(read_copy[r].sum())
        result.hit_bytes[c] = int(hit_copy[r].sum())
    return out, result


def _partial_granule_bytes(start: np.ndarray, end: np.ndarray, granule: int) -> np.ndarray:
    """Per row ``[start, end)``, the bytes that lie in GM access granules the row covers only
    in part: all of a row inside one granule unless it is that whole granule, else the
    unaligned head and tail. HBM serves whole granules at full rate; an L2 fill merges a
    granule's lines, a request that bypasses L2 reaches HBM as it is (board: 128-byte rows
    through L2, data_copy s2, move 1.37 TB/s; the same rows bypassing it, s8, 0.98 TB/s)."""
    if granule <= 0:
        return np.zeros(start.shape, np.int64)
    head, tail = start % granule, end % granule
    inside = (start // granule) == ((end - 1) // granule)
    one_whole = inside & (head == 0) & (tail == 0)
    return np.where(inside, np.where(one_whole, 0, end - start),
                    np.where(head != 0, granule - head, 0) + tail)


def _granule_queue(platform, core: np.ndarray, ordinal: np.ndarray, tid: np.ndarray,
                   addr: np.ndarray) -> np.ndarray | None:
    """Per copy, how many distinct cores request the granule of the copy's first row at the
    same step (the same copy ordinal) of their streams (its price, k x ``gm_serial_cycles``
    when k > 1, is ``cost.granule_queue_cycles``'s); None when the cost family has no
    serialisation."""
    t, g = float(platform.costs.gm_serial_cycles), int(platform.costs.gm_serial_granule_bytes)
    if t <= 0 or g <= 0 or not core.size:
        return None
    step = (tid << 40) | (addr // g)  # the granule ...
    order = np.lexsort((core, ordinal, step))  # ... at the same step; cores within it
    s_step, s_ord, s_core = step[order], ordinal[order], core[order]
    same = (s_step[1:] == s_step[:-1]) & (s_ord[1:] == s_ord[:-1])
    start = np.concatenate(([True], ~same))  # first copy of each (granule, step)
    new_core = np.concatenate(([True], ~same | (s_core[1:] != s_core[:-1])))
    group = np.cumsum(start) - 1
    cores = np.bincount(group, weights=new_core)  # distinct cores per (granule, step)
    k = np.empty(core.size, np.int64)
    k[order] = cores[group].astype(np.int64)
    return k


__all__ = ["L2Result", "apply"]
