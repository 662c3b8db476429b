"""The record pass on several processes: contiguous ranges of cores, one process each.

Step of the flow: :func:`aicore_sim.sim.program.record` calls :func:`record` when ``jobs > 1``.
Every core's kernel runs on its own UB and only reads the launch's inputs, so cores can be
recorded independently; the parent process records the first range itself and forks one
child per other range. The children inherit the inputs (copy-on-write, never copied) and
write the outputs into the same shared memory (:meth:`MemoryImage.share_writable`); each
sends back its streams as a table of distinct instructions plus one index array per core, and
the kernel line of each instruction as its site table plus one site-id array per core, and
the bytes of the kernel's own GM tables it read (``MemoryImage.add_constant``).

The result is the serial one, bit for bit:

- when two ranges touch the same output bytes (one writing, the other reading or writing),
  the order of those accesses would depend on the processes' speed; this is detected from
  the streams, the outputs are reset from the pre-launch image and the launch is recorded
  again serially (such accesses are races, reported by the checks anyway);
- when any range fails, the launch is recorded again serially, so the error raised is the
  one a serial record raises (the first failing core's);
- a kernel that calls ``SyncAll`` fails in every range (its cores must meet, phases.py), so
  it is recorded serially.

Only Linux runs in parallel; elsewhere :func:`available` is false and the record pass (and
the command's background phases) stay in one process.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

import numpy as np

from aicore_sim.sim import sources
from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Operand, Pipe, RoundMode, Space
from aicore_sim.sim.memory import MemoryImage
from aicore_sim.sim.phases import SyncAllRangeError
from aicore_sim.util.background import Background, available, usable_cpus

PARENT_SHARE = 1.1
"""The parent's range is this many times a child's: besides its own range it only waits,
while each child also packs its streams and the parent unpacks them (measured on P1: about a
tenth of a range's record time)."""


def ranges(n: int, parts: int, first: float = 1.0) -> list[range]:
    """``range(n)`` cut into ``parts`` contiguous ranges: the first about ``first`` times as
    long as each of the others, which differ by at most one (every range has a core when
    ``n >= parts``)."""
    if parts <= 1:
        return [range(n)]
    head = min(max(round(first * n / (first + parts - 1)), 1), n - parts + 1)
    q, r = divmod(n - head, parts - 1)
    out, lo = [range(0, head)], head
    for k in range(parts - 1):
        hi = lo + q + (k < r)
        out.append(range(lo, hi))
        lo = hi
    return out


_ENUMS = (tuple(Pipe), tuple(Opcode), tuple(HardEvent), tuple(RoundMode), tuple(Space))
_CODE = [{m: k for k, m in enumerate(e)} for e in _ENUMS]
_PIPE, _OP, _EVENT, _ROUND, _SPACE = range(5)


def _pack(streams: list[list[Instr]]) -> tuple[tuple, list[bytes]]:
    """Streams as (distinct instructions as plain tuples, one array of table indices per
    stream). Plain tuples of numbers and strings pickle in C; named tuples with enums and
    dtypes would cost several times the record of the range itself."""
    dtypes: dict = {}

    def opnd(o):
        dt = dtypes.setdefault(o.dtype, len(dtypes))
        return (_CODE[_SPACE][o.space], o.buf, o.addr, o.nbytes, dt)

    flat = [ins for stream in streams for ins in stream]
    ids = np.fromiter(map(id, flat), dtype=np.int64, count=len(flat))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    table = []
    for j in first.tolist():
        ins = flat[j]
        table.append((
            int(ins.pipe), _CODE[_OP][ins.op], None if ins.dst is None else opnd(ins.dst),
            tuple(opnd(o) for o in ins.src), ins.count, ins.nbytes, ins.mask, ins.repeat,
            ins.params, ins.scalar,
            None if ins.round_mode is None else _CODE[_ROUND][ins.round_mode],
            None if ins.event is None else _CODE[_EVENT][ins.event], ins.event_id,
            None if ins.barrier is None else int(ins.barrier),
            None if ins.dep is None else (int(ins.dep[0]), ins.dep[1]), ins.implicit,
            ins.label, ins.cache, ins.atomic))
    inverse = inverse.reshape(-1).astype(np.uint32)
    bounds = np.cumsum([0] + [len(s) for s in streams])
    codes = [inverse[a:b].tobytes() for a, b in zip(bounds[:-1], bounds[1:])]
    return (table, list(dtypes)), codes


def _unpack(packed: tuple, codes: list[bytes]) -> list[list[Instr]]:
    rows, dtypes = packed
    pipes, ops, events, rounds, spaces = _ENUMS

    new = tuple.__new__  # the named tuples' own __new__ is a Python function: 3x slower

    def opnd(o):
        return new(Operand, (spaces[o[0]], o[1], o[2], o[3], dtypes[o[4]]))

    table = [
        new(Instr, (pipes[pipe], ops[op], None if dst is None else opnd(dst),
                    tuple(map(opnd, src)), count, nbytes, mask, repeat, params, scalar,
                    None if rnd is None else rounds[rnd], None if ev is None else events[ev],
                    eid, None if barrier is None else pipes[barrier],
                    None if dep is None else (pipes[dep[0]], dep[1]), implicit, label, cache,
                    atomic))
        for (pipe, op, dst, src, count, nbytes, mask, repeat, params, scalar, rnd, ev, eid,
             barrier, dep, implicit, label, cache, atomic) in rows]
    return [list(map(table.__getitem__, array("I", c))) for c in codes]


def _accesses(streams: list[list[Instr]], writable: frozenset[str]) -> list[tuple]:
    """(tensor, first byte, end byte, is write) of every GM access to a writable tensor."""
    out = []
    for stream in streams:
        for ins in stream:
            op = ins.op
            if op is Opcode.COPY_UB_TO_GM:
                d = ins.dst
                if d.buf in writable and d.nbytes:
                    out.append((d.buf, d.addr, d.addr + d.nbytes, True))
            elif op is Opcode.COPY_GM_TO_UB or op is Opcode.GET_VALUE_GM:
                s = ins.src[0]
                if s.buf in writable and s.nbytes:
                    out.append((s.buf, s.addr, s.addr + s.nbytes, False))
    return out


def conflicts(parts: list[list[list[Instr]]], writable: frozenset[str]) -> bool:
    """Whether bytes of a writable tensor written by one part are read or written by another
    (the parts' streams, in core order)."""
    acc = [_accesses(p, writable) for p in parts]
    for w, mine in enumerate(acc):
        for name in {a[0] for a in mine if a[3]}:
            iv = np.array([(a[1], a[2]) for a in mine if a[3] and a[0] == name], np.int64)
            iv = iv[np.argsort(iv[:, 0], kind="stable")]
            starts, ends = iv[:, 0], np.maximum.accumulate(iv[:, 1])
            for o, other in enumerate(acc):
                if o == w:
                    continue
                ov = np.array([(a[1], a[2]) for a in other if a[0] == name], np.int64)
                if not ov.size:
                    continue
                # the last written interval starting before each access ends: it overlaps
                # the access when it (or an earlier one, hence the running max) reaches past
                # the access's start
                k = np.searchsorted(starts, ov[:, 1], side="left") - 1
                hit = (k >= 0) & (ends[np.maximum(k, 0)] > ov[:, 0])
                if hit.any():
                    return True
    return False


def record(record_cores: Callable[..., tuple], kernel, args: tuple, block_dim: int,
           image: MemoryImage, platform, effects: frozenset, numerics: bool, jobs: int,
           initial: MemoryImage | None) -> tuple | None:
    """``record_cores`` over ``jobs`` ranges of cores at once; None when the caller must
    record serially (a range failed, or two ranges touch the same output bytes)."""
    if numerics and initial is None:
        return None  # nothing to reset the outputs from: stay serial
    if numerics:
        image.share_writable()
    cuts = ranges(block_dim, jobs, PARENT_SHARE)
    children = []
    try:
        for cores in cuts[1:]:
            def work(cores=cores):
                streams, allocations, hazards, sites = record_cores(
                    kernel, args, cores, block_dim, image, platform, effects, {})
                return (*_pack(streams), allocations, hazards,
                        [s.tobytes() for s in sites], list(sources.SITES),
                        {n: image.gm[n].tobytes() for n in image.constants})

            children.append(Background(work))
        failed = False
        try:
            results = [record_cores(kernel, args, cuts[0], block_dim, image, platform, effects,
                                    {})]
        except SyncAllRangeError:  # cores meet at SyncAll: one process must record them all
            failed, results = True, []
        for child in children:
            try:
                table, codes, allocations, hazards, sites, site_table, tables = child.result()
            except Exception:  # noqa: BLE001 - the serial record raises it again, in order
                failed = True
                continue
            for name, raw in tables.items():  # the kernel's own tables the range read
                image.add_constant(name, np.frombuffer(raw, np.uint8))
            results.append((_unpack(table, codes), allocations, hazards,
                            [sources.remap(np.frombuffer(s, np.int32), site_table)
                             for s in sites]))
    finally:
        for child in children:
            child.close()
    if failed or (numerics and conflicts([r[0] for r in results], image.writable)):
        if numerics:
            for name in image.writable:
                image.gm[name][:] = initial.gm[name]
        return None
    streams, allocations, hazards, sites = [], [], [], []
    for s, a, h, w in results:
        streams.extend(s)
        allocations.extend(a)
        hazards.extend(h)
        sites.extend(w)
    return streams, allocations, hazards, sites

__all__ = ["available", "conflicts", "ranges", "record", "usable_cpus"]
