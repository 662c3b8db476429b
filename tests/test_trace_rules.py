"""The trace keeps its own rules on real operator runs (default case and a multi-token probs
case): no slice nests in or overlaps another on one lane, and each lane's slices add up to the
summary's busy cycles, with the shared-HBM hold and the stalls under their own keys.

Before the lane-wise quantisation these runs had 156 and 1,488 nested spans (1-cycle flags
rounded to 0 ns inside the next slice), and the HBM hold counted in a copy's slice and again as
its stall.
"""

from __future__ import annotations

import json

import pytest

from aicore_sim.cli import main
from aicore_sim.export.perfetto import pid_of, read_trace, tid_of
from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.trace import STALL_CAUSES
from tests.perfetto_schema import validate_chrome_trace


@pytest.fixture(scope="module", params=["default", "probs_240x4x1024"])
def run_folder(request, tmp_path_factory):
    """The files of one `aicore-sim run` (summary.json, trace.json)."""
    out = tmp_path_factory.mktemp(request.param) / "run"
    if request.param == "default":
        argv = ["run", "--out", str(out), "--no-plot", "--jobs", "1"]
    else:
        case = tmp_path_factory.mktemp("case") / "probs.json"
        case.write_text(json.dumps({
            "op": "moe_token_unpermute_with_ep_grad", "name": "probs_240x4x1024",
            "inputs": {
                "unpermuted_tokens_grad": {"shape": [240, 1024], "dtype": "bfloat16"},
                "sorted_indices": {"shape": [960], "dtype": "int32"},
                "permuted_tokens": {"shape": [960, 1024], "dtype": "bfloat16"},
                "probs": {"shape": [240, 4], "dtype": "float32"}},
            "attrs": {"padded_mode": False, "restore_shape": None, "range": None,
                      "topk_num": 4},
            "platform": "ascend910b1", "data": {"seed": 1}, "mode": "timed"}))
        # cold L2: warm, its 2.4 MB would all be L2 hits and load no HBM (the hold checked
        # below)
        argv = ["run", str(case), "--out", str(out), "--no-plot", "--jobs", "1",
                "--platform", json.dumps({"preset": "ascend910b1",
                                          "costs": {"l2_warm_start": False}})]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    trace = read_trace(out / summary["trace_file"])
    return summary, trace


def _lanes(trace):
    """(pid, tid) -> the X events on it."""
    lanes: dict[tuple[int, int], list[dict]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    return lanes


def test_no_slice_nests_or_overlaps_another(run_folder) -> None:
    summary, trace = run_folder
    assert validate_chrome_trace(trace) == []  # overlap and nesting rules included
    for (pid, tid), events in _lanes(trace).items():
        assert all(e["dur"] >= 0.001 for e in events), (pid, tid)  # >= 1 ns each
        spans = sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                       for e in events)
        for (a0, a1), (b0, _b1) in zip(spans, spans[1:]):
            assert a0 < a1 <= b0, (pid, tid, a0, a1, b0)


def test_busy_is_the_sum_of_the_lane_slices(run_folder) -> None:
    summary, trace = run_folder
    lanes = _lanes(trace)
    assert len(summary["cores"]) == 48  # 48 cores x 4 pipes = 192 lanes
    stretched = 0
    granule: dict[int, int] = {}
    for c in summary["cores"]:
        core = c["core"]
        for p in Pipe:
            events = lanes.get((pid_of(core), tid_of(core, p)), [])
            instr = sum(e["args"]["cycles"] for e in events if "index" in e["args"])
            issue = sum(e["args"]["cycles"] for e in events if e["name"] == "issue")
            # SCALAR busy = its instructions + its issue work; the others: instructions only
            assert instr + issue == c["busy_cycles"][p.name], (core, p)
            stalls = lanes.get((pid_of(core), tid_of(core, p, stall=True)), [])
            for cause in STALL_CAUSES:
                got = sum(e["args"]["cycles"] for e in stalls if e["name"] == f"stall: {cause}")
                if cause == "bank_conflict":  # cycles of execution, not a wait
                    want = c["bank_conflict_cycles"] if p is Pipe.VECTOR else 0
                elif cause == "same_granule":  # a copy's occupancy queued on a granule:
                    granule[core] = granule.get(core, 0) + got  # summed over MTE2 + MTE3
                    continue
                else:
                    want = c["waits"][p.name]["cycles"][cause]
                assert got == want, (core, p, cause)
            assert c["gm_stretch_cycles"][p.name] == c["waits"][p.name]["cycles"][
                "gm_bandwidth"]
            stretched += c["gm_stretch_cycles"][p.name]
        assert granule.get(core, 0) == c["same_granule_cycles"], core
    # 10 tokens barely load HBM; 240 x 4 rows of 2 KiB on 48 cores do: the hold is there,
    # under its own key
    assert (stretched > 0) == (summary["case"] != "tiny")
