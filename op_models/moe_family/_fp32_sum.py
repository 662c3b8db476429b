"""The float32 sum of a row as the MoE gradient kernels reduce it (their probabilities'
gradients are dot products over the hidden axis): a fixed order of additions, so a golden
that follows it is bit-exact.

One row of ``n`` float32 values becomes one value:

- ``n`` up to the smallest width (64), or below it: one adjacent-pair tree over 64 lanes,
  the missing lanes +0 (a whole-repeat reduction);
- otherwise a width ``W`` (4096, 512 or 64: the largest the row reaches; whether a row of
  exactly ``W`` reaches ``W`` or stays at the next smaller width differs between kernels,
  ``from_width``). While more than ``2W`` values remain, the upper part from ``ceil(n/2)``
  rounded up to a multiple of 8 is added element by element onto the lower part. Then the
  values past ``W`` are added onto the first ones. The ``W`` values are summed in groups of 8
  by an adjacent-pair tree (a 32-byte block), giving ``W/8``. That is repeated until 8 are
  left, and a last adjacent-pair tree sums those 8 to one value.

Every addition is one float32 rounding.
"""

from __future__ import annotations

import numpy as np


def _up8(x: int) -> int:
    return -(-x // 8) * 8


def pair_tree(x: np.ndarray) -> np.ndarray:
    """Adjacent-pair tree sum over the last axis (a power of two long), in float32."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def chunk_sum(x: np.ndarray, *, from_width: bool) -> np.ndarray:
    """``x`` ``(rows, n)`` float32 -> ``(rows,)``, in the order above. ``from_width``: a row
    of exactly ``W`` values takes width ``W`` (else the next smaller one)."""
    rows, n = x.shape
    widths = [w for w in (4096, 512, 64) if (n >= w if from_width else n > w)]
    if not widths:
        padded = np.zeros((rows, 64), np.float32)
        padded[:, :n] = x
        return pair_tree(padded)
    width = widths[0]
    buf = np.array(x, np.float32)
    total, half = n, _up8(-(-n // 2))
    while total > 2 * width:
        buf[:, :total - half] = buf[:, :total - half] + buf[:, half:total]
        total, half = half, _up8(-(-half // 2))
    buf[:, :total - width] = buf[:, :total - width] + buf[:, width:total]
    vals = buf[:, :width]
    while vals.shape[1] > 8:
        vals = pair_tree(vals.reshape(rows, -1, 8))
    return pair_tree(vals)
