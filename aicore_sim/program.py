"""Record pass: run a kernel port once per core, in program order, and record its instructions.

Step of the flow: ``launch`` calls :func:`record`; for each block index the kernel runs as
plain Python. Every Ascend C call reaches :meth:`CoreRecorder.emit`, which appends one
:class:`~aicore_sim.isa.Instr` to the core's stream and applies its numpy effect to the
*functional* image at once, so ``GetValue`` and data-dependent control flow see real values.
The result, a :class:`Program`, is what the SimPy replay consumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from aicore_sim import semantics
from aicore_sim.errors import KernelError
from aicore_sim.isa import Instr, Pipe, Space
from aicore_sim.memory import UB_ALIGN, Allocation, MemoryImage, UnifiedBuffer

_NO_WRITER = -1


@dataclass
class Hazard:
    """A problem found in a launch: ``kind`` (e.g. ``race``, ``misaligned``), where, and why."""

    kind: str
    core: int
    message: str
    instrs: tuple[tuple[int, int], ...] = ()  # (core, index in that core's stream)

    def __str__(self) -> str:
        return f"[{self.kind}] core {self.core}: {self.message}"


class CoreRecorder:
    """The recording state of one AIV core while its kernel runs.

    Holds the instruction stream, the per-pipe program-order counters, the UB allocation
    table, the TQue event-id pools, and a per-32-byte-block map of the last UB writer (used to
    give each scalar UB read the producer the compiler's auto-sync would wait for).
    """

    def __init__(self, core: int, block_num: int, image: MemoryImage, ub: UnifiedBuffer,
                 platform) -> None:
        self.core = core
        self.block_num = block_num
        self.image = image
        self.ub_bytes = image.ub[core]
        self.ub = ub
        self.platform = platform
        self.stream: list[Instr] = []
        self.pipe_count = [0, 0, 0, 0]
        self.hazards: list[Hazard] = []
        nblocks = image.ub_bytes // UB_ALIGN + 1
        self._writer_pos = np.full(nblocks, _NO_WRITER, dtype=np.int64)
        self.pipe_index: list[int] = []  # stream position -> index in its pipe's order
        self.event_ids: dict[object, set[int]] = {}  # HardEvent -> ids taken by TQue
        self.pipes: list[object] = []  # TPipe objects, torn down at kernel end

    # -- recording ---------------------------------------------------------------------------

    def emit(self, ins: Instr) -> None:
        """Append ``ins`` to the stream and apply its effect to the functional image."""
        pos = len(self.stream)
        self.stream.append(ins)
        self.pipe_index.append(self.pipe_count[ins.pipe])
        self.pipe_count[ins.pipe] += 1
        dst = ins.dst
        if dst is not None and dst.space is Space.GM:
            gm = self.image.gm[dst.buf]
            if not gm.flags.writeable:
                raise KernelError(f"core {self.core}: {ins.describe()} writes GM tensor "
                                  f"'{dst.buf}', which the launch passed as an input")
        semantics.execute(ins, self.ub_bytes, self.image.gm)
        if dst is not None and dst.space is Space.UB and ins.pipe is not Pipe.SCALAR:
            b0 = dst.addr // UB_ALIGN
            b1 = -(-(dst.addr + dst.nbytes) // UB_ALIGN)
            self._writer_pos[b0:b1] = pos

    def last_ub_writer(self, addr: int, nbytes: int) -> tuple[Pipe, int] | None:
        """(pipe, index in that pipe) of the latest non-scalar writer of any byte read.

        This is the producer the compiler's auto-sync makes a scalar UB read wait for.
        """
        b0, b1 = addr // UB_ALIGN, -(-(addr + nbytes) // UB_ALIGN)
        pos = int(self._writer_pos[b0:b1].max(initial=_NO_WRITER))
        if pos == _NO_WRITER:
            return None
        return self.stream[pos].pipe, self.pipe_index[pos]

    def hazard(self, kind: str, message: str) -> None:
        self.hazards.append(Hazard(kind, self.core, message, ((self.core, len(self.stream)),)))

    def check_ub(self, addr: int, nbytes: int, what: str, align: int = UB_ALIGN) -> None:
        self.ub.check(addr, nbytes, what)
        if align and addr % align:
            self.hazard("misaligned", f"{what}: UB address {addr} is not {align}-byte aligned")


@dataclass
class Program:
    """Everything the record pass produced for one launch."""

    streams: list[list[Instr]]
    allocations: list[list[Allocation]]
    functional: MemoryImage
    initial: MemoryImage
    hazards: list[Hazard] = field(default_factory=list)

    @property
    def instruction_count(self) -> int:
        return sum(len(s) for s in self.streams)


_ACTIVE: list[CoreRecorder] = []


def current() -> CoreRecorder:
    """The recorder of the core whose kernel is running (what Ascend C calls talk to)."""
    if not _ACTIVE:
        raise KernelError("an Ascend C call was made outside a kernel launch")
    return _ACTIVE[-1]


def record(kernel: Callable[..., None], args: tuple, block_dim: int, image: MemoryImage,
           platform, initial: MemoryImage | None = None) -> Program:
    """Run ``kernel(*args)`` once per block index on ``image`` (the functional image).

    ``initial`` is the memory as it was before the launch, kept in the program for a replay
    with effects (default: the functional image itself, i.e. none kept)."""
    streams: list[list[Instr]] = []
    allocations: list[list[Allocation]] = []
    hazards: list[Hazard] = []
    for core in range(block_dim):
        ub = UnifiedBuffer(capacity=platform.core_mem_size_ub)
        rec = CoreRecorder(core, block_dim, image, ub, platform)
        _ACTIVE.append(rec)
        try:
            kernel(*args)
            for pipe in rec.pipes:
                pipe.Destroy()
        finally:
            _ACTIVE.pop()
        streams.append(rec.stream)
        allocations.append(list(ub.allocations))
        hazards.extend(rec.hazards)
    return Program(streams, allocations, image, image if initial is None else initial, hazards)


__all__ = ["CoreRecorder", "Hazard", "Program", "current", "record"]
