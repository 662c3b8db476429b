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

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from aicore_sim import dtypes, textinput
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

_KEYS = ("op", "name", "description", "mode", "standard", "seed", "dtypes", "probs", "shapes",
         "ranges", "platforms", "indices")
_REQUIRED = ("op", "dtypes", "probs", "shapes")
_INDEX_MODES = ("permutation", "identity", "outside_window", "duplicates")
_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


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


class _Fail:
    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, field: str, msg: str) -> VerifyError:
        return VerifyError(f"{self.where}: {field}: {msg}")


def _list(doc: Mapping[str, Any], key: str, fail: _Fail, default: list[Any] | None = None
          ) -> list[Any]:
    if key not in doc:
        if default is None:
            raise fail(key, "missing; this field is required")
        return default
    v = doc[key]
    if not isinstance(v, list) or not v:
        raise fail(key, f"expected a non-empty list, got {json.dumps(v, default=str)}")
    return v


def _dtype(v: Any, field: str, fail: _Fail) -> str:
    if not isinstance(v, str):
        raise fail(field, f"expected a dtype name, got {json.dumps(v, default=str)}")
    try:
        dt = dtypes.as_dtype(v)
    except ValueError as e:
        raise fail(field, str(e)) from None
    name = dtypes.dtype_name(dt)
    if name not in _SHORT:
        raise fail(field, f"{v!r} is not a float dtype (bfloat16, float16, float32)")
    return name


def _int(v: Any, field: str, fail: _Fail, minimum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise fail(field, f"expected an integer, got {json.dumps(v, default=str)}")
    if minimum is not None and v < minimum:
        raise fail(field, f"expected an integer >= {minimum}, got {v}")
    return v


def _platform(v: Any, field: str, fail: _Fail) -> tuple[str, Platform]:
    if not isinstance(v, (str, Mapping)):
        raise fail(field, f"expected a preset name or a table, got {json.dumps(v, default=str)}")
    try:
        plat = load_platform(dict(v) if isinstance(v, Mapping) else v)
    except (ValueError, KeyError, TypeError) as e:
        raise fail(field, str(e.args[0]) if e.args else str(e)) from None
    if isinstance(v, str):
        return v, plat
    extra = "+".join(f"{k}={v[k]}" for k in v if k != "preset")
    label = str(v.get("preset", plat.name)) + (f"+{extra}" if extra else "")
    return label, plat


def parse_matrix(doc: Any, where: str = "matrix") -> Matrix:
    """Validate a decoded matrix document (see the module docstring)."""
    fail = _Fail(where)
    if not isinstance(doc, Mapping):
        raise fail("(top level)", "a matrix is one TOML table / JSON object")
    for k in doc:
        if k not in _KEYS:
            raise fail(k, f"unknown field; expected some of {list(_KEYS)}")
    for k in _REQUIRED:
        if k not in doc:
            raise fail(k, "missing; this field is required")
    from aicore_sim.registry import UnknownOpError, get_op

    try:
        get_op(doc["op"])
    except UnknownOpError as e:
        raise fail("op", str(e).removeprefix("op: ")) from None
    mode = doc.get("mode")
    if mode is not None and mode not in ("functional", "timed"):
        raise fail("mode", f"expected 'functional' or 'timed', got {json.dumps(mode)}")
    std = doc.get("standard")
    if std is not None:
        from aicore_sim.verify.standards import parse_standard

        if not isinstance(std, str):
            raise fail("standard", f"expected a name, got {json.dumps(std)}")
        try:
            parse_standard(std, "standard")
        except VerifyError as e:
            raise fail("standard", str(e)) from None
    seed = _int(doc.get("seed", 0), "seed", fail, 0)
    dts = tuple(_dtype(v, f"dtypes[{i}]", fail) for i, v in enumerate(_list(doc, "dtypes", fail)))
    probs: list[str | None] = []
    for i, v in enumerate(_list(doc, "probs", fail)):
        if isinstance(v, str) and v.lower() in ("none", "same"):
            probs.append(v.lower())
        else:
            probs.append(_dtype(v, f"probs[{i}]", fail))
    shapes = []
    for i, v in enumerate(_list(doc, "shapes", fail)):
        f = f"shapes[{i}]"
        if not isinstance(v, Mapping):
            raise fail(f, "expected a table {tokens = N, topk = K, hidden = H}")
        for k in v:
            if k not in ("tokens", "topk", "hidden"):
                raise fail(f"{f}.{k}", "unknown field; expected tokens, topk, hidden")
        for k in ("tokens", "topk", "hidden"):
            if k not in v:
                raise fail(f"{f}.{k}", "missing")
        shapes.append((_int(v["tokens"], f"{f}.tokens", fail, 1),
                       _int(v["topk"], f"{f}.topk", fail, 1),
                       _int(v["hidden"], f"{f}.hidden", fail, 1)))
    ranges: list[Any] = []
    for i, v in enumerate(_list(doc, "ranges", fail, ["none"])):
        f = f"ranges[{i}]"
        if isinstance(v, str) and v in ("none", "middle_half"):
            ranges.append(v)
        elif isinstance(v, list) and len(v) == 2:
            ranges.append((_int(v[0], f"{f}[0]", fail), _int(v[1], f"{f}[1]", fail)))
        else:
            raise fail(f, f"expected 'none', 'middle_half' or [start, end], got "
                          f"{json.dumps(v, default=str)}")
    plats = tuple(_platform(v, f"platforms[{i}]", fail)
                  for i, v in enumerate(_list(doc, "platforms", fail, ["ascend910b1"])))
    idx = []
    for i, v in enumerate(_list(doc, "indices", fail, ["permutation"])):
        if v not in _INDEX_MODES:
            raise fail(f"indices[{i}]", f"expected one of {list(_INDEX_MODES)}, got "
                                        f"{json.dumps(v, default=str)}")
        idx.append(v)
    name = doc.get("name", Path(where).stem)
    if not isinstance(name, str) or not name:
        raise fail("name", f"expected a non-empty string, got {json.dumps(name)}")
    return Matrix(name, doc["op"], mode, std, seed, dts, tuple(probs), tuple(shapes),
                  tuple(ranges), plats, tuple(idx), where)


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
