"""The cost parameters of one SoC family: :class:`Costs` and its cost-file reader.

Step of the flow: ``data/costs/<family>.toml`` (every number with its unit in its key and its
source beside it) is read once per family into a frozen :class:`Costs`, which a ``Platform``
holds as ``platform.costs``; ``price.py`` prices with it and the mechanisms of
``mechanisms.py`` name the fields each of them reads. What-ifs replace scalar fields with
:meth:`Costs.with_overrides`. The scalar-field checks (:func:`check_value`,
:func:`check_fields`) are shared with ``platform.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.util import schema

_COSTS_DIR = Path(__file__).parent.parent.parent / "data" / "costs"

# Types of the scalar fields, by their annotations (strings: postponed evaluation).
TYPES = {"int": int, "float": float, "str": str, "bool": bool}


@dataclass(frozen=True, slots=True)
class CopyCurve:
    """A measured single-core DMA curve: time of one transfer versus its size in bytes.

    Models one MTE path (GM->UB on MTE2 or UB->GM on MTE3) of one core running alone.
    """

    name: str
    description: str
    source: str
    size_bytes: tuple[int, ...]
    time_ns: tuple[float, ...]
    floor_ns: float


@dataclass(frozen=True, slots=True)
class LinearApiCost:
    """``t = b + k * n`` cycles for one Ascend C vector API call on n elements (A2/A3 V pipe)."""

    api: str
    src_dtype: str
    dst_dtype: str
    b_cycles: float
    k_cycles_per_element: float


@dataclass(frozen=True, slots=True)
class VfMicroOp:
    """Latency and throughput of one vector-function micro-op of the 950 vector unit."""

    op: str
    dtype: str
    latency_cycles: float
    throughput_cycles_per_256_bytes: float


@dataclass(frozen=True, slots=True)
class Costs:
    """Every instruction-cost parameter of one SoC family (the data ``price.py`` prices with).

    ``vector_model`` is ``"linear"`` (A2/A3: per-API ``b + k*n`` fits) or ``"vf"`` (950:
    vector-function micro-op model). Copy curves are kept in ns and converted to cycles at the
    platform clock by ``price.py``.

    ``mte2_scale``, ``mte3_scale`` and ``vector_scale`` (ratios, 1.0 = the published data)
    multiply the GM->UB curve, the UB->GM curve and every vector API cost: the knobs
    ``aicore-sim calibrate`` fits to a board's profile and writes into a platform overlay.
    A cost file may set them in a ``[calibration]`` table; they default to 1.0.
    """

    family: str
    curves: tuple[CopyCurve, ...] = field(repr=False)
    mte2_profile: str
    mte3_profile: str
    mte2_stride_cycles_per_row_element: float
    mte3_stride_cycles_per_row_element: float
    stride_modulo_elements: int
    unaligned_512_bandwidth_ratio: float
    bypass_partial_granule_bandwidth_ratio: float
    gm_access_granule_bytes: int
    vector_model: str
    vector_linear: tuple[LinearApiCost, ...] = field(repr=False)
    vf_head_cycles: float
    vf_bytes_per_register: int
    vf_micro_ops: tuple[VfMicroOp, ...] = field(repr=False)
    vf_api_micro_ops: tuple[tuple[str, tuple[str, ...]], ...] = field(repr=False)
    vector_tail_cycles: int
    reduce_tail_cycles: int
    copy_issue_cycles: int
    vector_issue_cycles: int
    sync_issue_cycles: int
    set_flag_cycles: int
    wait_flag_cycles: int
    barrier_cycles: int
    mte2_scale: float = 1.0
    mte3_scale: float = 1.0
    vector_scale: float = 1.0
    # Pipelined copies ([mte2.pipeline] / [mte3.pipeline]; copy_model "pipelined"): a copy
    # holds its MTE for max(issue + row x (rows - 1), payload / core rate) and its data is
    # visible latency_ns later (a memory-side time, converted at the platform's clock; the
    # other fields are core cycles) (price.py). "curve" = the single-core curve, no latency.
    copy_model: str = "curve"
    mte2_issue_cycles: float = 0.0
    mte2_row_cycles: float = 0.0
    mte2_core_bytes_per_cycle: float = 0.0
    mte2_latency_ns: float = 0.0
    mte3_issue_cycles: float = 0.0
    mte3_row_cycles: float = 0.0
    mte3_core_bytes_per_cycle: float = 0.0
    mte3_latency_ns: float = 0.0
    # latency_overlaps_stream (optional key, default false): the copy's completion latency runs
    # alongside its own streaming, so its data is visible max(occupancy, latency) after its
    # start instead of occupancy + latency (a write whose last byte is acknowledged as it is
    # sent; no shipped family uses it since UB -> GM takes latency_holds_pipe).
    mte2_latency_overlaps_stream: bool = False
    mte3_latency_overlaps_stream: bool = False
    # latency_holds_pipe (optional key, default false): the copy holds its MTE until its
    # completion is acknowledged, the latency on top of its streaming: occupancy latency +
    # max(issue + row x (rows - 1), payload / core rate), visible at its end (a UB -> GM write
    # whose write response the MTE waits for: a per-copy floor, then the streaming rate).
    mte2_latency_holds_pipe: bool = False
    mte3_latency_holds_pipe: bool = False
    # The L2 cache in front of HBM ([l2]; engine/l2.py): line (allocation) size in bytes,
    # 0 = no L2 model (every GM byte is an HBM byte, as before).
    l2_line_bytes: int = 0
    # [l2] warm_start (optional key, default false): the launch finds L2 as an identical launch
    # just before it left it (engine/l2.py): a line's first access hits when its last
    # allocating access in that launch is less than the L2 size of allocating traffic back.
    l2_warm_start: bool = False
    # [scalar] kernel_setup_cycles (optional key, default 0): the scalar unit's work on entry
    # before it reads the kernel's parameter block, every core the same (cost.kernel_entry_cycles)
    kernel_setup_cycles: int = 0
    # Same-address serialisation ([gm] serial_granule_bytes / serial_cycles_per_request;
    # engine/l2.py): a copy whose first row's granule k cores request at the same step of
    # their streams holds its MTE for at least k x serial_cycles (0 = off).
    gm_serial_granule_bytes: int = 512
    gm_serial_cycles: float = 0.0
    # The chip fabric between the cores and GM ([gm] fabric_ai_core_bytes_per_cycle, per AI
    # core, i.e. per AIC + its AIVs, as the ini ddr_rate; engine/fabric.py): UB -> GM writes
    # share what the streaming reads leave of it (0 = not modelled).
    gm_fabric_ai_core_bytes_per_cycle: float = 0.0
    # UB bank groups ([ub]; price.py): 0 = no bank model. A UB address's bank group is
    # (addr // ub_block_bytes) mod ub_bank_groups, its bank within the group
    # (addr // ub_bank_bytes) mod ub_banks_per_group; a group serves ub_group_read_ports reads
    # (from distinct banks) and one write a beat. The APIs in ub_bank_apis cost
    # b + repeats x ub_beat_cycles x beats per repeat (linear family) or their micro-ops plus
    # ub_beat_cycles x the beats beyond one per register (VF family).
    ub_bank_groups: int = 0
    ub_block_bytes: int = 32
    ub_bank_bytes: int = 65536
    ub_banks_per_group: int = 3
    ub_group_read_ports: int = 1
    ub_beat_cycles: float = 1.0
    ub_bank_apis: tuple[str, ...] = ()
    # SyncAll ([sync] sync_all_cycles): cycles from the last core's arrival at the barrier to
    # every core's release.
    sync_all_cycles: int = 0

    def curve(self, name: str) -> CopyCurve:
        """The copy curve called ``name`` (ValueError listing the known ones otherwise)."""
        for c in self.curves:
            if c.name == name:
                return c
        raise ValueError(
            f"costs family {self.family!r}: no copy curve {name!r}; "
            f"known: {[c.name for c in self.curves]}"
        )

    @property
    def mte2_curve(self) -> CopyCurve:
        """The GM->UB curve selected by ``mte2_profile``."""
        return self.curve(self.mte2_profile)

    @property
    def mte3_curve(self) -> CopyCurve:
        """The UB->GM curve selected by ``mte3_profile``."""
        return self.curve(self.mte3_profile)

    def with_overrides(self, **fields: Any) -> Costs:
        """A copy with some scalar parameters replaced (same validation as Platform)."""
        if not fields:
            return self
        checked = check_fields(fields, "costs", _COSTS_SCALARS, _COSTS_LIMITS)
        new = dataclasses.replace(self, **checked)
        new.curve(new.mte2_profile)  # validate profile names now, not at first use
        new.curve(new.mte3_profile)
        for scale in _CALIBRATION_KEYS:
            if getattr(new, scale) <= 0:
                raise ValueError(f"costs field {scale!r} must be > 0, got {getattr(new, scale)}")
        if new.copy_model not in ("curve", "pipelined"):
            raise ValueError(
                f"costs field 'copy_model' must be 'curve' or 'pipelined', got {new.copy_model!r}"
            )
        if new.copy_model == "pipelined" and min(new.mte2_core_bytes_per_cycle,
                                                  new.mte3_core_bytes_per_cycle) <= 0:
            raise ValueError("costs fields 'mte2_core_bytes_per_cycle' and "
                             "'mte3_core_bytes_per_cycle' must be > 0 with copy_model 'pipelined'")
        _check_latency_forms(new)
        if new.vector_model not in ("linear", "vf"):
            raise ValueError(
                f"costs field 'vector_model' must be 'linear' or 'vf', got {new.vector_model!r}"
            )
        return new


# Cost fields a user may override with a plain value: every scalar field but the family name
# (the structured tables are data files).
_COSTS_SCALARS: dict[str, type] = {
    f.name: TYPES[f.type] for f in dataclasses.fields(Costs)
    if f.type in TYPES and f.name != "family"}

_COSTS_CACHE: dict[str, Costs] = {}


def list_cost_families() -> list[str]:
    """Names of the cost files shipped (``a2``, ``950``)."""
    return sorted(p.stem for p in _COSTS_DIR.glob("*.toml"))


def load_costs(family: str) -> Costs:
    """Read ``data/costs/<family>.toml`` into a :class:`Costs` (cached; Costs is immutable)."""
    if family in _COSTS_CACHE:
        return _COSTS_CACHE[family]
    path = _COSTS_DIR / f"{family}.toml"
    if not path.is_file():
        raise ValueError(f"unknown cost family {family!r}; known: {list_cost_families()}")
    with path.open("rb") as fh:
        doc = tomllib.load(fh)
    try:
        costs = _costs_from_doc(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"cost file {path.name}: {exc!r}") from exc
    _COSTS_CACHE[family] = costs
    return costs


_CALIBRATION_KEYS = ("mte2_scale", "mte3_scale", "vector_scale")


def _calibration(table: Mapping[str, Any]) -> dict[str, float]:
    unknown = sorted(set(table) - set(_CALIBRATION_KEYS))
    if unknown:
        raise ValueError(f"[calibration]: unknown keys {unknown}; valid: {list(_CALIBRATION_KEYS)}")
    return {k: check_value(k, v, float, "costs") for k, v in table.items()}


_PIPELINE_KEYS = ("issue_cycles", "row_cycles", "core_bytes_per_cycle", "latency_ns")
_PIPELINE_OPTIONAL = ("latency_overlaps_stream", "latency_holds_pipe")


def _pipeline(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The pipelined-copy fields of a cost file: both ``[mte2.pipeline]`` and
    ``[mte3.pipeline]`` (copy_model "pipelined"), or neither (copy_model "curve")."""
    tables = {p: doc[p].get("pipeline") for p in ("mte2", "mte3")}
    if all(t is None for t in tables.values()):
        return {}
    out: dict[str, Any] = {"copy_model": "pipelined"}
    for pipe, table in tables.items():
        if table is None:
            raise ValueError(f"[{pipe}.pipeline] missing: give both MTE2 and MTE3 pipelines")
        unknown = sorted(set(table) - set(_PIPELINE_KEYS) - set(_PIPELINE_OPTIONAL))
        missing = sorted(set(_PIPELINE_KEYS) - set(table))
        if unknown or missing:
            raise ValueError(f"[{pipe}.pipeline]: unknown keys {unknown}, missing {missing}")
        for key in _PIPELINE_KEYS:
            value = check_value(key, table[key], float, "costs")
            if value < 0 or (key == "core_bytes_per_cycle" and value <= 0):
                raise ValueError(f"[{pipe}.pipeline] {key} must be "
                                 f"{'> 0' if key == 'core_bytes_per_cycle' else '>= 0'}")
            out[f"{pipe}_{key}"] = value
        for key in _PIPELINE_OPTIONAL:
            out[f"{pipe}_{key}"] = check_value(key, table.get(key, False), bool, "costs")
    return out


def _check_latency_forms(costs: Costs) -> None:
    """A copy's latency either runs beside its stream or holds the pipe after it, not both
    (a cost file's or an override's fields)."""
    for pipe in ("mte2", "mte3"):
        if (getattr(costs, f"{pipe}_latency_overlaps_stream")
                and getattr(costs, f"{pipe}_latency_holds_pipe")):
            raise ValueError(f"costs fields '{pipe}_latency_overlaps_stream' and "
                             f"'{pipe}_latency_holds_pipe' exclude each other")


_UB_KEYS = {"bank_groups": int, "block_bytes": int, "bank_bytes": int, "banks_per_group": int,
            "group_read_ports": int, "beat_cycles": float, "apis": list}


def _ub_banks(table: Mapping[str, Any]) -> dict[str, Any]:
    """The UB bank fields of a cost file's ``[ub]`` table (all or none of them)."""
    if not table:
        return {}
    unknown, missing = sorted(set(table) - set(_UB_KEYS)), sorted(set(_UB_KEYS) - set(table))
    if unknown or missing:
        raise ValueError(f"[ub]: unknown keys {unknown}, missing {missing}")
    out: dict[str, Any] = {}
    for key, kind in _UB_KEYS.items():
        if kind is list:
            out["ub_bank_apis"] = tuple(str(x) for x in table[key])
            continue
        value = check_value(key, table[key], kind, "costs")
        if value <= 0:
            raise ValueError(f"[ub] {key} must be > 0")
        out[f"ub_{key}"] = value
    return out


def _costs_from_doc(doc: dict[str, Any]) -> Costs:
    curves = []
    for name, c in doc["curves"].items():
        sizes = tuple(int(x) for x in c["size_bytes"])
        times = tuple(float(x) for x in c["time_ns"])
        if len(sizes) != len(times) or len(sizes) < 2:
            raise ValueError(f"curve {name}: size_bytes and time_ns must have equal length >= 2")
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            raise ValueError(f"curve {name}: size_bytes must be strictly increasing")
        curves.append(
            CopyCurve(name, c["description"], c["source"], sizes, times, float(c["floor_ns"]))
        )
    vec = doc["vector"]
    linear = []
    for api, pairs in vec.get("linear", {}).items():
        for pair, p in pairs.items():
            src, dst = pair.split("_to_")
            linear.append(
                LinearApiCost(api, src, dst, float(p["b_cycles"]), float(p["k_cycles_per_element"]))
            )
    vf = vec.get("vf", {})
    micro = [
        VfMicroOp(op, dt, float(p["latency_cycles"]), float(p["throughput_cycles_per_256_bytes"]))
        for op, per_dtype in vf.get("micro_ops", {}).items()
        for dt, p in per_dtype.items()
    ]
    api_ops = tuple((api, tuple(ops)) for api, ops in vf.get("api_micro_ops", {}).items())
    costs = Costs(
        family=str(doc["family"]),
        curves=tuple(curves),
        mte2_profile=doc["mte2"]["profile"],
        mte3_profile=doc["mte3"]["profile"],
        mte2_stride_cycles_per_row_element=float(doc["mte2"]["stride_cycles_per_row_element"]),
        mte3_stride_cycles_per_row_element=float(doc["mte3"]["stride_cycles_per_row_element"]),
        stride_modulo_elements=int(doc["mte2"]["stride_modulo_elements"]),
        unaligned_512_bandwidth_ratio=float(doc["gm"]["unaligned_512_bandwidth_ratio"]),
        bypass_partial_granule_bandwidth_ratio=float(
            doc["gm"]["bypass_partial_granule_bandwidth_ratio"]),
        gm_access_granule_bytes=int(doc["gm"]["access_granule_bytes"]),
        vector_model=str(vec["model"]),
        vector_linear=tuple(linear),
        vf_head_cycles=float(vec.get("head_cycles", 0.0)),
        vf_bytes_per_register=int(vec.get("bytes_per_register", 256)),
        vf_micro_ops=tuple(micro),
        vf_api_micro_ops=api_ops,
        vector_tail_cycles=int(vec["tail_cycles"]),
        reduce_tail_cycles=int(vec["reduce_tail_cycles"]),
        copy_issue_cycles=int(doc["scalar"]["copy_issue_cycles"]),
        vector_issue_cycles=int(doc["scalar"]["vector_issue_cycles"]),
        sync_issue_cycles=int(doc["scalar"]["sync_issue_cycles"]),
        kernel_setup_cycles=check_value("kernel_setup_cycles",
                                        doc["scalar"].get("kernel_setup_cycles", 0), int, "costs"),
        set_flag_cycles=int(doc["sync"]["set_flag_cycles"]),
        wait_flag_cycles=int(doc["sync"]["wait_flag_cycles"]),
        barrier_cycles=int(doc["sync"]["barrier_cycles"]),
        sync_all_cycles=int(doc["sync"].get("sync_all_cycles", 0)),
        **_calibration(doc.get("calibration", {})),
        **_pipeline(doc),
        l2_line_bytes=int(doc.get("l2", {}).get("line_bytes", 0)),
        l2_warm_start=check_value("warm_start", doc.get("l2", {}).get("warm_start", False),
                                  bool, "costs"),
        gm_serial_granule_bytes=int(doc["gm"].get("serial_granule_bytes", 512)),
        gm_serial_cycles=float(doc["gm"].get("serial_cycles_per_request", 0.0)),
        gm_fabric_ai_core_bytes_per_cycle=float(
            doc["gm"].get("fabric_ai_core_bytes_per_cycle", 0.0)),
        **_ub_banks(doc.get("ub", {})),
    )
    costs.curve(costs.mte2_profile)
    costs.curve(costs.mte3_profile)
    _check_latency_forms(costs)
    return costs


# --------------------------------------------------------------------------------------------
# Scalar-field checks (cost and platform fields)
# --------------------------------------------------------------------------------------------


@functools.cache  # a handful of distinct rules, asked for on every override and load
def scalar_rule(kind: type, limits: tuple[float, float] | None = None) -> schema.Rule:
    """The rule of a scalar platform or cost field: a non-empty string, or a number of the
    field's type (an int field takes ``4.0``) within ``limits`` (default: >= 0)."""
    if kind is str:
        return schema.Text()
    if kind is bool:
        return schema.Flag()
    lo, hi = limits if limits is not None else (0, None)
    if kind is int:
        return schema.Int(minimum=lo, maximum=hi, whole_floats=True)
    return schema.Number(minimum=lo, maximum=hi)


def check_value(name: str, value: Any, kind: type, what: str,
                 limits: tuple[float, float] | None = None) -> Any:
    """Type- and range-check one value (:func:`scalar_rule`; a platform field within its
    limits); ints are accepted for float fields."""
    try:
        return scalar_rule(kind, limits).check(value, "")
    except schema.FieldError as e:
        raise ValueError(f"{what} field {name!r}: {e.rule}") from None


# Fields an address or a count is divided by: at least 1 (the others: >= 0).
_COSTS_LIMITS: dict[str, tuple[float, float | None]] = {
    name: (1, None) for name in ("ub_block_bytes", "ub_bank_bytes", "ub_banks_per_group",
                                 "ub_group_read_ports")}


def check_fields(fields: Mapping[str, Any], what: str, allowed: Mapping[str, type],
                 limits: Mapping[str, tuple[float, float]] | None = None,
                 valid: Callable[[], list[str]] | None = None) -> dict[str, Any]:
    """Every field of ``fields`` checked by :func:`check_value` against its type in
    ``allowed`` and its ``limits``; an unknown field names the ``valid`` ones (default: the
    allowed ones)."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name not in allowed:
            names = valid() if valid is not None else sorted(allowed)
            raise ValueError(f"unknown {what} field {name!r}; valid fields: {', '.join(names)}")
        out[name] = check_value(name, value, allowed[name], what,
                                limits.get(name) if limits is not None else None)
    return out


__all__ = ["CopyCurve", "Costs", "LinearApiCost", "VfMicroOp", "check_fields", "check_value",
           "list_cost_families", "load_costs", "scalar_rule"]
