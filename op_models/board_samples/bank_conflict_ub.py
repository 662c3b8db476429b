"""Kernel port of the ``bank_conflict_ub`` sample: ``KernelAdd`` and ``add_custom``, with the
scenario addresses of its ``config.h``.

One AIV core copies two fp32 vectors of ``TOTAL_LENGTH`` = 4096 elements into UB at the
scenario's fixed addresses and issues the same mask + repeat ``Add`` (64 lanes x 64 repeats)
1000 times; the board figure is the system-counter span of those 1000 Adds. The eight
scenarios place x, y and z so that the two sources share a bank or a bank group (read-read
conflicts), a source and the destination share a bank (read-write), or a source and the
destination are the same bytes; scenarios 7 and 8 also make src0 read one block eight times
per repeat (src0 block stride 0), repeats one or eight blocks apart.

Provenance
----------
Upstream:
``examples/01_simd_cpp_api/05_best_practices/04_memory_access/bank_conflict_ub/bank_conflict_ub.asc``
and ``.../bank_conflict_ub/config.h`` (the asc-devkit commit and how the ports follow it:
:mod:`op_models.board_samples`).

Deviations from upstream
------------------------
1. ``SCENARIO_NUM`` is an argument of ``KernelAdd`` / ``add_custom``; ``config.h``'s
   ``#if SCENARIO_NUM == k`` address blocks are the table :data:`LOCAL_ADDRS`.
2. ``GetSystemCycle()`` before and after the loop and the ``printf`` report are left out (they
   record no pipe work here; the ticks the board printed are compared with the VECTOR busy time
   of the launch converted to system-counter ticks, ``platform.system_counter_mhz``). The two
   ``PipeBarrier<PIPE_ALL>`` around the loop are kept.
3. The initializer lists ``{1, 0, 1, 8, 1, 8}`` are ``BinaryRepeatParams(1, 0, 1, 8, 1, 8)``.
4. The host ``main`` / ``KernelCall`` (one core, 4096 floats) is the suite's ``Scenario.build``
   (``op_models/board_samples/suite.py``).
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    EVENT_ID0,
    GM_ADDR,
    PIPE_ALL,
    Add,
    BinaryRepeatParams,
    DataCopy,
    GlobalTensor,
    HardEvent,
    InitSocState,
    LocalTensor,
    PipeBarrier,
    SetFlag,
    TPosition,
    WaitFlag,
    float32,
)

TOTAL_LENGTH = 4096
REPEAT_TIMES_FOR_INSTR_EXCUTE = 1000
SIZEOF_FLOAT = 4

# config.h: SCENARIO_NUM -> (xLocalAddr, yLocalAddr, zLocalAddr), UB byte addresses
LOCAL_ADDRS: dict[int, tuple[int, int, int]] = {
    1: (0x0000, 0x10100, 0x20000),
    2: (0x0000, 0x4000, 0x10000),
    3: (0x0000, 0x10000, 0x14100),
    4: (0x0000, 0x10100, 0x4000),
    5: (0x0000, 0x10100, 0x4020),
    6: (0x0000, 0x10100, 0x10100),
    7: (0x0000, 0x10100, 0x10100),
    8: (0x0000, 0x10100, 0x10100),
}


class KernelAdd:
    """``KernelAdd`` of ``bank_conflict_ub.asc`` (scenario ``SCENARIO_NUM``)."""

    def __init__(self, SCENARIO_NUM: int) -> None:
        self.SCENARIO_NUM = int(SCENARIO_NUM)
        self.xLocalAddr, self.yLocalAddr, self.zLocalAddr = LOCAL_ADDRS[self.SCENARIO_NUM]
        self.xGm = GlobalTensor(float32)
        self.yGm = GlobalTensor(float32)
        self.zGm = GlobalTensor(float32)

    def Init(self, x: GM_ADDR, y: GM_ADDR, z: GM_ADDR) -> None:
        self.xGm.SetGlobalBuffer(x, TOTAL_LENGTH)
        self.yGm.SetGlobalBuffer(y, TOTAL_LENGTH)
        self.zGm.SetGlobalBuffer(z, TOTAL_LENGTH)

    def Process(self) -> None:
        xLocal = LocalTensor(float32, TPosition.VECCALC, self.xLocalAddr, TOTAL_LENGTH)
        yLocal = LocalTensor(float32, TPosition.VECCALC, self.yLocalAddr, TOTAL_LENGTH)
        zLocal = LocalTensor(float32, TPosition.VECCALC, self.zLocalAddr, TOTAL_LENGTH)

        DataCopy(xLocal, self.xGm, TOTAL_LENGTH)
        DataCopy(yLocal, self.yGm, TOTAL_LENGTH)

        SetFlag(HardEvent.MTE2_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE2_V, EVENT_ID0)

        itemsPerIter = 256 // SIZEOF_FLOAT  # lanes of one repeat
        repeatTimes = TOTAL_LENGTH // itemsPerIter  # repeats to cover the vector
        mask = itemsPerIter  # every lane of each repeat

        PipeBarrier(PIPE_ALL)

        for _i in range(REPEAT_TIMES_FOR_INSTR_EXCUTE):
            if self.SCENARIO_NUM == 7:
                # src0: one block read eight times per repeat, repeats one block apart
                Add(zLocal, xLocal, yLocal, mask, repeatTimes,
                    BinaryRepeatParams(1, 0, 1, 8, 1, 8))
            elif self.SCENARIO_NUM == 8:
                # src0: one block read eight times per repeat, repeats eight blocks apart
                Add(zLocal, xLocal, yLocal, mask, repeatTimes,
                    BinaryRepeatParams(1, 0, 1, 8, 8, 8))
            else:
                # contiguous: block strides 1, repeat strides 8 for dst, src0, src1
                Add(zLocal, xLocal, yLocal, mask, repeatTimes,
                    BinaryRepeatParams(1, 1, 1, 8, 8, 8))
        PipeBarrier(PIPE_ALL)

        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)

        DataCopy(self.zGm, zLocal, TOTAL_LENGTH)


def add_custom(x: GM_ADDR, y: GM_ADDR, z: GM_ADDR, SCENARIO_NUM: int = 1) -> None:
    """The ``__global__ __vector__`` kernel (one core in the sample)."""
    InitSocState()
    op = KernelAdd(SCENARIO_NUM)
    op.Init(x, y, z)
    op.Process()
    PipeBarrier(PIPE_ALL)


__all__ = ["LOCAL_ADDRS", "REPEAT_TIMES_FOR_INSTR_EXCUTE", "TOTAL_LENGTH", "KernelAdd",
           "add_custom"]
