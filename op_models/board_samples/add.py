"""Kernel port of the ``add_high_performance`` sample: ``KernelAdd`` and ``add_custom``.

``z = x + y`` on two half matrices ``[totalM, totalN]`` (8192 x 8192 on the board), rows split
evenly over ``splitM`` AIV cores (the first ``totalM % splitM`` cores one row more), each core's
rows walked in chunks of ``dataCopyLen`` elements through buffers placed at fixed UB addresses.
Cases 0-6 of the sample are the steps of its tuning story: 0 adds on the scalar unit
(``GetValue`` / ``SetValue`` per element) on one core; 1 uses the vector ``Add`` on one core;
2 splits over every core; 3 copies bigger chunks; 4 double-buffers (ping / pong buffers and
event ids 0 / 1); 5 also turns L2 caching off for the inputs; 6 moves the buffers so the three
operands of the Add fall in different UB banks (chunks of ``BANK_CONFLICT_DATA_COPY_LEN``).

Provenance
----------
Upstream:
``examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance/add.asc``
(the asc-devkit commit and how the ports follow it: :mod:`op_models.board_samples`).

Deviations from upstream
------------------------
1. The template parameters ``<totalM, totalN, splitM, splitN, dataCopyLen>`` are constructor
   arguments, and so are the compile-time choices ``SCENARIO`` and ``__NPU_ARCH__`` (``2201``
   A2/A3, ``3510`` 950: ``MAX_DATA_COPY_LEN`` / ``BANK_CONFLICT_DATA_COPY_LEN``);
   ``static_assert(splitN == 1)`` is a ``KernelError``.
2. ``__gm__ uint8_t*`` arguments are ``GM_ADDR``; ``(__gm__ half*)x + k`` is ``x + 2 * k``
   bytes.
3. The ``LocalTensor<half>&`` references chosen per iteration in the double-buffer loops are
   plain Python names bound to the ping or the pong tensor.
4. ``ProcessScalar``: ``(float)`` and ``(half)`` are numpy float32 / float16 conversions (the
   sum rounds once, fp32 -> fp16, nearest even).
5. The host ``main`` is not ported, except its case table: :func:`cfg` gives ``splitM``,
   ``splitN`` and ``dataCopyLen`` of a case for an arch; the launch itself is the suite's
   ``Scenario.build`` (``op_models/board_samples/suite.py``), which may launch fewer rows
   (``totalM``) than the board's 8192 to keep a case short.
6. Upstream writes the chunk loop out once per case; here cases 0-3 share one single-buffer
   loop (``_ProcessOneBuffer``, the add step - vector ``Add`` or scalar - an argument) and
   cases 4-6 one ping / pong loop (``_ProcessPingPong``, the six UB addresses arguments). The
   statements of each loop, their order and every SetFlag / WaitFlag are upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aicore_sim import KernelError
from aicore_sim.ascendc import (
    EVENT_ID0,
    EVENT_ID1,
    GM_ADDR,
    PIPE_ALL,
    Add,
    CacheMode,
    DataCopy,
    DivCeil,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    InitSocState,
    LocalTensor,
    PipeBarrier,
    SetFlag,
    TPosition,
    WaitFlag,
    half,
)

SIZEOF_HALF = 2
# __NPU_ARCH__ -> (MAX_DATA_COPY_LEN, BANK_CONFLICT_DATA_COPY_LEN)
_ARCH_LENS = {2201: (16384, 16256), 3510: (21840, 21632)}


class KernelAdd:
    """``KernelAdd<totalM, totalN, splitM, splitN, dataCopyLen>``."""

    def __init__(self, totalM: int, totalN: int, splitM: int, splitN: int, dataCopyLen: int,
                 NPU_ARCH: int = 2201) -> None:
        self.totalM, self.totalN = int(totalM), int(totalN)
        self.splitM, self.splitN, self.dataCopyLen = int(splitM), int(splitN), int(dataCopyLen)
        self.MAX_DATA_COPY_LEN, self.BANK_CONFLICT_DATA_COPY_LEN = _ARCH_LENS[int(NPU_ARCH)]
        MAX, BC = self.MAX_DATA_COPY_LEN, self.BANK_CONFLICT_DATA_COPY_LEN
        # single buffers: x, y, z one after the other
        self.xAddr = 0
        self.yAddr = MAX * SIZEOF_HALF
        self.zAddr = self.yAddr + MAX * SIZEOF_HALF
        # ping / pong: six buffers one after the other
        self.xAddrPing = 0
        self.yAddrPing = MAX * SIZEOF_HALF
        self.zAddrPing = self.yAddrPing + MAX * SIZEOF_HALF
        self.xAddrPong = self.zAddrPing + MAX * SIZEOF_HALF
        self.yAddrPong = self.xAddrPong + MAX * SIZEOF_HALF
        self.zAddrPong = self.yAddrPong + MAX * SIZEOF_HALF
        # ping / pong moved apart so x, y and z of one Add start in different banks
        self.xAddrPingBC = 0
        self.yAddrPingBC = BC * SIZEOF_HALF
        self.xAddrPongBC = MAX * SIZEOF_HALF * 2
        self.yAddrPongBC = self.xAddrPongBC + BC * SIZEOF_HALF
        self.zAddrPingBC = MAX * SIZEOF_HALF * 4
        self.zAddrPongBC = self.zAddrPingBC + BC * SIZEOF_HALF
        self.xGm = GlobalTensor(half)
        self.yGm = GlobalTensor(half)
        self.zGm = GlobalTensor(half)
        self.singleCoreM = 0
        self.singleCoreN = 0
        self.totalElementsPerCore = 0

    def Init(self, x: GM_ADDR, y: GM_ADDR, z: GM_ADDR) -> None:
        """This core's rows (the first ``totalM % splitM`` cores take one more) and its GM
        windows."""
        if self.splitN != 1:
            raise KernelError("This optimized sample expects splitN == 1 for contiguous "
                              "row-wise DataCopy.")
        totalM, totalN, splitM = self.totalM, self.totalN, self.splitM
        blockIdx = GetBlockIdx()
        blockIdxM = blockIdx
        baseCoreM = totalM // splitM
        remainderM = totalM % splitM
        if blockIdxM < remainderM:
            actualCoreM = baseCoreM + 1
            startM = blockIdxM * actualCoreM
        else:
            actualCoreM = baseCoreM
            startM = remainderM * (baseCoreM + 1) + (blockIdxM - remainderM) * baseCoreM
        self.singleCoreM = actualCoreM
        self.singleCoreN = totalN
        self.totalElementsPerCore = self.singleCoreM * self.singleCoreN
        offset = startM * totalN * SIZEOF_HALF
        self.xGm.SetGlobalBuffer(x + offset, self.totalElementsPerCore)
        self.yGm.SetGlobalBuffer(y + offset, self.totalElementsPerCore)
        self.zGm.SetGlobalBuffer(z + offset, self.totalElementsPerCore)

    def Process(self) -> None:
        """Cases 2 and 3: one set of buffers, copy in, add, copy out, chunk after chunk."""
        self._ProcessOneBuffer(self._VectorAdd)

    def ProcessScalar(self) -> None:
        """Case 0: as ``Process``, the add done element by element on the scalar unit."""
        self._ProcessOneBuffer(self._ScalarAdd)

    def ProcessSingle(self) -> None:
        """Case 1: the vector ``Add`` on one core (the same loop as ``Process``)."""
        self._ProcessOneBuffer(self._VectorAdd)

    @staticmethod
    def _VectorAdd(zLocal: LocalTensor, xLocal: LocalTensor, yLocal: LocalTensor,
                   curLen: int) -> None:
        Add(zLocal, xLocal, yLocal, curLen)

    @staticmethod
    def _ScalarAdd(zLocal: LocalTensor, xLocal: LocalTensor, yLocal: LocalTensor,
                   curLen: int) -> None:
        for i in range(curLen):
            xVal = np.float32(xLocal.GetValue(i))
            yVal = np.float32(yLocal.GetValue(i))
            zLocal.SetValue(i, np.float16(xVal + yVal))

    def _ProcessOneBuffer(self, addStep) -> None:
        """The loop of cases 0-3 (deviation 6): ``addStep(z, x, y, curLen)`` between the copies
        in and the copy out, event id 0 throughout."""
        MAX, dataCopyLen = self.MAX_DATA_COPY_LEN, self.dataCopyLen
        # VECCALC is UB on this hardware
        xLocal = LocalTensor(half, TPosition.VECCALC, self.xAddr, MAX)
        yLocal = LocalTensor(half, TPosition.VECCALC, self.yAddr, MAX)
        zLocal = LocalTensor(half, TPosition.VECCALC, self.zAddr, MAX)

        totalLoop = self.GetTotalBlocks()

        for loopIdx in range(totalLoop):
            startElement = loopIdx * dataCopyLen
            remainElements = self.totalElementsPerCore - startElement
            curLen = dataCopyLen if remainElements > dataCopyLen else remainElements

            if loopIdx != 0:
                WaitFlag(HardEvent.V_MTE2, EVENT_ID0)

            DataCopy(xLocal, self.xGm[startElement], curLen)
            DataCopy(yLocal, self.yGm[startElement], curLen)
            SetFlag(HardEvent.MTE2_V, EVENT_ID0)
            WaitFlag(HardEvent.MTE2_V, EVENT_ID0)

            if loopIdx != 0:
                WaitFlag(HardEvent.MTE3_V, EVENT_ID0)

            addStep(zLocal, xLocal, yLocal, curLen)

            if loopIdx != (totalLoop - 1):
                SetFlag(HardEvent.V_MTE2, EVENT_ID0)
            SetFlag(HardEvent.V_MTE3, EVENT_ID0)
            WaitFlag(HardEvent.V_MTE3, EVENT_ID0)

            DataCopy(self.zGm[startElement], zLocal, curLen)
            if loopIdx != (totalLoop - 1):
                SetFlag(HardEvent.MTE3_V, EVENT_ID0)

    def ProcessDoubleBuffer(self) -> None:
        """Case 4: ping / pong buffers and event ids 0 / 1, so chunk k + 1 is copied in while
        chunk k is added and copied out."""
        self._ProcessPingPong(self.xAddrPing, self.yAddrPing, self.zAddrPing,
                              self.xAddrPong, self.yAddrPong, self.zAddrPong)

    def ProcessDoubleBufferL2Bypass(self) -> None:
        """Case 5: case 4 with the inputs read past L2."""
        self.xGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        self.yGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        self.ProcessDoubleBuffer()

    def ProcessDoubleBufferBankConflict(self) -> None:
        """Case 6: case 5 with the buffers placed so x, y and z start in different banks."""
        self.xGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        self.yGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        self._ProcessPingPong(self.xAddrPingBC, self.yAddrPingBC, self.zAddrPingBC,
                              self.xAddrPongBC, self.yAddrPongBC, self.zAddrPongBC)

    def _ProcessPingPong(self, xAddrPing: int, yAddrPing: int, zAddrPing: int,
                         xAddrPong: int, yAddrPong: int, zAddrPong: int) -> None:
        """The loop of cases 4-6 (deviation 6) on ping / pong buffers at the given UB
        addresses."""
        MAX, dataCopyLen = self.MAX_DATA_COPY_LEN, self.dataCopyLen
        # VECCALC is UB on this hardware
        xPing = LocalTensor(half, TPosition.VECCALC, xAddrPing, MAX)
        yPing = LocalTensor(half, TPosition.VECCALC, yAddrPing, MAX)
        zPing = LocalTensor(half, TPosition.VECCALC, zAddrPing, MAX)
        xPong = LocalTensor(half, TPosition.VECCALC, xAddrPong, MAX)
        yPong = LocalTensor(half, TPosition.VECCALC, yAddrPong, MAX)
        zPong = LocalTensor(half, TPosition.VECCALC, zAddrPong, MAX)

        totalBlocks = self.GetTotalBlocks()

        SetFlag(HardEvent.V_MTE2, EVENT_ID0)
        SetFlag(HardEvent.V_MTE2, EVENT_ID1)
        SetFlag(HardEvent.MTE3_V, EVENT_ID0)
        SetFlag(HardEvent.MTE3_V, EVENT_ID1)

        for loopIdx in range(totalBlocks):
            startElement = loopIdx * dataCopyLen
            remainElements = self.totalElementsPerCore - startElement
            curLen = dataCopyLen if remainElements > dataCopyLen else remainElements

            ping = (loopIdx & 1) == 0
            eventID = EVENT_ID0 if ping else EVENT_ID1
            xLocal = xPing if ping else xPong
            yLocal = yPing if ping else yPong
            zLocal = zPing if ping else zPong

            WaitFlag(HardEvent.V_MTE2, eventID)

            DataCopy(xLocal, self.xGm[startElement], curLen)
            DataCopy(yLocal, self.yGm[startElement], curLen)

            SetFlag(HardEvent.MTE2_V, eventID)
            WaitFlag(HardEvent.MTE2_V, eventID)

            WaitFlag(HardEvent.MTE3_V, eventID)

            Add(zLocal, xLocal, yLocal, curLen)

            SetFlag(HardEvent.V_MTE2, eventID)

            SetFlag(HardEvent.V_MTE3, eventID)
            WaitFlag(HardEvent.V_MTE3, eventID)

            DataCopy(self.zGm[startElement], zLocal, curLen)

            SetFlag(HardEvent.MTE3_V, eventID)

        WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID1)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID1)

    def GetTotalBlocks(self) -> int:
        return DivCeil(self.totalElementsPerCore, self.dataCopyLen)


def add_custom(x: GM_ADDR, y: GM_ADDR, z: GM_ADDR, totalM: int, totalN: int, splitM: int,
               splitN: int, dataCopyLen: int, SCENARIO: int = 6, NPU_ARCH: int = 2201) -> None:
    """The ``__vector__ __global__`` kernel: run this core's share of case ``SCENARIO``."""
    InitSocState()
    op = KernelAdd(totalM, totalN, splitM, splitN, dataCopyLen, NPU_ARCH)
    op.Init(x, y, z)
    if SCENARIO == 0:
        op.ProcessScalar()
    elif SCENARIO == 1:
        op.ProcessSingle()
    elif SCENARIO == 4:
        op.ProcessDoubleBuffer()
    elif SCENARIO == 5:
        op.ProcessDoubleBufferL2Bypass()
    elif SCENARIO == 6:
        op.ProcessDoubleBufferBankConflict()
    else:
        op.Process()
    PipeBarrier(PIPE_ALL)


@dataclass(frozen=True)
class CaseConfig:
    """The host's ``CaseConfig``: cores along M and N, and elements per chunk."""

    splitM: int
    splitN: int
    dataCopyLen: int


def cfg(SCENARIO: int, NPU_ARCH: int = 2201) -> CaseConfig:
    """The host's case table: ``CaseConfig`` of case ``SCENARIO`` compiled for ``NPU_ARCH``."""
    baseDataCopyLen = 4096
    if NPU_ARCH == 2201:
        largeDataCopyLen, bankConflictDataCopyLen, multiCoreSplitM = 16384, 16256, 48
    elif NPU_ARCH == 3510:
        largeDataCopyLen, bankConflictDataCopyLen, multiCoreSplitM = 21760, 21632, 64
    else:
        raise KernelError(f"NPU_ARCH {NPU_ARCH}: the sample configures 2201 and 3510 only")
    if SCENARIO in (0, 1):
        return CaseConfig(1, 1, baseDataCopyLen)
    if SCENARIO == 2:
        return CaseConfig(multiCoreSplitM, 1, baseDataCopyLen)
    if SCENARIO in (3, 4, 5):
        return CaseConfig(multiCoreSplitM, 1, largeDataCopyLen)
    if SCENARIO == 6:
        return CaseConfig(multiCoreSplitM, 1, bankConflictDataCopyLen)
    return CaseConfig(1, 1, baseDataCopyLen)


__all__ = ["CaseConfig", "KernelAdd", "add_custom", "cfg"]
