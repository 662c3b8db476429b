"""SetFlag / WaitFlag / PipeBarrier: explicit inter-pipe synchronisation of one core.

``SetFlag<SRC_DST>(id)`` is a queue entry of the source pipe, ``WaitFlag<SRC_DST>(id)`` one of
the destination pipe; ``PipeBarrier<PIPE_V>`` drains the vector pipe and
``PipeBarrier<PIPE_ALL>`` stops the scalar issuer until every pipe has drained.
"""

from __future__ import annotations

from aicore_sim import program
from aicore_sim.errors import EventIdError
from aicore_sim.isa import HardEvent, Instr, Opcode, Pipe

EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3 = 0, 1, 2, 3
EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 = 4, 5, 6, 7
EVENT_IDS = range(8)

PIPE_S = Pipe.SCALAR
PIPE_V = Pipe.VECTOR
PIPE_MTE2 = Pipe.MTE2
PIPE_MTE3 = Pipe.MTE3
PIPE_ALL = None  # the scalar issuer waits for every pipe


def _check_id(event: HardEvent, eventId: int) -> int:
    if not isinstance(event, HardEvent):
        raise EventIdError(f"expected a HardEvent, got {event!r}")
    if int(eventId) not in EVENT_IDS:
        raise EventIdError(f"HardEvent {event.name}: event id {eventId} is outside 0..7")
    return int(eventId)


_SYNC_INSTRS: dict[tuple, Instr] = {}
"""One Instr per distinct sync call (they repeat millions of times; built once, checked once)."""


def _sync_instr(op: Opcode, event: HardEvent, eventId: int, implicit: bool) -> Instr:
    key = (op, event, eventId, implicit)
    ins = _SYNC_INSTRS.get(key)
    if ins is None:
        eid = _check_id(event, eventId)
        pipe = event.src if op is Opcode.SET_FLAG else event.dst
        ins = _SYNC_INSTRS[key] = Instr(pipe, op, event=event, event_id=eid, implicit=implicit)
    return ins


def SetFlag(event: HardEvent, eventId: int, *, implicit: bool = False) -> None:
    """``SetFlag<event>(eventId)``: fires once every earlier source-pipe instruction is done."""
    # an implicit flag comes from a TQue method: the kernel line is one frame further up
    program.current().emit(_sync_instr(Opcode.SET_FLAG, event, eventId, implicit),
                           3 if implicit else 2, True)


def WaitFlag(event: HardEvent, eventId: int, *, implicit: bool = False) -> None:
    """``WaitFlag<event>(eventId)``: blocks the destination pipe until the flag is set."""
    program.current().emit(_sync_instr(Opcode.WAIT_FLAG, event, eventId, implicit),
                           3 if implicit else 2, True)


_BARRIERS = {None: Instr(Pipe.SCALAR, Opcode.BARRIER, barrier=None),
             **{p: Instr(p, Opcode.BARRIER, barrier=p) for p in Pipe}}


def PipeBarrier(pipe: Pipe | None) -> None:
    """``PipeBarrier<pipe>``: later ``pipe`` instructions wait for all earlier ones."""
    program.current().emit(_BARRIERS[pipe], 2, True)


def GetBlockIdx() -> int:
    """Index of the AIV core running this copy of the kernel."""
    return program.current().core


def GetBlockNum() -> int:
    """Number of AIV cores the kernel was launched on."""
    return program.current().block_num


__all__ = [
    "EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5", "EVENT_ID6",
    "EVENT_ID7", "PIPE_ALL", "PIPE_MTE2", "PIPE_MTE3", "PIPE_S", "PIPE_V", "GetBlockIdx",
    "GetBlockNum", "HardEvent", "PipeBarrier", "SetFlag", "WaitFlag",
]
