"""Independent golden of ``tiny_axpy`` (numpy only): fp32 ``alpha * x`` rounded, then ``+ y``
rounded, which is what the kernel's Muls then Add compute element by element."""

from __future__ import annotations

import numpy as np


def golden(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    return (x.astype(np.float32) * np.float32(alpha)).astype(np.float32) + y.astype(np.float32)
