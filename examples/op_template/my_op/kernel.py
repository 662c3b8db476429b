"""Kernel of ``my_op`` (the port of ``op_kernel/<op>.h``): y = x * scale (+ bias), and with
``amax`` requested, amax = max |y| over every core's elements.

A port keeps upstream's class, method and member names, buffer order, event ids and loop
nesting, so that it reads beside the C++; put the upstream path and commit in this docstring
and list every deviation. Kernel ports import only ``aicore_sim.ascendc``.

What the template shows: an optional input (``bias``: a null ``GM_ADDR`` when the caller
gives none, tested once in ``Init``), an optional output (``amax``: null when not asked for)
and two kernel passes with a cross-core barrier between them - pass 1 on every core writes
the core's partial maximum to the GM workspace, ``SyncAll`` makes every core's write visible,
pass 2 on core 0 reduces the partials into ``amax``.

Buffers (``TBuf``, one each) and explicit flags:

* ``MTE2_V 0``: the tile (and its bias) is in UB before Muls reads it;
* ``V_MTE3 0``: the vector work has written the result before the copy out reads it;
* ``V_MTE2 0``: the vector work has read the input buffers before the next copy in
  overwrites them (``inBuf`` is also ReduceMax's scratch, once Muls has read it);
* ``MTE3_V 0``: the copy out has read the output buffer before the next Muls overwrites it;
* ``V_MTE3 1``, ``MTE2_V 1``: the partial maximum to the workspace, and the partials back
  into core 0's UB in pass 2.
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    EVENT_ID0,
    EVENT_ID1,
    Abs,
    Add,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    Duplicate,
    GetBlockIdx,
    GetBlockNum,
    GetUserWorkspace,
    GlobalTensor,
    HardEvent,
    Max,
    Muls,
    ReduceMax,
    SetFlag,
    SyncAll,
    TBuf,
    TPipe,
    TPosition,
    WaitFlag,
)

BLOCK_BYTES = 32  # one UB block: each core's partial maximum takes one in the workspace


class KernelMyOp:
    def Init(self, x, bias, y, amax, workspace, tiling, scale: float, dtype) -> None:
        idx, num = GetBlockIdx(), GetBlockNum()
        last = tiling.totalLength - (num - 1) * tiling.blockLength
        self.length = tiling.blockLength if idx < num - 1 else last
        self.tileLength = tiling.tileLength
        self.scale = scale
        self.dtype = dtype
        self.hasBias = bias is not None
        self.hasAmax = amax is not None
        size = dtype.itemsize
        self.blockElems = BLOCK_BYTES // size
        self.xGm, self.yGm = GlobalTensor(dtype), GlobalTensor(dtype)
        self.xGm.SetGlobalBuffer(x + idx * tiling.blockLength * size, self.length)
        self.yGm.SetGlobalBuffer(y + idx * tiling.blockLength * size, self.length)
        self.pipe = TPipe()
        self.inBuf = TBuf(TPosition.VECCALC, name="inBuf")
        self.outBuf = TBuf(TPosition.VECCALC, name="outBuf")
        self.pipe.InitBuffer(self.inBuf, self.tileLength * size)
        self.pipe.InitBuffer(self.outBuf, self.tileLength * size)
        if self.hasBias:
            self.biasGm = GlobalTensor(dtype)
            self.biasGm.SetGlobalBuffer(bias + idx * tiling.blockLength * size, self.length)
            self.biasBuf = TBuf(TPosition.VECCALC, name="biasBuf")
            self.pipe.InitBuffer(self.biasBuf, self.tileLength * size)
        if self.hasAmax:
            self.amaxGm, self.partialGm = GlobalTensor(dtype), GlobalTensor(dtype)
            self.amaxGm.SetGlobalBuffer(amax, 1)
            self.partialGm.SetGlobalBuffer(GetUserWorkspace(workspace), num * self.blockElems)
            self.absBuf = TBuf(TPosition.VECCALC, name="absBuf")
            self.maxBuf = TBuf(TPosition.VECCALC, name="maxBuf")
            self.accBuf = TBuf(TPosition.VECCALC, name="accBuf")
            self.partBuf = TBuf(TPosition.VECCALC, name="partBuf")
            self.pipe.InitBuffer(self.absBuf, self.tileLength * size)
            self.pipe.InitBuffer(self.maxBuf, BLOCK_BYTES)
            self.pipe.InitBuffer(self.accBuf, BLOCK_BYTES)
            self.pipe.InitBuffer(self.partBuf, num * BLOCK_BYTES)

    def Process(self) -> None:
        """Pass 1: y tile by tile; with amax, this core's max |y| kept in ``accBuf``."""
        xLocal = self.inBuf.Get(self.dtype)
        yLocal = self.outBuf.Get(self.dtype)
        size = self.dtype.itemsize
        if self.hasBias:
            bLocal = self.biasBuf.Get(self.dtype)
        if self.hasAmax:
            absLocal = self.absBuf.Get(self.dtype)
            maxLocal = self.maxBuf.Get(self.dtype)
            accLocal = self.accBuf.Get(self.dtype)
            Duplicate(accLocal, 0.0, self.blockElems)  # |y| >= 0: zero is a neutral start
        loops = -(-self.length // self.tileLength)
        for i in range(loops):
            n = min(self.tileLength, self.length - i * self.tileLength)
            params = DataCopyExtParams(1, n * size, 0, 0)
            if i > 0:
                WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
            DataCopyPad(xLocal, self.xGm[i * self.tileLength], params, DataCopyPadExtParams())
            if self.hasBias:
                DataCopyPad(bLocal, self.biasGm[i * self.tileLength], params,
                            DataCopyPadExtParams())
            SetFlag(HardEvent.MTE2_V, EVENT_ID0)
            WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
            if i > 0:
                WaitFlag(HardEvent.MTE3_V, EVENT_ID0)
            Muls(yLocal, xLocal, self.scale, n)
            if self.hasBias:
                Add(yLocal, yLocal, bLocal, n)
            if self.hasAmax:
                Abs(absLocal, yLocal, n)
                ReduceMax(maxLocal, absLocal, xLocal, n)  # xLocal: scratch, Muls read it
                Max(accLocal, accLocal, maxLocal, 1)
            if i < loops - 1:
                SetFlag(HardEvent.V_MTE2, EVENT_ID0)
            SetFlag(HardEvent.V_MTE3, EVENT_ID0)
            WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
            DataCopyPad(self.yGm[i * self.tileLength], yLocal, params)
            if i < loops - 1:
                SetFlag(HardEvent.MTE3_V, EVENT_ID0)
        if self.hasAmax:
            SetFlag(HardEvent.V_MTE3, EVENT_ID1)
            WaitFlag(HardEvent.V_MTE3, EVENT_ID1)
            DataCopyPad(self.partialGm[GetBlockIdx() * self.blockElems], accLocal,
                        DataCopyExtParams(1, BLOCK_BYTES, 0, 0))

    def ProcessAmax(self) -> None:
        """Pass 2, core 0 once every core has passed the barrier: the largest partial into
        ``amax``."""
        num = GetBlockNum()
        partials = self.partBuf.Get(self.dtype)
        maxLocal = self.maxBuf.Get(self.dtype)
        scratch = self.absBuf.Get(self.dtype)
        DataCopyPad(partials, self.partialGm, DataCopyExtParams(1, num * BLOCK_BYTES, 0, 0),
                    DataCopyPadExtParams())
        SetFlag(HardEvent.MTE2_V, EVENT_ID1)
        WaitFlag(HardEvent.MTE2_V, EVENT_ID1)
        ReduceMax(maxLocal, partials, scratch, num * self.blockElems)
        SetFlag(HardEvent.V_MTE3, EVENT_ID1)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID1)
        DataCopyPad(self.amaxGm, maxLocal, DataCopyExtParams(1, self.dtype.itemsize, 0, 0))


def my_op(x, bias, y, amax, workspace, tiling, scale: float, dtype) -> None:
    """The ``__global__`` entry, run once per core (block)."""
    op = KernelMyOp()
    op.Init(x, bias, y, amax, workspace, tiling, scale, dtype)
    op.Process()
    if op.hasAmax:
        SyncAll()  # every core's partial is in GM before core 0 reads them
        if GetBlockIdx() == 0:
            op.ProcessAmax()
