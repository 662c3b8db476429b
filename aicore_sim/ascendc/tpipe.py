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
- ``TPipe.Destroy`` (run at kernel end for a pipe the kernel left alive) waits every id still
  left on a buffer, issues ``PipeBarrier<PIPE_ALL>`` and releases the pipe's UB: a TPipe made
  (or ``Init`` again) after it allocates from UB byte 0, as on the device. Only one TPipe may
  be alive on a core at a time (Ascend C: several at once hang the core; destroy the previous
  one first), so a second one while the first lives is a ``KernelError``; queues and buffers
  of a destroyed pipe cannot be used.
- ``TPipe.AllocEventID(evt)`` / ``ReleaseEventID(evt, id)`` take and give back an id of ``evt``
  from the same pool the queues use.
- ``GetTPipePtr()`` is the core's current TPipe; ``TPipe.FetchEventID(evt)`` returns the lowest
  id of ``evt`` that no queue holds, without taking it (Ascend C: "does not allocate the
  TEventID, only provides an available one"; it is meant for an immediate SetFlag / WaitFlag).
"""

from __future__ import annotations

from collections import deque

from aicore_sim.ascendc.sync import PIPE_ALL, PipeBarrier, SetFlag, WaitFlag
from aicore_sim.ascendc.tensors import LocalTensor, TPosition
from aicore_sim.sim import program
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import EventIdError, KernelError, OutOfBoundsError
from aicore_sim.sim.isa import HardEvent

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
        self.destroyed = False

    def _bind(self, tensors: list[LocalTensor]) -> None:
        self.slots = [_Slot(t) for t in tensors]

    def _slot_of(self, t: LocalTensor) -> _Slot:
        for s in self.slots:
            if s.tensor.addr == t.addr:
                return s
        raise KernelError(f"TQue '{self.name}': tensor at UB {t.addr} is not one of its buffers")

    def AllocTensor(self, dtype) -> LocalTensor:
        if not self.slots:
            when = "after its TPipe was destroyed" if self.destroyed else "before TPipe.InitBuffer"
            raise KernelError(f"TQue '{self.name}': AllocTensor {when}")
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

    def _release(self) -> None:
        """Its TPipe is destroyed: give back the ids of tensors still queued, drop the
        buffers."""
        for _, eid in self.queued:
            _release_id(self.enq_event, eid)
        self.queued.clear()
        self.slots, self.next_slot, self.destroyed = [], 0, True


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
        self.destroyed = False

    def _release(self) -> None:
        self.tensor, self.destroyed = None, True

    def Get(self, dtype, count: int | None = None) -> LocalTensor:
        if self.tensor is None:
            when = "after its TPipe was destroyed" if self.destroyed else "before TPipe.InitBuffer"
            raise KernelError(f"TBuf '{self.name}': Get {when}")
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
    """The UB owner of one core: hands out buffers, tears its queues down and releases the
    UB when destroyed (at the latest at kernel end)."""

    def __init__(self) -> None:
        rec = program.current()
        self.queues: list[TQueBind] = []
        self.bufs: list[TBuf] = []
        self._destroyed = False
        self._check_alone(rec)
        rec.pipes.append(self)

    def _check_alone(self, rec) -> None:
        """Two live TPipes would hand out the same UB bytes (each allocates from byte 0):
        refused as soon as one of them holds a buffer while the other is alive. A live pipe
        that never allocated (a kernel that declares a pipe and then builds its operator
        class with its own member pipe) conflicts with nothing."""
        if any(p is not self and not p._destroyed and (p.queues or p.bufs)
               for p in rec.pipes):
            raise KernelError("TPipe: a second TPipe while another is alive on this core "
                              "(one at a time: call Destroy on the previous TPipe first)")

    def Init(self) -> None:
        """``TPipe::Init``: make a destroyed pipe usable again (its next buffers start at
        UB byte 0); no-op on a live one."""
        if self._destroyed:
            self._check_alone(program.current())
            self._destroyed = False
            self.queues, self.bufs = [], []

    def InitBuffer(self, obj: TQueBind | TBuf, *args: int) -> None:
        rec = program.current()
        if self._destroyed:
            raise KernelError("InitBuffer on a destroyed TPipe (call Init first)")
        if not (self.queues or self.bufs):
            self._check_alone(rec)
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
            obj.destroyed = False
            self.queues.append(obj)
        elif isinstance(obj, TBuf):
            if len(args) != 1:
                raise KernelError("InitBuffer(tbuf, len): needs len")
            name = obj.name or f"buf{len(rec.ub.allocations)}"
            obj.name = name
            a = rec.ub.alloc(name, int(args[0]))
            obj.tensor = LocalTensor("int32", a.name, a.addr, a.end)
            obj.destroyed = False
            self.bufs.append(obj)
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

    def AllocEventID(self, evt: HardEvent) -> int:
        """``TPipe::AllocEventID<evt>()``: take the lowest free id of ``evt``."""
        if not isinstance(evt, HardEvent):
            raise EventIdError(f"AllocEventID: expected a HardEvent, got {evt!r}")
        return _take_lowest_id(evt)

    def ReleaseEventID(self, evt: HardEvent, eventId: int) -> None:
        """``TPipe::ReleaseEventID<evt>(id)``: give an id taken by AllocEventID back."""
        if not isinstance(evt, HardEvent):
            raise EventIdError(f"ReleaseEventID: expected a HardEvent, got {evt!r}")
        used = program.current().event_ids.setdefault(evt, set())
        if int(eventId) not in used:
            raise EventIdError(f"ReleaseEventID: id {eventId} of HardEvent {evt.name} is not "
                               "taken")
        used.discard(int(eventId))

    def Destroy(self) -> None:
        """Wait pending free events, a full barrier, then release the pipe's queues, buffers
        and UB (the next TPipe allocates from UB byte 0)."""
        if self._destroyed:
            return
        self._destroyed = True
        for q in self.queues:
            q._drain()
        PipeBarrier(PIPE_ALL)
        for q in self.queues:
            q._release()
        for b in self.bufs:
            b._release()
        program.current().ub.rewind()


def GetTPipePtr() -> TPipe:
    """``GetTPipePtr()``: the TPipe the running core's kernel created last."""
    pipes = program.current().pipes
    if not pipes:
        raise KernelError("GetTPipePtr: no TPipe has been created on this core")
    return pipes[-1]
