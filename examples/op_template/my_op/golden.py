"""Independent golden of ``my_op``: plain numpy, importing nothing from aicore-sim.

Follow the kernel's arithmetic order and precision (here one rounding of x * scale in the
tensor's dtype; the scalar is first rounded to fp32, then to the dtype, as Muls takes it), so
that the comparison can be bit-exact; say in the docs where it cannot be.
"""

from __future__ import annotations

import numpy as np


def golden(x: np.ndarray, scale: float) -> np.ndarray:
    s = np.asarray(np.float32(scale)).astype(x.dtype)
    return (x * s).astype(x.dtype)
