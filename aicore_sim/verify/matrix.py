"""Case matrices: the values of an operator's case axes x platforms expanded into cases.

Step of the flow: the *case* at the head of the pipeline, many at once. ``aicore-sim verify
--matrix SPEC`` and the test suite expand the same file into the same cases.

Format (TOML, or the same keys as a JSON object)::

    op = "<op name>"                              # required: a registered op
    name = "equivalence"                          # optional; default: file stem
    description = "..."                           # optional
    mode = "functional"                           # optional: functional | timed
    standard = "bit-exact"                        # optional (see aicore_sim/verify/standards.py)
    seed = 0                                      # optional base seed
    platforms = ["ascend910b1", {preset = "ascend910b1", aiv_cores = 2}]   # optional

    [axes]                                        # required: every case axis of the op
    dtype = ["float16", "float32"]                # axis = a non-empty list of its values
    n = [7, 640]

The axes are the operator's own (``OpModel.matrix_axes``: axis name -> the rule one value
follows); the ``[axes]`` table names each of them once, no other. Every combination of one
value per axis and one platform is one case (order: the op's axes as it declares them, then
the platforms); the op turns each into one of its cases (``OpModel.matrix_case``, from
``MatrixCase.axes``). An op with no ``matrix_axes`` has no matrix.

A case is named ``axis=value-axis=value-...-platform`` (values and platform label reduced to
letters, digits, ``.`` and ``_``: a negative number ``-10`` is ``m10``, a list or table joins
its parts with ``_``), so names are file-safe and, since an axis's values must reduce to
distinct labels, unique. Platforms: a preset name or a table ``{preset = name, field = value
...}`` as in case files. Inputs are drawn with a seed derived from ``seed`` and the case name
without its platform, so a case keeps its data when the matrix around it changes.

``--matrix default`` (or ``bundled``) is the default op's bundled matrix, ``--matrix OPNAME``
the bundled matrix of that op (``OpModel.equivalence_matrix``).

Errors name the file and the field: ``m.toml: axes.n[1]: expected an integer >= 1``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.util import schema, textinput
from aicore_sim.verify import VerifyError

__all__ = [
    "bundled_matrix",
    "Matrix",
    "MatrixCase",
    "expand",
    "iter_cases",
    "label",
    "load_matrix",
    "parse_matrix",
]

_LABEL_CHARS = re.compile(r"[^A-Za-z0-9._]")


@dataclass(frozen=True)
class MatrixCase:
    """One expanded combination: ``axes`` = axis name -> the value (as the op's rule returned
    it), in the op's axis order."""

    name: str
    axes: Mapping[str, Any]
    platform: Platform
    seed: int


@dataclass(frozen=True)
class Matrix:
    """A validated matrix spec (``axes``: axis name -> its values, in the op's axis order)."""

    name: str
    op: str
    mode: str | None
    standard: str | None
    seed: int
    axes: Mapping[str, tuple[Any, ...]]
    platforms: tuple[tuple[str, Platform], ...]
    source: str = ""

    def __len__(self) -> int:
        n = len(self.platforms)
        for values in self.axes.values():
            n *= len(values)
        return n


def _platform(v: Any) -> tuple[str, Platform]:
    plat = load_platform(dict(v) if isinstance(v, Mapping) else v)
    if isinstance(v, str):
        return v, plat
    extra = "+".join(f"{k}={v[k]}" for k in v if k != "preset")
    name = str(v.get("preset", plat.name)) + (f"+{extra}" if extra else "")
    return name, plat


def _standard(v: str) -> str:
    from aicore_sim.verify.standards import parse_standard

    try:
        parse_standard(v, "standard")
    except VerifyError as e:
        raise ValueError(str(e)) from None
    return v


def _op(v: Any) -> str:
    from aicore_sim.ops.registry import UnknownOpError, get_op

    try:
        get_op(v)
    except UnknownOpError as e:
        raise ValueError(str(e).removeprefix("op: ")) from None
    return v


# A matrix's fields (module docstring): one declaration, checked by aicore_sim.util.schema; the
# [axes] table is then checked against the op's own axes (_axes_table)
_MATRIX = schema.Table({
    "op": schema.Custom(_op, "an operator name"),
    "name": schema.Text(),
    "description": schema.Text(empty=True),
    "mode": schema.Choice(("functional", "timed")),
    "standard": schema.Custom(_standard, "a name", (str,)),
    "seed": schema.Int(minimum=0),
    "platforms": schema.ListOf(schema.Custom(_platform, "a preset name or a table",
                                             (str, Mapping))),
    "axes": schema.Custom(dict, "a table of the op's case axes (axis = [values])", (Mapping,)),
}, required=("op", "axes"), what_text="one TOML table / JSON object (a matrix is one)")


def _axes_table(model: Any) -> schema.Table:
    """The ``[axes]`` rule of ``model``: each declared axis required, a non-empty list of
    distinct values that each follow the op's rule."""
    rules = dict(model.matrix_axes)
    return schema.Table({k: schema.ListOf(r, unique=True) for k, r in rules.items()},
                        required=tuple(rules),
                        what_text=f"a table of the axes {list(rules)}")


def label(value: Any) -> str:
    """An axis value as a name part: letters, digits, ``.`` and ``_`` (see the module
    docstring)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and value < 0:
        return "m" + label(-value)
    if isinstance(value, Mapping):
        return "_".join(f"{label(k)}{label(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "_".join(label(v) for v in value)
    return _LABEL_CHARS.sub("_", str(value))


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def parse_matrix(doc: Any, where: str = "matrix") -> Matrix:
    """Validate a decoded matrix document (see the module docstring)."""
    from aicore_sim.ops.registry import get_op

    try:
        m = _MATRIX.check(doc, "")
        model = get_op(m["op"])
        if not getattr(model, "matrix_axes", None):
            raise schema.FieldError("op", f"op {model.name} declares no matrix axes "
                                          "(OpModel.matrix_axes) (rule matrix_op)")
        axes = _axes_table(model).check(m["axes"], "axes")
        for k, values in axes.items():
            seen: dict[str, Any] = {}
            for v in values:
                if label(v) in seen:
                    raise schema.FieldError(
                        schema.key_path("axes", k),
                        f"values {schema.shown(seen[label(v)])} and {schema.shown(v)} give "
                        f"the same case-name part {label(v)!r}")
                seen[label(v)] = v
    except schema.FieldError as e:
        raise VerifyError(f"{where}: {e.path or '(top level)'}: {e.rule}") from None
    name = m.get("name", Path(where).stem)
    return Matrix(name, m["op"], m.get("mode"), m.get("standard"), m.get("seed", 0),
                  {k: tuple(_frozen(v) for v in vs) for k, vs in axes.items()},
                  tuple(m.get("platforms", [_platform("ascend910b1")])), where)


def bundled_matrix(name: str = "default") -> Path | None:
    """The bundled matrix file of op ``name`` (``default`` / ``bundled``: the default op's);
    ``None`` when ``name`` is not an op name."""
    from aicore_sim.ops.registry import default_op, get_op, op_names

    if name in ("default", "bundled"):
        model = default_op()
    elif name in op_names():
        model = get_op(name)
    else:
        return None
    if model.equivalence_matrix is None:
        raise VerifyError(f"--matrix {name}: op {model.name} bundles no equivalence matrix "
                          "(rule matrix_file)")
    return Path(model.equivalence_matrix)


def __getattr__(name: str) -> Any:
    if name == "BUNDLED_MATRIX":  # the default op's matrix, looked up when first asked for
        return bundled_matrix()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_matrix(spec: str | Path) -> Matrix:
    """Read a matrix file (``.toml`` or ``.json``); ``"default"`` = the default op's bundled
    matrix, an op name = that op's."""
    path = bundled_matrix(str(spec)) or Path(spec)
    try:
        text = textinput.read_document(path)
    except OSError as e:
        raise VerifyError(f"--matrix {path}: cannot read ({e.strerror}) (rule matrix_file)"
                          ) from None
    except textinput.TextInputError as e:
        raise VerifyError(f"--matrix {path}: {e} (rule matrix_file)") from None
    try:
        if path.suffix.lower() == ".json":
            doc = textinput.loads_json(text)
        else:
            doc = textinput.loads_toml(text)
    except textinput.TextInputError as e:
        raise VerifyError(f"{path.name}: {e} (rule matrix_syntax)") from None
    return parse_matrix(doc, path.name)


def expand(m: Matrix) -> list[MatrixCase]:
    """Every combination of the matrix as a :class:`MatrixCase`, in a fixed order (see
    :func:`iter_cases`; ``len(m)`` counts them without building them)."""
    return list(iter_cases(m))


def iter_cases(m: Matrix) -> Iterator[MatrixCase]:
    """The combinations of the matrix one at a time, in :func:`expand`'s order. A case's
    name (and its seed) starts with the op's ``matrix_label(axes)`` when the op has one (an op
    keeps the names and seeds, so the inputs, of matrices written before), else with
    ``axis=value`` parts."""
    from aicore_sim.ops.registry import get_op

    keys = tuple(m.axes)
    own = getattr(get_op(m.op), "matrix_label", None)
    for *values, (plabel, plat) in product(*m.axes.values(), m.platforms):
        axes = dict(zip(keys, values, strict=True))
        base = own(axes) if own is not None else "-".join(
            f"{k}={label(v)}" for k, v in axes.items())
        name = f"{base}-{_LABEL_CHARS.sub('_', plabel.replace('=', '').replace('+', '_'))}"
        seed = (m.seed + zlib.crc32(base.encode())) & 0x7FFFFFFF
        yield MatrixCase(name, axes, plat, seed)
