"""Cores whose timelines are provably the same, replayed once (SPMD regularity).

Every core of a launch runs the same kernel on its own slice of the data, so the streams of
many cores differ only in GM addresses that change no cost: P1 (48 cores) has 5 distinct
timelines. A core's timeline in a replay without effects is a function of

- its prepared columns (``core.prepare``: every column of ``core.Columns`` but those
  ``core.NOT_KEYED`` names, :data:`KEY_COLUMNS`),
- for each scalar-unit instruction, what the issuer does with it: its opcode, the producer a
  scalar UB access waits for (auto-sync), and the data-cache misses of a GetValue from GM
  (the cache sees one core's addresses in program order, so its hits and misses are fixed
  by the stream),
- and the HBM server's answers, which are the same for equal transfers started together
  (``gm.py`` keeps its arithmetic independent of grouping).

Cores equal in all of these are one group; the replay runs the group's first core with the
group's size as the weight of its transfers, and the others get its timeline. The grouping
compares the full keys (no hashing), so it never merges two cores that could differ.
"""

from __future__ import annotations

from array import array

import numpy as np

from aicore_sim.sim.engine.core import NOT_KEYED, Columns
from aicore_sim.sim.engine.dcache import DCache
from aicore_sim.sim.isa import Instr, Opcode

_GV_GM = Opcode.GET_VALUE_GM
_OPS = {op: k for k, op in enumerate(Opcode)}


# The prepared columns every timeline depends on: all but those core.NOT_KEYED names.
KEY_COLUMNS: tuple[str, ...] = tuple(f for f in Columns._fields if f not in NOT_KEYED)


def _column_bytes(column) -> bytes:
    """A column as bytes for an exact comparison (ints as 64-bit machine words)."""
    return bytes(column) if isinstance(column, bytearray) else array("q", column).tobytes()


def _key(stream: list[Instr], columns: Columns, platform) -> tuple:
    pipe_of = columns.pipe_of
    scalar = []
    dcache = DCache(platform.dcache_size, platform.dcache_line)
    for i in np.flatnonzero(np.frombuffer(pipe_of, np.uint8) == 0).tolist():
        ins = stream[i]
        op = ins.op
        if op is _GV_GM:
            src = ins.src[0]
            scalar.append((i, _OPS[op], dcache.access(src.buf, src.addr, src.nbytes)))
        else:
            scalar.append((i, _OPS[op], ins.dep))
    return (*(_column_bytes(getattr(columns, f)) for f in KEY_COLUMNS), tuple(scalar))


def groups(streams: list[list[Instr]], columns: list[tuple], platform) -> list[list[int]]:
    """Cores in groups of equal timelines, in core order (each group's first core leads).

    Cores are first told apart by the pipe of each instruction (part of the key, and cheap to
    compare): a core whose pipes no other core shares is a group of its own, and the full key
    is built only for cores that share them."""
    by_pipes: dict[bytes, list[int]] = {}
    for c, cols in enumerate(columns):
        by_pipes.setdefault(bytes(cols.pipe_of), []).append(c)
    parts = []
    for members in by_pipes.values():
        if len(members) == 1:
            parts.append(members)
            continue
        by_key: dict[tuple, list[int]] = {}
        for c in members:
            by_key.setdefault(_key(streams[c], columns[c], platform), []).append(c)
        parts.extend(by_key.values())
    return sorted(parts)


__all__ = ["KEY_COLUMNS", "groups"]
