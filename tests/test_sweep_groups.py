"""Sweep points are batched by the program they record, not by their axes: strategies and
overrides that resolve to the same tiling record once per platform."""

from __future__ import annotations

from aicore_sim.sweep import expand, parse_spec, run_points, worker
from aicore_sim.sweep.points import batches
from aicore_sim.sweep.run import SerialExecutor
from aicore_sim.sweep.worker import record_group

# On `tiny` (10 tokens, topK 3) every strategy comes to the same tiling, so the 24 points are
# 2 platforms x 2 values of indicesReserveNum = 4 distinct programs, each replayed for
# 3 strategies x 2 HBM bandwidths = 6 points.
DOC = {
    "sweep": {"name": "groups"},
    "axes": {"case": ["tiny"], "platform": ["ascend910b1", "ascend950pr_9589"],
             "strategy": ["upstream", "balanced", "max_rows"], "hbm_gbps": [900, 1600]},
    "tiling": {"indicesReserveNum": ["auto", 24]},
}


def test_points_with_one_tiling_share_a_batch():
    pts = expand(parse_spec(DOC))
    assert len(pts) == 24
    got = batches(pts, 32, record_group)
    assert sorted(len(b) for b in got) == [6, 6, 6, 6]
    for b in got:
        assert len({p.axes["platform"] for p in b}) == 1
        assert len({p.axes["indicesReserveNum"] for p in b}) == 1
    # the axes-only grouping keeps every strategy apart: 24 / 2 bandwidths = 12 batches of 2
    assert sorted(len(b) for b in batches(pts, 32)) == [2] * 12


def test_one_record_per_tiling_and_equal_results():
    worker._RECORDS.clear()  # records other tests of this process left in the cache
    rows = run_points(expand(parse_spec(DOC)), SerialExecutor(), progress=False)
    assert [r["status"] for r in rows] == ["ok"] * 24
    assert sum(not r["record_reused"] for r in rows) == 4
    by_program: dict[tuple, set] = {}
    for r in rows:
        k = (r["platform"], r["axes"]["indicesReserveNum"], r["hbm_gbps"])
        by_program.setdefault(k, set()).add(r["makespan_cycles"])
    assert len(by_program) == 8
    assert all(len(v) == 1 for v in by_program.values())  # strategies agree exactly


def test_infeasible_or_unresolvable_points_keep_their_axes_group():
    doc = {"sweep": {"name": "bad"}, "axes": {"case": ["tiny"], "ub_size": [4096]}}
    (p,) = expand(parse_spec(doc))
    assert record_group(p) == p.record_group()
