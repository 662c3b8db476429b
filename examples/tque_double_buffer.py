"""The canonical Ascend C vector kernel, in Python: z = x + y through double-buffered TQues.

Every vector kernel has this skeleton - a ``TPipe``, a VECIN queue per input and a VECOUT
queue for the output, each with ``BUFFER_NUM`` slots, and a loop of three stages:

- ``CopyIn``: ``AllocTensor`` a slot, ``DataCopy`` GM->UB (MTE2), ``EnQue``;
- ``Compute``: ``DeQue`` the inputs, ``Add`` into an output slot (VECTOR), ``EnQue`` it,
  ``FreeTensor`` the inputs;
- ``CopyOut``: ``DeQue`` the output, ``DataCopy`` UB->GM (MTE3), ``FreeTensor``.

The queues insert the flags between the pipes; with ``BUFFER_NUM = 2`` tile i+1 is copied in
while tile i is added and tile i-1 copied out. This script runs the kernel on 8 cores of an
Atlas A2 (``ascend910b1``) with one and with two buffers, checks both against numpy, and prints
what the second buffer bought. The same kernel in C++, run unmodified by the C++ front end:
``examples/cpp/add_double_buffer/``. The porting guide (``docs/porting.md``) starts here.

    python examples/tque_double_buffer.py
"""

from __future__ import annotations

import numpy as np

from aicore_sim import launch, load_platform
from aicore_sim.ascendc import (
    Add,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    TPipe,
    TPosition,
    TQue,
    float16,
)

CORES, TILE, TILES = 8, 4096, 8  # per core: 8 tiles of 4096 fp16 (8 KiB)


def add_kernel(x, y, z, tiling) -> None:
    """One core's share: ``tiles`` tiles of ``tile`` fp16 elements, ``buffers`` slots a queue."""
    tile, tiles, buffers = tiling["tile"], tiling["tiles"], tiling["buffers"]
    start = GetBlockIdx() * tile * tiles
    xg, yg, zg = GlobalTensor(float16), GlobalTensor(float16), GlobalTensor(float16)
    xg.SetGlobalBuffer(x + start * 2, tile * tiles)
    yg.SetGlobalBuffer(y + start * 2, tile * tiles)
    zg.SetGlobalBuffer(z + start * 2, tile * tiles)
    pipe = TPipe()
    in_x = TQue(TPosition.VECIN, buffers, name="inQueueX")
    in_y = TQue(TPosition.VECIN, buffers, name="inQueueY")
    out_z = TQue(TPosition.VECOUT, buffers, name="outQueueZ")
    for q in (in_x, in_y, out_z):
        pipe.InitBuffer(q, buffers, tile * 2)
    for i in range(tiles):
        # CopyIn
        xl, yl = in_x.AllocTensor(float16), in_y.AllocTensor(float16)
        DataCopy(xl, xg[i * tile], tile)
        DataCopy(yl, yg[i * tile], tile)
        in_x.EnQue(xl)
        in_y.EnQue(yl)
        # Compute
        xl, yl = in_x.DeQue(float16), in_y.DeQue(float16)
        zl = out_z.AllocTensor(float16)
        Add(zl, xl, yl, tile)
        out_z.EnQue(zl)
        in_x.FreeTensor(xl)
        in_y.FreeTensor(yl)
        # CopyOut
        zl = out_z.DeQue(float16)
        DataCopy(zg[i * tile], zl, tile)
        out_z.FreeTensor(zl)


def main() -> int:
    platform = load_platform("ascend910b1")
    rng = np.random.default_rng(0)
    n = CORES * TILES * TILE
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    want = x + y  # numpy's fp16 add rounds as the vector unit does (one rounding)
    cycles = {}
    for buffers in (1, 2):
        tiling = {"tile": TILE, "tiles": TILES, "buffers": buffers}
        r = launch(add_kernel, ["x", "y", "z", tiling],
                   {"x": x, "y": y, "z": np.zeros_like(x)}, {"z": (np.float16, (n,))},
                   platform, block_dim=CORES)
        exact = np.array_equal(r.outputs["z"].view(np.uint16), want.view(np.uint16))
        cycles[buffers] = r.cycles
        print(f"BUFFER_NUM={buffers}: {r.cycles:,} cycles = {r.us:.2f} us on {CORES} cores; "
              f"z {'equals' if exact else 'DIFFERS from'} numpy's x + y")
        if not exact:
            return 1
    print(f"double buffering: {cycles[1] / cycles[2]:.2f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
