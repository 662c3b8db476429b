"""Record pass: run a kernel port once per core, in program order, and record its instructions.

Step of the flow: a ``Recording`` calls :func:`record`; for each block index the kernel runs as
plain Python. Every Ascend C call reaches :meth:`CoreRecorder.emit`, which appends one
:class:`~aicore_sim.sim.isa.Instr` to the core's stream and applies its numpy effect to the
*functional* image at once, so ``GetValue`` and data-dependent control flow see real values.
The result, a :class:`Program`, is what the SimPy replay consumes.
"""

from __future__ import annotations

import functools
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from math import copysign

import numpy as np

from aicore_sim.sim import parallel, phases, semantics, sources
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Instr, Opcode, Pipe, Space
from aicore_sim.sim.memory import UB_ALIGN, Allocation, MemoryImage, UnifiedBuffer
from aicore_sim.sim.trace import core_name
from aicore_sim.util.resources import gc_paused

_NO_WRITER = -1
_PENDING_LOOK = 32  # recent writes searched by a scalar UB read before the block map
_GM, _SCALAR = Space.GM, Pipe.SCALAR
_EFFECTS = semantics.EFFECTS
_getframe = sys._getframe
_CODE_TAGS, _kernel_frame, API = sources.CODE_TAGS, sources.kernel_frame, sources.API

ALL_EFFECTS = semantics.HAS_EFFECT
"""Opcodes whose effect the record pass applies when the launch computes numbers."""

CONTROL_EFFECTS = frozenset({Opcode.COPY_GM_TO_UB, Opcode.SET_VALUE_UB})
"""Opcodes whose effect the record pass applies in timing-only mode: the data movement that
brings GM inputs into UB and scalar stores, so that every ``GetValue`` of an input (indices,
probs) and every branch on one sees the real value. Vector arithmetic and UB->GM copies are
recorded but not executed: values they would produce read as whatever UB held before, so a
kernel port may use them as operands but must never branch on them (docs/model.md)."""


@dataclass
class Hazard:
    """A problem found in a launch: ``kind`` (e.g. ``race``, ``misaligned``), where, and why."""

    kind: str
    core: int
    message: str
    instrs: tuple[tuple[int, int], ...] = ()  # (core, index in that core's stream)

    def __str__(self) -> str:
        return f"[{self.kind}] {core_name(self.core)}: {self.message}"


class CoreRecorder:
    """The recording state of one AIV core while its kernel runs.

    Holds the instruction stream, the per-pipe program-order counters, the UB allocation
    table, the TQue event-id pools, and a per-32-byte-block map of the last UB writer (used to
    give each scalar UB read the producer the compiler's auto-sync would wait for).

    ``effects`` is the set of opcodes whose numpy effect is applied to the functional image
    as they are recorded: all of them with numerics, :data:`CONTROL_EFFECTS` in timing-only
    mode. Equal instructions are stored once (``intern``): a stream holds many repeats of the
    same flag or vector call, and sharing them saves memory and the cost of shipping streams
    between processes.
    """

    __slots__ = ("core", "block_num", "image", "ub_bytes", "ub", "platform", "effects",
                 "stream", "pipe_count", "hazards", "_writer_pos", "_writes", "pipe_index",
                 "sites", "_frame", "_code", "_runs", "event_ids", "pipes", "_intern",
                 "auto_sync", "sync_hook", "atomic", "vector_mask", "deq_scale", "front")

    def __init__(self, core: int, block_num: int, image: MemoryImage, ub: UnifiedBuffer,
                 platform, effects: frozenset = ALL_EFFECTS,
                 intern: dict[Instr, Instr] | None = None, auto_sync: bool = True) -> None:
        self.core = core
        self.block_num = block_num
        self.image = image
        self.ub_bytes = image.ub[core]
        self.ub = ub
        self.platform = platform
        self.effects = effects
        self.stream: list[Instr] = []
        self.pipe_count = [0, 0, 0, 0]
        self.hazards: list[Hazard] = []
        nblocks = image.ub_bytes // UB_ALIGN + 1
        # last non-scalar UB writer per 32-byte block: the writes of ``_writes`` (first block,
        # end block, stream position; in program order) are not yet in ``_writer_pos``
        self._writer_pos = np.full(nblocks, _NO_WRITER, dtype=np.int64)
        self._writes: list[int] = []
        self.pipe_index: list[int] = []  # stream position -> index in its pipe's order
        # stream position -> where the kernel called the API: the bytecode offset of the call
        # in its function, which ``_runs`` gives (stream position where a run of calls from
        # one function starts, the function's tag (sources.py), ...); ``calls`` pairs them
        # once the core is recorded, and the record pass makes them site ids per range
        self.sites: list[int] = []  # a list: appending to an array("q") costs 4x as much
        self._runs: list[int] = []
        # the kernel frame of the last call and its function (code object): consecutive
        # calls mostly come from one frame, found by identity (holding it keeps the identity
        # of a frame from being reused by another), else from one function
        self._frame: object = None
        self._code: object = None
        self.event_ids: dict[object, set[int]] = {}  # HardEvent -> ids taken by TQue
        self.pipes: list[object] = []  # TPipe objects, torn down at kernel end
        self._intern = (intern if intern is not None else {}).setdefault
        # scalar UB reads wait for their producer (compiler auto-sync); False models a kernel
        # built without it, where only explicit flags order them
        self.auto_sync = auto_sync
        # SyncAll: gives the turn to the other cores until all have arrived (phases.py)
        self.sync_hook: Callable[[], None] | None = None
        self.atomic = ""  # SetAtomicAdd<T>: T's name, given to every later UB->GM copy
        self.vector_mask = 0  # SetVectorMask: leading lanes (normal mode); 0 = all (reset)
        self.deq_scale = 1.0  # SetDeqScale: the scale of int32 -> half casts
        self.front: object = None  # a front end's per-core state (the C++ shim's: cfront)

    # -- recording ---------------------------------------------------------------------------

    def emit(self, ins: Instr, depth: int = 2, shared: bool = False) -> None:
        """Append ``ins`` to the stream, note the kernel line that issued it, and apply its
        effect to the functional image.

        The kernel line is the frame ``depth`` above this one (2: the caller of the API
        function calling ``emit``; an API function that reaches ``emit`` through a helper of
        its own passes 3), or the first kernel frame above it when that is still the API.
        ``shared``: ``ins`` is already one object for all its equal calls (the API keeps one
        per distinct sync call), so it is stored as it is, not looked up in the intern table.
        """
        f = _getframe(depth)
        if f is not self._frame:  # not the kernel frame of the last call
            code = f.f_code
            if code is not self._code:  # nor its function
                try:
                    tag = _CODE_TAGS[id(code)]
                except KeyError:  # code not seen yet
                    tag = API
                if tag == API:  # the simulator's own code, or code not seen yet
                    f, tag = _kernel_frame(f)
                    code = f.f_code
                self._code = code
                runs = self._runs
                runs.append(len(self.sites))
                runs.append(tag)
            self._frame = f
        self.sites.append(f.f_lasti)
        if not shared:
            s = ins.scalar
            if s or copysign(1.0, s) > 0:  # -0.0 == 0.0: a -0.0 operand keeps its own object
                ins = self._intern(ins, ins)
        stream = self.stream
        pos = len(stream)
        stream.append(ins)
        p = ins.pipe
        counts = self.pipe_count
        self.pipe_index.append(counts[p])
        counts[p] += 1
        dst = ins.dst
        if dst is not None:
            if dst.space is _GM:
                if dst.buf not in self.image.writable:
                    raise KernelError(f"{core_name(self.core)}: {ins.describe()} writes GM tensor "
                                      f"'{dst.buf}', which the launch passed as an input")
            elif p is not _SCALAR:
                a = dst.addr
                self._writes += (a // UB_ALIGN, -(-(a + dst.nbytes) // UB_ALIGN), pos)
        if ins.op in self.effects:
            _EFFECTS[ins.op](ins, self.ub_bytes, self.image.gm, None)

    def calls(self) -> tuple[np.ndarray, np.ndarray]:
        """(function tag, bytecode offset) of the API call of every stream position, int64
        (:func:`sources.site_ids` makes them site ids); called once the kernel has ended, it
        lets go of the kernel's last frame."""
        self._frame = self._code = None
        n = len(self.sites)
        offsets = _int64s(self.sites)
        runs = _int64s(self._runs).reshape(-1, 2)
        # the first call starts a run (no frame is held before it), so the runs cover all
        tags = np.repeat(runs[:, 1], np.diff(np.append(runs[:, 0], n)))
        return tags, offsets

    def last_ub_writer(self, addr: int, nbytes: int) -> tuple[Pipe, int] | None:
        """(pipe, index in that pipe) of the latest non-scalar writer of any byte read.

        This is the producer the compiler's auto-sync makes a scalar UB read wait for.
        """
        b0, b1 = addr // UB_ALIGN, -(-(addr + nbytes) // UB_ALIGN)
        pos = self._pending_writer(b0, b1)
        if pos is None:
            pos = int(self._writer_pos[b0:b1].max(initial=_NO_WRITER))
        if pos == _NO_WRITER:
            return None
        return self.stream[pos].pipe, self.pipe_index[pos]

    def _pending_writer(self, b0: int, b1: int) -> int | None:
        """The latest write not yet in the block map that touches blocks [b0, b1), looked
        for among the last few (the producer of a scalar read is mostly a recent one);
        otherwise the pending writes go into the map and None is returned."""
        w = self._writes
        for k in range(len(w) - 3, max(-3, len(w) - 3 * _PENDING_LOOK), -3):
            if w[k] < b1 and w[k + 1] > b0:
                return w[k + 2]
        wp = self._writer_pos
        for k in range(0, len(w), 3):
            wp[w[k]:w[k + 1]] = w[k + 2]
        w.clear()
        return None

    def hazard(self, kind: str, message: str) -> None:
        self.hazards.append(Hazard(kind, self.core, message, ((self.core, len(self.stream)),)))

    def check_ub(self, addr: int, nbytes: int, what: str, align: int = UB_ALIGN) -> None:
        self.ub.check(addr, nbytes, what)
        if align and addr % align:
            self.hazard("misaligned", f"{what}: UB address {addr} is not {align}-byte aligned")


def _int64s(values: list[int]) -> np.ndarray:
    """A list of ints as an int64 array (``struct`` packs them with under half the machine
    instructions ``np.fromiter`` or ``np.array`` take)."""
    return np.frombuffer(struct.pack(f"{len(values)}q", *values), np.int64)


@dataclass
class Program:
    """Everything the record pass produced for one launch."""

    streams: list[list[Instr]]
    allocations: list[list[Allocation]]
    functional: MemoryImage
    initial: MemoryImage
    hazards: list[Hazard] = field(default_factory=list)
    numerics: bool = True
    jobs: int = 1  # processes the record pass ran on (1 also when it fell back to serial)
    sources: sources.Sources | None = None  # the kernel line of every instruction

    @property
    def instruction_count(self) -> int:
        return sum(len(s) for s in self.streams)


_ACTIVE: list[CoreRecorder] = []


def current() -> CoreRecorder:
    """The recorder of the core whose kernel is running (what Ascend C calls talk to)."""
    try:
        return _ACTIVE[-1]
    except IndexError:
        raise KernelError("an Ascend C call was made outside a kernel launch") from None


def _record_cores(kernel: Callable[..., None], args: tuple, cores: range, block_dim: int,
                  image: MemoryImage, platform, effects: frozenset,
                  intern: dict[Instr, Instr], auto_sync: bool = True
                  ) -> tuple[list, list, list, list]:
    """Streams, allocation tables, hazards and site ids (int32 arrays) of ``cores``, recorded
    one after the other."""
    recs, runs = [], []
    for core in cores:
        ub = UnifiedBuffer(capacity=platform.core_mem_size_ub)
        rec = CoreRecorder(core, block_dim, image, ub, platform, effects, intern, auto_sync)
        run = phases.CoreRun(core, kernel, args)
        rec.sync_hook = run.arrive
        recs.append(rec)
        runs.append(run)
    by_core = dict(zip(cores, recs))
    # each core on its own thread, one at a time, round by round between SyncAll calls
    phases.run_phases(runs, len(cores) == block_dim,
                      lambda run: _ACTIVE.append(by_core[run.core]),
                      lambda run: _ACTIVE.pop(), lambda run: _teardown(by_core[run.core]))
    streams = [rec.stream for rec in recs]
    allocations = [list(rec.ub.allocations) for rec in recs]
    hazards = [h for rec in recs for h in rec.hazards]
    calls = [rec.calls() for rec in recs]
    # the calls' sites, for the whole range at once
    none = [np.zeros(0, np.int64)]
    ids = sources.site_ids(np.concatenate(none + [t for t, _ in calls]),
                           np.concatenate(none + [o for _, o in calls]))
    sites = np.split(ids, np.cumsum([t.size for t, _ in calls])[:-1]) if calls else []
    return streams, allocations, hazards, sites


def _teardown(rec: CoreRecorder) -> None:
    """Kernel end: destroy the TPipes the kernel left alive."""
    for pipe in rec.pipes:
        pipe.Destroy()


sources.stop_at(_teardown)  # the TPipe teardown it runs is the site "(kernel end)"


def record(kernel: Callable[..., None], args: tuple, block_dim: int, image: MemoryImage,
           platform, initial: MemoryImage | None = None, numerics: bool = True,
           jobs: int = 1, auto_sync: bool = True) -> Program:
    """Run ``kernel(*args)`` once per block index on ``image`` (the functional image).

    ``initial`` is the memory as it was before the launch, kept in the program for a replay
    with effects (default: the functional image itself, i.e. none kept). ``numerics=False``
    records the timing-only way (only :data:`CONTROL_EFFECTS` are applied). ``jobs > 1``
    records the cores in that many processes (see :mod:`aicore_sim.sim.parallel`); the result is
    the same as with one. ``auto_sync=False`` records scalar UB reads without the auto-sync
    wait on their producer (a kernel compiled without ``--cce-auto-sync``; docs/model.md).
    """
    effects = ALL_EFFECTS if numerics else CONTROL_EFFECTS
    record_cores = functools.partial(_record_cores, auto_sync=bool(auto_sync))
    jobs = max(1, min(int(jobs), block_dim))
    parts = None
    # The record pass builds long-lived streams and frees its temporaries by reference
    # counting: the cyclic collector's passes find nothing (measured on P1: 700 passes, 0.38 s,
    # about a tenth of the pass), so it is paused meanwhile, as in the replay.
    with gc_paused():
        if jobs > 1 and parallel.available():
            parts = parallel.record(record_cores, kernel, args, block_dim, image, platform,
                                    effects, numerics, jobs, initial)
        if parts is None:
            parts = record_cores(kernel, args, range(block_dim), block_dim, image, platform,
                                 effects, {})
            jobs = 1
    streams, allocations, hazards, sites = parts
    if initial is not None:  # the kernel's own tables, for a replay from the initial image
        for name in image.constants:
            initial.add_constant(name, image.gm[name])
    return Program(streams, allocations, image, image if initial is None else initial, hazards,
                   numerics, jobs, sources.Sources(list(sources.SITES), sites))


def stream_difference(a: list[list[Instr]], b: list[list[Instr]]
                      ) -> tuple[int, int, Instr | None, Instr | None] | None:
    """The first (core, stream index, instruction of ``a``, of ``b``) where two recordings of
    one launch differ, or None. Scalar operand values are not compared: a timing-only record
    does not compute them (:data:`CONTROL_EFFECTS`) and no cost depends on them."""
    for core in range(max(len(a), len(b))):
        sa = a[core] if core < len(a) else []
        sb = b[core] if core < len(b) else []
        for i in range(max(len(sa), len(sb))):
            x = sa[i] if i < len(sa) else None
            y = sb[i] if i < len(sb) else None
            if x is y or x == y:
                continue
            if x is not None and y is not None and x._replace(scalar=0.0) == y._replace(
                    scalar=0.0):
                continue
            return core, i, x, y
    return None


__all__ = ["ALL_EFFECTS", "CONTROL_EFFECTS", "CoreRecorder", "Hazard", "Program", "current",
           "record", "stream_difference"]
