"""Sweep points are batched by the program they record, not by their axes: strategies and
overrides that resolve to the same tiling record once per platform."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

from aicore_sim.sweep import expand, parse_spec, points, run, run_points, worker
from aicore_sim.sweep.points import batches, count_points, iter_batches, iter_points, make_point
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


def test_points_stream_in_spec_order_each_once():
    """Repeated axis values (a spec file refuses them; a SweepSpec built in Python may hold
    them) are dropped per axis: the same points, in the same order, as the full product with
    every key after its first dropped."""
    spec = dataclasses.replace(parse_spec({"sweep": {"name": "dups"}, "axes": {"case": ["tiny"]}}),
                               axes={"case": ["tiny", "tiny"], "hbm_gbps": [800, 1600, 800],
                                     "strategy": ["upstream", "wide_e", "upstream"],
                                     "inputReserveNum": ["auto", 1, "auto", 1]})
    names = list(spec.axes)
    seen, want = set(), []
    for values in itertools.product(*(spec.axes[n] for n in names)):  # 2 x 3 x 3 x 4 = 72
        p = make_point(spec.op, spec.mode, spec.seed, dict(zip(names, values)))
        if p.key not in seen:
            seen.add(p.key)
            want.append(p)
    assert count_points(spec) == len(want) == 1 * 2 * 2 * 2  # distinct values per axis
    assert list(iter_points(spec)) == want == expand(spec)


def test_batches_are_planned_a_window_at_a_time():
    pts = expand(parse_spec(DOC))  # axes case, platform, hbm_gbps, strategy, E (fastest)
    assert list(iter_batches(pts, 32)) == batches(pts, 32)  # within one window: the same
    drawn = []

    def stream():
        for p in pts:
            drawn.append(p)
            yield p
    got = iter_batches(stream(), 32, window=10)
    # points 0-5: platform 0 at 900 GB/s, 3 strategies x 2 E; 6-11 the same at 1600 GB/s.
    # Axes-only groups (all but hbm_gbps) of 0-9: upstream {0, 6} {1, 7}, balanced {2, 8}
    # {3, 9}, max_rows {4} {5} (their 1600 GB/s halves are 10 and 11): largest first
    assert [len(b) for b in itertools.islice(got, 6)] == [2, 2, 2, 2, 1, 1]
    assert len(drawn) == 10  # nothing past the first window yet
    # 10-19: {10} {11}, platform 1: upstream {12, 18} {13, 19}, the 4 others alone;
    # 20-23: platform 1 balanced and max_rows at 1600 GB/s, alone (their halves: 14-17)
    assert [len(b) for b in got] == [2, 2] + [1] * 6 + [1] * 4 and len(drawn) == 24


def test_at_most_inflight_batches_are_unfinished(monkeypatch):
    """Batches are submitted as earlier ones finish: never more than INFLIGHT outstanding."""
    monkeypatch.setattr(run, "INFLIGHT", 3)
    monkeypatch.setattr(points, "WINDOW", 4)
    open_now, peak, lock = [0], [0], threading.Lock()

    def batch(b):
        with lock:
            open_now[0] -= 1
        return [dict(worker._base_row(p), status="ok") for p in b]

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            with lock:
                open_now[0] += 1
                peak[0] = max(peak[0], open_now[0])
            return super().submit(batch, *args)

    pts = expand(parse_spec(DOC))
    with Counting(2) as ex:
        rows = run_points(pts, ex, progress=False, max_batch=1)
    assert len(rows) == 24 and sorted(r["key"] for r in rows) == sorted(p.key for p in pts)
    assert peak[0] <= 3
