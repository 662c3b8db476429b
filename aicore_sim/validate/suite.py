"""What a validation suite is made of: scenarios, the board's figures for them, and the
optimisation steps between them.

Step of the flow: a suite (e.g. ``op_models/board_samples``, registered in the
``aicore_sim.validation`` entry-point group) lists :class:`Scenario` objects: a kernel port
launched the way the sample launches it, on one platform preset, with the figures a board
measured for it (:class:`BoardValue`, transcribed with unit, scope and source). ``aicore-sim
validate`` runs each scenario timing-only and compares the simulated figures of the same
columns; :class:`Step` pairs two scenarios whose ratio is an optimisation the vendor teaches.

Columns (the msprof names they stand for; per-core values are the mean over the launch's cores,
as the sample READMEs quote them):

========== ======================= ===========================================================
column     msprof name             scope
========== ======================= ===========================================================
task_us    Task Duration(us)       task: the whole launch, head overhead included
aiv_us     aiv_time(us)            per core: start to last completion
mte2_us    aiv_mte2_time(us)       per core
mte3_us    aiv_mte3_time(us)       per core
vec_us     aiv_vec_time(us)        per core
scalar_us  aiv_scalar_time(us)     per core
vec_ticks  (GetSystemCycle span)   per core: VECTOR busy time in system-counter ticks
                                   (bank_conflict_ub's unit; ``platform.system_counter_mhz``)
========== ======================= ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

COLUMNS: dict[str, tuple[str, str]] = {
    # column: (msprof name, unit)
    "task_us": ("Task Duration(us)", "us"),
    "aiv_us": ("aiv_time(us)", "us"),
    "mte2_us": ("aiv_mte2_time(us)", "us"),
    "mte3_us": ("aiv_mte3_time(us)", "us"),
    "vec_us": ("aiv_vec_time(us)", "us"),
    "scalar_us": ("aiv_scalar_time(us)", "us"),
    "vec_ticks": ("vector time in GetSystemCycle ticks", "ticks"),
}


@dataclass(frozen=True)
class BoardValue:
    """One figure a board measured for a scenario (transcribed, never computed)."""

    column: str  # a key of COLUMNS
    value: float
    unit: str  # "us" or "ticks", as COLUMNS says for the column
    scope: str  # "task" or "per_core"
    source: str  # file in the upstream repository the figure is read from
    commit: str  # upstream commit of that file


@dataclass(frozen=True)
class LaunchSpec:
    """Everything :func:`aicore_sim.sim.launch.launch` needs to run one scenario."""

    kernel: Callable[..., None]
    args: Sequence[Any]
    tensors: Mapping[str, np.ndarray]
    outputs: Mapping[str, tuple[np.dtype, tuple[int, ...]]]
    block_dim: int


@dataclass(frozen=True)
class Scenario:
    """A sample kernel launched as the board ran it.

    ``build(scale)`` returns the launch; ``scale`` = 1.0 is the full size. A scenario too long
    to simulate at full size sets ``scale`` < 1 (the fraction of the work kept, e.g. rows per
    core): the runner then runs it at ``scale`` and ``2 * scale``, shows the ratio of the two
    (2.0 when the figures grow linearly) and extrapolates linearly to full size."""

    name: str  # unique, e.g. "data_copy_s1_a2"
    sample: str  # "data_copy", "add_high_performance", "bank_conflict_ub"
    platform: str  # platform preset, e.g. "ascend910b1"
    description: str
    build: Callable[[float], LaunchSpec]
    board: tuple[BoardValue, ...]
    scale: float = 1.0
    # figures the runner leaves out of a column because the board's value is not comparable,
    # with the reason (e.g. a column the sample's table does not give)
    notes: Mapping[str, str] = field(default_factory=dict)

    @property
    def group(self) -> str:
        """The scenario's source: its sample on its SoC (``data_copy@ascend910b1``). A group
        some parameter was fitted on (any of its scenarios) is not held out."""
        return f"{self.sample}@{self.platform}"


@dataclass(frozen=True)
class Step:
    """An optimisation: ``optimised`` against ``baseline`` on ``column`` (the board's gain is
    baseline / optimised of the board's figures; the simulated gain the same of ours)."""

    name: str  # e.g. "tile 128 B -> 128 KB (A2)"
    kind: str  # "tile size", "alignment", "L2 reuse", "core staggering", "scalar -> vector",
    # "one core -> all cores", "double buffer", "L2 bypass", "bank-conflict-free layout"
    baseline: str  # scenario name
    optimised: str  # scenario name
    column: str = "task_us"


@dataclass(frozen=True)
class Suite:
    """A validation suite as an entry point of ``aicore_sim.validation`` returns it.

    ``fitted`` names the scenarios whose board figures some timing-model parameter was fitted
    on, each with those parameters (e.g. ``"mte2.pipeline.issue_cycles (costs/a2.toml)"``);
    the report gives the error over all scenarios and over the others only (held out)."""

    name: str
    scenarios: tuple[Scenario, ...]
    steps: tuple[Step, ...]
    fitted: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
