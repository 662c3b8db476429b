"""SetFlag / WaitFlag / PipeBarrier: explicit inter-pipe synchronisation of one core, and
SyncAll across the cores of a launch.

``SetFlag<SRC_DST>(id)`` is a queue entry of the source pipe, ``WaitFlag<SRC_DST>(id)`` one of
the destination pipe; ``PipeBarrier<PIPE_V>`` drains the vector pipe and
``PipeBarrier<PIPE_ALL>`` stops the scalar issuer until every pipe has drained.
``SyncAll()`` is ``PipeBarrier<PIPE_ALL>`` then a wait until every core of the launch has
arrived: GM written by any core before it is seen by every core after it.
"""

from __future__ import annotations

from aicore_sim.sim import program
from aicore_sim.sim.errors import EventIdError, KernelError
from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Pipe

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


_SYNC_ALL = Instr(Pipe.SCALAR, Opcode.SYNC_ALL)


def SyncAll(gmWorkspace=None, ubWorkspace=None, usedCores: int = 0, *,
            isAIVOnly: bool = True) -> None:
    """``SyncAll<isAIVOnly>()`` (hard form) or ``SyncAll(gmWorkspace, ubWorkspace, usedCores)``
    (soft form): drain this core's pipes, then wait until every core of the launch has
    arrived at its same-numbered SyncAll.

    The soft form's workspaces are checked as Ascend C requires (``int32``, at least 32 bytes
    per core each) and priced like the hard form; only all-core syncs are modelled
    (``usedCores`` 0 or the launch's core count). ``isAIVOnly=False`` (vector and cube cores
    together) is not modelled: this simulator has no cube cores."""
    rec = program.current()
    if not isAIVOnly:
        raise KernelError("SyncAll<false> (AIV and AIC cores together) is not modelled: only "
                          "vector cores are simulated")
    if (gmWorkspace is None) != (ubWorkspace is None):
        raise KernelError("SyncAll: the soft form takes both gmWorkspace and ubWorkspace")
    if gmWorkspace is not None:
        need = 32 * rec.block_num
        for what, t, size in (("gmWorkspace", gmWorkspace, _gm_bytes(gmWorkspace)),
                              ("ubWorkspace", ubWorkspace, _ub_bytes(ubWorkspace))):
            if str(t.dtype) != "int32":
                raise KernelError(f"SyncAll: {what} must be int32, not {t.dtype}")
            if size is not None and size < need:
                raise KernelError(f"SyncAll: {what} holds {size} bytes; {rec.block_num} cores "
                                  f"need at least {need} (32 per core)")
        if int(usedCores) not in (0, rec.block_num):
            raise KernelError(f"SyncAll: usedCores {usedCores} of {rec.block_num} cores is not "
                              "modelled (only 0 = every core)")
    hook = rec.sync_hook
    if hook is None:
        raise KernelError("SyncAll: no record pass of the launch's cores is running")
    rec.emit(_BARRIERS[None], 2, True)
    rec.emit(_SYNC_ALL, 2, True)
    hook()


def _gm_bytes(t) -> int | None:
    """Bytes a GlobalTensor was bound with (None when bound without a size)."""
    return None if t.size < 0 else int(t.size) * t.dtype.itemsize


def _ub_bytes(t) -> int:
    return int(t.limit) - int(t.addr)


def GetBlockIdx() -> int:
    """Index of the AIV core running this copy of the kernel."""
    return program.current().core


def GetBlockNum() -> int:
    """Number of AIV cores the kernel was launched on."""
    return program.current().block_num


__all__ = [
    "EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5", "EVENT_ID6",
    "EVENT_ID7", "PIPE_ALL", "PIPE_MTE2", "PIPE_MTE3", "PIPE_S", "PIPE_V", "GetBlockIdx",
    "GetBlockNum", "HardEvent", "PipeBarrier", "SetFlag", "SyncAll", "WaitFlag",
]
