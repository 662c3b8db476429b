"""Kernel port of ``KernelDataCopyPadGm2Ub`` (step "kernel port" of the flow).

The GM->UB half of the DataCopy best-practice sample: AIV cores read a half matrix ``[m, n]``
into one UB window with ``DataCopyPad`` and compute nothing. ``Process`` (scenarios 1-4) gives
each core ``singleCoreM`` rows and walks them in ``[tileM, tileN]`` tiles (the last column tile
narrower when ``tileN`` does not divide ``n``); ``ProcessRepeatWhole4Times`` (5) reads a
core's rows four times over; ``ProcessSplitFourAndRepeat4Times`` (6) does the same one
quarter of the columns at a time; ``ProcessFullMatrixSameAddr`` / ``ProcessFullMatrixOffsetAddr``
(7 / 8) make every core read the whole matrix with L2 caching off, all in the same order or
rotated by core inside groups of ``numBlocks`` row blocks.

Provenance
----------
Upstream: ``examples/01_simd_cpp_api/05_best_practices/04_memory_access/data_copy/data_copy_ub.h``
(the asc-devkit commit and how the ports follow it: :mod:`op_models.board_samples`); the
kernel has no SetFlag / WaitFlag / PipeBarrier of its own.

Deviations from upstream
------------------------
1. The template parameters ``<m, n, numBlocks, singleCoreM, tileM, tileN>`` are constructor
   arguments; ``constexpr`` members and ``static_assert`` become plain attributes and a
   ``KernelError``.
2. ``__gm__ half*`` is a ``GM_ADDR``; ``static_cast<uint16_t>`` of a copy field is not
   applied: ``DataCopyParams`` checks each field against the uint16 range instead of letting
   it wrap (every field of the eight scenarios fits).
"""

from __future__ import annotations

from aicore_sim import KernelError
from aicore_sim.ascendc import (
    GM_ADDR,
    CacheMode,
    DataCopyPad,
    DataCopyPadParams,
    DataCopyParams,
    GetBlockIdx,
    GlobalTensor,
    LocalTensor,
    TPosition,
    half,
)

SIZEOF_HALF = 2


class KernelDataCopyPadGm2Ub:
    """``KernelDataCopyPadGm2Ub<m, n, numBlocks, singleCoreM, tileM, tileN>``."""

    def __init__(self, m: int, n: int, numBlocks: int, singleCoreM: int, tileM: int,
                 tileN: int) -> None:
        self.m, self.n, self.numBlocks = int(m), int(n), int(numBlocks)
        self.singleCoreM, self.tileM, self.tileN = int(singleCoreM), int(tileM), int(tileN)
        # one UB window of a whole tile, at UB address 0
        self.ubBufferSize = self.tileM * self.tileN
        self.ubAddr = 0
        self.srcGlobal = GlobalTensor(half)
        self.ubLocal: LocalTensor | None = None

    def Init(self, src: GM_ADDR) -> None:
        self.srcGlobal.SetGlobalBuffer(src, self.m * self.n)
        self.ubLocal = LocalTensor(half, TPosition.VECIN, self.ubAddr, self.ubBufferSize)

    def Process(self) -> None:
        """Scenarios 1-4: this core's rows, tile by tile, the last column tile possibly
        narrower."""
        n, tileM, tileN = self.n, self.tileM, self.tileN
        blockIdx = GetBlockIdx()
        mStart = blockIdx * self.singleCoreM

        # tiles along N (rounded up: a partial last tile) and along this core's rows
        nLoopCount = (n + tileN - 1) // tileN
        mLoopCount = self.singleCoreM // tileM
        copyInParams = DataCopyParams()
        copyInParams.blockCount = tileM
        copyInParams.dstStride = 0
        padParams = DataCopyPadParams(False, 0, 0, 0)

        for mBlockIdx in range(mLoopCount):
            mIdx = mStart + mBlockIdx * tileM
            # the last column tile is narrower when tileN does not divide n
            for nBlockIdx in range(nLoopCount):
                nIdx = nBlockIdx * tileN
                curCols = (n - nIdx) if (nIdx + tileN > n) else tileN

                copyInParams.blockLen = curCols * SIZEOF_HALF
                copyInParams.srcStride = (n - curCols) * SIZEOF_HALF
                DataCopyPad(self.ubLocal, self.srcGlobal[mIdx * n + nIdx], copyInParams,
                            padParams)

    def ProcessRepeatWhole4Times(self) -> None:
        """Scenario 5: this core's rows, all columns, four times in a row."""
        self.RepeatCopy(0, self.n, 4)

    def ProcessSplitFourAndRepeat4Times(self) -> None:
        """Scenario 6: a quarter of the columns at a time, each quarter read four times."""
        if self.n % 4 != 0:
            raise KernelError("n must be divisible by 4")
        quarterN = self.n // 4

        for splitIdx in range(4):
            self.RepeatCopy(splitIdx * quarterN, quarterN, 4)

    def ProcessFullMatrixSameAddr(self) -> None:
        """Scenario 7: every core reads the whole matrix, all in the same order."""
        self.FullMatrixCopy(False)

    def ProcessFullMatrixOffsetAddr(self) -> None:
        """Scenario 8: as 7, the order of row blocks rotated by the core index."""
        self.FullMatrixCopy(True)

    # -- private ---------------------------------------------------------------------------

    def FullMatrixCopy(self, offsetAddr: bool) -> None:
        n, tileM, tileN, numBlocks = self.n, self.tileM, self.tileN, self.numBlocks
        blockIdx = GetBlockIdx()
        # L2 caching off, so that only the order of accesses differs between 7 and 8
        self.srcGlobal.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)

        fullMBlockCount = self.m // self.singleCoreM
        nLoopCount = n // tileN
        mTileCount = self.singleCoreM // tileM
        copyInParams = DataCopyParams(tileM, tileN * SIZEOF_HALF, (n - tileN) * SIZEOF_HALF, 0)
        padParams = DataCopyPadParams(False, 0, 0, 0)

        for mBlockIdx in range(fullMBlockCount):
            # groups of numBlocks row blocks; with offsetAddr each core starts its group at
            # its own block and wraps around
            blockGroupStart = (mBlockIdx // numBlocks) * numBlocks
            curMBlockIdx = (blockGroupStart + (mBlockIdx + blockIdx) % numBlocks
                            if offsetAddr else mBlockIdx)
            mStart = curMBlockIdx * self.singleCoreM
            for mTileIdx in range(mTileCount):
                mIdx = mStart + mTileIdx * tileM
                for nBlockIdx in range(nLoopCount):
                    nIdx = nBlockIdx * tileN
                    DataCopyPad(self.ubLocal, self.srcGlobal[mIdx * n + nIdx], copyInParams,
                                padParams)

    def RepeatCopy(self, nStart: int, nCount: int, repeatTimes: int) -> None:
        n, tileM, tileN = self.n, self.tileM, self.tileN
        blockIdx = GetBlockIdx()
        mStart = blockIdx * self.singleCoreM

        nLoopCount = nCount // tileN
        mLoopCount = self.singleCoreM // tileM
        copyInParams = DataCopyParams(tileM, tileN * SIZEOF_HALF, (n - tileN) * SIZEOF_HALF, 0)
        padParams = DataCopyPadParams(False, 0, 0, 0)

        for _repeatIdx in range(repeatTimes):
            for mBlockIdx in range(mLoopCount):
                mIdx = mStart + mBlockIdx * tileM
                for nBlockIdx in range(nLoopCount):
                    nIdx = nBlockIdx * tileN
                    DataCopyPad(self.ubLocal, self.srcGlobal[mIdx * n + nStart + nIdx],
                                copyInParams, padParams)


__all__ = ["KernelDataCopyPadGm2Ub"]
