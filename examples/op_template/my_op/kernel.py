"""Kernel of ``my_op`` (the port of ``op_kernel/<op>.h``): y = x * scale.

A port keeps upstream's class, method and member names, buffer order, event ids and loop
nesting, so that it reads beside the C++; put the upstream path and commit in this docstring
and list every deviation. Kernel ports import only ``aicore_sim.ascendc``.

One input and one output buffer (``TBuf``), explicit flags:

* ``MTE2_V 0``: the tile is in UB before Muls reads it;
* ``V_MTE3 0``: Muls has written the result before the copy out reads it;
* ``V_MTE2 0``: Muls has read the input buffer before the next tile's copy in overwrites it;
* ``MTE3_V 0``: the copy out has read the output buffer before the next Muls overwrites it.
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    EVENT_ID0,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    GetBlockIdx,
    GetBlockNum,
    GlobalTensor,
    HardEvent,
    Muls,
    SetFlag,
    TBuf,
    TPipe,
    TPosition,
    WaitFlag,
)


class KernelMyOp:
    def Init(self, x, y, tiling, scale: float, dtype) -> None:
        idx, num = GetBlockIdx(), GetBlockNum()
        last = tiling.totalLength - (num - 1) * tiling.blockLength
        self.length = tiling.blockLength if idx < num - 1 else last
        self.tileLength = tiling.tileLength
        self.scale = scale
        self.dtype = dtype
        size = dtype.itemsize
        self.xGm, self.yGm = GlobalTensor(dtype), GlobalTensor(dtype)
        self.xGm.SetGlobalBuffer(x + idx * tiling.blockLength * size, self.length)
        self.yGm.SetGlobalBuffer(y + idx * tiling.blockLength * size, self.length)
        self.pipe = TPipe()
        self.inBuf = TBuf(TPosition.VECCALC, name="inBuf")
        self.outBuf = TBuf(TPosition.VECCALC, name="outBuf")
        self.pipe.InitBuffer(self.inBuf, self.tileLength * size)
        self.pipe.InitBuffer(self.outBuf, self.tileLength * size)

    def Process(self) -> None:
        xLocal = self.inBuf.Get(self.dtype)
        yLocal = self.outBuf.Get(self.dtype)
        size = self.dtype.itemsize
        loops = -(-self.length // self.tileLength)
        for i in range(loops):
            n = min(self.tileLength, self.length - i * self.tileLength)
            params = DataCopyExtParams(1, n * size, 0, 0)
            if i > 0:
                WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
            DataCopyPad(xLocal, self.xGm[i * self.tileLength], params, DataCopyPadExtParams())
            SetFlag(HardEvent.MTE2_V, EVENT_ID0)
            WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
            if i > 0:
                WaitFlag(HardEvent.MTE3_V, EVENT_ID0)
            Muls(yLocal, xLocal, self.scale, n)
            if i < loops - 1:
                SetFlag(HardEvent.V_MTE2, EVENT_ID0)
            SetFlag(HardEvent.V_MTE3, EVENT_ID0)
            WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
            DataCopyPad(self.yGm[i * self.tileLength], yLocal, params)
            if i < loops - 1:
                SetFlag(HardEvent.MTE3_V, EVENT_ID0)


def my_op(x, y, tiling, scale: float, dtype) -> None:
    """The ``__global__`` entry, run once per core (block)."""
    op = KernelMyOp()
    op.Init(x, y, tiling, scale, dtype)
    op.Process()
