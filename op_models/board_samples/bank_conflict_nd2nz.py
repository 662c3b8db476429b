"""Kernel port of the ``bank_conflict_nd2nz`` sample: ``KernelNd2Nz`` and the
``bank_conflict_nd2nz`` kernel (the Atlas A2/A3 path; the 950 one with deviation 2).

A half matrix ``[totalM, totalN]`` in ND (row-major) layout is rewritten in the compact NZ
layout: the columns in C0 blocks of 16 halves (one 32-byte DataBlock), each C0 column of
``totalM`` rows stored whole before the next. Each AIV core takes a ``rowSplits x colSplits``
region of ``tileH x tileW`` tiles and, ping / pong, reads a tile into UB (``DataCopy``, one row
of ``tileW`` halves per block), scatters its rows' C0 blocks into ``tileW / 16`` C0 columns with
one block-strided ``Copy`` per 128 halves (destination block stride ``dstNzC0Stride``), and
writes the C0 columns to GM (``DataCopy``, one C0 column per block). Scenario 1 packs the C0
columns ``tileH`` blocks apart (a multiple of the 16 bank groups: each repeat's 8 written
blocks land in one bank group); scenario 2 leaves one spare block between them
(``tileH + 1``: the 8 blocks land in 8 groups).

Provenance
----------
Upstream:
``examples/01_simd_cpp_api/05_best_practices/04_memory_access/bank_conflict_nd2nz/bank_conflict_nd2nz.asc``
and ``.../bank_conflict_nd2nz_3510.h`` (the asc-devkit commit and how the ports follow it:
:mod:`op_models.board_samples`).

Deviations from upstream
------------------------
1. The template parameters ``<totalM, totalN, tileH, tileW, vecLenHalf, rowSplits, colSplits>``,
   ``SCENARIO`` and ``__NPU_ARCH__`` (``npuArch``) are constructor arguments;
   ``static_assert`` becomes a ``KernelError``.
2. The 3510 path (``bank_conflict_nd2nz_3510.h``, ``RegLoadStoreVF``) is written with the
   register API in a ``__simd_vf__`` function, which the simulator does not model. It is ported
   as the 2201 path's block-strided ``Copy``: per row of 128 halves, ``Reg::LoadAlign`` of the
   row's 8 contiguous blocks and ``Reg::StoreAlign<DATA_BLOCK_COPY>`` of them
   ``dstNzC0Stride`` blocks apart are the same data movement as one ``Copy`` repeat (source
   repeat stride 8 blocks, destination block stride ``dstNzC0Stride``, repeat stride 1 block);
   the VF family prices each register's load and store (``vld`` / ``vst``) with their bank
   beats. The 3510 buffer layout (scenario 2's nzBuf from bank 8, the extra pad before nzPong)
   is kept.
3. The host ``main`` (2201: 48 blocks = 6 row splits x 8 column splits; 3510: 64 = 8 x 8) is the
   suite's ``Scenario.build`` (``op_models/board_samples/suite.py``).
"""

from __future__ import annotations

from aicore_sim import KernelError
from aicore_sim.ascendc import (
    EVENT_ID0,
    EVENT_ID1,
    GM_ADDR,
    PIPE_ALL,
    Copy,
    CopyRepeatParams,
    DataCopy,
    DataCopyParams,
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

C0_ELEMS = 16  # halves in one C0 block = one 32-byte DataBlock
SIZEOF_HALF = 2


class KernelNd2Nz:
    """``KernelNd2Nz<totalM, totalN, tileH, tileW, vecLenHalf, rowSplits, colSplits>`` of
    scenario ``SCENARIO`` (1: C0 columns ``tileH`` blocks apart in UB; 2: ``tileH + 1``)."""

    def __init__(self, totalM: int, totalN: int, tileH: int, tileW: int, vecLenHalf: int,
                 rowSplits: int, colSplits: int, SCENARIO: int, npuArch: int = 2201) -> None:
        self.totalM, self.totalN, self.tileH, self.tileW = totalM, totalN, tileH, tileW
        self.vecLenHalf, self.rowSplits, self.colSplits = vecLenHalf, rowSplits, colSplits
        if tileW % C0_ELEMS or tileW % vecLenHalf or totalN % tileW:
            raise KernelError(f"KernelNd2Nz: tileW {tileW} must be a multiple of {C0_ELEMS} "
                              f"and of vecLenHalf {vecLenHalf}, and divide totalN {totalN}")
        self.tileC0Cols = tileW // C0_ELEMS
        self.totalRowTiles = -(-totalM // tileH)
        self.totalColTiles = totalN // tileW
        if self.totalColTiles % colSplits:
            raise KernelError(f"KernelNd2Nz: {self.totalColTiles} column tiles do not split "
                              f"into {colSplits}")
        self.tileColsPerSplit = self.totalColTiles // colSplits
        self.totalBlocks = rowSplits * colSplits
        self.dstNzC0Stride = tileH if SCENARIO == 1 else tileH + 1
        self.ndBufElems = tileH * tileW
        self.vecLenDbs = vecLenHalf // C0_ELEMS
        # the NZ tile's blocks in UB (C0 columns dstNzC0Stride apart), one spare in scenario 2
        self.nzTileDataDbs = (tileH - 1) + (self.tileC0Cols - 1) * self.dstNzC0Stride + 1
        self.nzBufPaddingDbs = 1 if SCENARIO == 2 else 0
        self.nzBufElems = (self.nzTileDataDbs + self.nzBufPaddingDbs) * C0_ELEMS
        self.ndBufBytes = self.ndBufElems * SIZEOF_HALF
        self.nzBufBytes = self.nzBufElems * SIZEOF_HALF
        # 3510, scenario 2: nzBuf starts at bank 8 (8 blocks past the ND buffers) so a beat's
        # loads (banks 0-7) and stores (banks 8-15) meet in no bank, and nzPong gets the same
        # 8-block pad; otherwise the NZ buffers follow the two ND buffers directly
        kBank8ShiftBytes = 8 * C0_ELEMS * SIZEOF_HALF
        if npuArch == 3510 and SCENARIO == 2:
            self.nzBufBaseOffset = 2 * self.ndBufBytes + kBank8ShiftBytes
            self.nzPongExtraPadBytes = kBank8ShiftBytes
        else:
            self.nzBufBaseOffset = 2 * self.ndBufBytes
            self.nzPongExtraPadBytes = 0
        self.xGm = GlobalTensor(half)
        self.zGm = GlobalTensor(half)

    def Init(self, x: GM_ADDR, z: GM_ADDR) -> None:
        self.xGm.SetGlobalBuffer(x, self.totalM * self.totalN)
        self.zGm.SetGlobalBuffer(z, self.totalM * self.totalN)

    def Process(self) -> None:
        # UB: [ndPing | ndPong | nzPing | nzPong]
        ndPing = LocalTensor(half, TPosition.VECIN, 0, self.ndBufElems)
        ndPong = LocalTensor(half, TPosition.VECIN, self.ndBufBytes, self.ndBufElems)
        nzPing = LocalTensor(half, TPosition.VECOUT, self.nzBufBaseOffset, self.nzBufElems)
        nzPong = LocalTensor(half, TPosition.VECOUT, self.nzBufBaseOffset + self.nzBufBytes
                             + self.nzPongExtraPadBytes, self.nzBufElems)

        blockIdx = GetBlockIdx()
        if blockIdx >= self.totalBlocks:
            return

        # this core's region: a run of row tiles (the first extraRowTiles splits take one
        # more) by tileColsPerSplit column tiles
        rowSplit = blockIdx // self.colSplits
        colSplit = blockIdx % self.colSplits
        baseRowTiles = self.totalRowTiles // self.rowSplits
        extraRowTiles = self.totalRowTiles % self.rowSplits
        rowTileBegin = rowSplit * baseRowTiles + min(rowSplit, extraRowTiles)
        rowTileCount = baseRowTiles + (1 if rowSplit < extraRowTiles else 0)
        colTileBegin = colSplit * self.tileColsPerSplit
        tilesPerBlock = rowTileCount * self.tileColsPerSplit

        # both buffer sets start free
        SetFlag(HardEvent.V_MTE2, EVENT_ID0)
        SetFlag(HardEvent.V_MTE2, EVENT_ID1)
        SetFlag(HardEvent.MTE3_V, EVENT_ID0)
        SetFlag(HardEvent.MTE3_V, EVENT_ID1)

        for i in range(tilesPerBlock):
            eventID = EVENT_ID0 if i % 2 == 0 else EVENT_ID1
            ndBuf = ndPing if i % 2 == 0 else ndPong
            nzBuf = nzPing if i % 2 == 0 else nzPong
            tileRow = rowTileBegin + i // self.tileColsPerSplit
            tileCol = colTileBegin + i % self.tileColsPerSplit
            tileRowStart = tileRow * self.tileH
            tileColStart = tileCol * self.tileW
            remainRows = self.totalM - tileRowStart
            actualTileH = min(remainRows, self.tileH)  # the last row tile is shorter
            srcOffset = tileRowStart * self.totalN + tileColStart
            dstBlockOffset = tileRowStart + (tileColStart // C0_ELEMS) * self.totalM

            WaitFlag(HardEvent.V_MTE2, eventID)

            # the tile: actualTileH rows of tileW halves, the rest of each GM row skipped
            ndParams = DataCopyParams()
            ndParams.blockCount = actualTileH
            ndParams.blockLen = self.tileW // C0_ELEMS
            ndParams.srcStride = (self.totalN - self.tileW) // C0_ELEMS
            ndParams.dstStride = 0
            DataCopy(ndBuf, self.xGm[srcOffset], ndParams)

            SetFlag(HardEvent.MTE2_V, eventID)
            WaitFlag(HardEvent.MTE2_V, eventID)
            WaitFlag(HardEvent.MTE3_V, eventID)

            # 2201: ComputeTileNd2nzWithCopy; 3510: the same movement (deviation 2)
            self.ComputeTileNd2nzWithCopy(ndBuf, nzBuf, actualTileH)

            SetFlag(HardEvent.V_MTE2, eventID)
            SetFlag(HardEvent.V_MTE3, eventID)
            WaitFlag(HardEvent.V_MTE3, eventID)

            # one block per C0 column: actualTileH DataBlocks, the spare UB blocks between
            # columns skipped, the other tiles' rows of the GM C0 column skipped
            outParams = DataCopyParams()
            outParams.blockCount = self.tileC0Cols
            outParams.blockLen = actualTileH
            outParams.srcStride = self.dstNzC0Stride - actualTileH
            outParams.dstStride = self.totalM - actualTileH
            DataCopy(self.zGm[dstBlockOffset * C0_ELEMS], nzBuf, outParams)

            SetFlag(HardEvent.MTE3_V, eventID)

        WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE2, EVENT_ID1)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID1)

    def ComputeTileNd2nzWithCopy(self, ndBuf: LocalTensor, nzBuf: LocalTensor,
                                 actualTileH: int) -> None:
        # repeat r reads row r's 8 blocks (contiguous) and writes them one per C0 column:
        # block j of the repeat to block j * dstNzC0Stride + r of nzBuf
        copyParams = CopyRepeatParams()
        copyParams.dstStride = self.dstNzC0Stride
        copyParams.srcStride = 1
        copyParams.dstRepeatSize = 1
        copyParams.srcRepeatSize = self.tileW // C0_ELEMS

        for k in range(self.tileW // self.vecLenHalf):
            Copy(nzBuf[k * self.vecLenDbs * self.dstNzC0Stride * C0_ELEMS],
                 ndBuf[k * self.vecLenHalf], self.vecLenHalf, actualTileH, copyParams)


def bank_conflict_nd2nz(x: GM_ADDR, z: GM_ADDR, totalM: int, totalN: int, tileH: int,
                        tileW: int, vecLenHalf: int, rowSplits: int, colSplits: int,
                        SCENARIO: int = 1, npuArch: int = 2201) -> None:
    """The ``__global__ __vector__`` kernel (``rowSplits x colSplits`` blocks)."""
    InitSocState()
    op = KernelNd2Nz(totalM, totalN, tileH, tileW, vecLenHalf, rowSplits, colSplits,
                     SCENARIO, npuArch)
    op.Init(x, z)
    op.Process()
    PipeBarrier(PIPE_ALL)


__all__ = ["C0_ELEMS", "KernelNd2Nz", "bank_conflict_nd2nz"]
