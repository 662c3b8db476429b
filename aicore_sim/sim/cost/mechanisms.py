"""Every chip-level cost mechanism, declared once.

Step of the flow: nothing here computes; each record says where a mechanism's cycles or bytes
are computed (``where``), which prepared columns of the replay (``engine.core.Columns``) carry
it, which cost and platform fields it reads, whether it is priced before the replay or during
it (``when``: the fields of those before make the prepared columns' cache key,
``engine.prepared_key``), which stall cause (``trace.STALL_CAUSES``) its lost cycles appear
as, and which what-if of ``views/slack.py`` takes its cost away (``lever``).
The slack view takes its memory levers' names from here and zeroes the columns the
mechanisms of its ``HBM`` lever declare; ``tests/test_mechanisms.py`` keeps the records true:
every column is one of the replay's and in its grouping key (``engine/groups.py``), every
field exists, every stall cause is the trace's and every lever is one of the slack view's.
"""

from __future__ import annotations

from typing import NamedTuple

# The slack levers of the mechanisms that are not a pipe's own time (views/slack.py), each
# with the change its scenario makes.
HBM = "HBM"
L2 = "L2"
BANKS = "UB banks"
GRANULES = "GM granules"
LEVER_CHANGES = {HBM: "unlimited", L2: "re-reads hit", BANKS: "no conflicts",
                 GRANULES: "no queue"}
# Levers that are a pipe's time (slack's PIPES by name): a mechanism on the scalar unit.
SCALAR = "SCALAR"


class Mechanism(NamedTuple):
    """One cost mechanism (see the module)."""

    name: str
    where: str  # the module (under aicore_sim/sim/) that computes its cycles or bytes
    columns: tuple[str, ...]  # prepared columns that carry it (engine.core.Columns)
    cost_fields: tuple[str, ...]  # Costs fields it reads (cost/params.py)
    platform_fields: tuple[str, ...]  # Platform fields it reads (platform.py)
    stall: str | None  # the stall cause its lost cycles are recorded as (None: no stall row)
    lever: str  # the slack lever whose scenario takes its cost away (L2: serves every re-read)
    # "prepare": priced into the prepared columns before the replay (its fields are part of
    # what the columns depend on, engine.prepared_key); "replay": computed during it
    when: str


MECHANISMS: tuple[Mechanism, ...] = (
    # The chip's HBM bandwidth shared by all transfers in flight (processor sharing): a copy
    # waits for its bytes (gmb) and L2 write-backs load it in the background (wbb).
    Mechanism("GM bandwidth", "engine/gm.py", ("gmb", "wbb"), (),
              ("aic_core_num", "ddr_rate", "hbm_efficiency"), "gm_bandwidth", HBM, "replay"),
    # The fabric between the cores and GM: UB -> GM writes share what streaming reads leave.
    Mechanism("chip fabric", "engine/fabric.py", ("fab",),
              ("gm_fabric_ai_core_bytes_per_cycle",), ("aic_core_num",), "gm_bandwidth", HBM,
              "replay"),
    # L2 in front of HBM: hits, line fills and write-backs re-price every GM copy before the
    # replay (a read's occupancy from its hit and miss bytes: cost.copy_occupancy_many).
    Mechanism("L2", "engine/l2.py", ("occ", "gmb", "wbb"),
              ("l2_line_bytes", "l2_warm_start", "unaligned_512_bandwidth_ratio",
               "bypass_partial_granule_bandwidth_ratio", "copy_model"),
              ("l2_size", "l2_rate", "aic_core_num", "aiv_core_num"), "gm_bandwidth", L2,
              "prepare"),
    # The scalar data cache: a GetValue from GM that misses costs dcache_miss_cycles more
    # than its hit price (cost.price's, platform.dcache_hit_cycles), added by engine/core.py;
    # its misses are part of the grouping key (engine/groups.py).
    Mechanism("data cache", "engine/dcache.py", (), (),
              ("dcache_size", "dcache_line", "dcache_miss_cycles"), None, SCALAR, "replay"),
    # UB bank conflicts of a banked vector call's operands, reads and writes
    # (cost.bank_beats).
    Mechanism("UB bank conflicts", "cost/price.py", ("occ", "conf"),
              ("ub_bank_groups", "ub_block_bytes", "ub_bank_bytes", "ub_banks_per_group",
               "ub_group_read_ports", "ub_beat_cycles", "ub_bank_apis"), (), "bank_conflict",
              BANKS, "prepare"),
    # Requests of many cores for one GM granule at once, served one at a time
    # (cost.granule_queue_cycles of the cores engine/l2.py counts).
    Mechanism("GM granule queues", "cost/price.py", ("occ", "conf"),
              ("gm_serial_granule_bytes", "gm_serial_cycles", "mte2_scale", "mte3_scale"), (),
              "same_granule", GRANULES, "prepare"),
    # The kernel's entry: every core reads its parameter block's granules at once
    # (cost.kernel_entry_cycles; the same for every core, so no column). Its lever takes the
    # queue away; what is left is each read's data-cache miss (SCALAR's lever).
    Mechanism("kernel entry", "cost/price.py", (), ("gm_serial_cycles",),
              ("kernel_entry_reads", "dcache_miss_cycles"), "same_granule", GRANULES,
              "replay"),
    # SyncAll: every core is released sync_all_cycles (the SyncAll's occupancy, on the scalar
    # unit) after the last one arrives (engine/core.py's ChipBarrier).
    Mechanism("SyncAll", "cost/price.py", ("occ",), ("sync_all_cycles",), (), "sync_all",
              SCALAR, "prepare"),
)

# The Platform fields every instruction's own price reads (cost/price.py, beside
# platform.costs): the clock (copy curves in ns) and the scalar unit's fixed reads.
PRICE_PLATFORM_FIELDS = ("clock_mhz", "dcache_hit_cycles", "ub_read_cycles")
# The Platform fields the prepared columns depend on besides the costs: the prices' and
# those of every mechanism priced before the replay (engine.prepared_key).
PREPARED_PLATFORM_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(
    PRICE_PLATFORM_FIELDS + tuple(f for m in MECHANISMS if m.when == "prepare"
                                  for f in m.platform_fields)))


def columns_of(lever: str) -> tuple[str, ...]:
    """The prepared columns that carry the mechanisms of ``lever``, in declaration order."""
    return tuple(dict.fromkeys(c for m in MECHANISMS if m.lever == lever for c in m.columns))


__all__ = ["BANKS", "GRANULES", "HBM", "L2", "LEVER_CHANGES", "MECHANISMS", "Mechanism",
           "PREPARED_PLATFORM_FIELDS", "PRICE_PLATFORM_FIELDS", "SCALAR", "columns_of"]
