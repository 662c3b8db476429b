"""Host-side stand-ins of the CANN tiling API that host-tiling ports share.

Models the part of ``gert::TilingContext`` a tiling function talks to during one call: the
node name, attributes by IR index, the platform, the tiling key / block dim / workspace it
writes back, and the error and debug log (``OP_LOGE`` / ``OP_LOGD``). An operator's port
subclasses :class:`RunContext` with the tiling-data and result types of its own operator;
:class:`TilingError` is what a rejected tiling raises (aclnn would return 561002);
:class:`AclnnError` is a failed aclnn two-phase call with its status code.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol

from aicore_sim.sim.dtypes import SPELLINGS, dtype_name
from aicore_sim.sim.errors import InputError

__all__ = ["ACLNN_ERR_INNER_TILING_ERROR", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR",
           "ACLNN_SUCCESS", "GRAPH_FAILED", "GRAPH_SUCCESS", "AclnnError", "PlatformAdapter",
           "aclnn_int", "aclnn_int_list", "aclnn_out", "specs_of", "aclnn_invalid", "aclnn_tensor",
           "aclnn_tiled", "aclnn_workspace", "RunContext", "TensorDesc", "TilingContext",
           "TilingError", "TilingResult", "TilingStruct", "GetLengthByType", "c_div", "c_rem",
           "canonical_dtype", "c_ceil_div0", "current_host_source", "host_tiling",
           "using_host_source", "c_div0",
           "c_rem0", "tensor_descs", "to_i32",
           "to_i64", "to_u64"]

# ge::graphStatus values a tiling function returns
GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF


# --- C integer semantics the host tilings compute with ------------------------------------------

_MASK64 = (1 << 64) - 1


def to_u64(x: int) -> int:
    """``x`` converted to ``uint64_t`` (modulo 2**64)."""
    return x & _MASK64


def to_i64(x: int) -> int:
    """``x`` converted to ``int64_t`` (two's complement)."""
    x &= _MASK64
    return x - (1 << 64) if x & (1 << 63) else x


def to_i32(x: int) -> int:
    """``x`` converted to ``int`` (32-bit two's complement), as ``int v = *int64Ptr``."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def c_div(a: int, b: int) -> int:
    """C signed division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_rem(a: int, b: int) -> int:
    """C signed remainder: the sign follows the dividend."""
    return a - b * c_div(a, b)


def c_div0(a: int, b: int) -> int:
    """:func:`c_div`, 0 for a zero divisor (the tilings' guarded division helpers)."""
    return 0 if b == 0 else c_div(a, b)


def c_rem0(a: int, b: int) -> int:
    """:func:`c_rem`, 0 for a zero divisor."""
    return 0 if b == 0 else c_rem(a, b)


def c_ceil_div0(a: int, b: int) -> int:
    """``(a + b - 1) / b`` in C, 0 for a zero divisor."""
    return 0 if b == 0 else c_div(a + b - 1, b)


# --- GE data types as the host tilings see them -------------------------------------------------

# name (lower case) -> GE name, from the one table of spellings (aicore_sim/sim/dtypes.py)
_DTYPE_ALIASES: dict[str, str] = {
    spelling: ge for name, (ge, short, other) in SPELLINGS.items()
    for spelling in (name, *([short] if short else []), *other)
}

# Bytes per element as ``ge::GetSizeByDataType`` gives them for the types the tilings read;
# everything else has length 0.
_DTYPE_LENGTH: dict[str, int] = {
    "DT_FLOAT16": 2, "DT_INT16": 2, "DT_UINT16": 2, "DT_BF16": 2,
    "DT_FLOAT": 4, "DT_INT32": 4, "DT_UINT32": 4,
    "DT_DOUBLE": 8, "DT_INT64": 8, "DT_UINT64": 8,
}


def canonical_dtype(dtype: object) -> str | None:
    """GE-style name of ``dtype`` (``"DT_BF16"`` ...) or the raw text of an unknown one.

    Accepts GE names (``"DT_FLOAT"``), numpy-style names (``"bfloat16"``), numpy / ml_dtypes
    dtype objects, or ``None``. An int is taken as a raw enum value and never matches a name.
    """
    if dtype is None:
        return None
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return f"ge::DataType({dtype})"
    text = str(dtype).strip()
    if text.upper().startswith("DT_"):
        upper = text.upper()
        return "DT_FLOAT" if upper == "DT_FLOAT32" else upper
    return _DTYPE_ALIASES.get(text.lower(), text)


def GetLengthByType(dtype: object) -> int:  # noqa: N802 - the CANN name
    """Bytes per element the tiling assumes for ``dtype``; 0 for unknown or absent types."""
    name = canonical_dtype(dtype)
    return 0 if name is None else _DTYPE_LENGTH.get(name, 0)


@dataclass(frozen=True)
class TensorDesc:
    """One input as a tiling sees it: storage shape and dtype (a GE name such as ``"DT_BF16"``,
    a numpy-style name, a dtype object, an int (a raw enum value, always unknown) or
    ``None`` (unknown: length 0))."""

    shape: tuple[int, ...]
    dtype: object = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))


_ATTR_TYPES = {"bool": bool, "int": int, "float": float, "str": str,
               "int_list": lambda v: [int(x) for x in v], "list": list}


@dataclass(frozen=True)
class TilingContext:
    """The inputs of one host tiling call, read through ``gert::TilingContext``'s getters.

    ``inputs`` / ``outputs``: descriptors in IR order (``None``: absent); ``attrs``: IR attribute
    index -> value (a missing key: an absent attribute; ``None``: a null attribute set). A port
    declares its operator's IR once, on a subclass: ``OP_TYPE``, ``INPUTS`` (``(name,
    required)`` in IR order), ``OUTPUTS`` (names), ``ATTRS`` (``(name, kind)`` in IR order, the
    kinds of :class:`~aicore_sim.ops.opmodel.AttrSpec`, ``list`` = kept as given) and
    ``CREATE_DEFAULTS`` (what :meth:`create` sets for an attribute it is not given; ``None`` or
    missing: absent). Inputs are read by *instance* index (``GetInputDesc`` /
    ``GetInputShape`` / ``GetInputTensor``: an absent optional input owns no instance, so the
    later ones shift) or by IR index (``GetOptionalInput*``), as gert reads them."""

    inputs: tuple[TensorDesc | None, ...]
    attrs: Mapping[int, Any] | None = field(default_factory=dict)
    outputs: tuple[TensorDesc | None, ...] = ()
    node_name: str = ""

    OP_TYPE: ClassVar[str] = ""
    INPUTS: ClassVar[tuple[tuple[str, bool], ...]] = ()
    OUTPUTS: ClassVar[tuple[str, ...]] = ()
    ATTRS: ClassVar[tuple[tuple[str, str], ...]] = ()
    CREATE_DEFAULTS: ClassVar[Mapping[str, Any]] = {}

    def __post_init__(self) -> None:
        for what, n in (("inputs", len(self.INPUTS)), ("outputs", len(self.OUTPUTS))):
            got = tuple(getattr(self, what))
            if len(got) > n:
                raise ValueError(f"{self.OP_TYPE} has {n} {what}, got {len(got)}")
            object.__setattr__(self, what, got + (None,) * (n - len(got)))
        if self.attrs is not None:
            object.__setattr__(self, "attrs", dict(self.attrs))
        object.__setattr__(self, "node_name", self.node_name or self.OP_TYPE)

    @property
    def INPUT_NAMES(self) -> tuple[str, ...]:  # noqa: N802 - read as the IR's names
        return tuple(name for name, _ in self.INPUTS)

    @classmethod
    def create(cls, *inputs: TensorDesc | None, outputs: Sequence[TensorDesc | None] = (),
               **named: Any) -> Any:
        """Attributes by name placed at their IR indices, each as its kind (one not given:
        ``CREATE_DEFAULTS``; ``None`` leaves it absent)."""
        kinds = dict(cls.ATTRS)
        unknown = set(named) - set(kinds)
        if unknown:
            raise TypeError(f"{cls.OP_TYPE} has no attribute {', '.join(sorted(unknown))}")
        attrs: dict[int, Any] = {}
        for i, (name, kind) in enumerate(cls.ATTRS):
            v = named[name] if name in named else cls.CREATE_DEFAULTS.get(name)
            if v is not None:
                attrs[i] = _ATTR_TYPES[kind](v)
        return cls(tuple(inputs), attrs, tuple(outputs))

    @classmethod
    def positional(cls, inputs: Sequence[TensorDesc | None], *attrs: Any,
                   outputs: Sequence[TensorDesc | None] = ()) -> Any:
        """Attributes given as a positional list: the i-th value lands on IR index i (as
        upstream's tiling UTs build their contexts)."""
        return cls(tuple(inputs), dict(enumerate(attrs)), tuple(outputs))

    # -- gert's getters ----------------------------------------------------------------------

    def GetInputDesc(self, index: int) -> TensorDesc | None:  # noqa: N802 - gert name
        """Descriptor by instance index (shifts when an optional input is absent)."""
        inst = [d for d, (_, req) in zip(self.inputs, self.INPUTS) if req or d is not None]
        return inst[index] if 0 <= index < len(inst) else None

    GetInputTensor = GetInputDesc  # the tensor is modelled by its descriptor

    def GetInputShape(self, index: int) -> tuple[int, ...] | None:  # noqa: N802
        """Storage shape by instance index, or ``None`` (a null pointer)."""
        desc = self.GetInputDesc(index)
        return None if desc is None else desc.shape

    def GetOptionalInputDesc(self, ir_index: int) -> TensorDesc | None:  # noqa: N802
        """Descriptor by IR index; ``None`` when that optional input is absent."""
        return self.inputs[ir_index] if 0 <= ir_index < len(self.inputs) else None

    GetOptionalInputTensor = GetOptionalInputDesc

    def GetOptionalInputShape(self, ir_index: int) -> tuple[int, ...] | None:  # noqa: N802
        desc = self.GetOptionalInputDesc(ir_index)
        return None if desc is None else desc.shape

    def GetOutputShape(self, index: int) -> tuple[int, ...] | None:  # noqa: N802
        desc = self.outputs[index] if 0 <= index < len(self.outputs) else None
        return None if desc is None else desc.shape

    def GetAttrs(self) -> Mapping[int, Any] | None:  # noqa: N802
        """The attribute set keyed by IR index, or ``None`` for a null set."""
        return self.attrs


def tensor_descs(specs: Iterable[tuple[Any, Any] | None]) -> list[TensorDesc | None]:
    """A :class:`TensorDesc` (dtype by its canonical name) of each ``(shape, dtype)`` spec,
    ``None`` for an absent one."""
    return [None if s is None else TensorDesc(s[0], dtype_name(s[1])) for s in specs]


class TilingStruct:
    """Members of a tiling-data dataclass of int64 fields (fields may be nested structs):
    values in serialisation order, as upstream's UT prints them, and by field name."""

    def as_list(self) -> list[int]:
        """The values in serialisation order (nested structs flattened)."""
        out: list[int] = []
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out.extend(v.as_list() if isinstance(v, TilingStruct) else [v])
        return out

    def as_dict(self) -> dict[str, Any]:
        """Field name -> value, in serialisation order (a nested struct as its own dict)."""
        return {f.name: v.as_dict() if isinstance(v := getattr(self, f.name), TilingStruct)
                else v for f in fields(self)}  # type: ignore[arg-type]

    def flat_dict(self) -> dict[str, Any]:
        """``field`` or ``struct.field`` -> value (nested names joined by a dot)."""
        out: dict[str, Any] = {}
        for name, v in self.as_dict().items():
            out.update({f"{name}.{k}": w for k, w in v.items()} if isinstance(v, dict)
                       else {name: v})
        return out

    def to_string(self) -> str:
        """The values as upstream's UT prints them (``TilingData2Str``: each followed by a
        space)."""
        return "".join(f"{v} " for v in self.as_list())

    def to_bytes(self) -> bytes:
        """The little-endian image the kernel copies (8 bytes a value)."""
        values = self.as_list()
        return struct.pack(f"<{len(values)}q", *values)

    @classmethod
    def from_list(cls, values: Sequence[int]) -> Any:
        """A flat struct from its values in serialisation order."""
        if len(values) != len(fields(cls)):  # type: ignore[arg-type]
            raise ValueError(f"{cls.__name__} needs {len(fields(cls))} values, "  # type: ignore
                             f"got {len(values)}")
        return cls(*(int(v) for v in values))


class TilingError(InputError):
    """The host tiling rejected a case (aclnn would return 561002)."""

    tag = "[561002] "

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


# aclnn status codes the two-phase calls return
ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_INNER_TILING_ERROR = 561002


class AclnnError(InputError):
    """An aclnn call failed; ``code`` is the aclnn status (161001, 161002, 561002)."""

    def __init__(self, code: int, message: str, rule: str | None = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.rule = rule


class RunContext:
    """Mutable stand-in for ``gert::TilingContext`` during one tiling call.

    ``ctx`` is the operator's own input description (it needs ``node_name`` and ``attrs``, a
    mapping from IR index to value); ``platform`` answers the platform queries. What the
    tiling writes back (key, block dim, workspace, saved tiling data) and its messages
    (``errors`` as ``(rule, message)``, ``warnings``, ``log``) stay here until the port turns
    them into its result.
    """

    def __init__(self, ctx: Any, platform: Any) -> None:
        self.ctx = ctx
        self.platform = platform
        self.tiling_key: int | None = None
        self.block_dim: int | None = None
        self.workspace: list[int] = []
        self.saved: Any = None
        self.errors: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        self.log: list[str] = []

    # gert-like accessors used by the ported functions
    def GetNodeName(self) -> str:
        return self.ctx.node_name

    def GetPlatformInfo(self) -> Any:
        return self.platform

    def SetBlockDim(self, block_dim: int) -> None:
        self.block_dim = block_dim

    def SetTilingKey(self, key: int) -> None:
        self.tiling_key = key

    def SetWorkspace(self, sizes: list[int]) -> None:
        self.workspace = list(sizes)

    def attr(self, index: int) -> Any:
        """Attribute by IR index, ``None`` when absent (no type check)."""
        return self.ctx.attrs.get(index)

    # logging
    def LogD(self, msg: str) -> None:
        self.log.append(f"[D] {msg}")

    def LogE(self, rule: str, msg: str) -> None:
        self.log.append(f"[E] {self.GetNodeName()}: {msg}")
        self.errors.append((rule, msg))

    def result(self, status: int, param: Any = None) -> TilingResult:
        """The call's :class:`TilingResult`: on a ``status`` other than ``GRAPH_SUCCESS`` the
        first error logged (rule and message), else what the tiling wrote back; ``param``: the
        op's intermediate record, if it keeps one."""
        if status != GRAPH_SUCCESS:
            rule, msg = self.errors[0] if self.errors else ("unknown", "tiling failed")
            return TilingResult("failed", error=f"{self.GetNodeName()} tiling failed [{rule}]: "
                                f"{msg}", rule=rule, warnings=tuple(self.warnings),
                                log=tuple(self.log))
        return TilingResult("success", self.tiling_key, self.saved, list(self.workspace),
                            self.block_dim, warnings=tuple(self.warnings), log=tuple(self.log),
                            param=param)


class PlatformAdapter(Protocol):
    """The platform queries host tilings make (``PlatformAscendC`` provides them)."""

    def GetCoreNumAiv(self) -> int: ...  # noqa: N802 - the CANN names

    def GetCoreMemSize(self, mem_type: Any = ...) -> int: ...  # noqa: N802


@dataclass(frozen=True)
class TilingResult:
    """Outcome of one tiling call.

    ``status`` is ``"success"`` or ``"failed"``. On failure ``rule`` is a short id of the check
    that failed and ``error`` a message naming the argument and the rule; ``tiling_data`` is
    ``None``. ``block_dim`` is ``None`` when the tiling never set it. ``param``: the op's own
    intermediate record, where its tiling keeps one.
    """

    status: str
    tiling_key: int | None = None
    tiling_data: Any = None
    workspace: list[int] = field(default_factory=list)
    block_dim: int | None = None
    error: str | None = None
    rule: str | None = None
    warnings: tuple[str, ...] = ()
    log: tuple[str, ...] = ()
    param: Any = None

    def answer(self) -> dict[str, Any]:
        """The ``aicore-sim tiling`` answer (the ``OpModel.tiling`` dict): the tiling data as
        ``flat_dict()`` where the record has one, else ``as_dict()``."""
        td = self.tiling_data
        data = None if td is None else getattr(td, "flat_dict", td.as_dict)()
        return {"status": self.status, "tiling_key": self.tiling_key, "tiling_data": data,
                "workspace": list(self.workspace), "block_dim": self.block_dim,
                "error": self.error}

    @property
    def ok(self) -> bool:
        """True when the tiling succeeded."""
        return self.status == "success"

    def raise_for_status(self) -> TilingResult:
        """Return ``self`` on success, else raise :class:`TilingError`."""
        if not self.ok:
            raise TilingError(self.error or "tiling failed", rule=self.rule)
        return self


# --- the aclnn layer's argument checks ----------------------------------------------------------


def aclnn_invalid(msg: str, rule: str) -> AclnnError:
    """161002 for a bad argument: the message names it and the rule."""
    return AclnnError(ACLNN_ERR_PARAM_INVALID, f"{msg} (rule {rule})", rule)


def specs_of(arrays: Mapping[str, Any]) -> dict[str, tuple[Any, Any] | None]:
    """``(shape, dtype)`` of each array (``None`` for an absent one): what an operator's
    infershape reads."""
    return {k: None if a is None else (tuple(a.shape), a.dtype) for k, a in arrays.items()}


def aclnn_out(name: str, value: Any, spec: tuple[Any, Any] | None) -> Any:
    """A caller's preallocated output (``None``: none) checked against the output's ``(shape,
    dtype)`` ``spec`` (``None``: the call produces no such output, any array is kept as given):
    161002 when it is not an array (``not_a_tensor``), or of another dtype (``out_dtype``) or
    shape (``out_shape``)."""
    import numpy as np

    arr = aclnn_tensor(name, value, False)
    if arr is None or spec is None:
        return arr
    if arr.dtype != np.dtype(spec[1]):
        raise aclnn_invalid(f"{name} dtype {dtype_name(arr.dtype)} must be the output's dtype "
                            f"{dtype_name(spec[1])}", "out_dtype")
    if tuple(arr.shape) != tuple(spec[0]):
        raise aclnn_invalid(f"{name} has shape {list(arr.shape)}, the operator's output shape "
                            f"is {list(spec[0])}", "out_shape")
    return arr


def aclnn_tensor(name: str, value: Any, required: bool) -> Any:
    """The argument as an ndarray, None for an absent optional one, or an AclnnError
    (161001 a required tensor missing, 161002 not an array)."""
    import numpy as np

    if value is None:
        if required:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is a required tensor but is None",
                             "nullptr")
        return None
    if not isinstance(value, np.ndarray):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} must be a numpy array, got {type(value).__name__}",
                         "not_a_tensor")
    return value


def aclnn_int(name: str, value: Any) -> Any:
    """An int attribute (not a bool), or 161002 (rule ``attr_type``)."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise aclnn_invalid(f"{name} must be an int, got {value!r}", "attr_type")
    return value


def aclnn_tiled(tr: TilingResult) -> TilingResult:
    """``tr`` when the tiling succeeded, else 561002 with its error and rule."""
    if not tr.ok:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"{tr.error} (rule {tr.rule})", tr.rule)
    return tr


def aclnn_workspace(workspace_size: int, asked: int) -> None:
    """161002 (rule ``workspace``) when the second phase gets less workspace than the first
    asked for."""
    if int(workspace_size) < asked:
        raise aclnn_invalid(f"workspace_size {workspace_size} is smaller than the "
                            f"{asked} bytes get_workspace_size asked for", "workspace")


def aclnn_int_list(name: str, value: Any, default: tuple[int, ...] | None = None) -> list[int]:
    """An int-list attribute (``default`` when None and a default is given), or 161002."""
    if value is None and default is not None:
        return list(default)
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a sequence of ints, got "
                         f"{value!r}", "attr_type") from None


# --- whose host tiling runs: the port's, or the operator's own C++ -------------------------------

_HOST_SOURCE: ContextVar[Any] = ContextVar("aicore_sim_host_source", default=None)


@contextmanager
def using_host_source(source: Any) -> Iterator[None]:
    """Within the block, ops run ``source``'s host tiling (an operator's own C++,
    ``aicore_sim.cfront.host.HostSource``: ``tiling(ctx, platform, cores)``) instead of their
    Python port's; ``None``: the ports."""
    token = _HOST_SOURCE.set(source)
    try:
        yield
    finally:
        _HOST_SOURCE.reset(token)


def current_host_source() -> Any:
    """The host source :func:`using_host_source` installed, or ``None`` (the ports')."""
    return _HOST_SOURCE.get()


def host_tiling(port: Callable[..., TilingResult], ctx: TilingContext, platform: Any,
                **kw: Any) -> TilingResult:
    """The host tiling of one call: ``port(ctx, platform, **kw)``, or, within
    :func:`using_host_source`, the C++ tiling of the op's own sources on the same context
    and platform (a :class:`~aicore_sim.ascendc.platform_ascendc.PlatformAscendC`)."""
    source = _HOST_SOURCE.get()
    if source is not None:  # asked for: an op its sources do not register is its error
        return source.tiling(ctx, platform.platform, platform.cores)
    return port(ctx, platform, **kw)

