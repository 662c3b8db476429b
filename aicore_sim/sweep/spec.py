"""Sweep specification: parse and validate a TOML or JSON sweep file (step: sweep set-up).

A sweep file has three tables (JSON: three objects with the same names)::

    [sweep]                       # all optional
    name = "p1-tiling"            # label of the report (default: the file name)
    op = "<op name>"              # a registered op (default: the op of the first case)
    mode = "timing-only"          # or "timed" (numerics in every point; slower)
    seed = 0                      # input seed (default: each case's own)
    verify_top = 1                # with --verify: best N points per group are re-run and checked

    [axes]                        # every value is a list (a scalar means a list of one)
    case = ["p1_deepseek_v3", "examples/cases/tiny.json"]   # bundled name or case file
    tokens_num = [512]            # case axes of the op (its tiling space's CASE_AXES; e.g.
    dtype = ["bfloat16"]          #   tokens_num, top_k, hidden, dtype, probs)
    platform = ["ascend910b1"]    # preset name or preset TOML path
    ub_size = [196608]            # what-if platform fields: ub_size, core_num,
    hbm_gbps = [800, 1600]        #   hbm_gbps | hbm_bytes_per_cycle | hbm_efficiency, clock_mhz
    strategy = ["upstream"]       # named tiling strategies of the op

    [tiling]                      # tiling overrides: lists of ints, "auto" = the strategy's value
    indicesReserveNum = [64, 128, "auto"]
    inputReserveNum = [1, 2, 4]
    hiddenSizeAlign = ["auto", 3584]
    cores = ["auto", 32]

    [report]
    heatmap = ["indicesReserveNum", "inputReserveNum"]   # two axes (default: chosen for you)

Points are the cartesian product of all axes. Every error names the table, the field and the
rule, e.g. ``axes.tokens_num[1]: must be an int >= 1, got 'many'``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim import textinput
from aicore_sim.errors import InputError, SimError
from aicore_sim.sweep.ops import default_op_name, get_op, op_for_case

MODES = ("timing-only", "timed")

# Platform axes: name -> (type, platform override field or None for the preset itself).
PLATFORM_AXES: dict[str, type] = {
    "platform": str,
    "ub_size": int,
    "core_num": int,
    "hbm_gbps": float,
    "hbm_bytes_per_cycle": float,
    "hbm_efficiency": float,
    "clock_mhz": float,
}
# Platform axes that change timing only: points that differ only here reuse one record pass.
TIMING_ONLY_AXES = ("hbm_gbps", "hbm_bytes_per_cycle", "hbm_efficiency", "clock_mhz")
AUTO = "auto"


class SpecError(InputError):
    """A sweep file that cannot be used; the message names the field and the rule."""


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: op, mode, seed and the ordered axes (name -> values)."""

    name: str
    op: str
    mode: str = "timing-only"
    seed: int | None = None
    verify_top: int = 1
    axes: dict[str, list[Any]] = field(default_factory=dict)
    knobs: tuple[str, ...] = ()
    heatmap: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.axes.values())


def _where(table: str, key: str, i: int | None = None) -> str:
    return f"{table}.{key}" + ("" if i is None else f"[{i}]")


def _check_value(table: str, key: str, i: int, v: Any, kind: type, allow_auto: bool) -> Any:
    w = _where(table, key, i)
    if allow_auto and (v is None or v == AUTO):
        return AUTO
    if kind is str:
        if not isinstance(v, str) or not v:
            raise SpecError(f"{w}: must be a non-empty string, got {v!r}")
        return v
    if isinstance(v, bool):
        raise SpecError(f"{w}: must be a number, got {v!r}")
    if kind is int:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int) or v < (0 if allow_auto else 1):
            lo = 0 if allow_auto else 1
            extra = ' or "auto"' if allow_auto else ""
            raise SpecError(f"{w}: must be an int >= {lo}{extra}, got {v!r}")
        return v
    if not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise SpecError(f"{w}: must be a number > 0, got {v!r}")
    return float(v)


def _as_list(table: str, key: str, v: Any) -> list[Any]:
    vals = v if isinstance(v, list) else [v]
    if not vals:
        raise SpecError(f"{_where(table, key)}: must list at least one value")
    return vals


def _table(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, Mapping):
        raise SpecError(f"{name}: must be a table/object, got {type(value).__name__}")
    return dict(value)


def parse_spec(doc: Mapping[str, Any], name: str = "sweep", base: Path | None = None
               ) -> SweepSpec:
    """Validate a sweep document (the parsed TOML/JSON) and return a :class:`SweepSpec`.

    ``base`` is the folder relative case-file and preset paths are resolved against (they are
    tried as given first).
    """
    if not isinstance(doc, Mapping):
        raise SpecError(f"sweep file: must be a table/object, got {type(doc).__name__}")
    unknown = sorted(set(doc) - {"sweep", "axes", "tiling", "report"})
    if unknown:
        raise SpecError(f"sweep file: unknown table(s) {unknown}; valid: sweep, axes, tiling, "
                        "report")
    head = _table(doc, "sweep")
    bad = sorted(set(head) - {"name", "op", "mode", "seed", "verify_top"})
    if bad:
        raise SpecError(f"sweep.{bad[0]}: unknown field; valid: name, op, mode, seed, "
                        "verify_top")
    op_name = head.get("op")
    if op_name is None:  # the op of the first case
        first = _table(doc, "axes").get("case")
        first = first[0] if isinstance(first, list) and first else first
        op_name = op_for_case(first) if first is not None and not isinstance(first, (dict, list)) \
            else default_op_name()
    if not isinstance(op_name, str):
        raise SpecError(f"sweep.op: must be an op name, got {op_name!r}")
    try:
        op = get_op(op_name)
    except ValueError as e:
        raise SpecError(f"sweep.op: {e}") from None
    mode = head.get("mode", "timing-only")
    if not isinstance(mode, str) or mode not in MODES:
        raise SpecError(f"sweep.mode: must be one of {list(MODES)}, got {mode!r}")
    seed = head.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise SpecError(f"sweep.seed: must be an int >= 0, got {seed!r}")
    top = head.get("verify_top", 1)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise SpecError(f"sweep.verify_top: must be an int >= 1, got {top!r}")

    case_axes = dict(op.CASE_AXES)
    knobs = tuple(op.KNOBS)
    axes: dict[str, list[Any]] = {}
    raw_axes = _table(doc, "axes")
    raw_tiling = _table(doc, "tiling")
    valid = ["case", *case_axes, *PLATFORM_AXES, "strategy", *knobs]
    for key in raw_axes:
        if key not in valid:
            raise SpecError(f"axes.{key}: unknown axis; valid: {', '.join(valid)}")
    for key in raw_tiling:
        if key not in knobs:
            raise SpecError(f"tiling.{key}: not a tiling field the op lets a sweep set; valid: "
                            f"{', '.join(knobs)}")
        if key in raw_axes:
            raise SpecError(f"tiling.{key}: given in both [axes] and [tiling]")
    if "case" not in raw_axes:
        raise SpecError("axes.case: required (bundled case names or case files)")

    def resolve_path(v: str) -> str:
        if base is not None and ("/" in v or v.endswith((".json", ".toml"))):
            p = Path(v)
            if not p.exists() and (base / p).exists():
                return str(base / p)
        return v

    # canonical order: case, case axes, platform axes, strategy, knobs
    for key in valid:
        table = "tiling" if key in raw_tiling else "axes"
        src = raw_tiling if key in raw_tiling else raw_axes
        if key not in src:
            continue
        vals = _as_list(table, key, src[key])
        if key == "case":
            out = [resolve_path(_check_value(table, key, i, v, str, False))
                   for i, v in enumerate(vals)]
            for i, v in enumerate(out):
                try:
                    op.resolve_case(v, {})
                except (KeyError, ValueError, OSError, SimError) as e:
                    if getattr(e, "code", None) is not None:
                        continue  # the op API refuses the case: its points are 'invalid' rows
                    msg = e.args[0] if e.args else e
                    raise SpecError(f"axes.case[{i}]: {msg}") from None
        elif key in case_axes:
            kind = getattr(op, "CASE_AXIS_TYPES", {}).get(key, str)
            out = [_check_value(table, key, i, v, kind, False) for i, v in enumerate(vals)]
        elif key in PLATFORM_AXES:
            out = [_check_value(table, key, i, v, PLATFORM_AXES[key], False)
                   for i, v in enumerate(vals)]
            if key == "platform":
                from aicore_sim.platform import load_platform

                out = [resolve_path(v) for v in out]
                for i, v in enumerate(out):
                    try:
                        load_platform(v)
                    except (KeyError, ValueError, OSError) as e:
                        raise SpecError(f"axes.platform[{i}]: {e.args[0] if e.args else e}"
                                        ) from None
        elif key == "strategy":
            out = [_check_value(table, key, i, v, str, False) for i, v in enumerate(vals)]
            for i, v in enumerate(out):
                if v not in op.STRATEGIES:
                    raise SpecError(f"axes.strategy[{i}]: unknown strategy {v!r}; valid: "
                                    f"{', '.join(op.STRATEGIES)}")
        else:
            out = [_check_value(table, key, i, v, int, True) for i, v in enumerate(vals)]
        if len(set(map(repr, out))) != len(out):
            raise SpecError(f"{_where(table, key)}: values repeat")
        axes[key] = out
    hbm = [k for k in ("hbm_gbps", "hbm_bytes_per_cycle", "hbm_efficiency") if k in axes]
    if len(hbm) > 1:
        raise SpecError(f"axes.{hbm[1]}: give the HBM bandwidth one way only (also {hbm[0]})")
    # case axes must give valid cases together
    for v in axes["case"]:
        for key in case_axes:
            for j, x in enumerate(axes.get(key, [])):
                try:
                    op.resolve_case(v, {key: x})
                except SimError as e:
                    if getattr(e, "code", None) is None:
                        raise SpecError(f"axes.case: {e}") from None
                except (KeyError, ValueError) as e:
                    raise SpecError(f"axes.{key}[{j}]: {e.args[0] if e.args else e}") from None

    rep = _table(doc, "report")
    bad = sorted(set(rep) - {"heatmap"})
    if bad:
        raise SpecError(f"report.{bad[0]}: unknown field; valid: heatmap")
    heat = rep.get("heatmap", [])
    if heat and (not isinstance(heat, list) or len(heat) != 2 or any(h not in axes for h in heat)):
        raise SpecError(f"report.heatmap: must name two axes of the sweep, got {heat!r}")
    return SweepSpec(str(head.get("name", name)), op_name, mode, seed, top, axes, knobs,
                     tuple(heat))


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a ``.toml`` or ``.json`` sweep file."""
    p = Path(path)
    try:
        text = textinput.read_document(p).decode("utf-8")
    except OSError as e:
        raise SpecError(f"{path}: cannot read ({e.strerror})") from None
    except textinput.TextInputError as e:
        raise SpecError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text (offset {e.start})") from None
    try:
        doc = textinput.loads_json(text) if p.suffix == ".json" else textinput.loads_toml(text)
    except textinput.TextInputError as e:
        raise SpecError(f"{path}: {e}") from None
    return parse_spec(doc, p.stem, p.parent)
