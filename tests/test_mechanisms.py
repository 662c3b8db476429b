"""The cost mechanisms' declarations (aicore_sim/sim/cost/mechanisms.py) are true to the code:
each mechanism's columns are prepared columns in the replay's grouping key, its fields exist,
its stall cause is the trace's and its lever is among the slack view's; the prepared columns
are built from the one price row; cycles are computed only in the modules docs/design.md
names."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.sim import cost, engine
from aicore_sim.sim.cost.mechanisms import (
    MECHANISMS,
    PREPARED_PLATFORM_FIELDS,
    PRICE_PLATFORM_FIELDS,
    columns_of,
)
from aicore_sim.sim.engine import core
from aicore_sim.sim.engine.groups import KEY_COLUMNS
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.sim.trace import STALL_CAUSES
from aicore_sim.views import slack
from tests import kernels

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "aicore_sim" / "sim"


def test_every_mechanism_is_declared_once_with_a_known_module() -> None:
    names = [m.name for m in MECHANISMS]
    assert len(names) == len(set(names))
    assert {"GM bandwidth", "chip fabric", "L2", "data cache", "UB bank conflicts",
            "GM granule queues", "kernel entry", "SyncAll"} == set(names)
    for m in MECHANISMS:
        assert (SIM / m.where).is_file(), m


def test_each_mechanisms_columns_are_in_the_grouping_key() -> None:
    for m in MECHANISMS:
        assert set(m.columns) <= set(KEY_COLUMNS), m.name
    # the key leaves out only what core.NOT_KEYED names, with its reason
    assert set(core.Columns._fields) - set(KEY_COLUMNS) == set(core.NOT_KEYED)


def test_each_mechanisms_fields_exist() -> None:
    cost_fields = {f.name for f in dataclasses.fields(cost.Costs)}
    platform_fields = {f.name for f in dataclasses.fields(Platform)}
    for m in MECHANISMS:
        assert set(m.cost_fields) <= cost_fields, m.name
        assert set(m.platform_fields) <= platform_fields, m.name
        assert m.when in ("prepare", "replay"), m.name
    assert set(PRICE_PLATFORM_FIELDS) <= platform_fields


# Platform properties the pricing modules read, by the fields they are computed from.
_PROPERTIES = {"l2_core_bytes_per_cycle": ("l2_rate", "aiv_core_num", "aic_core_num")}


def test_the_pricing_modules_read_only_declared_platform_fields() -> None:
    declared = set(PRICE_PLATFORM_FIELDS).union(*(m.platform_fields for m in MECHANISMS))
    fields = {f.name for f in dataclasses.fields(Platform)}
    for rel in ("cost/price.py", "engine/l2.py"):
        for name in set(re.findall(r"platform\.([a-z_0-9]+)", (SIM / rel).read_text())):
            if name in ("costs", "_cost_cache") or name not in fields | set(_PROPERTIES):
                continue  # the costs, the tables' cache
            assert set(_PROPERTIES.get(name, (name,))) <= declared, (rel, name)


@pytest.mark.parametrize("name", PREPARED_PLATFORM_FIELDS)
def test_every_field_the_prepared_columns_read_tells_them_apart(name) -> None:
    base = load_platform("ascend910b1")
    value = getattr(base, name)
    what = base.with_overrides(**{name: value * 2 if value else 1})
    assert engine.prepared_key(what) != engine.prepared_key(base)


def test_a_what_if_of_a_priced_field_is_not_replayed_from_the_recorded_columns() -> None:
    # the scalar unit's UB reads are priced into the columns: a what-if that changes them must
    # not reuse the recording's (it did while the cache key was the costs, clock and L2 size)
    name = "ub_read_cycles"
    tiny = load_platform("tiny")
    x = np.arange(8, dtype=np.int32)
    r = launch(kernels.scalar_read, ["x", "y", {}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.int32, (8,))}, tiny, block_dim=1, mode="timing-only")
    what = tiny.with_overrides(**{name: getattr(tiny, name) + 50})
    fresh = engine.replay(r.program.streams, what, None, r.program.allocations).makespan
    assert r.replay(what, check=False)[0].makespan == fresh > r.cycles


def test_each_mechanisms_stall_cause_and_lever_are_known() -> None:
    levers = {lever for lever, _ in slack.scenarios()}
    for m in MECHANISMS:
        assert m.stall is None or m.stall in STALL_CAUSES, m.name
        assert m.lever in levers, m.name
    # and every lever that is no pipe's belongs to a mechanism
    assert levers - {p.name for p in slack.PIPES} <= {m.lever for m in MECHANISMS}


def test_hbm_lever_zeroes_exactly_its_mechanisms_columns() -> None:
    n = 3
    cols = core.Columns(**{f: [5] * n for f in core.ROW_FIELDS if f != "pipe_of"},
                        pipe_of=bytearray([1, 2, 3]), wbb=[7] * n, sets_left={})
    changed = slack._columns(cols, slack.HBM, "unlimited")
    zeroed = {f for f in core.Columns._fields if getattr(changed, f) != getattr(cols, f)}
    assert zeroed == set(columns_of(slack.HBM)) == {"gmb", "wbb", "fab"}


def test_a_row_holds_each_value_under_its_name() -> None:
    # the replay's own values follow the Price's in ROW_FIELDS' order: read back by name
    tiny = load_platform("tiny")
    x = np.arange(8, dtype=np.int32)
    r = launch(kernels.scalar_read, ["x", "y", {}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.int32, (8,))}, tiny, block_dim=1, mode="timing-only")
    stream = r.program.streams[0]
    cols = core.prepare(stream, tiny)
    for i, ins in enumerate(stream):
        row = dict(zip(core.ROW_FIELDS, core._row(ins, tiny, False, {}), strict=True))
        assert row["occ"] == cost.occupancy_cycles(ins, tiny) == cols.occ[i]
        assert row["issue"] == cost.issue_cycles(ins, tiny) == cols.issue[i]
        assert row["gmb"] == cost.gm_bytes(ins) == cols.gmb[i]
        assert row["pipe_of"] == int(ins.pipe) == cols.pipe_of[i]
        assert row["lat"] == cost.latency_cycles(ins, tiny) == cols.lat[i]
        assert row["kind"] == {"SetFlag": 2, "WaitFlag": 1, "PipeBarrier": 3}.get(
            ins.op.value, 0) == cols.kind[i]
        assert row["fkey"] == cols.fkey[i] and row["eff"] == cols.eff[i]


def test_prepared_columns_come_from_the_price_row() -> None:
    # the price's fields lead the row, each a column of the same name
    assert core.ROW_FIELDS[:len(cost.Price._fields)] == cost.Price._fields
    assert set(core.ROW_FIELDS) <= set(core.Columns._fields)
    assert set(core.Columns._fields) - set(core.ROW_FIELDS) == {"wbb", "sets_left"}


# Where docs/design.md says cycles are computed, as module paths under aicore_sim/sim/.
_PRICED_IN = {"cost/price.py", "engine/gm.py", "engine/fabric.py"}


def test_design_doc_names_the_places_cycles_are_computed() -> None:
    text = (ROOT / "docs" / "design.md").read_text()
    bullet = next(b for b in text.split("\n* ") if b.startswith("`semantics.py` is the only"))
    for where in _PRICED_IN:
        assert f"`{where}`" in bullet or f"`{where.split('/')[-1]}`" in bullet, where


def test_engine_reads_no_cost_parameter_but_through_the_cost_package() -> None:
    """The engine modules that are not a pricing place read of the cost parameters only
    what switches a mechanism on or sizes it (a line, a granule, a rate, a ratio of bytes)."""
    allowed = {"gm_fabric_ai_core_bytes_per_cycle", "l2_line_bytes", "l2_warm_start", "copy_model",
               "unaligned_512_bandwidth_ratio", "bypass_partial_granule_bandwidth_ratio",
               "gm_serial_cycles", "gm_serial_granule_bytes"}
    for path in (SIM / "engine").glob("*.py"):
        rel = f"engine/{path.name}"
        if rel in _PRICED_IN:
            continue
        read = set(re.findall(r"costs\.([a-z_0-9]+)", path.read_text()))
        assert read <= allowed, (rel, read - allowed)
