"""JSON case files: one operator call (inputs, attributes, platform, data) the CLI can run.

Step of the flow: the *case* at the head of the pipeline, in a file. ``aicore-sim run`` and
``aicore-sim tiling`` read it; :func:`load_case` validates it and every message names the
offending field (``inputs.probs.dtype: unknown dtype 'bf17'; expected one of …``).

Format (a JSON object; ``aicore-sim cases --json`` prints every bundled case in it)::

    {
      "op": "<operator name>",                             (aicore-sim cases lists them)
      "name": "tiny",                                      (optional; default: file stem)
      "inputs": {
        "<input name>": {"shape": [10, 64], "dtype": "bfloat16"},
        "<optional input name>": null,
        ...
      },
      "attrs": {"<attribute name>": value, ...},
      "platform": "ascend910b1",
      "mode": "timed",                                     (optional)
      "data": {"seed": 0}                                  (optional)
    }

- ``op``: a registered operator (:mod:`aicore_sim.registry`); its
  :class:`~aicore_sim.opmodel.OpModel` names the inputs (required or optional) and the
  attributes (and their kinds) this file may give; ``examples/cases/`` has examples.
- ``inputs``: the operator's inputs by name; an optional input is absent when it is ``null``
  or missing. ``dtype`` takes numpy / ml_dtypes names (``bfloat16``, ``float16``, ``float32``,
  ``int32``, ``int64``), short forms (``bf16``, ``fp16``, ``fp32``, ``half``) and CANN
  ``DT_*`` spellings (``DT_BF16``, ``DT_FLOAT16``, ``DT_FLOAT``, ``DT_INT32``). ``shape`` is a
  list of non-negative integers. Operator rules (ranks, shape relations, dtype combinations,
  ranges) are checked by the operator API, which answers with aclnn error codes.
- ``attrs``: attributes by name; ``null`` or missing = not given (the IR default). A ``bool``
  attribute takes true/false, an ``int`` an integer, an ``int_list`` a list of integers. For
  ``aicore-sim tiling`` only, ``attrs`` may also be a list: values placed on IR attribute
  indices 0, 1, 2 … in order, exactly as upstream's tiling unit tests build their contexts.
- ``platform``: a preset name (``aicore-sim platforms`` lists them), ``{"preset": name,
  field: value, …}`` (a preset with fields replaced) or a dict of fields (the rest from the
  family preset); see :func:`aicore_sim.platform.load_platform`. Default ``ascend910b1``.
- ``data``: how input values are made when no ``--inputs DIR`` is given: ``seed`` (default 0)
  for seeded random values — float tensors uniform in the input's ``value_range`` (default
  [-2, 2); e.g. routing weights in [0.01, 0.99]), integer index tensors a random permutation
  of ``[0, size)``. With ``--inputs DIR`` every present input is read from
  ``DIR/<input name>.npy`` and must be exactly the case's shape and dtype
  (:func:`aicore_sim.dtypes.read_npy`: a raw ``|V2`` item only for bfloat16).

A JSON key given twice in one object is refused, naming it (:mod:`aicore_sim.textinput`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import dtypes, textinput
from aicore_sim.errors import InputError
from aicore_sim.platform import Platform, load_platform

DEFAULT_PLATFORM = "ascend910b1"
MODES = ("functional", "timed", "timing-only")


class CaseFileError(InputError):
    """A case file is malformed; the message starts with the path of the bad field."""


@dataclass(frozen=True)
class OpSpec:
    """What the case format knows of an operator (from its :class:`~aicore_sim.opmodel.OpModel`):
    input names (IR order) and the required ones, attributes by name with their kinds, outputs."""

    name: str
    inputs: tuple[str, ...]
    required: tuple[str, ...]
    attrs: tuple[str, ...]
    outputs: tuple[str, ...]
    attr_kinds: tuple[str, ...] = ()
    value_ranges: tuple[tuple[float, float], ...] = ()

    @classmethod
    def of(cls, model: Any) -> OpSpec:
        return cls(model.name, tuple(t.name for t in model.inputs),
                   tuple(t.name for t in model.inputs if not t.optional),
                   tuple(a.name for a in model.attrs), tuple(t.name for t in model.outputs),
                   tuple(a.kind for a in model.attrs),
                   tuple(tuple(t.value_range) for t in model.inputs))

    @property
    def model(self) -> Any:
        """The operator's :class:`~aicore_sim.opmodel.OpModel`."""
        from aicore_sim.registry import get_op

        return get_op(self.name)


def op_spec(name: Any, field: str = "op") -> OpSpec:
    """The case-format view of registered operator ``name`` (unknown: a CaseFileError)."""
    from aicore_sim.registry import UnknownOpError, get_op

    try:
        return OpSpec.of(get_op(name, field))
    except UnknownOpError as e:
        raise CaseFileError(str(e)) from None


_TOP_KEYS = ("op", "name", "description", "inputs", "attrs", "platform", "mode", "data")
_DATA_KEYS = ("seed",)


@dataclass(frozen=True)
class InputSpec:
    """Shape and dtype of one present input."""

    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class CaseFile:
    """A validated case: absent optional inputs are ``None`` in :attr:`inputs`."""

    name: str
    op: OpSpec
    inputs: dict[str, InputSpec | None]
    attrs: dict[str, Any] | list[Any]
    platform: Platform
    mode: str | None = None
    seed: int = 0
    description: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def positional_attrs(self) -> bool:
        return isinstance(self.attrs, list)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _fail(where: str, msg: str) -> CaseFileError:
    return CaseFileError(f"{where}: {msg}")


def _int(value: Any, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"expected an integer, got {json.dumps(value)}")
    if minimum is not None and value < minimum:
        raise _fail(where, f"must be >= {minimum}, got {value}")
    return value


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list of integers or null, got {json.dumps(value)}")
    return [_int(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _input(value: Any, where: str) -> InputSpec:
    if not isinstance(value, Mapping):
        raise _fail(where, f"expected an object {{\"shape\": [...], \"dtype\": ...}} or null, "
                           f"got {json.dumps(value)}")
    extra = sorted(set(value) - {"shape", "dtype"})
    if extra:
        raise _fail(f"{where}.{extra[0]}", "unknown field; expected 'shape' and 'dtype'")
    if "shape" not in value:
        raise _fail(f"{where}.shape", "missing")
    if "dtype" not in value:
        raise _fail(f"{where}.dtype", "missing")
    shape = value["shape"]
    if not isinstance(shape, list):
        raise _fail(f"{where}.shape", f"expected a list of integers, got {json.dumps(shape)}")
    dims = tuple(_int(d, f"{where}.shape[{i}]", 0) for i, d in enumerate(shape))
    dt = value["dtype"]
    if not isinstance(dt, str):
        raise _fail(f"{where}.dtype", f"expected a dtype name, got {json.dumps(dt)}")
    try:
        dtype = dtypes.as_dtype(dt)
    except ValueError as e:
        raise _fail(f"{where}.dtype", str(e)) from None
    extent = math.prod(max(d, 1) for d in dims) * dtype.itemsize
    if extent >= 1 << 62:  # numpy cannot describe such an array, even with a zero dimension
        raise _fail(f"{where}.shape", f"{list(dims)}: the product of the non-zero dimensions x "
                                      f"{dtype.itemsize} bytes must stay below 2^62")
    return InputSpec(dims, dtype)


def _attrs(value: Any, op: OpSpec) -> dict[str, Any] | list[Any]:
    if value is None:
        return {}
    if isinstance(value, list):
        return list(value)  # positional (tiling only); checked by the tiling itself
    if not isinstance(value, Mapping):
        raise _fail("attrs", f"expected an object (or a positional list), "
                             f"got {json.dumps(value)}")
    out: dict[str, Any] = {}
    kinds = dict(zip(op.attrs, op.attr_kinds))
    for k, v in value.items():
        if k not in op.attrs:
            raise _fail(f"attrs.{k}", f"unknown attribute; expected one of {list(op.attrs)}")
        if v is None:
            continue
        kind = kinds.get(k)
        if kind == "bool":
            if not isinstance(v, bool):
                raise _fail(f"attrs.{k}", f"expected true or false, got {json.dumps(v)}")
        elif kind == "int_list":
            v = _int_list(v, f"attrs.{k}")
        elif kind == "int":
            v = _int(v, f"attrs.{k}")
        elif kind == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _fail(f"attrs.{k}", f"expected a number, got {json.dumps(v)}")
            v = float(v)
        elif kind == "str" and not isinstance(v, str):
            raise _fail(f"attrs.{k}", f"expected a string, got {json.dumps(v)}")
        out[k] = v
    return out


def _platform(value: Any) -> Platform:
    if value is None:
        value = DEFAULT_PLATFORM
    if not isinstance(value, (str, Mapping)):
        raise _fail("platform", f"expected a preset name or an object, got {json.dumps(value)}")
    try:
        return load_platform(value)
    except (ValueError, KeyError, TypeError) as e:
        msg = str(e.args[0]) if e.args else str(e)
        raise _fail("platform", msg) from None


def parse_case(doc: Any, name: str = "case") -> CaseFile:
    """Validate a decoded case document (see the module docstring for the format)."""
    if not isinstance(doc, Mapping):
        raise _fail("(top level)", "a case file holds one JSON object")
    for k in doc:
        if k not in _TOP_KEYS:
            raise _fail(k, f"unknown field; expected some of {list(_TOP_KEYS)}")
    op = op_spec(doc.get("op"))
    raw_inputs = doc.get("inputs")
    if not isinstance(raw_inputs, Mapping):
        raise _fail("inputs", "expected an object mapping input names to {shape, dtype}")
    for k in raw_inputs:
        if k not in op.inputs:
            raise _fail(f"inputs.{k}", f"unknown input; expected some of {list(op.inputs)}")
    inputs: dict[str, InputSpec | None] = {}
    for k in op.inputs:
        v = raw_inputs.get(k)
        if v is None:
            if k in op.required:
                raise _fail(f"inputs.{k}", "missing; this input is required")
            inputs[k] = None
        else:
            inputs[k] = _input(v, f"inputs.{k}")
    attrs = _attrs(doc.get("attrs"), op)
    platform = _platform(doc.get("platform"))
    mode = doc.get("mode")
    if mode is not None and mode not in MODES:
        raise _fail("mode", f"unknown mode {json.dumps(mode)}; expected one of {list(MODES)}")
    data = doc.get("data")
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _fail("data", f"expected an object, got {json.dumps(data)}")
    for k in data:
        if k not in _DATA_KEYS:
            raise _fail(f"data.{k}", f"unknown field; expected some of {list(_DATA_KEYS)}")
    seed = _int(data.get("seed", 0), "data.seed", 0)
    case_name = doc.get("name", name)
    if not isinstance(case_name, str) or not case_name:
        raise _fail("name", f"expected a non-empty string, got {json.dumps(case_name)}")
    if any(c in case_name for c in "/\\\0") or case_name.strip(".") == "":
        raise _fail("name", f"{json.dumps(case_name)}: a case name names output folders and "
                            "must not contain '/', '\\' or be made of dots")
    return CaseFile(case_name, op, inputs, attrs, platform, mode, seed,
                    str(doc.get("description", "")), dict(doc))


def load_case(path: str | os.PathLike) -> CaseFile:
    """Read and validate a case file; errors name the file and the field."""
    path = Path(path)
    try:
        text = textinput.read_document(path).decode("utf-8")
    except OSError as e:
        raise CaseFileError(f"{path}: cannot read ({e.strerror})") from None
    except textinput.TextInputError as e:
        raise CaseFileError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise CaseFileError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                            f"{e.start}); a case file is JSON in UTF-8") from None
    try:
        doc = textinput.loads_json(text)
    except textinput.TextInputError as e:
        raise CaseFileError(f"{path}: {e}") from None
    try:
        return parse_case(doc, path.stem)
    except CaseFileError as e:
        raise CaseFileError(f"{path.name}: {e}") from None


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_data(case: CaseFile, seed: int | None = None) -> dict[str, np.ndarray | None]:
    """Seeded random values for every present input (see the module docstring)."""
    rng = np.random.default_rng(case.seed if seed is None else seed)
    ranges = dict(zip(case.op.inputs, case.op.value_ranges))
    out: dict[str, np.ndarray | None] = {}
    for name, spec in case.inputs.items():
        if spec is None:
            out[name] = None
            continue
        size = int(np.prod(spec.shape, dtype=np.int64))
        if spec.dtype.kind in "iu":
            out[name] = rng.permutation(size).astype(spec.dtype).reshape(spec.shape)
            continue
        lo, hi = ranges.get(name, (-2.0, 2.0))
        v = rng.random(size, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)
        out[name] = v.astype(spec.dtype).reshape(spec.shape)
    return out


def read_data(case: CaseFile, folder: str | os.PathLike) -> dict[str, np.ndarray | None]:
    """Every present input from ``folder/<input name>.npy``, checked against the case.

    The files are memory-mapped read-only: a big input costs address space, and its pages
    are read as the kernel touches them (no copy is ever made of an input)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CaseFileError(f"--inputs {folder}: not a folder")
    out: dict[str, np.ndarray | None] = {}
    for name, spec in case.inputs.items():
        if spec is None:
            out[name] = None
            continue
        f = folder / f"{name}.npy"
        if not f.is_file():
            raise CaseFileError(f"--inputs: {f.name} missing (input {name} is present in the "
                                f"case)")
        try:
            arr = dtypes.read_npy(f, spec.shape, spec.dtype)
        except OSError as e:
            raise CaseFileError(f"--inputs: {f.name}: cannot read ({e.strerror or e})") from None
        except ValueError as e:
            raise CaseFileError(f"--inputs: {f.name}: {e} (inputs.{name} is "
                                f"{list(spec.shape)} {dtypes.dtype_name(spec.dtype)})") from None
        out[name] = arr
    return out


# --------------------------------------------------------------------------------------------
# From a named case
# --------------------------------------------------------------------------------------------


def case_document(case: Any, platform: str | Mapping[str, Any] = DEFAULT_PLATFORM,
                  model: Any = None) -> dict[str, Any]:
    """The case-file document of a bundled case of ``model`` (default: the op bundling a case
    of that name); inputs and attributes come from the model's ``case_specs``."""
    if model is None:
        from aicore_sim.registry import find_case

        model, _ = find_case(case.name)
    specs, attrs = model.case_specs(case)
    return {
        "op": model.name,
        "name": case.name,
        "description": case.description,
        "inputs": {k: None if s is None else {"shape": list(s[0]),
                                               "dtype": dtypes.dtype_name(s[1])}
                   for k, s in specs.items()},
        "attrs": dict(attrs),
        "platform": platform,
        "data": {"seed": case.seed},
    }


__all__ = [
    "CaseFile",
    "CaseFileError",
    "InputSpec",
    "OpSpec",
    "case_document",
    "load_case",
    "make_data",
    "op_spec",
    "parse_case",
    "read_data",
]
