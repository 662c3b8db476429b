"""What-if slack (``aicore_sim/views/slack.py``): replays of the recorded streams with one pipe free
or 2x faster, or a cost mechanism's lever pulled, name the lever of an HBM-bound and of a
vector-bound case, and a scenario's figure is what a direct replay under the changed platform
gives."""

from __future__ import annotations

import json

import pytest

from aicore_sim.sim import engine
from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.platform import load_platform
from aicore_sim.views import slack
from op_models.moe_token_unpermute_with_ep_grad import cases, run_case

P1 = cases.get_case("p1_deepseek_v3")
# P1's shape with 96 tokens instead of 4096: 768 rows of 14 KiB over 48 cores, copies held by
# HBM in bursts (the critical core's MTE2 occupied 66 % of its time, 52 % of that waiting for
# shared HBM; the chip at 64 % of the roofline on average: latency-bound, not HBM-bound)
HBM_HEAVY = P1.with_(name="p1_96_tokens", tokens_num=96)
# 16 tokens x top-16 x 4096 bf16: 16 cores, each casting and scaling 16 rows of 4096 elements
# with little HBM traffic: VECTOR is occupied 80 % of the critical core
VECTOR_BOUND = P1.with_(name="bf16_16x16x4096", tokens_num=16, top_k=16, hidden=4096)


@pytest.fixture(scope="module")
def hbm_case():
    # cold L2: warm, its 96 tokens' inputs would all be L2 hits and the case VECTOR-bound
    cold = load_platform("ascend910b1").with_overrides(costs={"l2_warm_start": False})
    _, r, _ = run_case(HBM_HEAVY, cold, mode="timing-only", jobs=1)
    return r, slack.slack(r, jobs=2)


def test_hbm_heavy_case_names_hbm(hbm_case) -> None:
    r, rows = hbm_case
    assert [(x["lever"], x["change"]) for x in rows] == slack.scenarios()
    assert slack.lever(rows) == "HBM"
    by = {(x["lever"], x["change"]): x for x in rows}
    hbm = by[("HBM", "unlimited")]
    # the HBM hold is over a quarter of the makespan (28.0 % of 24,696 cycles, 1,902 of which
    # are the kernel entry, whose queue only "GM granules no queue" shortens)
    assert hbm["delta_pct"] < -25
    assert hbm["delta_cycles"] == hbm["makespan_cycles"] - r.trace.makespan
    # a free MTE2 (no issue occupancy: -18.0 %) still waits for HBM: the HBM lever wins
    assert hbm["delta_cycles"] < min(x["delta_cycles"] for x in rows if x["lever"] != "HBM")
    # serving every re-read from L2 gains nothing: the kernel re-reads 1,536 of its
    # 12,389,376 GM->UB bytes (each row is read once)
    l2 = by[("L2", "re-reads hit")]
    assert (l2["reread_bytes"], l2["read_bytes"], l2["delta_cycles"]) == (1536, 12389376, 0)


def test_a_scenario_is_a_direct_replay_under_the_changed_platform(hbm_case) -> None:
    r, rows = hbm_case
    # HBM unlimited: the platform with 10^12 bytes per cycle of HBM, replayed from scratch
    fast = r.platform.with_overrides(hbm_bytes_per_cycle=1e12)
    direct = engine.replay(r.program.streams, fast, None, r.program.allocations)
    got = next(x for x in rows if x["lever"] == "HBM")["makespan_cycles"]
    assert got == direct.makespan
    # GM granules no queue: the cost family without same-granule serialisation, from scratch
    # (no copy queued on a granule, the kernel entry its data-cache miss)
    unqueued = r.platform.with_overrides(costs={"gm_serial_cycles": 0.0})
    direct = engine.replay(r.program.streams, unqueued, None, r.program.allocations)
    got = next(x for x in rows if x["lever"] == "GM granules")["makespan_cycles"]
    assert got == direct.makespan < r.trace.makespan
    # and SCALAR free includes the data-cache misses: on the platform without miss cycles,
    # the scalar instructions and every issue cost set to 0 by hand, replayed directly
    no_miss = r.platform.with_overrides(dcache_miss_cycles=0)
    cols = []
    for base in engine.prepare_all(r.program.streams, no_miss)[0]:  # L2 model included
        occ = [0 if p == int(Pipe.SCALAR) else o for o, p in zip(base.occ, base.pipe_of)]
        cols.append(base._replace(occ=occ, issue=[0] * len(base.issue)))
    direct = engine.replay(r.program.streams, no_miss, None, r.program.allocations,
                           {engine.prepared_key(no_miss): (no_miss.costs, cols)})
    assert next(x for x in rows if (x["lever"], x["change"]) == ("SCALAR", "free")
                )["makespan_cycles"] == direct.makespan


def test_vector_bound_case_names_vector() -> None:
    _, r, _ = run_case(VECTOR_BOUND, mode="timing-only", jobs=1)
    rows = slack.slack(r, jobs=1)
    assert slack.lever(rows) == "VECTOR"
    by = {(x["lever"], x["change"]): x["makespan_cycles"] for x in rows}
    # both vector scenarios beat every other lever (with vector work free the 48 cores' copies
    # bunch up on the shared HBM, so "free" need not beat "2x"); without the kernel entry's
    # granule queue the entry is its set-up and miss, 929 cycles, not 1,902: 11,525 of 13,064
    # cycles, less than halving the vector work gives (9,525) or freeing it (9,437)
    assert max(by[("VECTOR", "free")], by[("VECTOR", "2x")]) < min(
        v for (p, _), v in by.items() if p not in ("VECTOR", "GM granules"))
    assert by[("VECTOR", "free")] < by[("GM granules", "no queue")] < r.trace.makespan
    # no transfer of this case waits for HBM: unlimited HBM changes nothing
    assert by[("HBM", "unlimited")] == r.trace.makespan


def test_run_slack(tmp_path, cli) -> None:
    out = tmp_path / "run"
    p = cli("run", "--out", out, "--no-plot", "--trace", "none", "--slack", "--jobs", "1",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())
    rows = s["slack"]["rows"]
    # 4 pipes x (free, 2x) + HBM unlimited + L2 re-reads hit + UB banks no conflicts + GM
    # granules no queue
    assert len(rows) == len(slack.scenarios()) == 12
    assert s["slack"]["lever"] == slack.lever(rows)
    best = min(rows, key=lambda x: x["delta_cycles"])
    assert f"lever: {best['lever']}" in p.stdout
    assert f"{best['makespan_cycles']:>12,} cycles ({best['delta_pct']:+.1f} %)" in p.stdout
