"""TPipe, TQue, TQueBind and TBuf: UB allocation and the queues' implicit synchronisation.

``TPipe.InitBuffer`` places buffers consecutively from UB offset 0, each rounded up to 32
bytes, and fails with the buffer name, bytes asked and bytes left when UB runs out. The
queue calls insert the flags the Ascend C library inserts on arch 2201 (A2/A3):

- ``AllocTensor`` takes the next buffer in turn; if that buffer still carries a free-event id,
  the free event's destination pipe waits for it and the id is released.
- ``EnQue`` takes the lowest free id of the queue's enqueue event and sets it;
  ``DeQue`` waits for it and releases the id.
- ``FreeTensor`` takes the lowest free id of the free event, sets it and leaves it on the
  buffer for the next ``AllocTensor``.
- ``TPipe.Destroy`` (run at kernel end) waits every id still left on a buffer, then issues
  ``PipeBarrier<PIPE_ALL>``.
- ``GetTPipePtr()`` is the core's current TPipe; ``TPipe.FetchEventID(evt)`` returns the lowest
  id of ``evt`` that no queue holds, without taking it (Ascend C: "does not allocate the
  TEventID, only provides an available one"; it is meant for an immediate SetFlag / WaitFlag).
"""

from __future__ import annotations

from collections import deque

from aicore_sim import program
from aicore_sim.ascendc.sync import PIPE_ALL, PipeBarrier, SetFlag, WaitFlag
from aicore_sim.ascendc.tensors import LocalTensor, TPosition
from aicore_sim.dtypes import as_dtype
from aicore_sim.errors import EventIdError, KernelError, OutOfBoundsError
from aicore_sim.isa import HardEvent

# (source position, destination position) -> (enqueue event, free event), arch 2201
_QUE_EVENTS: dict[tuple[TPosition, TPosition], tuple[HardEvent, HardEvent]] = {
    (TPosition.GM, TPosition.VECIN): (HardEvent.MTE2_V, HardEvent.V_MTE2),
    (TPosition.VECIN, TPosition.VECIN): (HardEvent.MTE2_V, HardEvent.V_MTE2),
    (TPosition.VECOUT, TPosition.GM): (HardEvent.V_MTE3, HardEvent.MTE3_V),
    (TPosition.VECOUT, TPosition.VECOUT): (HardEvent.V_MTE3, HardEvent.MTE3_V),
    (TPosition.VECIN, TPosition.VECOUT): (HardEvent.MTE2_MTE3, HardEvent.MTE3_MTE2),
}


def _take_lowest_id(event: HardEvent) -> int:
    used = program.current().event_ids.setdefault(event, set())
    for i in range(8):
        if i not in used:
            used.add(i)
            return i
    raise EventIdError(f"TQue: no free event id left for HardEvent {event.name} (all 8 taken)")


def _release_id(event: HardEvent, eid: int) -> None:
    program.current().event_ids.setdefault(event, set()).discard(eid)


class _Slot:
    __slots__ = ("tensor", "free_id")

    def __init__(self, tensor: LocalTensor) -> None:
        self.tensor = tensor
        self.free_id: int | None = None


class TQueBind:
    """A queue of ``num`` equal UB buffers moving data from ``src`` to ``dst`` positions."""

    def __init__(self, src: TPosition, dst: TPosition, depth: int, name: str = "") -> None:
        self.src, self.dst, self.depth, self.name = src, dst, int(depth), name
        key = (src, dst)
        if key not in _QUE_EVENTS:
            raise KernelError(f"TQueBind<{src.name}, {dst.name}>: no event mapping modelled")
        self.enq_event, self.free_event = _QUE_EVENTS[key]
        self.slots: list[_Slot] = []
        self.next_slot = 0
        self.queued: deque[tuple[LocalTensor, int]] = deque()

    def _bind(self, tensors: list[LocalTensor]) -> None:
        self.slots = [_Slot(t) for t in tensors]

    def _slot_of(self, t: LocalTensor) -> _Slot:
        for s in self.slots:
            if s.tensor.addr == t.addr:
                return s
        raise KernelError(f"TQue '{self.name}': tensor at UB {t.addr} is not one of its buffers")

    def AllocTensor(self, dtype) -> LocalTensor:
        if not self.slots:
            raise KernelError(f"TQue '{self.name}': AllocTensor before TPipe.InitBuffer")
        slot = self.slots[self.next_slot]
        self.next_slot = (self.next_slot + 1) % len(self.slots)
        if slot.free_id is not None:
            WaitFlag(self.free_event, slot.free_id, implicit=True)
            _release_id(self.free_event, slot.free_id)
            slot.free_id = None
        return slot.tensor.ReinterpretCast(as_dtype(dtype))

    def EnQue(self, tensor: LocalTensor, *positions) -> None:
        if len(self.queued) >= self.depth:
            raise KernelError(f"TQue '{self.name}': EnQue beyond depth {self.depth}")
        eid = _take_lowest_id(self.enq_event)
        SetFlag(self.enq_event, eid, implicit=True)
        self.queued.append((tensor, eid))

    def DeQue(self, dtype=None, *positions) -> LocalTensor:
        if not self.queued:
            raise KernelError(f"TQue '{self.name}': DeQue on an empty queue")
        tensor, eid = self.queued.popleft()
        WaitFlag(self.enq_event, eid, implicit=True)
        _release_id(self.enq_event, eid)
        return tensor if dtype is None else tensor.ReinterpretCast(as_dtype(dtype))

    def FreeTensor(self, tensor: LocalTensor) -> None:
        slot = self._slot_of(tensor)
        eid = _take_lowest_id(self.free_event)
        SetFlag(self.free_event, eid, implicit=True)
        slot.free_id = eid

    def _drain(self) -> None:
        for slot in self.slots:
            if slot.free_id is not None:
                WaitFlag(self.free_event, slot.free_id, implicit=True)
                _release_id(self.free_event, slot.free_id)
                slot.free_id = None


class TQue(TQueBind):
    """``TQue<pos, depth>``: a queue between GM and one vector position."""

    def __init__(self, position: TPosition, depth: int, name: str = "") -> None:
        src, dst = (
            (TPosition.GM, position) if position is TPosition.VECIN else (position, TPosition.GM)
        )
        super().__init__(src, dst, depth, name)


class TBuf:
    """``TBuf<pos>``: one UB buffer with no implicit synchronisation."""

    def __init__(self, position: TPosition = TPosition.VECCALC, name: str = "") -> None:
        self.position, self.name = position, name
        self.tensor: LocalTensor | None = None

    def Get(self, dtype, count: int | None = None) -> LocalTensor:
        if self.tensor is None:
            raise KernelError(f"TBuf '{self.name}': Get before TPipe.InitBuffer")
        t = self.tensor.ReinterpretCast(as_dtype(dtype))
        return t

    def GetWithOffset(self, dtype, count: int, offset: int) -> LocalTensor:
        """Tensor of ``count`` elements starting ``offset`` bytes into the buffer."""
        base = self.Get(dtype)
        t = LocalTensor(base.dtype, base.buf, base.addr + int(offset), base.limit)
        if t.addr + int(count) * t.dtype.itemsize > t.limit:
            raise OutOfBoundsError(
                f"TBuf '{self.name}'.GetWithOffset: {count} elements at byte offset {offset} "
                f"pass the end of the buffer ({t.limit - base.addr} bytes)"
            )
        return t


class TPipe:
    """The UB owner of one core: hands out buffers and tears queues down at kernel end."""

    def __init__(self) -> None:
        rec = program.current()
        self.queues: list[TQueBind] = []
        self._destroyed = False
        rec.pipes.append(self)

    def InitBuffer(self, obj: TQueBind | TBuf, *args: int) -> None:
        rec = program.current()
        if isinstance(obj, TQueBind):
            if len(args) != 2:
                raise KernelError("InitBuffer(que, num, len): needs num and len")
            num, length = (int(a) for a in args)
            name = obj.name or f"que{len(self.queues)}"
            obj.name = name
            tensors = []
            for i in range(num):
                a = rec.ub.alloc(f"{name}[{i}]" if num > 1 else name, length)
                tensors.append(LocalTensor("int32", a.name, a.addr, a.end))
            obj._bind(tensors)
            self.queues.append(obj)
        elif isinstance(obj, TBuf):
            if len(args) != 1:
                raise KernelError("InitBuffer(tbuf, len): needs len")
            name = obj.name or f"buf{len(rec.ub.allocations)}"
            obj.name = name
            a = rec.ub.alloc(name, int(args[0]))
            obj.tensor = LocalTensor("int32", a.name, a.addr, a.end)
        else:
            raise KernelError(f"InitBuffer: expected a TQue, TQueBind or TBuf, got {obj!r}")

    def FetchEventID(self, evt: HardEvent) -> int:
        """``TPipe::FetchEventID(evt)``: the lowest free id of ``evt`` (not taken)."""
        if not isinstance(evt, HardEvent):
            raise EventIdError(f"FetchEventID: expected a HardEvent, got {evt!r}")
        used = program.current().event_ids.get(evt, set())
        for i in range(8):
            if i not in used:
                return i
        raise EventIdError(f"FetchEventID: no free event id left for HardEvent {evt.name} "
                           "(all 8 held by queues)")

    def Destroy(self) -> None:
        """Kernel-end teardown: wait pending free events, then a full barrier."""
        if self._destroyed:
            return
        self._destroyed = True
        for q in self.queues:
            q._drain()
        PipeBarrier(PIPE_ALL)


def GetTPipePtr() -> TPipe:
    """``GetTPipePtr()``: the TPipe the running core's kernel created last."""
    pipes = program.current().pipes
    if not pipes:
        raise KernelError("GetTPipePtr: no TPipe has been created on this core")
    return pipes[-1]
