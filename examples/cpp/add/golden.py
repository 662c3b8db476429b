"""Golden of examples/cpp/add: z = x + y in half, plain numpy (one rounding of the exact sum
to float16, nearest even, as the vector Add gives)."""

import numpy as np


def golden(inputs):
    x, y = inputs["x"], inputs["y"]
    return {"z": (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)}
