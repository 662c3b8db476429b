"""Kernel of ``tiny_axpy`` in the structure of the Ascend C vector samples (``KernelAdd``):
Init / Process / CopyIn / Compute / CopyOut over TQue double buffers, whose AllocTensor /
EnQue / DeQue / FreeTensor carry the MTE2 -> V -> MTE3 flags."""

from __future__ import annotations

from aicore_sim.ascendc import (
    Add,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    GetBlockIdx,
    GetBlockNum,
    GlobalTensor,
    Muls,
    TPipe,
    TPosition,
    TQue,
    float32,
)

BUFFER_NUM = 2


class KernelAxpy:
    def Init(self, x, y, z, tiling, alpha: float) -> None:
        idx, num = GetBlockIdx(), GetBlockNum()
        self.blockLength = tiling.blockLength
        last = tiling.totalLength - (num - 1) * tiling.blockLength
        self.length = tiling.blockLength if idx < num - 1 else last
        self.tileLength = tiling.tileLength
        self.alpha = alpha
        off = idx * tiling.blockLength
        self.xGm, self.yGm, self.zGm = (GlobalTensor(float32) for _ in range(3))
        self.xGm.SetGlobalBuffer(x + off * 4, self.length)
        self.yGm.SetGlobalBuffer(y + off * 4, self.length)
        self.zGm.SetGlobalBuffer(z + off * 4, self.length)
        self.pipe = TPipe()
        self.inQueueX = TQue(TPosition.VECIN, BUFFER_NUM, name="inQueueX")
        self.inQueueY = TQue(TPosition.VECIN, BUFFER_NUM, name="inQueueY")
        self.outQueueZ = TQue(TPosition.VECOUT, BUFFER_NUM, name="outQueueZ")
        for q in (self.inQueueX, self.inQueueY, self.outQueueZ):
            self.pipe.InitBuffer(q, BUFFER_NUM, self.tileLength * 4)

    def Process(self) -> None:
        loops = -(-self.length // self.tileLength)
        for i in range(loops):
            n = min(self.tileLength, self.length - i * self.tileLength)
            self.CopyIn(i, n)
            self.Compute(n)
            self.CopyOut(i, n)

    def CopyIn(self, i: int, n: int) -> None:
        xLocal = self.inQueueX.AllocTensor(float32)
        yLocal = self.inQueueY.AllocTensor(float32)
        params = DataCopyExtParams(1, n * 4, 0, 0)
        DataCopyPad(xLocal, self.xGm[i * self.tileLength], params, DataCopyPadExtParams())
        DataCopyPad(yLocal, self.yGm[i * self.tileLength], params, DataCopyPadExtParams())
        self.inQueueX.EnQue(xLocal)
        self.inQueueY.EnQue(yLocal)

    def Compute(self, n: int) -> None:
        xLocal = self.inQueueX.DeQue(float32)
        yLocal = self.inQueueY.DeQue(float32)
        zLocal = self.outQueueZ.AllocTensor(float32)
        Muls(zLocal, xLocal, self.alpha, n)
        Add(zLocal, zLocal, yLocal, n)
        self.outQueueZ.EnQue(zLocal)
        self.inQueueX.FreeTensor(xLocal)
        self.inQueueY.FreeTensor(yLocal)

    def CopyOut(self, i: int, n: int) -> None:
        zLocal = self.outQueueZ.DeQue(float32)
        DataCopyPad(self.zGm[i * self.tileLength], zLocal, DataCopyExtParams(1, n * 4, 0, 0))
        self.outQueueZ.FreeTensor(zLocal)


def tiny_axpy(x, y, z, tiling, alpha: float) -> None:
    """The ``__global__`` entry: one call per core."""
    op = KernelAxpy()
    op.Init(x, y, z, tiling, alpha)
    op.Process()
