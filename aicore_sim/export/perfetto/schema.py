"""What the events of a Perfetto trace are called and what they carry: the ids of processes
(cores) and threads (pipe and stall lanes), the file's first keys, the name, category and args
of an instruction's slice, and the timestamps of a lane's slices (step: the Perfetto export).

Args of an instruction slice. Its name is the Ascend C call the kernel made with its variant
(``DataCopy.GM2UB`` for a ``DataCopy`` GM->UB, ``DataCopyPad.UB2GM``, ``Muls``;
``SetFlag<V_MTE3>(3)``, ``PipeBarrier<PIPE_ALL>`` for the sync ops), and its args hold only
what is not said elsewhere:

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
  path relative to the checkout (``aicore_sim/sim/sources.py``), when the trace has sources.

Dropped from earlier versions as derivable: ``opcode`` (the name), ``start_cycle`` /
``end_cycle`` (``ts * otherData.clock_mhz``, to within a cycle; ``cycles`` is exact), byte
addresses (the ``index`` finds the instruction, and its operands, in the stream), and a
stall's ``cause`` (the name).

Timestamps are µs at the platform clock, quantised to whole ns (3 decimals). Perfetto silently
drops or merges events that break its import rules; the tests' validator
(``tests/perfetto_schema.py``) checks those rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim.sim.isa import Instr, Opcode, Pipe, Space
from aicore_sim.sim.trace import core_name

LANES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
"""Thread order inside a core: the order data flows through it."""

HEADER = b'{"schemaVersion":2,"displayTimeUnit":"ns","profilingType":"op",'
"""The keys before ``traceEvents``, as msprof op simulator writes them (Insight's import rule)."""

TIDS_PER_CORE = 8  # 4 pipe threads + 4 stall threads

DETAILS = ("full", "lanes")
"""Detail levels of :func:`write_trace` (see :mod:`aicore_sim.export.perfetto`)."""

CAT = {
    Opcode.COPY_GM_TO_UB: "copy", Opcode.COPY_UB_TO_GM: "copy",
    Opcode.SET_FLAG: "sync", Opcode.WAIT_FLAG: "sync", Opcode.BARRIER: "sync",
    Opcode.SYNC_ALL: "sync",
    Opcode.GET_VALUE_GM: "scalar", Opcode.GET_VALUE_UB: "scalar", Opcode.SET_VALUE_UB: "scalar",
}
_COPIES = (Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM)


def core_label(core: int) -> str:
    """Process name of a core, as msprof's simulator names vector cores (the project's one
    name of a core: :func:`aicore_sim.sim.trace.core_name`)."""
    return core_name(core)


def pid_of(core: int) -> int:
    """Process id of a core (never 0)."""
    return core + 1


def tid_of(core: int, pipe: Pipe, stall: bool = False) -> int:
    """Thread id of a core's pipe lane (or of its stall lane): unique, never 0."""
    lane = LANES.index(pipe) + (len(LANES) if stall else 0)
    return core * TIDS_PER_CORE + lane + 1


def to_ns(cycles: np.ndarray | int, clock_mhz: float) -> np.ndarray:
    """Cycles to whole nanoseconds (rounded), as int64."""
    return np.rint(np.asarray(cycles, dtype=np.float64) * (1000.0 / clock_mhz)).astype(np.int64)


def lane_ns(start: np.ndarray, end: np.ndarray, clock_mhz: float) -> tuple[np.ndarray, np.ndarray]:
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
    s, e = to_ns(start, clock_mhz), to_ns(end, clock_mhz)
    if not s.size:
        return s, e
    i = np.arange(s.size, dtype=np.int64)
    x = i + np.maximum.accumulate(np.maximum(e, s + 1) - i)
    s[1:] = np.maximum(s[1:], x[:-1])
    return s, x


def instr_name(ins: Instr) -> str:
    """A slice's name: the Ascend C call the kernel made, with its variant
    (:attr:`~aicore_sim.sim.isa.Instr.name`: ``DataCopy.GM2UB``, ``DataCopyPad.UB2GM``,
    ``SetFlag<MTE2_V>(3)``)."""
    return ins.name


def instr_args(ins: Instr, index: int, start: int, end: int,
               dtype: bool = True) -> dict[str, Any]:
    """The args of one instruction's slice (see the module docstring for the choice).

    ``dtype=False`` leaves the destination dtype out (a trace with a single dtype says it once,
    in ``otherData``).
    """
    a: dict[str, Any] = {"index": index, "cycles": end - start}
    a.update(static_args(ins, dtype))
    return a


def static_args(ins: Instr, dtype: bool) -> dict[str, Any]:
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
