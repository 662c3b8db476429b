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
      "data": {"seed": 0},                                 (optional)
      "kernel_source": "path/to/op_kernel",                (optional)
      "tiling": {"inputReserveNum": 2}                     (optional)
    }

- ``op``: a registered operator (:mod:`aicore_sim.ops.registry`); its
  :class:`~aicore_sim.ops.opmodel.OpModel` names the inputs (required or optional) and the
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
  family preset); see :func:`aicore_sim.sim.platform.load_platform`. Default ``ascend910b1``.
- ``kernel_source``: the operator's own Ascend C kernel sources (a folder holding
  ``<entry>.cpp``, e.g. ``ops-transformer/moe/<op>/op_kernel``, or one ``.cpp``), relative
  to the case file: run them, compiled against aicore-sim's shim, instead of the Python
  port (``run --kernel-src`` does the same and wins); docs/cpp_kernels.md.
- ``tiling``: tiling fields to set, by name, to integers (``run --tiling FIELD=VALUE`` does
  the same and wins): the op's tiling space plans the rest of the host tiling around them and
  refuses what the kernel's rules or the UB do not allow (``aicore-sim tiling CASE`` lists the
  fields).
- ``data``: how input values are made when no ``--inputs DIR`` is given: ``seed`` (default 0)
  for seeded random values — float tensors uniform in the input's ``value_range`` (default
  [-2, 2); e.g. routing weights in [0.01, 0.99]), integer index tensors a random permutation
  of ``[0, size)``; ``case``, the name of one of the operator's bundled cases, draws the
  values as that case draws them (its routing, windows and ranges), with ``seed`` - what
  ``aicore-sim cases --json`` writes, so that the document runs exactly as ``run --case NAME``
  (the inputs' shapes and dtypes must be that case's). With ``--inputs DIR`` every present
  input is read from ``DIR/<input name>.npy`` and must be exactly the case's shape and dtype
  (:func:`aicore_sim.sim.dtypes.read_npy`: a raw ``|V2`` item only for bfloat16).

A JSON key given twice in one object is refused, naming it (:mod:`aicore_sim.util.textinput`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sim import dtypes
from aicore_sim.sim.errors import InputError
from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.util import schema, textinput

DEFAULT_PLATFORM = "ascend910b1"
MODES = ("functional", "timed", "timing-only")


class CaseFileError(InputError):
    """A case file is malformed; the message starts with the path of the bad field."""


@dataclass(frozen=True)
class OpSpec:
    """What the case format knows of an operator (from its
    :class:`~aicore_sim.ops.opmodel.OpModel`): input names (IR order) and the required ones,
    attributes by name with their kinds, outputs."""

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
        """The operator's :class:`~aicore_sim.ops.opmodel.OpModel`."""
        from aicore_sim.ops.registry import get_op

        return get_op(self.name)


def op_spec(name: Any, field: str = "op") -> OpSpec:
    """The case-format view of registered operator ``name`` (unknown: a CaseFileError)."""
    from aicore_sim.ops.registry import UnknownOpError, get_op

    try:
        return OpSpec.of(get_op(name, field))
    except UnknownOpError as e:
        raise CaseFileError(str(e)) from None


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
    kernel_source: str | None = None  # as written (relative to the case file's folder)
    tiling: dict[str, int] | None = None  # tiling fields set by hand (the op's tiling space)
    data_case: str | None = None  # ``data.case``: the bundled case whose draw makes the data

    @property
    def positional_attrs(self) -> bool:
        return isinstance(self.attrs, list)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _fail(where: str, msg: str) -> CaseFileError:
    return CaseFileError(f"{where}: {msg}")


def _input_spec(value: Mapping[str, Any], path: str) -> InputSpec:
    """An input's checked ``{shape, dtype}`` as an :class:`InputSpec` (numpy must be able to
    describe the array)."""
    dims, dtype = tuple(value["shape"]), value["dtype"]
    extent = math.prod(max(d, 1) for d in dims) * dtype.itemsize
    if extent >= 1 << 62:  # numpy cannot describe such an array, even with a zero dimension
        raise schema.FieldError(f"{path}.shape", f"{list(dims)}: the product of the non-zero "
                                f"dimensions x {dtype.itemsize} bytes must stay below 2^62")
    return InputSpec(dims, dtype)


_DTYPE = schema.Custom(dtypes.as_dtype, "a dtype name", (str,))
_INPUT = schema.Table({"shape": schema.ListOf(schema.Int(minimum=0), nonempty=False),
                       "dtype": _DTYPE}, required=("shape", "dtype"),
                      what_text='an object {"shape": [...], "dtype": ...} or null')
_ATTR_KINDS: dict[str, schema.Rule] = {
    "bool": schema.Flag(),
    "int": schema.Int(),
    "int_list": schema.ListOf(schema.Int(), nonempty=False),
    "float": schema.Number(),
    "str": schema.Text(empty=True),
}


def _case_name(value: str) -> str:
    if any(c in value for c in "/\\\0") or value.strip(".") == "":
        raise ValueError(f"{json.dumps(value)}: a case name names output folders and must not "
                         "contain '/', '\\' or be made of dots")
    return value


# The case file's fields; "inputs" and "attrs" depend on the operator named by "op" and are
# checked once it is known (:func:`_op_fields`).
_CASE = schema.Table({
    "op": schema.Anything(),
    "name": schema.Custom(_case_name, "a non-empty string", (str,)),
    "description": schema.Text(empty=True),
    "inputs": schema.Anything(),
    "attrs": schema.Anything(),
    "platform": schema.Custom(load_platform, "a preset name or an object", (str, Mapping)),
    "mode": schema.Choice(MODES),
    "data": schema.Table({"seed": schema.Int(minimum=0), "case": schema.Text()}),
    "kernel_source": schema.Text(),
    "tiling": schema.Table({}, open=True, what_text="an object mapping tiling fields to "
                                                    "integers"),
}, required=("inputs",), null_is_absent=True,
    what_text="one JSON object (a case file holds one)")


def _op_fields(op: OpSpec) -> tuple[schema.Rule, schema.Rule]:
    """The rules of ``inputs`` and ``attrs`` for operator ``op``."""
    inputs = schema.Table({k: _INPUT for k in op.inputs}, required=op.required,
                          null_is_absent=True,
                          what_text="an object mapping input names to {shape, dtype}")
    kinds = dict(zip(op.attrs, op.attr_kinds))
    named = schema.Table({k: _ATTR_KINDS.get(kinds.get(k, ""), schema.Anything())
                          for k in op.attrs}, null_is_absent=True)
    # a list gives the attributes by position (tiling only; the tiling checks them)
    attrs = schema.AnyOf((named, schema.ListOf(nonempty=False)))
    return inputs, attrs


def _document_parser(op: Any) -> Any:
    """The optional member ``parse_case_document(doc, name, base)`` of a registered operator
    whose case files have fields of their own (``cpp_kernel``), else ``None``."""
    from aicore_sim.ops.registry import get_op, op_names

    if not isinstance(op, str) or op not in op_names():
        return None
    return getattr(get_op(op), "parse_case_document", None)


def parse_case(doc: Any, name: str = "case", base: Path | None = None) -> CaseFile:
    """Validate a decoded case document (see the module docstring for the format); ``base``
    is the case file's folder (what an operator's own path fields are relative to)."""
    if not isinstance(doc, Mapping):
        raise _fail("(top level)", "a case file holds one JSON object")
    own = _document_parser(doc.get("op"))
    if own is not None:
        try:
            return own(doc, name, base)
        except schema.FieldError as e:
            raise CaseFileError(str(e)) from None
    try:
        for k in doc:  # unknown fields first, before the operator is looked up
            if k not in _CASE.fields:
                raise schema.FieldError(k, f"unknown field; expected some of {list(_CASE.fields)}")
        op = op_spec(doc.get("op"))
        inputs_rule, attrs_rule = _op_fields(op)
        top = _CASE.check(doc, "")
        present = {k: _input_spec(v, f"inputs.{k}")
                   for k, v in inputs_rule.check(top["inputs"], "inputs").items()}
        attrs = attrs_rule.check(top.get("attrs", {}), "attrs")
    except schema.FieldError as e:
        raise CaseFileError(str(e)) from None
    inputs: dict[str, InputSpec | None] = {k: present.get(k) for k in op.inputs}
    platform = top.get("platform") or load_platform(DEFAULT_PLATFORM)
    seed = top.get("data", {}).get("seed", 0)
    data_case = top.get("data", {}).get("case")
    if data_case is not None:
        model = op.model
        if data_case not in model.cases():
            raise CaseFileError(f"data.case: {json.dumps(data_case)} is not a bundled case of "
                                f"op {op.name} ('aicore-sim cases' lists them)")
        specs = model.case_specs(model.cases()[data_case])[0]
        want = {k: None if s is None else (tuple(s[0]), np.dtype(s[1]))
                for k, s in specs.items()}
        have = {k: None if s is None else (tuple(s.shape), np.dtype(s.dtype))
                for k, s in inputs.items()}
        if want != have:
            k = next(k for k in want if want[k] != have.get(k))
            raise CaseFileError(f"data.case: the bundled case {data_case}'s input {k} is "
                                f"{_spec_text(want[k])}, this file's {_spec_text(have.get(k))}; "
                                "its draw makes only its own shapes and dtypes")
    tiling = top.get("tiling")
    for k, v in (tiling or {}).items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise CaseFileError(f"tiling.{k}: must be an integer, got {v!r}")
    return CaseFile(top.get("name", name), op, inputs, attrs, platform, top.get("mode"), seed,
                    top.get("description", ""), dict(doc), top.get("kernel_source"),
                    dict(tiling) if tiling else None, data_case)


def _spec_text(s: Any) -> str:
    return "absent" if s is None else f"{list(s[0])} {dtypes.dtype_name(s[1])}"


def load_case(path: str | os.PathLike) -> CaseFile:
    """Read and validate a case file; errors name the file and the field."""
    path = Path(path)
    try:
        doc = textinput.loads_json(textinput.read_text(path))
    except textinput.NotUtf8Error as e:
        raise CaseFileError(f"{path}: not UTF-8 text (byte 0x{e.byte:02x} at offset {e.offset}); "
                            "a case file is JSON in UTF-8") from None
    except textinput.TextInputError as e:
        raise CaseFileError(f"{path}: {e}") from None
    try:
        cf = parse_case(doc, path.stem, path.parent)
    except CaseFileError as e:
        raise CaseFileError(f"{path.name}: {e}") from None
    if cf.kernel_source is not None:  # relative to the case file's folder
        src = (path.parent / cf.kernel_source).resolve()
        if not src.exists():
            raise CaseFileError(f"{path.name}: kernel_source: {src} does not exist")
        cf = dataclasses.replace(cf, kernel_source=str(src))
    return cf


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_data(case: CaseFile, seed: int | None = None) -> dict[str, np.ndarray | None]:
    """Seeded random values for every present input (see the module docstring); an
    operator with the optional member ``case_file_data(case, seed)`` makes its own."""
    from aicore_sim.ops.opmodel import draw_inputs

    own = getattr(case.op.model, "case_file_data", None)
    if own is not None:
        return own(case, seed)
    if case.data_case is not None:  # the bundled case's own draw (checked: same shapes)
        model = case.op.model
        return model.case_inputs(model.cases()[case.data_case],
                                 case.seed if seed is None else seed)

    return draw_inputs({k: None if s is None else (s.shape, s.dtype)
                        for k, s in case.inputs.items()},
                       dict(zip(case.op.inputs, case.op.value_ranges)),
                       case.seed if seed is None else seed)


def read_data(case: CaseFile, folder: str | os.PathLike) -> dict[str, np.ndarray | None]:
    """Every present input from ``folder/<input name>.npy``, checked against the case.

    The files are read into memory when the command starts (the memory check counts them),
    not mapped: a file changed or cut short during the run cannot reach the simulation, nor
    kill it with SIGBUS as a mapped file cut short would."""
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
        from aicore_sim.ops.registry import find_case

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
        "data": {"seed": case.seed, "case": case.name},  # its own draw: runs as --case does
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
