"""The tiling space of the ``cpp_kernel`` operator: a sweep over a user kernel's tiling fields.

Step of the flow: sweep set-up for a kernel of the user's own (``aicore_sim/cfront/op.py``).
Its knobs are the integer fields of the tiling struct its case file's header declares (nested
fields as ``struct.field``), plus ``block_dim`` and ``tiling_key``; a point is the case file's
tiling (its ``values``, or what its tiling callable returns on the point's platform) with the
knobs it sets replaced. aicore-sim knows nothing of a user kernel's rules, so every point is
feasible until it runs: a tiling the kernel cannot take fails in its launch (an over-full UB,
an out-of-bounds copy: an ``error`` row naming it). ``search`` has no space to search here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from aicore_sim.ops.tilingspace import Plan, TilingSpace

BLOCK_DIM, TILING_KEY = "block_dim", "tiling_key"


@dataclass
class TilingValues:
    """A launch's tiling: the header's field values (or raw bytes); ``as_dict()`` for reports
    and sweeps."""

    values: dict[str, Any] | None
    raw: bytes | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values) if self.values is not None else {"bytes": (self.raw or b"").hex()}

    def as_list(self) -> list[Any]:
        """The values in field order (what a sweep's record reuse compares)."""
        return list(self.as_dict().values())


@cache
def _case(path: str) -> Any:
    from aicore_sim.ops.casefile import load_case

    cf = load_case(path)
    if "cpp" not in (cf.attrs if isinstance(cf.attrs, Mapping) else {}):
        raise ValueError(f"{path}: not a cpp_kernel case file (\"op\": \"cpp_kernel\")")
    return cf


def _int_fields(layout: Any, prefix: str = "") -> list[str]:
    """The integer scalar fields of a tiling layout (``struct.field`` for nested ones)."""
    out: list[str] = []
    for f in layout.fields:
        if f.struct is not None:
            out += _int_fields(f.struct, f"{prefix}{f.name}.")
        elif f.count == 1 and f.ctype not in ("float", "double", "bool"):
            out.append(prefix + f.name)
    return out


class CppTilingSpace(TilingSpace):
    """What a sweep may vary of a ``cpp_kernel`` case: its tiling struct's integer fields,
    its block dim and its tiling key (see the module docstring)."""

    op = "cpp_kernel"
    case_axes: Mapping[str, str] = {}
    knobs: tuple[str, ...] = (BLOCK_DIM, TILING_KEY)
    strategies = {"upstream": "the case file's tiling (the knobs override it)"}

    def knobs_for(self, cases: Iterable[Any]) -> tuple[str, ...]:
        fields: list[str] = []
        for c in cases:
            try:
                spec = _case(str(c)).attrs["cpp"]
            except Exception:  # noqa: BLE001 - the case axis reports a bad case itself
                continue
            if spec.header is not None:
                fields += [f for f in _int_fields(spec.layout()[0]) if f not in fields]
        return (*fields, BLOCK_DIM, TILING_KEY)

    def resolve_case(self, value: str, axes: Mapping[str, Any]) -> Any:
        return _case(str(value))

    def case_columns(self, case: Any) -> dict[str, Any]:
        return {"case": case.name}

    def plan(self, case: Any, platform: Any, strategy: str = "upstream",
             knobs: Mapping[str, int] | None = None) -> Plan:
        from aicore_sim.ops.registry import get_op

        knobs = dict(knobs or {})
        pc = get_op(self.op).prepare({}, dict(case.attrs), platform)
        tv: TilingValues = pc.tiling
        block_dim = int(knobs.pop(BLOCK_DIM, pc.block_dim))
        key = int(knobs.pop(TILING_KEY, pc.tiling_key or 0))
        violations: list[tuple[str, str]] = []
        if knobs and tv.values is None:
            violations.append(("tiling_bytes", "the tiling callable returns raw bytes: no "
                               "field of it can be set"))
            values = None
        else:
            values = dict(tv.values or {})
            for k, v in knobs.items():
                values[k] = int(v)
        if block_dim < 1:
            violations.append(("block_dim", f"block_dim {block_dim} must be >= 1"))
        elif block_dim > platform.aiv_core_num:
            violations.append(("block_dim", f"block_dim {block_dim} is more than the "
                               f"platform's {platform.aiv_core_num} AIV cores"))
        tiling = tv if values is None else TilingValues(values)
        return Plan(tiling, key, block_dim, 0, tuple(violations))

    def search_space(self, case: Any, platform: Any) -> list[dict[str, int]]:
        raise ValueError("search: a cpp_kernel case has no known legal tilings to search "
                         "(aicore-sim knows nothing of your kernel's rules); sweep its tiling "
                         "fields instead")

    def launch(self, case: Any, platform: Any, plan: Plan, mode: str = "timing-only",
               races: bool = False, seed: int | None = None,
               kernel_source: str | None = None) -> Any:
        """The point's Recording: the case file's inputs (for ``seed``), the plan's tiling."""
        from aicore_sim.ops.opmodel import call
        from aicore_sim.ops.registry import get_op

        model = get_op(self.op)
        inputs = model.case_file_data(case, seed)
        launch: dict[str, Any] = {}
        if kernel_source not in (None, "port"):
            from aicore_sim.cfront.kernel import KernelSource

            launch["kernel_source"] = KernelSource.of(kernel_source)
        return call(model, inputs, dict(case.attrs), platform, mode=mode, races=races,
                    tiling=(plan.tiling, plan.tiling_key, plan.block_dim), **launch)[1]


TILING_SPACE = CppTilingSpace()

__all__ = ["CppTilingSpace", "TILING_SPACE", "TilingValues"]
