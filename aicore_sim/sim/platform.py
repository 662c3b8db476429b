"""Platform: the hardware parameters of one Ascend SoC, loaded from TOML presets.

Step of the flow: input to everything. The host tiling reads it through ``PlatformAscendC``
(core count, usable UB), the replay engine reads queue depths, HBM bandwidth and scalar
latencies, and the cost package (``sim/cost/``) reads the nested :class:`Costs` object
(declared and read from the cost files in ``cost/params.py``). A ``Platform`` is frozen:
what-if studies derive new ones with :meth:`Platform.with_overrides`.

Presets live in ``aicore_sim/data/platforms/<name>.toml`` (one per SoC; every number carries a
unit suffix in its key and a ``# source:`` comment). Instruction-cost parameters live in
``aicore_sim/data/costs/<family>.toml`` (``a2`` for Ascend910B / Ascend910_93, ``950``).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.sim import boards
from aicore_sim.sim.cost.params import (
    TYPES,
    Costs,
    check_fields,
    check_value,
    list_cost_families,
    load_costs,
    scalar_rule,
)
from aicore_sim.util import schema, textinput

_PLATFORM_DIR = Path(__file__).parent.parent / "data" / "platforms"

SHORT_SOCS: tuple[str, ...] = ("Ascend910B", "Ascend910_93", "Ascend950")
"""Short SoC versions the model knows (what ``GetSocVersion`` / the tiling sees)."""

# GetCoreMemSize(UB) subtracts this many bytes on the short SoCs listed (source S3).
_UB_RESERVED_BYTES = 256
_UB_RESERVED_SOCS = frozenset({"Ascend910B", "Ascend910_93"})

# The preset each family falls back to when a dict spec gives only some fields.
_FAMILY_BASE_PRESET = {
    "Ascend910B": "ascend910b1",
    "Ascend910_93": "ascend910_9391",
    "Ascend950": "ascend950pr_9589",
}


# --------------------------------------------------------------------------------------------
# Platform
# --------------------------------------------------------------------------------------------


def _field(toml: str, unit: str, limits: tuple[float, float] | None = None,
           *aliases: str) -> Any:
    """A required scalar :class:`Platform` field and what is known of it: its key in the preset
    TOML files, its unit, its inclusive sane bounds (None: no number) and other names a
    what-if may give it (CANN ini keys, shorthands)."""
    return field(metadata={"toml": toml, "unit": unit, "limits": limits, "aliases": aliases})


@dataclass(frozen=True, slots=True)
class Platform:
    """One Ascend SoC as the simulator sees it: AIV cores, UB, clock, memory system, costs.

    Sizes are bytes, rates bytes per core cycle, latencies core cycles, the clock MHz.
    ``hbm_bytes_per_cycle`` (chip-wide HBM service rate) is derived:
    ``aic_core_num * ddr_rate * hbm_efficiency``.
    """

    name: str
    # one line per scalar field: TOML key of the preset files, unit, inclusive limits and other
    # accepted spellings (_field); every table below is derived from these declarations
    soc: str = _field("soc", "SoC version string")
    short_soc: str = _field("short_soc", "short SoC version (SHORT_SOCS)")
    arch: str = _field("arch", "NPU arch")
    aic_core_num: int = _field("aic_cores", "cores", (1, 1024), "ai_core_cnt")
    aiv_core_num: int = _field("aiv_cores", "cores", (1, 1024), "core_num", "vector_core_cnt")
    clock_mhz: float = _field("clock_mhz", "MHz", (1e-3, 1e6), "cube_freq", "vec_freq",
                              "freq_mhz")
    ub_size: int = _field("ub_size_bytes", "bytes", (1, 1 << 24))
    ub_physical_size: int = _field("ub_physical_bytes", "bytes", (1, 1 << 24))
    ub_align: int = _field("ub_align_bytes", "bytes", (1, 4096))
    l2_size: int = _field("l2_size_bytes", "bytes", (1, 1 << 40))
    hbm_size: int = _field("hbm_size_bytes", "bytes", (1, 1 << 50))
    ddr_rate: float = _field("ddr_rate_bytes_per_cycle", "bytes/cycle per AI core",
                             (1e-9, 1e15))
    # what-ifs model "unlimited" HBM with a huge efficiency
    hbm_efficiency: float = _field("hbm_efficiency_ratio", "ratio", (1e-9, 1e15))
    l2_rate: float = _field("l2_rate_bytes_per_cycle", "bytes/cycle per AI core", (1e-9, 1e15),
                            "l2_read_rate")
    queue_depth: int = _field("queue_depth_entries", "entries", (1, 1024))
    dcache_size: int = _field("dcache_size_bytes", "bytes", (1, 1 << 30))
    dcache_line: int = _field("dcache_line_bytes", "bytes", (1, 1 << 20))
    dcache_hit_cycles: int = _field("dcache_hit_cycles", "cycles", (0, 1e6))
    dcache_miss_cycles: int = _field("dcache_miss_cycles", "cycles", (0, 1e6))
    ub_read_cycles: int = _field("ub_read_cycles", "cycles", (0, 1e6))
    op_head_cycles: int = _field("op_head_cycles", "cycles", (0, 1e9))
    # GM granules of the kernel's parameter block each core reads with scalar loads on entry
    # (cost.kernel_entry_cycles)
    kernel_entry_reads: int = _field("kernel_entry_reads", "granules", (0, 1024))
    system_counter_mhz: float = _field("system_counter_mhz", "MHz", (1e-3, 1e6))
    launch_fixed_ns: float = _field("launch_fixed_ns", "ns", (0, 1e12))
    launch_per_core_ns: float = _field("launch_per_core_ns", "ns", (0, 1e9))
    costs: Costs
    overridden: tuple[str, ...] = ()
    # Lazily filled by cost/price.py with per-platform lookup tables; not part of equality.
    _cost_cache: Any = field(default=None, init=False, repr=False, compare=False)

    # -- derived quantities ---------------------------------------------------------------

    @property
    def core_mem_size_ub(self) -> int:
        """``GetCoreMemSize(UB)``: ub_size minus 256 bytes on Ascend910B / Ascend910_93 (S3)."""
        if self.short_soc in _UB_RESERVED_SOCS:
            return self.ub_size - _UB_RESERVED_BYTES
        return self.ub_size

    @property
    def ub_image_size(self) -> int:
        """Bytes of one core's UB image: the physical UB (kernels may place tensors at fixed
        addresses up to it), at least ``ub_size``."""
        return max(self.ub_size, self.ub_physical_size)

    def launch_cycles(self, block_dim: int) -> int:
        """Task Duration beyond the cores' own cycles: the launch's fixed overhead plus a
        share per core beyond the first (dispatch and completion of every block)."""
        ns = self.launch_fixed_ns + self.launch_per_core_ns * max(int(block_dim) - 1, 0)
        return int(ns * self.clock_mhz / 1000.0 + 0.5)

    @property
    def hbm_bytes_per_cycle(self) -> float:
        """Chip-wide HBM rate: ai_core_cnt x ddr_rate (ini values) x hbm_efficiency."""
        return self.aic_core_num * self.ddr_rate * self.hbm_efficiency

    @property
    def l2_bytes_per_cycle(self) -> float:
        """Chip-wide L2 rate for hits: ai_core_cnt x l2_read_rate (ini values)."""
        return self.aic_core_num * self.l2_rate

    @property
    def l2_core_bytes_per_cycle(self) -> float:
        """One AIV core's rate for L2 hits: the AI core's l2_read_rate (ini) shared by its
        vector cores (aiv_core_num / aic_core_num of them; ASSUMPTION: an equal share)."""
        per = self.aiv_core_num / self.aic_core_num if self.aic_core_num else 1.0
        return self.l2_rate / max(per, 1.0)

    @property
    def cycle_ns(self) -> float:
        """Length of one core cycle in nanoseconds."""
        return 1000.0 / self.clock_mhz

    def us(self, cycles: float) -> float:
        """Convert core cycles to microseconds at this platform's clock."""
        return cycles / self.clock_mhz

    def cycles(self, us: float) -> float:
        """Convert microseconds to core cycles at this platform's clock."""
        return us * self.clock_mhz

    # -- what-if ------------------------------------------------------------------------

    def with_overrides(self, **fields: Any) -> Platform:
        """A new Platform with some fields replaced, for what-if studies.

        Field names are the attribute names (a few aliases are accepted: ``core_num`` for
        ``aiv_core_num``, TOML key names such as ``ub_size_bytes``). ``hbm_bytes_per_cycle``
        is accepted and stored as the ``hbm_efficiency`` that yields it. ``costs`` takes a
        :class:`Costs`, a cost-family name (``"a2"``, ``"950"``) or a dict of cost fields to
        replace. Unknown fields, wrong types and negative values raise ValueError naming the
        field. ``name`` is kept; the replaced field names are recorded in ``overridden``.
        """
        if not fields:
            return self
        fields = _resolve_aliases(fields)
        costs_spec = fields.pop("costs", None)
        hbm = fields.pop("hbm_bytes_per_cycle", None)
        gbps = fields.pop("hbm_gbps", None)
        checked = check_fields(fields, "platform", _PLATFORM_SCALARS, LIMITS, _valid_names)
        new_costs = self.costs
        if costs_spec is not None:
            new_costs = _resolve_costs(costs_spec, self.costs)
            checked["costs"] = new_costs
        if "short_soc" in checked and checked["short_soc"] not in SHORT_SOCS:
            raise ValueError(
                f"platform field 'short_soc' must be one of {list(SHORT_SOCS)}, "
                f"got {checked['short_soc']!r}"
            )
        new = dataclasses.replace(self, **checked)
        if gbps is not None:  # GB/s at the (possibly overridden) clock, as sweeps spell it
            rate = check_value("hbm_gbps", gbps, float, "platform")
            if hbm is not None:
                raise ValueError("platform fields 'hbm_gbps' and 'hbm_bytes_per_cycle' both "
                                 "given: give one")
            hbm = rate * 1e3 / new.clock_mhz if new.clock_mhz > 0 else rate
        if hbm is not None:
            rate = check_value("hbm_bytes_per_cycle", hbm, float, "platform")
            if rate <= 0:
                raise ValueError(f"platform field 'hbm_bytes_per_cycle' must be > 0, got {rate!r}")
            base = new.aic_core_num * new.ddr_rate
            if base <= 0:
                raise ValueError("platform field 'hbm_bytes_per_cycle': ai cores x ddr_rate is 0")
            new = dataclasses.replace(new, hbm_efficiency=rate / base)
            checked["hbm_bytes_per_cycle"] = rate
        check_limits(new)
        names = tuple(dict.fromkeys(self.overridden + tuple(checked)))
        return dataclasses.replace(new, overridden=names)


_DECLARED = [f for f in dataclasses.fields(Platform) if "toml" in f.metadata]

# Attribute -> TOML key of the preset files.
_TOML_KEYS: dict[str, str] = {f.name: f.metadata["toml"] for f in _DECLARED}

# Scalar Platform fields and their types (everything a user may set directly).
_PLATFORM_SCALARS: dict[str, type] = {"name": str,
                                      **{f.name: TYPES[f.type] for f in _DECLARED}}

# Extra accepted spellings (TOML keys, CANN ini keys, common shorthands).
_ALIASES: dict[str, str] = {
    **{f.metadata["toml"]: f.name for f in _DECLARED if f.metadata["toml"] != f.name},
    **{alias: f.name for f in _DECLARED for alias in f.metadata["aliases"]},
}

_DERIVED_OK = ("costs", "hbm_bytes_per_cycle", "hbm_gbps")

# Sane bounds of the platform fields (inclusive). Lower bounds: a zero core count, size or rate
# has no meaning and would divide by zero in the replay; upper bounds are far above any Ascend
# part (910B/910_93: 48 AIV at most, UB 192 KiB, queue depth 4-8; 950: 64 AIV, UB 256 KiB) yet
# keep a what-if from allocating the machine away (each AIV core holds a UB image in memory).
LIMITS: dict[str, tuple[float, float]] = {
    f.name: f.metadata["limits"] for f in _DECLARED if f.metadata["limits"] is not None}

# Unit of each scalar field (for messages and documentation).
UNITS: dict[str, str] = {f.name: f.metadata["unit"] for f in _DECLARED}


def check_limits(p: Platform) -> None:
    """ValueError naming the first field of ``p`` outside :data:`LIMITS`."""
    for name, limits in LIMITS.items():
        try:
            scalar_rule(_PLATFORM_SCALARS[name], limits).check(getattr(p, name), "")
        except schema.FieldError as e:
            raise ValueError(f"platform field {name!r}: {e.rule}") from None


def launch_problem(p: Platform) -> str | None:
    """Why ``p`` can be tiled on but not simulated (no usable UB), or None."""
    if p.core_mem_size_ub <= 0:
        return (f"platform {p.name!r}: ub_size {p.ub_size} leaves no usable UB "
                f"(GetCoreMemSize(UB) = {p.core_mem_size_ub}); the host tiling runs on it, a "
                "launch cannot")
    return None


def _valid_names() -> list[str]:
    return sorted(set(_PLATFORM_SCALARS) | set(_DERIVED_OK))


def _resolve_aliases(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        attr = _ALIASES.get(key, key)
        if attr in out:
            raise ValueError(f"platform field {attr!r} given twice (as {key!r} and another name)")
        out[attr] = value
    return out


def _resolve_costs(spec: Any, current: Costs) -> Costs:
    if isinstance(spec, Costs):
        return spec
    if isinstance(spec, str):
        return load_costs(spec)
    if isinstance(spec, Mapping):
        spec = dict(spec)
        base = current
        if "family" in spec:
            base = load_costs(check_value("family", spec.pop("family"), str, "costs"))
        return base.with_overrides(**spec)
    raise ValueError(
        f"platform field 'costs' must be a Costs, a family name {list_cost_families()} or a "
        f"dict of cost fields, got {type(spec).__name__}"
    )


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def list_presets() -> list[str]:
    """Names of the shipped platform presets (file stems of ``data/platforms/*.toml``)."""
    return sorted(p.stem for p in _PLATFORM_DIR.glob("*.toml"))


_PRESET_CACHE: dict[str, Platform] = {}


def _from_toml_file(path: Path, name: str) -> Platform:
    try:
        doc = textinput.loads_toml(textinput.read_document(path))
    except textinput.TextInputError as exc:
        raise ValueError(f"platform file {path.name}: {exc}") from None
    values: dict[str, Any] = {"name": name}
    missing = []
    for attr, key in _TOML_KEYS.items():
        if key in doc:
            values[attr] = doc[key]
        else:
            missing.append(key)
    unknown = sorted(set(doc) - set(_TOML_KEYS.values()) - {"costs", "name"})
    if unknown:
        raise ValueError(
            f"platform {name!r} ({path.name}): unknown keys {unknown}; "
            f"valid keys: {sorted(_TOML_KEYS.values())} and 'costs'"
        )
    if missing:
        raise ValueError(f"platform {name!r} ({path.name}): missing keys {missing}")
    if "costs" not in doc:
        raise ValueError(f"platform {name!r} ({path.name}): missing key 'costs' (cost family)")
    values["name"] = doc.get("name", name)
    checked = {
        k: check_value(k, v, _PLATFORM_SCALARS[k], f"platform {name!r}", LIMITS.get(k))
        for k, v in values.items()
    }
    if checked["short_soc"] not in SHORT_SOCS:
        raise ValueError(
            f"platform {name!r}: short_soc must be one of {list(SHORT_SOCS)}, "
            f"got {checked['short_soc']!r}"
        )
    platform = Platform(**checked, costs=load_costs(doc["costs"]))
    check_limits(platform)
    return platform


def _preset(name: str) -> Platform:
    key = name.strip().lower()
    if key in _PRESET_CACHE:
        return _PRESET_CACHE[key]
    path = _PLATFORM_DIR / f"{key}.toml"
    if not path.is_file():
        fam = boards.product_family(name)
        if fam is not None:  # a board's name: say which presets stand for it
            ours = [p for p in list_presets()
                    if boards.family_of(_from_toml_file(_PLATFORM_DIR / f"{p}.toml", p)) is fam]
            raise ValueError(f"{name!r} is a board of the {fam.name} family, not a preset: its "
                             f"chip is one of {', '.join(ours)}; to tell which, "
                             f"{fam.identify}")
        near = difflib.get_close_matches(name.lower(), list_presets(), n=1, cutoff=0.6)
        near += [p for p in list_presets() if not near and name.lower() in p]
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ValueError(f"unknown platform preset {name!r}{hint}; presets: "
                         f"{', '.join(list_presets())}")
    platform = _from_toml_file(path, key)
    _PRESET_CACHE[key] = platform
    return platform


def _short_soc_of(soc: str) -> str:
    """Map a full SoC string (``Ascend910B2``, ``Ascend910_9391``, ``Ascend950PR_9589``)."""
    s = soc.strip()
    if s.startswith("Ascend910_93"):
        return "Ascend910_93"
    if s.startswith("Ascend910B"):
        return "Ascend910B"
    if s.startswith("Ascend950"):
        return "Ascend950"
    raise ValueError(
        f"platform field 'soc': cannot tell the SoC family of {soc!r}; "
        f"expected a name starting with Ascend910B, Ascend910_93 or Ascend950"
    )


def _from_dict(spec: Mapping[str, Any]) -> Platform:
    fields = dict(spec)
    overlay = fields.pop("overlay", None)
    platform = _from_fields(fields)
    if overlay is None:
        return platform
    paths = overlay if isinstance(overlay, list) else [overlay]
    for path in paths:
        if not isinstance(path, str | Path):
            raise ValueError(f"platform 'overlay' must be a TOML path or a list of them, "
                             f"got {path!r}")
        platform = apply_overlay(platform, path)
    return platform


def load_overlay(path: str | Path) -> dict[str, Any]:
    """The fields of a platform overlay TOML (what ``aicore-sim calibrate`` writes).

    Top-level keys are platform fields (attribute or preset-file names, e.g.
    ``hbm_efficiency_ratio``); a ``[costs]`` table holds cost fields (e.g. ``mte2_scale``).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"platform overlay {str(p)!r} does not exist")
    try:
        doc = textinput.loads_toml(textinput.read_document(p))
    except textinput.TextInputError as exc:
        raise ValueError(f"platform overlay {p}: {exc}") from None
    costs = doc.pop("costs", None)
    if costs is not None and not isinstance(costs, dict):
        raise ValueError(f"platform overlay {p}: 'costs' must be a table of cost fields")
    for key, value in doc.items():
        if isinstance(value, dict):
            raise ValueError(f"platform overlay {p}: unknown table [{key}] (only [costs])")
    if costs:
        doc["costs"] = costs
    return doc


def apply_overlay(platform: Platform, path: str | Path) -> Platform:
    """``platform`` with the fields of the overlay at ``path`` replaced (errors name the file)."""
    fields = load_overlay(path)
    try:
        return platform.with_overrides(**fields)
    except ValueError as exc:
        raise ValueError(f"platform overlay {path}: {exc.args[0] if exc.args else exc}") from None


def _from_fields(fields: dict[str, Any]) -> Platform:
    preset = fields.pop("preset", None)
    if preset is not None:
        if not isinstance(preset, str):
            raise ValueError(f"platform 'preset' must be a preset name, got {preset!r}")
        return load_platform(preset).with_overrides(**fields)  # a name or a TOML path
    fields = _resolve_aliases(fields)
    short = fields.get("short_soc")
    soc = fields.get("soc")
    if short is None and soc is not None:
        short = _short_soc_of(check_value("soc", soc, str, "platform"))
        fields["short_soc"] = short
    if short is None:
        short = "Ascend910B"
    if short not in SHORT_SOCS:
        raise ValueError(
            f"platform field 'short_soc' must be one of {list(SHORT_SOCS)}, got {short!r}"
        )
    base = _preset(_FAMILY_BASE_PRESET[short])
    fields.setdefault("name", "custom")
    new = base.with_overrides(**fields)
    # A custom platform starts from its family preset; record every field the dict set.
    return new


def load_platform(spec: str | Path | Platform | Mapping[str, Any], **overrides: Any) -> Platform:
    """Resolve a platform from a preset name, a TOML path, a Platform or a dict.

    - ``"ascend910b1"`` (see :func:`list_presets`; case-insensitive),
    - a path to a TOML file in the preset format,
    - a :class:`Platform` (returned as is, or with ``overrides`` applied),
    - ``{"preset": "ascend910b1", "ub_size": 131072}``: a preset with fields replaced,
    - the same dicts as JSON text (``'{"preset": "ascend910b1", "hbm_gbps": 800}'``), as the
      command line and sweep axes give them,
    - ``{"core_num": 64, "ub_size": 262144, "soc": "Ascend910B"}``: the fields given, the rest
      from the nearest family's preset (Ascend910B -> ascend910b1, Ascend910_93 ->
      ascend910_9391, Ascend950 -> ascend950pr_9589; no soc -> Ascend910B);
    - either dict with ``"overlay": "file.toml"`` (or a list of files): after the fields, the
      overlay's fields are applied (:func:`load_overlay`; what ``aicore-sim calibrate`` writes).

    ``overrides`` are applied last, as by :meth:`Platform.with_overrides`.
    """
    if isinstance(spec, str) and spec.lstrip().startswith("{"):  # a JSON object, as on a CLI
        try:
            spec = textinput.loads_json(spec)
        except textinput.TextInputError as exc:
            raise ValueError(f"platform {spec!r}: {exc}") from None
        if not isinstance(spec, Mapping):
            raise ValueError("platform: a JSON platform must be an object of fields")
    if isinstance(spec, Platform):
        platform = spec
    elif isinstance(spec, Mapping):
        platform = _from_dict(spec)
    elif isinstance(spec, Path) or (
        isinstance(spec, str) and (spec.endswith(".toml") or "/" in spec or "\\" in spec)
    ):
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"platform file {str(path)!r} does not exist")
        platform = _from_toml_file(path, path.stem)
    elif isinstance(spec, str):
        platform = _preset(spec)
    else:
        raise ValueError(
            f"platform spec must be a preset name, a TOML path, a Platform or a dict, "
            f"got {type(spec).__name__}"
        )
    return platform.with_overrides(**overrides) if overrides else platform
