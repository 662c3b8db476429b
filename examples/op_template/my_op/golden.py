"""Independent golden of ``my_op``: plain numpy, importing nothing from aicore-sim.

Follow the kernel's arithmetic order and precision (here one rounding of x * scale in the
tensor's dtype; the scalar is first rounded to fp32, then to the dtype, as Muls takes it; then
one rounding of the sum with bias), so that the comparison can be bit-exact; say in the docs
where it cannot be. amax = max |y| is exact in any order.
"""

from __future__ import annotations

import numpy as np


def golden(x: np.ndarray, scale: float, bias: np.ndarray | None = None,
           with_amax: bool = False) -> dict[str, np.ndarray | None]:
    s = np.asarray(np.float32(scale)).astype(x.dtype)
    y = (x * s).astype(x.dtype)
    if bias is not None:
        y = (y + bias).astype(x.dtype)
    amax = np.abs(y).max(initial=0).astype(x.dtype).reshape(1) if with_amax else None
    return {"y": y, "amax": amax}
