"""Costs: the one home of timing formulas and of the parameters they read.

- ``params.py``: :class:`Costs`, the cost parameters of one SoC family, read from
  ``data/costs/<family>.toml`` (each figure with its unit and source), and the checks of
  scalar cost and platform fields;
- ``price.py``: what each instruction costs on its own (the :class:`Price` row the engine
  prepares its columns from), a copy's least time behind other cores on its GM granule, the
  kernel's entry, the L2 model's re-priced reads;
- ``mechanisms.py``: every chip-level cost mechanism declared once: its prepared columns,
  its cost and platform fields, its stall cause and the slack lever that takes its cost away.

``from aicore_sim.sim import cost`` then ``cost.occupancy_cycles(...)`` is the usual use.
"""

from aicore_sim.sim.cost.params import (
    CopyCurve,
    Costs,
    LinearApiCost,
    VfMicroOp,
    list_cost_families,
    load_costs,
)
from aicore_sim.sim.cost.price import (
    GM_GRANULE_BYTES,
    Price,
    bank_beats,
    bank_conflict_cycles,
    copy_occupancy_many,
    gm_bytes,
    granule_queue_cycles,
    issue_cycles,
    kernel_entry_cycles,
    latency_cycles,
    occupancy_cycles,
    price,
    register_extra_beats,
    sort_passes,
    tail_cycles,
)

__all__ = [
    "GM_GRANULE_BYTES",
    "CopyCurve",
    "Costs",
    "LinearApiCost",
    "Price",
    "VfMicroOp",
    "bank_beats",
    "bank_conflict_cycles",
    "copy_occupancy_many",
    "gm_bytes",
    "granule_queue_cycles",
    "issue_cycles",
    "kernel_entry_cycles",
    "latency_cycles",
    "list_cost_families",
    "load_costs",
    "occupancy_cycles",
    "price",
    "register_extra_beats",
    "sort_passes",
    "tail_cycles",
]
