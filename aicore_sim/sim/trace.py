"""The Trace of a replay and the small pure queries every report is built from.

Step of the flow: the engine fills one :class:`CoreTrace` per core; summaries, checks,
exporters and plots read only this. No statistic is counted inside the engine.

Per core the trace holds, as numpy arrays:

- ``index, start, end``: one row per executed instruction (index into the core's stream),
  in completion order per pipe; ``pipe`` gives each row's pipe (the opcode is the stream
  instruction's);
- ``scalar_spans``: (start, end) rows of scalar-unit busy time (issue work, GetValue …);
- ``releases``: (WaitFlag index, SetFlag index) — which SetFlag released which WaitFlag;
- ``stall_rows``: one row (pipe, start, end, cause, what) per stall, all int64; ``cause``
  indexes :data:`STALL_CAUSES` and ``what`` says what was waited for: the WaitFlag's stream
  index (``flag``), the pipe whose queue was full (``queue_full``), the transfer's bytes
  (``gm_bandwidth``), ``pipe << 32 | index in that pipe`` of the producer (``auto_sync``), the
  pipe being drained (``barrier``), the vector instruction whose operands collide in the UB
  banks (``bank_conflict``: cycles of its own execution, not a wait for anything else), the
  copy whose GM granules other cores request at the same time (``same_granule``: the part of
  its occupancy spent queued behind them; -1 on SCALAR: the kernel's entry read of its
  parameter block, ``cost.kernel_entry_cycles``), the SyncAll the core waits at for the other cores
  (``sync_all``: its number on the core, from 1);
- ``stalls``: the same rows as tuples with the cause and the ``what`` in words (built on
  first use; bulk readers use ``stall_rows``).

A copy limited by the shared HBM bandwidth ends later than its single-core time: its row's
``end`` is when it completed (what the pipe and the makespan see), and a ``gm_bandwidth`` stall
row covers the stretch from its single-core end to that completion. ``gm_stretch`` gives that
stretch per row; an instruction *executes* over ``[start, end - gm_stretch)``, which is what
:meth:`CoreTrace.busy_cycles` sums and the trace draws as its slice (the stretch is drawn, and
reported, as the stall).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from aicore_sim.sim.isa import Instr, Pipe
from aicore_sim.sim.sources import Sources

STALL_CAUSES = ("flag", "queue_full", "gm_bandwidth", "auto_sync", "barrier", "bank_conflict",
                "same_granule", "sync_all")
_GM_BW = STALL_CAUSES.index("gm_bandwidth")


_NO_STALLS = np.zeros((0, 5), np.int64)


def core_name(core: int) -> str:
    """The one name of an AIV core wherever the project shows it (trace processes, plots,
    messages): msprof's simulator's name of a vector core, ``core<N>.veccore0``."""
    return f"core{core}.veccore0"


def stall_what(cause: int, what: int, stream: list[Instr]) -> str:
    """The ``what`` of a stall row in words (see the module docstring)."""
    name = STALL_CAUSES[cause]
    if name == "flag":
        ins = stream[what]
        return f"HardEvent {ins.event.name} id {ins.event_id}"
    if name == "gm_bandwidth":
        return f"{what} B"
    if name == "auto_sync":
        return f"{Pipe(what >> 32).name} instruction #{what & 0xFFFFFFFF}"
    if name == "barrier":
        return f"PIPE_ALL: {Pipe(what).name}"
    if name == "bank_conflict":
        return f"{stream[what].name}: UB bank conflict of its operands"
    if name == "same_granule":
        if what < 0:
            return "kernel entry: the parameter block's GM granule, read by every core at once"
        return f"{stream[what].name}: GM granule requested by other cores at once"
    if name == "sync_all":
        return f"SyncAll #{what}: the other cores"
    return Pipe(what).name  # queue_full


def _exclusive(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval [start, end) (in non-decreasing start order), the cycles it adds to the
    union of the intervals before it: the parts sum to the union's length."""
    if not start.size:
        return np.zeros(0, np.int64)
    reach = np.maximum.accumulate(end)  # the furthest any interval so far reaches
    prev = np.concatenate(([start[0]], reach[:-1]))
    return (reach - np.maximum(start, prev)).clip(min=0)


@dataclass
class CoreTrace:
    """Everything one core did in the replay (see the module docstring for the columns)."""

    core: int
    stream: list[Instr]
    index: np.ndarray
    start: np.ndarray
    end: np.ndarray
    visible: np.ndarray  # cycle the instruction's result is visible (>= end: copy latency)
    pipe: np.ndarray
    sync: np.ndarray  # the row is a SetFlag, WaitFlag or PipeBarrier
    scalar_spans: np.ndarray
    releases: np.ndarray
    stall_rows: np.ndarray
    double_sets: list[tuple[int, int]]
    allocations: list = field(default_factory=list)
    # the first core of this core's group (engine/groups.py): cores of one group share one
    # timeline, the same arrays; a core replayed alone leads its own
    lead: int = -1
    _stalls: list | None = field(default=None, repr=False, compare=False)
    _stretch: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def stalls(self) -> list[tuple[int, int, int, str, str]]:
        """(pipe, start, end, cause, what in words) per stall, in recording order."""
        if self._stalls is None:
            words: dict[tuple[int, int], str] = {}
            out = []
            for p, a, b, c, w in self.stall_rows.tolist():
                text = words.get((c, w))
                if text is None:
                    text = words[(c, w)] = stall_what(c, w, self.stream)
                out.append((p, a, b, STALL_CAUSES[c], text))
            self._stalls = out
        return self._stalls

    @property
    def finish(self) -> int:
        """The core's last cycle: its last instruction done and its result visible."""
        last = [int(self.visible.max())] if self.visible.size else []
        if self.scalar_spans.size:
            last.append(int(self.scalar_spans[:, 1].max()))
        return max(last, default=0)

    def rows(self, pipe: Pipe) -> np.ndarray:
        """Row numbers of the instructions executed on ``pipe`` (for SCALAR: the S ops)."""
        return np.flatnonzero(self.pipe == int(pipe))

    @property
    def gm_stretch(self) -> np.ndarray:
        """Per row, the cycles the instruction was held past its single-core time by the
        shared HBM bandwidth (the duration of its ``gm_bandwidth`` stall; 0 for most rows)."""
        if self._stretch is None:
            out = np.zeros(self.index.size, np.int64)
            rows = self.stall_rows
            g = rows[rows[:, 3] == _GM_BW]
            for p in np.unique(g[:, 0]).tolist():
                r = np.flatnonzero(self.pipe == p)  # completion order: ends non-decreasing
                gp = g[g[:, 0] == p]
                j = np.searchsorted(self.end[r], gp[:, 2], side="left")
                if j.size and (j.max() >= r.size or np.any(self.end[r[j]] != gp[:, 2])):
                    raise ValueError(f"core {self.core}: a gm_bandwidth stall of "
                                     f"{Pipe(p).name} ends when no instruction does")
                out[r[j]] = gp[:, 2] - gp[:, 1]
            self._stretch = out
        return self._stretch

    def busy_cycles(self, pipe: Pipe) -> int:
        """Cycles ``pipe`` was executing something (scalar: issue work included); a copy's
        wait for shared HBM bandwidth is not executing (see :meth:`gm_stretch_cycles`), nor is
        a pipelined copy's data in flight after it (:meth:`pipe_time_cycles` counts both)."""
        if pipe is Pipe.SCALAR:
            s = self.scalar_spans
            return int((s[:, 1] - s[:, 0]).sum()) if s.size else 0
        r = self.rows(pipe)
        return int((self.end[r] - self.start[r]).sum()) - self.gm_stretch_cycles(pipe)

    def pipe_time_cycles(self, pipe: Pipe) -> int:
        """``pipe``'s time as a board's profiler counts it (msprof ``aiv_<pipe>_time``: the
        pipe's instructions of its own type, vector computation or transfers): executing,
        held by shared HBM, or with a copy's data in flight - the union of the [start,
        visible) intervals of its work, SetFlag / WaitFlag / PipeBarrier left out. The
        scalar unit: its busy cycles."""
        if pipe is Pipe.SCALAR:
            return self.busy_cycles(pipe)
        r = self.rows(pipe)
        r = r[~self.sync[r]]
        return int(_exclusive(self.start[r], self.visible[r]).sum())

    def gm_stretch_cycles(self, pipe: Pipe) -> int:
        """Cycles ``pipe``'s copies were held by the shared HBM bandwidth past their
        single-core time (the sum of its ``gm_bandwidth`` stalls)."""
        return self.stall_cycles(pipe, "gm_bandwidth")

    def stall_cycles(self, pipe: Pipe, cause: str) -> int:
        """The summed length of ``pipe``'s stall rows of ``cause`` (a STALL_CAUSES name)."""
        rows = self.stall_rows
        g = rows[(rows[:, 0] == int(pipe)) & (rows[:, 3] == STALL_CAUSES.index(cause))]
        return int((g[:, 2] - g[:, 1]).sum())


@dataclass
class Trace:
    """The replay of a whole launch: one :class:`CoreTrace` per core plus the clock."""

    cores: list[CoreTrace]
    clock_mhz: float
    sources: Sources | None = None  # the kernel line of every instruction (sources.py)
    # per core: GM->UB bytes read and the part the L2 model served from L2 (engine/l2.py)
    l2_read_bytes: list[int] = field(default_factory=list)
    l2_hit_bytes: list[int] = field(default_factory=list)
    # per core: bytes its copies drew from HBM (L2 misses, bypassed bytes, write-backs)
    hbm_bytes: list[int] = field(default_factory=list)

    @classmethod
    def from_cores(cls, sims, parts, streams, platform, allocations=None) -> Trace:
        """The trace of replayed cores ``sims``, one per group of ``parts`` (lists of core
        numbers, engine/groups.py): every core of a group gets its group's timeline (the same
        read-only arrays) with its own stream and allocations."""
        cores: list[CoreTrace | None] = [None] * len(streams)
        for sim, members in zip(sims, parts):
            ev = np.frombuffer(array("q", sim.events), np.int64).reshape(-1, 4)
            pipe_of = np.frombuffer(bytes(sim.pipe_of), dtype=np.int8)
            idx = ev[:, 0].copy()
            kinds = np.frombuffer(array("b", sim.kind).tobytes(), np.int8)
            cols = dict(
                index=idx, start=ev[:, 1].copy(), end=ev[:, 2].copy(), visible=ev[:, 3].copy(),
                pipe=pipe_of[idx] if idx.size else np.zeros(0, np.int8),
                sync=kinds[idx] != 0 if idx.size else np.zeros(0, bool),
                scalar_spans=np.frombuffer(array("q", sim.spans), np.int64).reshape(-1, 2),
                releases=np.frombuffer(array("q", sim.releases), np.int64).reshape(-1, 2),
                stall_rows=(np.frombuffer(array("q", sim.stalls), np.int64).reshape(-1, 5)
                            if len(sim.stalls) else _NO_STALLS))
            for a in cols.values():
                a.flags.writeable = False
            for c in members:
                cores[c] = CoreTrace(core=c, stream=streams[c], double_sets=list(sim.double_sets),
                                     allocations=list(allocations[c]) if allocations else [],
                                     lead=members[0], **cols)
        return cls(cores, float(platform.clock_mhz))

    @property
    def makespan(self) -> int:
        """Cycles from launch to the last core's last completion."""
        return max((c.finish for c in self.cores), default=0)

    def us(self, cycles: float) -> float:
        return cycles / self.clock_mhz

    def instruction_count(self) -> int:
        return sum(int(c.index.size) for c in self.cores)

    def busy_cycles(self, pipe: Pipe) -> list[int]:
        return [c.busy_cycles(pipe) for c in self.cores]

    def time_of(self, core: int, stream_index: int) -> tuple[int, int]:
        """(start, end) of one instruction of one core."""
        ct = self.cores[core]
        rows = np.flatnonzero(ct.index == stream_index)
        if not rows.size:
            raise KeyError(f"core {core}: instruction {stream_index} did not execute")
        r = rows[0]
        return int(ct.start[r]), int(ct.end[r])
