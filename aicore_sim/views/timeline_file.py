"""What the timeline pictures draw of a launch, and ``timeline.npz``, the run folder's copy of it.

Step of the flow: a reader of the :class:`~aicore_sim.sim.trace.Trace` (built after the
replay); ``aicore-sim run`` writes it into the run folder and ``aicore-sim plot`` reads it back
to redraw ``timeline.png`` / ``ub.png`` without simulating again. It models, per AIV core, what
each in-order pipe of the core (the scalar unit, MTE2, the vector unit, MTE3) was executing
and when it stood stalled and why:

- ``spans[pipe]``: (start, end) cycle rows of what the pipe executed, sorted by start (a
  copy's hold by the shared HBM bandwidth is not execution: it is its ``gm_bandwidth`` stall);
  the scalar unit's rows are its busy spans (issue work included);
- ``stalls``: (pipe, start, end, cause) rows, ``cause`` indexing
  :data:`~aicore_sim.sim.trace.STALL_CAUSES`;
- ``ub``: the core's UB bytes over time (change points of the live bytes, and the bytes
  ``InitBuffer`` reserved), as :func:`ub_occupancy` computes them.

``timeline.npz`` (uncompressed, so it loads in milliseconds) holds ``format``, ``clock_mhz``,
``makespan``, ``title``, ``causes`` (the cause names, JSON), ``lead`` (per core, the core whose
arrays it shares: cores of one replay group have one timeline), per lead ``spans_<lead>`` (rows
pipe, start, end) and ``stalls_<lead>``, and per core ``ub_<core>`` (rows cycle, live bytes)
with ``ub_reserved``. A file that is not one (truncated, foreign, another version) is refused
whole by :meth:`Timeline.load` with a :class:`TimelineFileError` naming it.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sim.isa import Pipe, Space
from aicore_sim.sim.memory import reserved_bytes
from aicore_sim.sim.trace import STALL_CAUSES, CoreTrace, Trace
from aicore_sim.util.atomic import atomic_path

TIMELINE_FILE = "timeline.npz"
FORMAT = "aicore-sim timeline 1"
LANES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
"""The lanes of a core, in the order data flows through it (the trace's thread order)."""


class TimelineFileError(ValueError):
    """A ``timeline.npz`` that cannot be drawn; the message names the file and why."""


@dataclass
class CoreLanes:
    """One AIV core's pipes over time: what each executed, its stalls, its UB in use."""

    core: int
    spans: dict[Pipe, np.ndarray]
    stalls: np.ndarray  # (pipe, start, end, cause) rows
    ub: tuple[np.ndarray, np.ndarray, int] | None = None  # (cycles, live bytes, reserved)

    def busy_cycles(self, pipe: Pipe) -> int:
        """Cycles ``pipe`` executed (the sum of its spans: ``CoreTrace.busy_cycles``)."""
        s = self.spans[pipe]
        return int((s[:, 1] - s[:, 0]).sum()) if s.size else 0


def lane_spans(core: CoreTrace, pipe: Pipe) -> np.ndarray:
    """(start, end) rows of the busy spans of one lane (what the pipe executed), sorted by
    start."""
    if pipe is Pipe.SCALAR:
        s = core.scalar_spans.reshape(-1, 2)
    else:  # execution only: a copy's hold by shared HBM is drawn as its stall
        r = core.rows(pipe)
        s = (np.stack([core.start[r], core.end[r] - core.gm_stretch[r]], axis=1) if r.size
             else np.zeros((0, 2)))
    s = np.asarray(s, dtype=np.int64)
    return s[np.argsort(s[:, 0], kind="stable")] if s.size else s.reshape(0, 2)


def ub_occupancy(core: CoreTrace) -> tuple[np.ndarray, np.ndarray, int]:
    """(cycles, live bytes) change points of a core's UB, and its reserved bytes.

    ``reserved``: the bytes ``InitBuffer`` set aside (static for the launch). ``live``: the
    bytes of the buffers between the first instruction touching them and the end of the last
    one — what the kernel actually holds at each moment.
    """
    size = {a.name: int(a.nbytes) for a in core.allocations}
    reserved = reserved_bytes(core.allocations)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    if core.index.size:
        ids = np.fromiter(map(id, core.stream), np.int64, len(core.stream))[core.index]
        objs, inv = np.unique(ids, return_inverse=True)
        inv = inv.reshape(-1)
        lo = np.full(objs.size, np.iinfo(np.int64).max)
        hi = np.full(objs.size, np.iinfo(np.int64).min)
        np.minimum.at(lo, inv, core.start)
        np.maximum.at(hi, inv, core.end)
        row_of = np.zeros(objs.size, np.int64)
        row_of[inv] = np.arange(inv.size)
        for k, r in enumerate(row_of.tolist()):
            ins = core.stream[int(core.index[r])]
            for o in (ins.dst, *ins.src):
                if o is not None and o.buf in size and o.space is Space.UB:
                    first[o.buf] = min(first.get(o.buf, int(lo[k])), int(lo[k]))
                    last[o.buf] = max(last.get(o.buf, int(hi[k])), int(hi[k]))
    delta: dict[int, int] = {0: 0}
    for buf, t0 in first.items():
        delta[t0] = delta.get(t0, 0) + size[buf]
        delta[last[buf]] = delta.get(last[buf], 0) - size[buf]
    t = np.array(sorted(delta), np.int64)
    live = np.cumsum([delta[int(x)] for x in t]).astype(np.int64)
    return t, live, reserved


@dataclass
class Timeline:
    """A kernel launch on the chip as the plots draw it: the lanes of every AIV core, the
    chip's clock and the launch's makespan."""

    clock_mhz: float
    makespan: int
    cores: list[CoreLanes]
    title: str = ""

    @classmethod
    def from_trace(cls, trace: Trace, ub: bool = True, title: str = "") -> Timeline:
        """The timeline of a replay; cores of one replay group share their arrays. ``ub``:
        with each core's UB curve (one pass over its instructions)."""
        shared: dict[int, tuple[dict[Pipe, np.ndarray], np.ndarray]] = {}
        cores = []
        for ct in trace.cores:
            lead = ct.lead if ct.lead >= 0 else ct.core
            got = shared.get(lead)
            if got is None:
                got = shared[lead] = ({p: lane_spans(ct, p) for p in LANES},
                                      np.ascontiguousarray(ct.stall_rows[:, :4], np.int64))
            cores.append(CoreLanes(ct.core, got[0], got[1], ub_occupancy(ct) if ub else None))
        return cls(float(trace.clock_mhz), int(trace.makespan), cores, title)

    def us(self, cycles: float) -> float:
        return cycles / self.clock_mhz

    # ----------------------------------------------------------------------------------------
    # the file
    # ----------------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``timeline.npz`` atomically (a hidden temporary file, then a rename)."""
        path = Path(path)
        leads: dict[int, int] = {}  # id of a core's spans -> the first core holding them
        arrays: dict[str, Any] = {
            "format": np.array(FORMAT), "clock_mhz": np.array([self.clock_mhz]),
            "makespan": np.array([self.makespan], np.int64), "title": np.array(self.title),
            "causes": np.array(json.dumps(list(STALL_CAUSES)))}
        lead = np.zeros(len(self.cores), np.int64)
        reserved = np.zeros(len(self.cores), np.int64)
        for k, c in enumerate(self.cores):
            first = leads.setdefault(id(c.spans), k)
            lead[k] = first
            if first == k:
                arrays[f"spans_{k}"] = np.concatenate(
                    [np.column_stack([np.full(len(c.spans[p]), int(p), np.int64), c.spans[p]])
                     for p in LANES]).reshape(-1, 3)
                arrays[f"stalls_{k}"] = np.asarray(c.stalls, np.int64).reshape(-1, 4)
            if c.ub is not None:
                arrays[f"ub_{k}"] = np.column_stack([c.ub[0], c.ub[1]]).astype(np.int64)
                reserved[k] = c.ub[2]
        arrays["lead"] = lead
        arrays["ub_reserved"] = reserved
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **arrays)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Timeline:
        """Read a ``timeline.npz``, every array checked now (a bad file is a
        :class:`TimelineFileError` naming it, never a failure half-way through a plot)."""
        path = Path(path)

        def bad(why: str) -> TimelineFileError:
            return TimelineFileError(f"{path}: not a timeline file of 'aicore-sim run' ({why})")

        try:
            z = np.load(path, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):  # one array: an .npy file
                raise bad("one .npy array, not an .npz archive")
            with z:
                a = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            if isinstance(e, TimelineFileError):
                raise
            raise bad(f"{type(e).__name__}: {e}") from None
        if str(a.get("format", "")) != FORMAT:
            raise bad(f"'format' is not {FORMAT!r}")
        try:
            causes = json.loads(str(a["causes"]))
            clock = float(a["clock_mhz"].reshape(-1)[0])
            makespan = int(a["makespan"].reshape(-1)[0])
            lead, reserved = a["lead"], a["ub_reserved"]
        except (KeyError, ValueError, IndexError, TypeError) as e:
            raise bad(f"{type(e).__name__}: {e}") from None
        n = lead.size
        if not (isinstance(causes, list) and causes == list(STALL_CAUSES)[:len(causes)]):
            raise bad("'causes' are not this version's stall causes")
        if not (np.isfinite(clock) and clock > 0 and makespan >= 0):
            raise bad("'clock_mhz' must be > 0 and 'makespan' >= 0")
        if lead.ndim != 1 or lead.dtype.kind not in "iu" or reserved.shape != lead.shape or \
                (n and (lead.min() < 0 or np.any(lead > np.arange(n)))):
            raise bad("'lead' must name, per core, a core at or before it")
        pipes = np.array([int(p) for p in LANES])
        shared: dict[int, tuple[dict[Pipe, np.ndarray], np.ndarray]] = {}
        cores = []
        for k in range(n):
            j = int(lead[k])
            if j not in shared:
                s, st = a.get(f"spans_{j}"), a.get(f"stalls_{j}")
                if s is None or st is None or s.ndim != 2 or s.shape[1] != 3 or \
                        st.ndim != 2 or st.shape[1] != 4 or s.dtype.kind != "i" or \
                        st.dtype.kind != "i":
                    raise bad(f"core {j}: 'spans_{j}' / 'stalls_{j}' must be int rows of 3 / 4")
                if not np.isin(s[:, 0], pipes).all() or not np.isin(st[:, 0], pipes).all() or \
                        (st.size and (st[:, 3].min() < 0 or st[:, 3].max() >= len(causes))):
                    raise bad(f"core {j}: a row names no pipe or no stall cause")
                shared[j] = ({p: s[s[:, 0] == int(p), 1:] for p in LANES}, st)
            ub = None
            if f"ub_{k}" in a:
                u = a[f"ub_{k}"]
                if u.ndim != 2 or u.shape[1] != 2 or u.dtype.kind != "i" or not u.shape[0]:
                    raise bad(f"core {k}: 'ub_{k}' must be int rows (cycle, bytes)")
                ub = (u[:, 0], u[:, 1], int(reserved[k]))
            cores.append(CoreLanes(k, *shared[j], ub))
        return cls(clock, makespan, cores, str(a.get("title", "")))


__all__ = ["FORMAT", "LANES", "TIMELINE_FILE", "CoreLanes", "Timeline", "TimelineFileError",
           "lane_spans", "ub_occupancy"]
