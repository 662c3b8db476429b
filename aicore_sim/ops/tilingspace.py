"""``TilingSpace``: what ``sweep`` and ``search`` may vary of one operator's tiling.

Step of the flow: sweep set-up. An operator that can be swept exposes an instance as its
optional ``OpModel.tiling_space`` (none: no ``sweep`` / ``search``). A subclass writes the
operator's own: ``op``, ``case_axes``, ``knobs``, :meth:`~TilingSpace.resolve_case`,
:meth:`~TilingSpace.case_columns`, :meth:`~TilingSpace.plan` and
:meth:`~TilingSpace.search_space`. Everything else has a default: one strategy (``upstream``),
string-valued case axes, the case axes as the result columns that identify a case, no short
tiling labels, no resource check before a search, and a point launched (:meth:`~TilingSpace.
launch`) and verified (:meth:`~TilingSpace.verify`) through the op's one call path
(:func:`aicore_sim.ops.opmodel.call`, ``Recording.compare``). A :class:`Plan` is one point's
tiling.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["Plan", "TilingSpace"]


@dataclass(frozen=True)
class Plan:
    """A point's tiling: the operator's tiling record (anything with ``as_dict()`` and
    ``as_list()``), the tiling key, block dim, UB bytes and the rules it breaks."""

    tiling: Any
    tiling_key: int | None
    block_dim: int
    ub_bytes: int
    violations: tuple[tuple[str, str], ...]

    @property
    def feasible(self) -> bool:
        return self.tiling is not None and not self.violations

    def tiling_dict(self) -> dict[str, int]:
        return {} if self.tiling is None else self.tiling.as_dict()

    def record_key(self) -> tuple:
        """What the record pass depends on besides the case and the UB size."""
        return (self.tiling_key, self.block_dim,
                tuple(self.tiling.as_list()) if self.tiling is not None else ())


class TilingSpace(ABC):
    """The tiling space of one operator (see the module docstring).

    Attributes (class attributes of a subclass):
    """

    op: str
    """The operator (``OpModel.name``) whose call path runs a point."""

    case_axes: Mapping[str, str]
    """Case axes a sweep may vary besides the case itself: axis -> what it replaces."""

    case_axis_types: Mapping[str, type] = MappingProxyType({})
    """Value type of a case axis in a sweep file (``int``, ``float``; the others ``str``)."""

    knobs: tuple[str, ...]
    """Tiling fields a sweep may override (``plan``'s ``knobs``)."""

    strategies: Mapping[str, str] = MappingProxyType(
        {"upstream": "the ported host tiling (the knobs override it)"})
    """Named tiling strategies (name -> description), ``upstream`` first."""

    tiling_short: tuple[tuple[str, ...], ...] = ()
    """``(tiling field, short label)`` pairs a sweep report shows for a tiling; a third item
    names the field counting the loops over it (shown as ``hA=2048x2`` when > 1)."""

    def knobs_for(self, cases: Iterable[Any]) -> tuple[str, ...]:
        """The knobs a sweep over ``cases`` (its ``case`` axis values) may set: :attr:`knobs`
        (an op whose tiling fields depend on the case says so here)."""
        return tuple(self.knobs)

    @property
    def sweep_columns(self) -> tuple[str, ...]:
        """Result columns of a sweep row that identify the case (after ``case``), in order:
        the case axes."""
        return tuple(self.case_axes)

    @abstractmethod
    def resolve_case(self, value: str, axes: Mapping[str, Any]) -> Any:
        """The case named ``value`` (bundled name or case-file path) with case ``axes``
        applied (a case of the op: ``name``, ``description``, ``seed``)."""

    @abstractmethod
    def case_columns(self, case: Any) -> dict[str, Any]:
        """The case's identity as result columns: ``case``, then :attr:`sweep_columns`."""

    @abstractmethod
    def plan(self, case: Any, platform: Any, strategy: str = "upstream",
             knobs: Mapping[str, int] | None = None) -> Plan:
        """The tiling of one point: the strategy's tiling, the overridden knobs, the broken
        rules (:meth:`check_knobs` refuses unknown knobs and strategies)."""

    @abstractmethod
    def search_space(self, case: Any, platform: Any) -> list[dict[str, int]]:
        """Legal knob combinations a search may try."""

    def check_resources(self, case: Any, platform: Any) -> None:  # noqa: B027 - a hook
        """Raise ``ResourceError`` before a search when one launch of ``case`` cannot fit in
        memory (default: nothing checked)."""

    def check_knobs(self, knobs: Iterable[str], strategy: str) -> None:
        """Raise ``ValueError`` naming an unknown knob or strategy and listing the valid
        ones."""
        unknown = sorted(set(knobs) - set(self.knobs))
        if unknown:
            raise ValueError(f"unknown tiling knob(s) {unknown}; valid: {', '.join(self.knobs)}")
        if strategy not in self.strategies:
            raise ValueError(f"unknown tiling strategy {strategy!r}; valid: "
                             f"{', '.join(self.strategies)}")

    def launch(self, case: Any, platform: Any, plan: Plan, mode: str = "timing-only",
               races: bool = False, seed: int | None = None,
               kernel_source: str | None = None) -> Any:
        """The :class:`~aicore_sim.sim.recording.Recording` of ``case`` with ``plan``'s tiling,
        through the op's call path; ``kernel_source`` (a path; ``"port"`` or None: the
        Python port) runs the op's own C++ kernel instead."""
        from aicore_sim.ops.opmodel import call

        model, inputs, attrs = _case_call(self.op, case, seed)
        launch = {}
        if kernel_source not in (None, "port"):
            from aicore_sim.cfront import KernelSource

            launch["kernel_source"] = KernelSource.of(kernel_source)
        return call(model, inputs, attrs, platform, mode=mode, races=races,
                    tiling=(plan.tiling, plan.tiling_key, plan.block_dim), **launch)[1]

    def verify(self, case: Any, platform: Any, plan: Plan, seed: int | None = None,
               kernel_source: str | None = None) -> dict[str, Any]:
        """A timed run with numerics compared bit for bit with the golden of this tiling:
        ``status`` (``verified`` / ``mismatch``), ``detail`` and ``cycles``."""
        rec = self.launch(case, platform, plan, mode="timed", seed=seed,
                          kernel_source=kernel_source)
        cmp, hz = rec.compare(), sorted({h.kind for h in rec.hazards})
        exact = all(v.get("exact", False) for v in cmp.values())
        detail = "; ".join(f"{k}: {'exact' if v.get('exact') else v}" for k, v in cmp.items())
        return {"status": "verified" if exact and not hz else "mismatch",
                "detail": detail + (f"; hazards: {', '.join(hz)}" if hz else ""),
                "cycles": rec.cycles}


@functools.lru_cache(maxsize=2)  # a sweep records many tilings of one case
def _case_call(name: str, case: Any, seed: int | None) -> tuple[Any, dict, dict]:
    """The op model named ``name``, the case's inputs for ``seed`` and its attributes."""
    from aicore_sim.ops.registry import get_op

    model = get_op(name)
    return model, model.case_inputs(case, seed), model.case_specs(case)[1]
