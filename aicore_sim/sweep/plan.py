"""One point of a tiling space: the tiling a sweep would launch, and the knob checks.

Step of the flow: what an operator's ``tiling_space.plan`` returns for ``sweep`` / ``search`` /
``tiling``. :class:`Plan` holds the operator's tiling record (anything with ``as_dict()`` and
``as_list()``), the tiling key, block dim, UB bytes and the rules the point breaks;
:func:`check_knobs` rejects unknown knobs and strategies with the same message for every op.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Plan", "check_knobs"]


@dataclass(frozen=True)
class Plan:
    """A point's tiling: data, key, block dim, UB bytes and the rules it breaks."""

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


def check_knobs(knobs: Iterable[str], strategy: str, valid_knobs: Iterable[str],
                strategies: Iterable[str]) -> None:
    """Raise ``ValueError`` naming an unknown knob or strategy and listing the valid ones."""
    valid_knobs = tuple(valid_knobs)
    strategies = tuple(strategies)
    unknown = sorted(set(knobs) - set(valid_knobs))
    if unknown:
        raise ValueError(f"unknown tiling knob(s) {unknown}; valid: {', '.join(valid_knobs)}")
    if strategy not in strategies:
        raise ValueError(f"unknown tiling strategy {strategy!r}; valid: {', '.join(strategies)}")
