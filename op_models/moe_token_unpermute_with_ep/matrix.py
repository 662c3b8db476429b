"""The forward's equivalence matrix: a TOML file expanded into (case, platform) pairs.

Format (``equivalence_matrix.toml`` is the bundled one)::

    op = "moe_token_unpermute_with_ep"   # required, this operator
    name = "equivalence"                  # optional; default: file stem
    standard = "bit-exact"                # optional
    seed = 0                              # optional base seed
    dtypes = ["bfloat16", "float16", "float32"]          # tokens dtype
    probs = ["none", "bfloat16", "float16", "float32"]   # "none": no probs (key 0)
    shapes = [{tokens = 12, topk = 2, hidden = 48, experts = 8}]
    ranges = ["ep_window", "full", [2, 10]]   # optional; default ["ep_window"]
    platforms = ["ascend910b1", {preset = "ascend910b1", aiv_core_num = 1}]  # optional
    zero_probs = [0.0, 0.25]                  # optional; default [0.0]

``ep_window`` = the permuted rows of EP rank 0 of 2 (experts must be even); ``full`` =
``[0, tokens * topk)``; ``[start, end]`` = an explicit range. Every combination is one case
(order: dtypes, probs, shapes, ranges, platforms, zero_probs), its seed derived from ``seed``
and its name. Errors name the file and the field and raise :class:`MatrixError`.
"""

from __future__ import annotations

import tomllib
import zlib
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

from aicore_sim.errors import SimError
from aicore_sim.platform import Platform, load_platform
from op_models.moe_token_unpermute_with_ep.cases import DTYPES, Case

__all__ = ["BUNDLED_MATRIX", "MatrixCase", "MatrixError", "expand_matrix"]

OP = "moe_token_unpermute_with_ep"
BUNDLED_MATRIX = Path(__file__).with_name("equivalence_matrix.toml")
_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


class MatrixError(SimError):
    """A matrix file breaks a rule; the message names the file, the field and the rule."""


@dataclass(frozen=True)
class MatrixCase:
    name: str
    case: Case
    platform: Platform
    standard: str


def _platform(v: Any, where: str) -> tuple[str, Platform]:
    try:
        if isinstance(v, str):
            return v, load_platform(v)
        if isinstance(v, dict) and isinstance(v.get("preset"), str):
            rest = {k: x for k, x in v.items() if k != "preset"}
            label = v["preset"] + "".join(f"-{k}{x}" for k, x in sorted(rest.items()))
            return label, load_platform(v["preset"]).with_overrides(**rest)
    except (SimError, TypeError, ValueError) as e:
        raise MatrixError(f"{where}: {e} (rule matrix_platform)") from None
    raise MatrixError(f"{where}: expected a preset name or {{preset = ..., field = value}} "
                      "(rule matrix_platform)")


def expand_matrix(path: str | Path = BUNDLED_MATRIX) -> list[MatrixCase]:
    """Every combination of the matrix file as a :class:`MatrixCase`, in a fixed order."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as e:
        raise MatrixError(f"{p}: cannot read ({e.strerror}) (rule matrix_file)") from None
    except tomllib.TOMLDecodeError as e:
        raise MatrixError(f"{p.name}: not valid TOML ({e}) (rule matrix_syntax)") from None
    w = p.name
    if doc.get("op") != OP:
        raise MatrixError(f"{w}: op: expected \"{OP}\", got {doc.get('op')!r} (rule matrix_op)")
    standard = str(doc.get("standard", "bit-exact"))
    seed = int(doc.get("seed", 0))
    for key in ("dtypes", "shapes"):
        if not isinstance(doc.get(key), list) or not doc[key]:
            raise MatrixError(f"{w}: {key}: expected a non-empty list (rule matrix_field)")
    for i, d in enumerate(doc["dtypes"]):
        if d not in DTYPES:
            raise MatrixError(f"{w}: dtypes[{i}]: {d!r} is not one of {sorted(DTYPES)} "
                              "(rule matrix_dtype)")
    probs = doc.get("probs", ["none"])
    for i, d in enumerate(probs):
        if d != "none" and d not in DTYPES:
            raise MatrixError(f"{w}: probs[{i}]: {d!r} is not none or a dtype "
                              "(rule matrix_dtype)")
    shapes = []
    for i, s in enumerate(doc["shapes"]):
        try:
            shapes.append((int(s["tokens"]), int(s["topk"]), int(s["hidden"]),
                           int(s["experts"])))
        except (KeyError, TypeError, ValueError):
            raise MatrixError(f"{w}: shapes[{i}]: expected {{tokens, topk, hidden, experts}} "
                              "integers (rule matrix_shape)") from None
    ranges = doc.get("ranges", ["ep_window"])
    for i, r in enumerate(ranges):
        if r not in ("ep_window", "full") and not (
                isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)):
            raise MatrixError(f"{w}: ranges[{i}]: expected ep_window, full or [start, end] "
                              "(rule matrix_range)")
    plats = [_platform(v, f"{w}: platforms[{i}]")
             for i, v in enumerate(doc.get("platforms", ["ascend910b1"]))]
    zeros = [float(z) for z in doc.get("zero_probs", [0.0])]
    out = []
    for dt, pr, (n, k, h, e), rg, (plabel, plat), z in product(
            doc["dtypes"], probs, shapes, ranges, plats, zeros):
        prob = None if pr == "none" else pr
        rlabel = rg if isinstance(rg, str) else f"r{rg[0]}_{rg[1]}"
        base = (f"{_SHORT[dt]}-{'noprobs' if prob is None else _SHORT[prob]}-n{n}k{k}h{h}e{e}-"
                f"{rlabel}-z{z:g}")
        name = f"{base}-{plabel}"
        case_seed = (seed + zlib.crc32(base.encode())) & 0x7FFFFFFF
        kw: dict[str, Any] = {}
        if rg == "ep_window":
            kw["ep"] = 2
        elif rg == "full":
            kw["range"] = (0, n * k)
        else:
            kw["range"] = (rg[0], rg[1])
        try:
            case = Case(name, n, k, h, dt, prob, e, zero_probs=z if prob else 0.0,
                        seed=case_seed, **kw)
        except ValueError as ex:
            raise MatrixError(f"{w}: case {name}: {ex} (rule matrix_case)") from None
        out.append(MatrixCase(name, case, plat, standard))
    return out
