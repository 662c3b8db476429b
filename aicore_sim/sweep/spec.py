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
    tokens_num = [512]            # case axes of the op (its tiling space's case_axes; e.g.
    dtype = ["bfloat16"]          #   tokens_num, top_k, hidden, dtype, probs)
    platform = ["ascend910b1"]    # preset name or preset TOML path
    ub_size = [196608]            # what-if platform fields: ub_size, core_num,
    hbm_gbps = [800, 1600]        #   hbm_gbps | hbm_bytes_per_cycle | hbm_efficiency, clock_mhz
    strategy = ["upstream"]       # named tiling strategies of the op
    kernel_source = ["port", "ops-transformer/moe/<op>/op_kernel"]   # the op's Python port,
                                  #   or its own C++ kernel sources (docs/cpp_kernels.md)
    op_source = ["port", "ops-transformer/moe/<op>"]   # the port's tiling, or the op's own host
                                  #   tiling C++ and kernel (run --op-src)

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

from aicore_sim.sim.errors import InputError, SimError
from aicore_sim.sweep.ops import default_op_name, get_op, op_for_case
from aicore_sim.util import schema, textinput

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


def _knob(v: Any) -> Any:
    """A tiling knob's value: ``"auto"`` (or null) leaves it to the tiling, else an int >= 0."""
    if v is None or v == AUTO:
        return AUTO
    return schema.Int(minimum=0, whole_floats=True).check(v, "")


# The rule of one value of an axis, by the axis's type (tiling knobs: _KNOB)
_VALUE: dict[type, schema.Rule] = {
    str: schema.Text(),
    int: schema.Int(minimum=1, whole_floats=True),
    float: schema.Number(above=0),
}
_KNOB = schema.Custom(_knob, 'an integer >= 0 or "auto"')
_TABLE = "a table/object"
PORT = "port"
"""``axes.kernel_source`` value of the op's Python port (the default)."""
# A sweep file's tables and fields; the axes and tiling tables depend on the op (parse_spec).
_SPEC = schema.Table({
    "sweep": schema.Table({"name": schema.Text(), "op": schema.Text(),
                           "mode": schema.Choice(MODES), "seed": schema.Int(minimum=0),
                           "verify_top": schema.Int(minimum=1)}, what_text=_TABLE),
    "axes": schema.Table({}, open=True, what_text=_TABLE),
    "tiling": schema.Table({}, open=True, what_text=_TABLE),
    "report": schema.Table({"heatmap": schema.ListOf(schema.Text(), length=2)},
                           what_text=_TABLE),
}, what_text=_TABLE)


def _values(table: str, key: str, v: Any, rule: schema.Rule) -> list[Any]:
    """An axis's values (one value or a non-empty list), each checked by ``rule``."""
    return schema.ListOf(rule, unique=True).check(v if isinstance(v, list) else [v],
                                                  _where(table, key))


def parse_spec(doc: Mapping[str, Any], name: str = "sweep", base: Path | None = None
               ) -> SweepSpec:
    """Validate a sweep document (the parsed TOML/JSON) and return a :class:`SweepSpec`.

    ``base`` is the folder relative case-file and preset paths are resolved against (they are
    tried as given first).
    """
    try:
        checked = _SPEC.check(doc, "")
    except schema.FieldError as e:
        raise SpecError(str(e) if e.path else f"sweep file: {e}") from None
    head = checked.get("sweep", {})
    op_name = head.get("op")
    if op_name is None:  # the op of the first case
        first = checked.get("axes", {}).get("case")
        first = first[0] if isinstance(first, list) and first else first
        op_name = op_for_case(first) if first is not None and not isinstance(first, (dict, list)) \
            else default_op_name()
    try:
        op = get_op(op_name)
    except ValueError as e:
        raise SpecError(f"sweep.op: {e}") from None
    mode = head.get("mode", "timing-only")
    seed = head.get("seed")
    top = head.get("verify_top", 1)

    case_axes = dict(op.case_axes)
    first_cases = checked.get("axes", {}).get("case", [])
    knobs = tuple(op.knobs_for(first_cases if isinstance(first_cases, list) else [first_cases]))
    axes: dict[str, list[Any]] = {}
    raw_axes = checked.get("axes", {})
    raw_tiling = checked.get("tiling", {})
    valid = ["case", *case_axes, *PLATFORM_AXES, "strategy", "kernel_source", "op_source",
             *knobs]
    for key in raw_tiling:
        if key not in knobs:
            raise SpecError(f"tiling.{key}: not a tiling field the op lets a sweep set; valid: "
                            f"{', '.join(knobs)}")
        if key in raw_axes:
            raise SpecError(f"tiling.{key}: given in both [axes] and [tiling]")

    def resolve_path(v: str) -> str:
        if base is not None and ("/" in v or v.endswith((".json", ".toml"))):
            p = Path(v)
            if not p.exists() and (base / p).exists():
                return str(base / p)
        return v

    def local(v: str) -> Path:  # a path, relative to the spec's folder when it is there
        p = Path(v).expanduser()
        return base / p if not p.exists() and base is not None and (base / p).exists() else p

    def kernel_source(v: str) -> str:
        if v == PORT:
            return v
        p = local(v)
        if not p.exists():
            raise ValueError(f"{v}: no such folder or file (\"{PORT}\" or the kernel's C++ "
                             "sources)")
        return str(p.resolve())

    def op_source(v: str) -> str:
        if v == PORT:
            return v
        from aicore_sim.cfront.host import HostSource

        try:
            return str(HostSource.of(local(v)).op_dir)
        except InputError as e:
            raise ValueError(str(e).removeprefix("--op-src: ")) from None

    def platform(v: str) -> str:
        from aicore_sim.sim.platform import load_platform

        path = resolve_path(v)
        load_platform(path)
        return path

    # the rule of each axis's values, in canonical order: case, case axes, platform axes,
    # strategy, knobs
    types = op.case_axis_types
    rules: dict[str, schema.Rule] = {
        "case": schema.Custom(resolve_path, _VALUE[str].what, (str,)),
        **{k: _VALUE[types.get(k, str)] for k in case_axes},
        **{k: _VALUE[t] for k, t in PLATFORM_AXES.items()},
        "platform": schema.Custom(platform, "a preset name or a platform file", (str,)),
        "strategy": schema.Choice(tuple(op.strategies)),
        "kernel_source": schema.Custom(kernel_source, f'"{PORT}" or a path', (str,)),
        "op_source": schema.Custom(op_source, f'"{PORT}" or an operator\'s source folder',
                                   (str,)),
        **{k: _KNOB for k in knobs},
    }
    try:
        schema.Table({k: schema.Anything() for k in valid}, required=("case",)).check(
            raw_axes, "axes")
        for key in valid:
            table = "tiling" if key in raw_tiling else "axes"
            src = raw_tiling if key in raw_tiling else raw_axes
            if key in src:
                axes[key] = _values(table, key, src[key], rules[key])
    except schema.FieldError as e:
        raise SpecError(str(e)) from None
    for i, v in enumerate(axes["case"]):
        try:
            op.resolve_case(v, {})
        except (KeyError, ValueError, OSError, SimError) as e:
            if getattr(e, "code", None) is not None:
                continue  # the op API refuses the case: its points are 'invalid' rows
            msg = e.args[0] if e.args else e
            raise SpecError(f"axes.case[{i}]: {msg}") from None
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

    heat = checked.get("report", {}).get("heatmap", [])
    if any(h not in axes for h in heat):
        raise SpecError(f"report.heatmap: must name two axes of the sweep, got {heat!r}")
    return SweepSpec(str(head.get("name", name)), op_name, mode, seed, top, axes, knobs,
                     tuple(heat))


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a ``.toml`` or ``.json`` sweep file."""
    p = Path(path)
    try:
        text = textinput.read_text(p)
        doc = textinput.loads_json(text) if p.suffix == ".json" else textinput.loads_toml(text)
    except textinput.TextInputError as e:
        raise SpecError(f"{path}: {e}") from None
    return parse_spec(doc, p.stem, p.parent)
