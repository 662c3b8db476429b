"""One verdict (``aicore_sim/views/verdict.py``): each class pinned on a small kernel built to
show it, on platform ``tiny`` (1000 MHz, 2 AIV cores - 8 here where the launch asks for them;
HBM 1 B/cycle for the chip; copies 100 + bytes cycles; vector call 10 + n/8 cycles; SyncAll
released 50 cycles after the last arrival); and the summary text, ``--slack`` and ``diff``
give the same one."""

from __future__ import annotations

import json

import numpy as np

from aicore_sim.ascendc import Duplicate, SyncAll, TBuf, TPipe, float32
from aicore_sim.sim.launch import launch
from aicore_sim.views.summary import format_summary, summarize
from tests import kernels
from tests.conftest import TINY


def _copy_in(cores: int):
    x = np.arange(64 * cores, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", {"n": 64}], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, x.shape)}, TINY, block_dim=cores)


def sync_loop(y, tiling) -> None:
    """``k`` times: one Duplicate of 64 fp32, then (unless ``sync`` is False) SyncAll with
    the other core."""
    pipe = TPipe()
    b = TBuf(name="b")
    pipe.InitBuffer(b, 64 * 4)
    t = b.Get(float32)
    for _ in range(tiling["k"]):
        Duplicate(t, 1.0, 64)
        if tiling.get("sync", True):
            SyncAll()


def test_latency_bound_copy_in_then_out() -> None:
    # one core: MTE2 copies 256 B in [1, 357), the flag, MTE3 copies out [359, 715); the
    # scalar unit [0, 4) and [715, 716). Some pipe is occupied 357 + 357 = 714 of 716 cycles,
    # the busiest (MTE2) 357: fully overlapped, 714 - 357 = 357 cycles would go.
    b = summarize(_copy_in(1))["bound_by"]
    assert (b["class"], b["short"], b["hbm_bound"]) == ("latency", "latency", False)
    assert b["evidence"]["union_cycles"] == 714
    assert b["evidence"]["missing_overlap_cycles"] == 357
    assert "357 cycles, 50%, of overlap missing" in b["why"]
    # MTE3 waits for MTE2's flag 355 of its 359 waiting cycles
    assert b["chain"] == ["MTE3 waits mostly on flag HardEvent MTE2_MTE3 id 0 (99% of its "
                          "waiting)"]


def test_bandwidth_bound_eight_cores_share_hbm() -> None:
    # 8 cores x 512 B through a 1 B/cycle HBM in 4,100 cycles: 4096 / 4100 = 99.9 % of the
    # roofline (>= 75 %): HBM-bound though each copy pipe is occupied only 2049 / 4100
    d = summarize(_copy_in(8))
    b = d["bound_by"]
    assert (b["class"], b["short"], b["hbm_bound"]) == ("bandwidth", "HBM", True)
    assert round(b["evidence"]["hbm_roofline_share"], 4) == round(4096 / 4100, 4)
    # each copy: 357 cycles alone, held 1692 more by the shared HBM: 1692 / 2049 = 83 %
    assert round(b["evidence"]["hbm_hold_share"]["MTE2"], 4) == round(1692 / 2049, 4)
    assert "HBM-bound: yes" in format_summary(d)


def test_throughput_bound_back_to_back_vector_calls() -> None:
    # 12 Muls of 64 fp32, 10 + 64/8 = 18 cycles each: VECTOR executes 216 of 219 cycles
    # (98.6 % >= 80 %): its throughput is the time
    x = np.zeros(64, np.float32)
    r = launch(kernels.many_vector, ["x", "y", {"n": 64, "k": 12}], {"x": x, "y": x.copy()},
               {}, TINY, block_dim=1)
    b = summarize(r)["bound_by"]
    assert (b["class"], b["short"], b["pipe"]) == ("throughput", "VECTOR", "VECTOR")
    assert b["share"] == 216 / 219
    assert b["label"] == "VECTOR throughput"


def test_sync_bound_syncall_after_every_call() -> None:
    # 2 cores, 4 x (Duplicate of 18 cycles, SyncAll released 50 cycles after both arrive):
    # 281 cycles, of which the 4 releases are 200 with nothing executing: 71 % >= 25 %
    r = launch(sync_loop, ["y", {"k": 4}], {"y": np.zeros(64, np.float32)}, {}, TINY,
               block_dim=2)
    b = summarize(r)["bound_by"]
    assert (b["class"], b["short"]) == ("sync", "sync")
    assert b["evidence"]["idle_sync_cycles"] == 200
    # the releases are no scalar work: SCALAR's share drops from 209 to 9 of 281 cycles
    assert round(b["evidence"]["occupied_share"]["SCALAR"], 12) == round((209 - 200) / 281, 12)
    assert "SyncAll: 200 cycles of release" in b["why"]


def test_sync_removed_is_no_longer_sync_bound() -> None:
    # the same kernel without its SyncAll: VECTOR executes 4 x 18 = 72 of the core's cycles
    # back to back: throughput-bound
    r = launch(sync_loop, ["y", {"k": 4, "sync": False}], {"y": np.zeros(64, np.float32)}, {},
               TINY, block_dim=2)
    b = summarize(r)["bound_by"]
    assert b["class"] == "throughput" and b["pipe"] == "VECTOR"


def test_summary_slack_and_diff_agree(tmp_path, cli) -> None:
    # the bundled tiny case: the same verdict in the text, summary.json, --slack and diff
    out = tmp_path / "a"
    p = cli("run", "--out", out, "--no-plot", "--trace", "none", "--slack", "--jobs", "1",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())
    v = s["bound_by"]
    assert f"bound by {v['label']}: " in p.stdout
    assert (f"verdict (as the summary): bound by {v['label']}; HBM-bound: "
            f"{'yes' if v['hbm_bound'] else 'no'}") in p.stdout
    q = cli("diff", out, out, cwd=tmp_path)
    assert q.returncode == 0, q.stderr
    assert (f"bound by: {v['label']}; HBM-bound: {'yes' if v['hbm_bound'] else 'no'}"
            in q.stdout)
    # no what-if is listed as a gain while it ends later; each that does has its reason
    for row in s["slack"]["rows"]:
        assert ("reason" in row) == (row["delta_cycles"] > 0)
