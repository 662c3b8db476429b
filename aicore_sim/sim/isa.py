"""The instruction set that crosses from the Ascend C API layer to the engine.

Step of the flow: the record pass (``program.py``) turns every Ascend C call into one
:class:`Instr`; the replay (``engine/``), the semantics (``semantics.py``), the costs
(``cost/price.py``) and the checks (``checks.py``) read nothing else. An ``Instr`` is immutable
and self-contained: it carries every address, length, dtype and scalar needed to re-execute its
effect on another memory image and to price it. ``Instr`` and ``Operand`` are named tuples:
immutable like a frozen dataclass, and six times cheaper to build (the record pass builds
one per Ascend C call).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, IntEnum
from typing import Any, NamedTuple

import numpy as np


class Pipe(IntEnum):
    """The in-order execution queues of one AI vector core (msprof lane names)."""

    SCALAR = 0
    VECTOR = 1
    MTE2 = 2
    MTE3 = 3


PIPES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3)


class Space(IntEnum):
    """Memory spaces an operand can live in."""

    UB = 0
    GM = 1


class HardEvent(Enum):
    """Inter-pipe event types ``SRC_DST``; value = (source pipe, destination pipe)."""

    __hash__ = object.__hash__  # members are singletons; identity hashing is C-fast

    MTE2_V = (Pipe.MTE2, Pipe.VECTOR)
    V_MTE2 = (Pipe.VECTOR, Pipe.MTE2)
    MTE3_V = (Pipe.MTE3, Pipe.VECTOR)
    V_MTE3 = (Pipe.VECTOR, Pipe.MTE3)
    MTE2_MTE3 = (Pipe.MTE2, Pipe.MTE3)
    MTE3_MTE2 = (Pipe.MTE3, Pipe.MTE2)
    MTE2_S = (Pipe.MTE2, Pipe.SCALAR)
    S_MTE2 = (Pipe.SCALAR, Pipe.MTE2)
    V_S = (Pipe.VECTOR, Pipe.SCALAR)
    S_V = (Pipe.SCALAR, Pipe.VECTOR)
    MTE3_S = (Pipe.MTE3, Pipe.SCALAR)
    S_MTE3 = (Pipe.SCALAR, Pipe.MTE3)

    @property
    def src(self) -> Pipe:
        return self.value[0]

    @property
    def dst(self) -> Pipe:
        return self.value[1]


class Opcode(Enum):
    """What an instruction does. The pipe it runs on is stored in the Instr."""

    __hash__ = object.__hash__  # members are singletons; identity hashing is C-fast

    # data movement (MTE2 / MTE3)
    COPY_GM_TO_UB = "DataCopyPad.GM2UB"
    COPY_UB_TO_GM = "DataCopyPad.UB2GM"
    # UB -> UB block copy (DataCopy between vector positions; copy_ubuf_to_ubuf, PIPE_V)
    DATA_COPY_UB_TO_UB = "DataCopy.UB2UB"
    # vector (V)
    CAST = "Cast"
    COPY = "Copy"
    DUPLICATE = "Duplicate"
    MULS = "Muls"
    MUL = "Mul"
    ADD = "Add"
    BLOCK_REDUCE_SUM = "BlockReduceSum"
    WHOLE_REDUCE_SUM = "WholeReduceSum"
    SUB = "Sub"
    DIV = "Div"
    MAX = "Max"
    MIN = "Min"
    ADDS = "Adds"
    MAXS = "Maxs"
    MINS = "Mins"
    EXP = "Exp"
    ABS = "Abs"
    RELU = "Relu"
    SQRT = "Sqrt"
    ARITH_PROGRESSION = "ArithProgression"  # also CreateVecIndex (difference 1)
    REDUCE_SUM = "ReduceSum"
    REDUCE_MAX = "ReduceMax"
    WHOLE_REDUCE_MAX = "WholeReduceMax"
    BRCB = "Brcb"
    COMPARE = "Compare"
    COMPARE_SCALAR = "CompareScalar"
    SELECT = "Select"
    GATHER_MASK = "GatherMask"
    AND = "And"
    OR = "Or"
    SHIFT_LEFT = "ShiftLeft"
    SHIFT_RIGHT = "ShiftRight"
    GATHER = "Gather"
    SIGMOID = "Sigmoid"
    PAIR_REDUCE_SUM = "PairReduceSum"
    SORT = "Sort"
    MRG_SORT = "MrgSort"
    EXTRACT = "Extract"
    # synchronisation (queue entries of the pipe named in Instr.pipe)
    SET_FLAG = "SetFlag"
    WAIT_FLAG = "WaitFlag"
    BARRIER = "PipeBarrier"
    # every core of the launch (scalar unit): all wait until the last one arrives
    SYNC_ALL = "SyncAll"
    # scalar unit
    GET_VALUE_GM = "GetValue.GM"
    GET_VALUE_UB = "GetValue.UB"
    SET_VALUE_UB = "SetValue.UB"


# L2 cache modes of a GM access (Instr.cache), as Ascend C's CacheMode names them.
CACHE_NORMAL = 0
CACHE_DISABLE = 1

SYNC_OPS = frozenset({Opcode.SET_FLAG, Opcode.WAIT_FLAG, Opcode.BARRIER, Opcode.SYNC_ALL})


class RoundMode(Enum):
    """Ascend C ``RoundMode`` of a Cast (semantics.py says what each does)."""

    CAST_NONE = "CAST_NONE"
    CAST_RINT = "CAST_RINT"
    CAST_ROUND = "CAST_ROUND"
    CAST_FLOOR = "CAST_FLOOR"
    CAST_CEIL = "CAST_CEIL"
    CAST_TRUNC = "CAST_TRUNC"
    CAST_ODD = "CAST_ODD"


class Operand(NamedTuple):
    """A contiguous byte window of one memory space that an instruction reads or writes.

    ``buf`` names the allocation (a ``TPipe.InitBuffer`` buffer in UB, a kernel argument in GM);
    ``addr`` is the byte offset inside the space (UB) or inside that GM tensor (GM);
    ``nbytes`` is the extent the instruction may touch, used for hazard checks.
    """

    space: Space
    buf: str
    addr: int
    nbytes: int
    dtype: np.dtype

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


_VARIANT_LABELS = frozenset({"DataCopy"})
"""Labels naming a call whose instructions keep the opcode's variant in their name (a
``DataCopy`` GM->UB is ``DataCopy.GM2UB``); any other label names its call alone."""


class Instr(NamedTuple):
    """One recorded instruction of one core.

    Field use by opcode (``count`` is elements in count mode, ``blockCount`` for copies):

    - copies: ``params = (blockCount, blockLen, srcStride, dstStride)`` exactly as the
      DataCopyExtParams; ``nbytes`` = payload bytes moved (blockCount * blockLen). A
      ``DataCopy`` GM<->UB is recorded as the same transfer (blockLen in bytes, ``label``
      ``"DataCopy"``); ``DataCopy.UB2UB`` has ``count`` elements, ``params`` as the copies
      with strides in 32-byte blocks.
    - Cast: ``count``, ``round_mode``; Copy: ``mask``, ``repeat``,
      ``params = (dstBlkStride, srcBlkStride, dstRepStride, srcRepStride)``;
      Duplicate / Muls / Adds / Maxs / Mins and the unary Exp / Abs / Relu / Sqrt:
      ``count`` (and ``scalar``), or in the mask + repeat form ``mask``, ``repeat``,
      ``count = mask * repeat`` and ``params = (dstBlkStride, srcBlkStride, dstRepStride,
      srcRepStride)`` (Duplicate: ``(dstBlkStride, dstRepStride)``); the binary Mul / Add /
      Sub / Div / Max / Min: ``count``, or in the mask + repeat form ``mask``, ``repeat``,
      ``count = mask * repeat`` and ``params = (dstBlkStride, src0BlkStride, src1BlkStride,
      dstRepStride, src0RepStride, src1RepStride)`` (count mode has empty ``params``);
      ArithProgression: ``count``, ``scalar`` (the first value), ``params = (difference,)``;
      ReduceSum / ReduceMax (level 2): ``count``, ``params = (calIndex,)`` (ReduceMax);
      WholeReduceMax: as WholeReduceSum, ``params = (dstRepStride, srcBlkStride,
      srcRepStride, order)``; Brcb: ``repeat``, ``params = (dstBlkStride, dstRepStride)``;
      Compare / CompareScalar: ``count``, ``params = (cmpMode,)``, ``scalar``, ``dst`` the
      uint8 bit mask; Select: sources (src0, mask[, src1]), ``params = (selMode,)``;
      GatherMask: sources (src0, pattern), ``count``; And / Or, ShiftLeft / ShiftRight
      (``scalar`` = the shift): ``count``;
      Gather: sources (src, byte offsets), ``count``, ``params = (srcBaseAddr,)``;
      Sigmoid: ``count``; PairReduceSum: as WholeReduceSum;
      Sort: ``count`` (elements), ``params = (isFullSort,)``, sources (scores, indices);
      MrgSort: sources = the sorted lists, ``params`` = their lengths; Extract: two
      instructions, ``count``, ``params = (0,)`` for the scores and ``(1,)`` for the indices;
      BlockReduceSum / WholeReduceSum: ``mask``, ``repeat``,
      ``params = (dstRepStride, srcBlkStride, srcRepStride)``.
    - SetFlag / WaitFlag: ``event``, ``event_id``; PipeBarrier: ``barrier`` (the pipe it drains,
      or None for PIPE_ALL, which the scalar issuer executes).
    - GetValue.UB: ``dep`` = (pipe, index in that pipe's program order) of the instruction
      that last wrote the bytes read, or None; the scalar unit waits for it (compiler auto-sync).
    - ``implicit`` marks flags inserted by TQue calls rather than written by the kernel.
    - ``label``: the Ascend C call that recorded the instruction when it is not the opcode's
      own (``DataCopy`` for a copy, ``InitGlobalMemory``, ``CreateVecIndex``, ...): what
      :attr:`name` shows.
    - ``cache``: the L2 cache mode of a copy's GM tensor (``GlobalTensor.SetL2CacheHint``):
      :data:`CACHE_NORMAL` (read and write allocate in L2) or :data:`CACHE_DISABLE` (the
      access goes to HBM without allocating in L2).
    - ``atomic``: a UB->GM copy made after ``SetAtomicAdd<T>``: the name of ``T``; the copy
      adds its values to what GM holds (in ``T``, one rounding per element) instead of
      overwriting them; after ``SetAtomicMax<T>``: ``"max:T"``, it keeps the larger. Empty
      for a plain copy.
    """

    pipe: Pipe
    op: Opcode
    dst: Operand | None = None
    src: tuple[Operand, ...] = ()
    count: int = 0
    nbytes: int = 0
    mask: int = 0
    repeat: int = 0
    params: tuple[int, ...] = ()
    scalar: float = 0.0
    round_mode: RoundMode | None = None
    event: HardEvent | None = None
    event_id: int = -1
    barrier: Pipe | None = None
    dep: tuple[Pipe, int] | None = None
    implicit: bool = False
    label: str = ""
    cache: int = 0
    atomic: str = ""

    @property
    def name(self) -> str:
        """The name a user sees (trace slices, messages): the API the kernel called, its
        variant after a dot when the opcode has one and the label does not name a call of its
        own - ``DataCopy.GM2UB`` for ``DataCopy(ub, gm, n)``, ``DataCopyPad.UB2GM``,
        ``GetValue.GM``, ``InitGlobalMemory``, ``Muls`` - and flags and barriers with their
        event: ``SetFlag<MTE2_V>(3)``, ``PipeBarrier<PIPE_ALL>``. The opcode itself (the
        instruction's kind, what costs and digests use) is unchanged."""
        if self.op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
            return f"{self.op.value}<{self.event.name}>({self.event_id})"
        if self.op is Opcode.BARRIER:
            return f"PipeBarrier<PIPE_{self.barrier.name if self.barrier is not None else 'ALL'}>"
        base, _, variant = self.op.value.partition(".")
        if self.label and self.label not in _VARIANT_LABELS:
            return self.label
        return f"{self.label or base}.{variant}" if variant else (self.label or base)

    def describe(self) -> str:
        """A short human-readable form, e.g. ``MTE2 DataCopyPad.GM2UB grad->gradIn 1024B``."""
        if self.op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG, Opcode.BARRIER):
            return f"{self.pipe.name} {self.name}"
        parts = [self.pipe.name, self.name]
        if self.src or self.dst:
            srcs = ",".join(f"{o.buf}@{o.addr}" for o in self.src)
            dst = f"{self.dst.buf}@{self.dst.addr}" if self.dst else ""
            parts.append(f"{srcs}->{dst}")
        if self.nbytes:
            parts.append(f"{self.nbytes}B")
        elif self.count:
            parts.append(f"n={self.count}")
        elif self.repeat:
            parts.append(f"mask={self.mask} rep={self.repeat}")
        return " ".join(parts)


def per_object(stream: list[Instr], cache: dict[int, Any], fn: Callable[[Instr], Any],
               dtype: Any) -> np.ndarray:
    """``fn(ins)`` for every instruction of ``stream`` as an array of ``dtype``, computed once
    per distinct object (the record pass interns equal instructions: P1's 782k instructions
    are 104k objects). ``cache`` maps ``id(ins)`` to its value and may be shared by streams
    whose objects stay alive meanwhile."""
    ids = np.fromiter(map(id, stream), np.int64, len(stream))
    objs, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    values = []
    for key, j in zip(objs.tolist(), first.tolist()):
        v = cache.get(key)
        if v is None:
            v = cache[key] = fn(stream[j])
        values.append(v)
    return np.array(values, dtype).reshape(-1)[inverse.reshape(-1)]
