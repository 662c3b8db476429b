"""Element types a kernel port may use, with the names users and CANN spell them by."""

from __future__ import annotations

import ml_dtypes
import numpy as np

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)

SUPPORTED: tuple[np.dtype, ...] = (bfloat16, float16, float32, int32, int64, int8, int16, uint8,
                                   uint16, uint32)

_ALIASES: dict[str, np.dtype] = {
    "bfloat16": bfloat16, "bf16": bfloat16, "dt_bf16": bfloat16,
    "float16": float16, "fp16": float16, "half": float16, "dt_float16": float16,
    "float32": float32, "fp32": float32, "float": float32, "dt_float": float32,
    "int32": int32, "dt_int32": int32,
    "int64": int64, "dt_int64": int64,
    "int8": int8, "dt_int8": int8, "int16": int16, "dt_int16": int16,
    "uint8": uint8, "dt_uint8": uint8, "uint16": uint16, "dt_uint16": uint16,
    "uint32": uint32, "dt_uint32": uint32,
}


_RESOLVED: dict = {}  # what as_dtype has resolved before (it runs for every tensor view)


def as_dtype(x) -> np.dtype:
    """Resolve a numpy dtype, an ml_dtypes type or a name (``"bf16"``, ``"DT_FLOAT16"`` …)."""
    try:
        return _RESOLVED[x]
    except (KeyError, TypeError):  # TypeError: an unhashable argument
        pass
    dt = _resolve(x)
    _RESOLVED[x] = dt
    return dt


def _resolve(x) -> np.dtype:
    if isinstance(x, str):
        key = x.strip().lower()
        if key in _ALIASES:
            return _ALIASES[key]
        raise ValueError(
            f"unknown dtype {x!r}; expected one of {sorted(set(_ALIASES))}"
        )
    dt = np.dtype(x)
    if dt not in SUPPORTED:
        names = [dtype_name(d) for d in SUPPORTED]
        raise ValueError(f"dtype {dt} is not supported; expected one of {names}")
    return dt


def dtype_name(dt: np.dtype) -> str:
    """Canonical short name (``bfloat16``, ``float16``, ``float32``, ``int32``, ``int64``)."""
    return "bfloat16" if dt == bfloat16 else str(dt)
