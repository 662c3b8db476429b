"""Case matrices: dtypes x shapes x probs x ranges x platforms expanded into cases.

Step of the flow: the *case* at the head of the pipeline, many at once. ``aicore-sim verify
--matrix SPEC`` and the test suite expand the same file into the same cases.

Format (TOML, or the same keys as a JSON object)::

    op = "<op name>"                              # required: a registered op
    name = "equivalence"                          # optional; default: file stem
    mode = "functional"                           # optional: functional | timed
    standard = "bit-exact"                        # optional (see aicore_sim/verify/standards.py)
    seed = 0                                      # optional base seed

    dtypes = ["bfloat16", "float16", "float32"]  # tokens dtype (grad, permuted tokens)
    probs = ["none", "bfloat16", "float32"]      # "none" = no probs (path A); "same" = tokens
    shapes = [{tokens = 5, topk = 3, hidden = 40}, {tokens = 3, topk = 2, hidden = 600}]
    ranges = ["none", "middle_half", [-10, -1]]  # optional; default ["none"]
    platforms = ["ascend910b1", {preset = "ascend910b1", aiv_cores = 2}]   # optional
    indices = ["permutation"]                    # optional: permutation | identity |
                                                 #   outside_window | duplicates

Every combination is one case (order: dtypes, probs, shapes, ranges, platforms, indices); the
op turns each into one of its cases (``OpModel.matrix_case``).
``ranges``: ``"none"`` = no range attribute; ``"middle_half"`` = ``[T/4, T/4 + T/2)`` of
``T = tokens * topk``; ``[start, end]`` = the raw attribute (negative values wrap, spec §3.8).
Platforms: a preset name or a table ``{preset = name, field = value ...}`` as in case files.
Dtypes take the case-file spellings (``bf16``, ``DT_FLOAT`` ...). Inputs are drawn as the
bundled cases draw them, with a seed derived from ``seed`` and the case name, so a case keeps
its data when the matrix around it changes.

``--matrix default`` (or ``bundled``) is the default op's bundled matrix, ``--matrix OPNAME``
the bundled matrix of that op (``OpModel.equivalence_matrix``).

Errors name the file and the field: ``m.toml: shapes[1].hidden: expected an integer >= 1``.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from aicore_sim import dtypes, schema, textinput
from aicore_sim.platform import Platform, load_platform
from aicore_sim.verify import VerifyError

__all__ = [
    "bundled_matrix",
    "Matrix",
    "MatrixCase",
    "expand",
    "load_matrix",
    "parse_matrix",
]

_REQUIRED = ("op", "dtypes", "probs", "shapes")
_INDEX_MODES = ("permutation", "identity", "outside_window", "duplicates")
_SHORT = dtypes.SHORT  # bf16, fp16, fp32: the float types a matrix takes, and their case names


@dataclass(frozen=True)
class MatrixCase:
    """One expanded combination (dtype names canonical; ``probs`` ``None`` = no probs)."""

    name: str
    dtype: str
    probs: str | None
    tokens: int
    topk: int
    hidden: int
    range: tuple[int, int] | None
    platform: Platform
    indices: str
    seed: int


@dataclass(frozen=True)
class Matrix:
    """A validated matrix spec."""

    name: str
    op: str
    mode: str | None
    standard: str | None
    seed: int
    dtypes: tuple[str, ...]
    probs: tuple[str | None, ...]
    shapes: tuple[tuple[int, int, int], ...]
    ranges: tuple[Any, ...]
    platforms: tuple[tuple[str, Platform], ...]
    indices: tuple[str, ...]
    source: str = ""

    def __len__(self) -> int:
        return (len(self.dtypes) * len(self.probs) * len(self.shapes) * len(self.ranges)
                * len(self.platforms) * len(self.indices))


def _dtype(v: str) -> str:
    name = dtypes.dtype_name(dtypes.as_dtype(v))
    if name not in _SHORT:
        raise ValueError(f"{v!r} is not a float dtype (bfloat16, float16, float32)")
    return name


def _probs(v: str) -> str:
    return v.lower() if v.lower() in ("none", "same") else _dtype(v)


def _platform(v: Any) -> tuple[str, Platform]:
    plat = load_platform(dict(v) if isinstance(v, Mapping) else v)
    if isinstance(v, str):
        return v, plat
    extra = "+".join(f"{k}={v[k]}" for k in v if k != "preset")
    label = str(v.get("preset", plat.name)) + (f"+{extra}" if extra else "")
    return label, plat


def _standard(v: str) -> str:
    from aicore_sim.verify.standards import parse_standard

    try:
        parse_standard(v, "standard")
    except VerifyError as e:
        raise ValueError(str(e)) from None
    return v


def _op(v: Any) -> str:
    from aicore_sim.registry import UnknownOpError, get_op

    try:
        get_op(v)
    except UnknownOpError as e:
        raise ValueError(str(e).removeprefix("op: ")) from None
    return v


_POS = schema.Int(minimum=1)
# A matrix's fields (module docstring): one declaration, checked by aicore_sim.schema
_MATRIX = schema.Table({
    "op": schema.Custom(_op, "an operator name"),
    "name": schema.Text(),
    "description": schema.Text(empty=True),
    "mode": schema.Choice(("functional", "timed")),
    "standard": schema.Custom(_standard, "a name", (str,)),
    "seed": schema.Int(minimum=0),
    "dtypes": schema.ListOf(schema.Custom(_dtype, "a dtype name", (str,))),
    "probs": schema.ListOf(schema.Custom(_probs, "a dtype name, 'none' or 'same'", (str,))),
    "shapes": schema.ListOf(schema.Table({"tokens": _POS, "topk": _POS, "hidden": _POS},
                                         required=("tokens", "topk", "hidden"),
                                         what_text="a table {tokens = N, topk = K, hidden = H}")),
    "ranges": schema.ListOf(schema.AnyOf((
        schema.Choice(("none", "middle_half")),
        schema.ListOf(schema.Int(), length=2)))),
    "platforms": schema.ListOf(schema.Custom(_platform, "a preset name or a table",
                                             (str, Mapping))),
    "indices": schema.ListOf(schema.Choice(_INDEX_MODES)),
}, required=_REQUIRED, what_text="one TOML table / JSON object (a matrix is one)")


def parse_matrix(doc: Any, where: str = "matrix") -> Matrix:
    """Validate a decoded matrix document (see the module docstring)."""
    try:
        m = _MATRIX.check(doc, "")
    except schema.FieldError as e:
        raise VerifyError(f"{where}: {e.path or '(top level)'}: {e.rule}") from None
    name = m.get("name", Path(where).stem)
    return Matrix(name, m["op"], m.get("mode"), m.get("standard"), m.get("seed", 0),
                  tuple(m["dtypes"]), tuple(m["probs"]),
                  tuple((s["tokens"], s["topk"], s["hidden"]) for s in m["shapes"]),
                  tuple(r if isinstance(r, str) else tuple(r) for r in m.get("ranges", ["none"])),
                  tuple(m.get("platforms", [_platform("ascend910b1")])),
                  tuple(m.get("indices", ["permutation"])), where)


def bundled_matrix(name: str = "default") -> Path | None:
    """The bundled matrix file of op ``name`` (``default`` / ``bundled``: the default op's);
    ``None`` when ``name`` is not an op name."""
    from aicore_sim.registry import default_op, get_op, op_names

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


def _range_label(r: Any) -> str:
    if r == "none":
        return "norange"
    if r == "middle_half":
        return "mid"
    return f"r{r[0]}_{r[1]}"


def expand(m: Matrix) -> list[MatrixCase]:
    """Every combination of the matrix as a :class:`MatrixCase`, in a fixed order."""
    out = []
    for dt, pr, (n, k, h), rg, (plabel, plat), ix in product(
            m.dtypes, m.probs, m.shapes, m.ranges, m.platforms, m.indices):
        probs = None if pr == "none" else dt if pr == "same" else pr
        t = n * k
        rng = None if rg == "none" else (t // 4, t // 4 + t // 2) if rg == "middle_half" else rg
        base = (f"{_SHORT[dt]}-{'noprobs' if probs is None else _SHORT[probs]}-n{n}k{k}h{h}-"
                f"{_range_label(rg)}-{ix}")
        name = f"{base}-{plabel}".replace("=", "").replace("+", "_")
        seed = (m.seed + zlib.crc32(base.encode())) & 0x7FFFFFFF
        out.append(MatrixCase(name, dt, probs, n, k, h, rng, plat, ix, seed))
    return out
