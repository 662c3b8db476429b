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

# The one table of element-type spellings: canonical (numpy) name -> (GE name as CANN's host
# code spells it, the short name, other names users write). Tensors may hold the SUPPORTED
# types; the host tilings name every type here (ascendc/host.py derives its table from it).
SPELLINGS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "bfloat16": ("DT_BF16", "bf16", ()),
    "float16": ("DT_FLOAT16", "fp16", ("half",)),
    "float32": ("DT_FLOAT", "fp32", ("float", "dt_float32")),
    "float64": ("DT_DOUBLE", None, ("double",)),
    "int8": ("DT_INT8", None, ()), "uint8": ("DT_UINT8", None, ()),
    "int16": ("DT_INT16", None, ()), "uint16": ("DT_UINT16", None, ()),
    "int32": ("DT_INT32", None, ()), "uint32": ("DT_UINT32", None, ()),
    "int64": ("DT_INT64", None, ()), "uint64": ("DT_UINT64", None, ()),
    "bool": ("DT_BOOL", None, ()),
}

_BY_NAME = {d.name: d for d in SUPPORTED}
# name (lower case) -> dtype, for the tensor types: canonical, short and GE names
_ALIASES: dict[str, np.dtype] = {
    spelling: _BY_NAME[name]
    for name, (ge, short, other) in SPELLINGS.items() if name in _BY_NAME
    for spelling in (name, ge.lower(), *([short] if short else []),
                     *(o for o in other if not o.startswith("dt_")))
}
SHORT: dict[str, str] = {name: short for name, (_, short, _) in SPELLINGS.items() if short}


def table(*names: str) -> dict[str, np.dtype]:
    """Canonical name -> dtype for ``names`` (an operator's own choice of element types)."""
    return {n: as_dtype(n) for n in names}


def choose(name: str, allowed: dict[str, np.dtype]) -> np.dtype:
    """``allowed[name]``; KeyError naming the valid names otherwise."""
    try:
        return allowed[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; valid: {sorted(allowed)}") from None


def float_dtype(name: object) -> np.dtype | None:
    """The float tensor type (bfloat16, float16, float32) a name spells, or None for any other
    name or type (a record's dtype field, read through the one table of spellings)."""
    try:
        dt = as_dtype(str(name))
    except ValueError:
        return None
    return dt if dt.name in SHORT else None


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


def stored_as(found: np.dtype, want: np.dtype) -> np.dtype:
    """How items of dtype ``found`` (as read from a file) are read as ``want``, exactly.

    Returns the dtype to view them as (``want``) or raises ``ValueError`` naming the rule:
    the dtypes are equal; or ``found`` is a raw 2-byte void (``|V2``: numpy's spelling of an
    ml_dtypes bfloat16 saved by ``np.save``) and ``want`` is bfloat16. A void item of any other
    size, or read as anything but bfloat16, is refused, as are items in the other byte order
    and every other dtype: the bytes would be reinterpreted, not read."""
    if found == want:
        return want
    if found.kind == "V":
        if found.names is not None or found.subdtype is not None:
            raise ValueError(f"dtype {found.str}: a structured array, not {dtype_name(want)} "
                             "items")
        if found.itemsize == 2 and want == bfloat16:
            return want
        raise ValueError(f"dtype {found.str} (raw {found.itemsize}-byte items) is read only as "
                         f"bfloat16 (|V2: ml_dtypes bfloat16 saved by numpy), not as "
                         f"{dtype_name(want)}")
    if found.byteorder in "<>" and found.newbyteorder("=") == want:
        order = "big" if found.byteorder == ">" else "little"
        raise ValueError(f"dtype {found.str}: {order}-endian items; {dtype_name(want)} is read "
                         f"in this machine's byte order ({want.str}): convert with "
                         f".astype('{want.str}')")
    raise ValueError(f"dtype {dtype_name(found) if found.kind != 'V' else found.str} is not "
                     f"{dtype_name(want)}")


class NpyError(ValueError):
    """An ``.npy`` file that is not exactly the array asked for; ``rule`` names the check:
    ``npy_format``, ``npy_size``, ``npy_shape`` or ``npy_dtype``."""

    def __init__(self, msg: str, rule: str) -> None:
        super().__init__(msg)
        self.rule = rule


def read_npy(path, shape: tuple[int, ...], want: np.dtype) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, read into memory (not mapped: a mapped file
    cut short while a run reads it kills the process with SIGBUS), read exactly as
    ``shape`` of ``want`` items (:func:`stored_as`): one array (not an ``.npz`` archive, no
    pickled objects), that shape, that dtype, and a file of exactly header + data bytes (a
    truncated or padded file is refused). Raises :class:`NpyError` naming the rule, or
    ``OSError``."""
    import math
    import os

    fmt = np.lib.format
    with open(path, "rb") as fh:
        head = fh.read(6)
        if head[:4] == b"PK\x03\x04":  # np.load opens an .npz archive whatever its name
            raise NpyError("an .npz archive, not one .npy array (save it with np.save)",
                           "npy_format")
        if head != b"\x93NUMPY":
            raise NpyError("not an .npy file (no numpy header)", "npy_format")
        fh.seek(0)
        try:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else \
                fmt.read_array_header_2_0
            h_shape, _, h_dtype = read(fh)
        except (ValueError, EOFError) as e:
            raise NpyError(f"cannot read as .npy ({e})", "npy_format") from None
        offset = fh.tell()
    data = math.prod(h_shape) * h_dtype.itemsize
    size = os.path.getsize(path)
    if size != offset + data:
        raise NpyError(f"{size} bytes, but its header describes {offset} + {data} bytes "
                       f"({list(h_shape)} {h_dtype.str}): truncated or padded", "npy_size")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as e:  # also a file cut short since its size was read
        raise NpyError(f"cannot read as .npy ({e})", "npy_format") from None
    if tuple(arr.shape) != tuple(shape):
        raise NpyError(f"shape {list(arr.shape)} is not {list(shape)}", "npy_shape")
    try:
        dt = stored_as(arr.dtype, want)
    except ValueError as e:
        raise NpyError(str(e), "npy_dtype") from None
    return arr if dt == arr.dtype else arr.view(dt)
