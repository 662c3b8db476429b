"""The Trace of a replay and the small pure queries every report is built from.

Step of the flow: the engine fills one :class:`CoreTrace` per core; summaries, checks,
exporters and plots read only this. No statistic is counted inside the engine.

Per core the trace holds, as numpy arrays:

- ``index, start, end``: one row per executed instruction (index into the core's stream),
  in completion order per pipe; ``pipe`` and ``op`` give each row's pipe and opcode;
- ``scalar_spans``: (start, end) rows of scalar-unit busy time (issue work, GetValue …);
- ``releases``: (WaitFlag index, SetFlag index) — which SetFlag released which WaitFlag;
- ``stalls``: (pipe, start, end, cause, what) with cause one of ``flag``, ``queue_full``,
  ``gm_bandwidth``, ``auto_sync``, ``barrier``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aicore_sim.isa import Instr, Pipe

STALL_CAUSES = ("flag", "queue_full", "gm_bandwidth", "auto_sync", "barrier")


def _named(stall: tuple, stream: list[Instr]) -> tuple[int, int, int, str, str]:
    """A stall row with its ``what`` as text (flag stalls carry the WaitFlag's index)."""
    pipe, a, b, cause, what = stall
    if cause == "flag" and isinstance(what, int):
        ins = stream[what]
        what = f"HardEvent {ins.event.name} id {ins.event_id}"
    return int(pipe), a, b, cause, what


@dataclass
class CoreTrace:
    """Everything one core did in the replay (see the module docstring for the columns)."""

    core: int
    stream: list[Instr]
    index: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pipe: np.ndarray
    scalar_spans: np.ndarray
    releases: np.ndarray
    stalls: list[tuple[int, int, int, str, str]]
    double_sets: list[tuple[int, int]]
    allocations: list = field(default_factory=list)

    @property
    def finish(self) -> int:
        last = [int(self.end.max())] if self.end.size else []
        if self.scalar_spans.size:
            last.append(int(self.scalar_spans[:, 1].max()))
        return max(last, default=0)

    def rows(self, pipe: Pipe) -> np.ndarray:
        """Row numbers of the instructions executed on ``pipe`` (for SCALAR: the S ops)."""
        return np.flatnonzero(self.pipe == int(pipe))

    def busy_cycles(self, pipe: Pipe) -> int:
        """Cycles ``pipe`` was executing something (scalar: issue work included)."""
        if pipe is Pipe.SCALAR:
            s = self.scalar_spans
            return int((s[:, 1] - s[:, 0]).sum()) if s.size else 0
        r = self.rows(pipe)
        return int((self.end[r] - self.start[r]).sum())


@dataclass
class Trace:
    """The replay of a whole launch: one :class:`CoreTrace` per core plus the clock."""

    cores: list[CoreTrace]
    clock_mhz: float

    @classmethod
    def from_cores(cls, sims, streams, platform, allocations=None) -> Trace:
        cores = []
        for c, sim in enumerate(sims):
            ev = np.frombuffer(sim.events, dtype=np.int64).reshape(-1, 3)
            stream = streams[c]
            pipe_of = np.frombuffer(bytes(sim.pipe_of), dtype=np.int8)
            idx = ev[:, 0].copy()
            cores.append(CoreTrace(
                core=c, stream=stream, index=idx, start=ev[:, 1].copy(), end=ev[:, 2].copy(),
                pipe=pipe_of[idx] if idx.size else np.zeros(0, np.int8),
                scalar_spans=np.frombuffer(sim.spans, dtype=np.int64).reshape(-1, 2).copy(),
                releases=np.frombuffer(sim.releases, dtype=np.int64).reshape(-1, 2).copy(),
                stalls=[_named(st, stream) for st in sim.stalls],
                double_sets=list(sim.double_sets),
                allocations=list(allocations[c]) if allocations else [],
            ))
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
