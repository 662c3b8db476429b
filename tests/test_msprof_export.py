"""msprof-style CSVs of a run (aicore_sim.export.msprof): headers verbatim, figures = summary's."""

from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np
import pytest

from aicore_sim.ascendc import (
    Add,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    LocalTensor,
    TPosition,
    float32,
)
from aicore_sim.correlate.opprof import read_launch
from aicore_sim.export.msprof import (
    L2_CACHE,
    OP_BASIC_INFO,
    PIPE_UTILIZATION,
    RESOURCE_CONFLICT,
    msprof_format,
    write_msprof,
)
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize
from tests import kernels
from tests.conftest import TINY

# The headers as msprof op writes them, transcribed from the project's msprof reference
# (Ascend/msopprof metric_csv_header.h @ d6c29df: pipeFor910B_, pipeForA5_,
# OpBasicHeaderFor910B/A5, l2CacheFor910B_, l2CacheForA5_, resourceConflictFor910B_,
# resourceConflictForA5_), one string each, independent of the package's data file.
A2A3_PIPE = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,"
    "aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),"
    "aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),aic_fixpipe_ratio,"
    "aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aic_scalar_time(us),aic_scalar_ratio,"
    "aic_scalar_single_time(us),aic_scalar_dual_time(us),aic_scalar_mte1_stall_time(us),"
    "aic_scalar_mte2_stall_time(us),aic_scalar_mte3_stall_time(us),"
    "aic_scalar_cube_stall_time(us),aic_scalar_wait_ib_time(us),aic_scalar_wait_time(us),"
    "aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_mte2_time(us),"
    "aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,"
    "aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate,aiv_scalar_time(us),aiv_scalar_ratio,"
    "aiv_scalar_single_time(us),aiv_scalar_dual_time(us),aiv_scalar_mte2_stall_time(us),"
    "aiv_scalar_mte3_stall_time(us),aiv_scalar_stall_by_ub_time(us),"
    "aiv_scalar_vector_stall_time(us),aiv_scalar_wait_ib_time(us),aiv_scalar_wait_time(us)")
A5_PIPE = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,"
    "aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,"
    "aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,aic_mte2_active_bw(GB/s),"
    "aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),"
    "aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),"
    "aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
    "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),"
    "aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate")
OP_BASIC = ("Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,"
            "Current Freq,Rated Freq")
A2A3_L2 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_write_cache_hit,"
    "aic_write_cache_miss_allocate,aic_r0_read_cache_hit,aic_r0_read_cache_miss_allocate,"
    "aic_r1_read_cache_hit,aic_r1_read_cache_miss_allocate,aic_write_hit_rate(%),"
    "aic_read_hit_rate(%),aic_total_hit_rate(%),aiv_time(us),aiv_total_cycles,"
    "aiv_write_cache_hit,aiv_write_cache_miss_allocate,aiv_r0_read_cache_hit,"
    "aiv_r0_read_cache_miss_allocate,aiv_r1_read_cache_hit,aiv_r1_read_cache_miss_allocate,"
    "aiv_write_hit_rate(%),aiv_read_hit_rate(%),aiv_total_hit_rate(%)")
A5_L2 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_read_close_hit,"
    "aic_read_close_miss,aic_read_close_victim,aic_read_far_hit,aic_read_far_miss,"
    "aic_read_far_victim,aic_read_hit_rate(%),aic_write_close_hit,aic_write_close_miss,"
    "aic_write_close_victim,aic_write_far_hit,aic_write_far_miss,aic_write_far_victim,"
    "aic_write_hit_rate(%),aiv_time(us),aiv_total_cycles,aiv_read_close_hit,"
    "aiv_read_close_miss,aiv_read_close_victim,aiv_read_far_hit,aiv_read_far_miss,"
    "aiv_read_far_victim,aiv_read_hit_rate(%),aiv_write_close_hit,aiv_write_close_miss,"
    "aiv_write_close_victim,aiv_write_far_hit,aiv_write_far_miss,aiv_write_far_victim,"
    "aiv_write_hit_rate(%)")
A2A3_CONFLICT = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_wait_ratio,"
    "aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio,aiv_time(us),"
    "aiv_total_cycles,aiv_vec_total_cflt_ratio,aiv_vec_bankgroup_cflt_ratio,"
    "aiv_vec_bank_cflt_ratio,aiv_vec_resc_cflt_ratio,aiv_vec_mte_cflt_ratio,"
    "aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio")
A5_CONFLICT = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_wait_ratio,"
    "aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio,aiv_time(us),"
    "aiv_total_cycles,aiv_vec_stu_cflt_ratio,aiv_vec_ldu_cflt_ratio,aiv_vec_sfu_cflt_ratio,"
    "aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio")
ALL_FILES = [PIPE_UTILIZATION, OP_BASIC_INFO, L2_CACHE, RESOURCE_CONFLICT]



def _rows(path) -> tuple[list[str], list[dict[str, str]]]:
    text = path.read_text()
    r = csv.DictReader(io.StringIO(text))
    return text.splitlines()[0].split(","), list(r)


def test_headers_of_each_family_are_msprofs() -> None:
    assert len(A2A3_PIPE.split(",")) == 48 and len(A5_PIPE.split(",")) == 34
    assert len(A2A3_L2.split(",")) == 24 and len(A5_L2.split(",")) == 34
    assert len(A2A3_CONFLICT.split(",")) == 18 and len(A5_CONFLICT.split(",")) == 16
    for soc in ("Ascend910B", "Ascend910_93"):
        f = msprof_format(soc)
        assert ",".join(f.pipe_utilization) == A2A3_PIPE
        assert ",".join(f.op_basic_info) == OP_BASIC
        assert ",".join(f.l2_cache) == A2A3_L2
        assert ",".join(f.resource_conflict) == A2A3_CONFLICT
    f = msprof_format("Ascend950")
    assert ",".join(f.pipe_utilization) == A5_PIPE and ",".join(f.op_basic_info) == OP_BASIC
    assert ",".join(f.l2_cache) == A5_L2 and ",".join(f.resource_conflict) == A5_CONFLICT
    # the file names msprof op gives them (msopprof defs.h METRICS_CSV_MAP, single-op folder)
    assert (L2_CACHE, RESOURCE_CONFLICT) == ("L2Cache.csv", "ResourceConflictRatio.csv")
    with pytest.raises(ValueError, match="no msprof op format"):
        msprof_format("Ascend310P")


def test_copy_in_figures_are_the_summarys(tmp_path) -> None:
    n = 64  # 256 bytes of fp32 per core
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1)
    s = summarize(r)
    s["case"] = "copy_in"
    assert write_msprof(tmp_path, s, TINY) == ALL_FILES
    header, rows = _rows(tmp_path / PIPE_UTILIZATION)
    assert ",".join(header) == A2A3_PIPE
    assert len(rows) == 1
    row = rows[0]
    # tests/test_summary.py: makespan 716 cycles (op head 0), busy S 5, MTE2 357, MTE3 357, V 0,
    # 256 bytes each way; the tiny clock is 1000 MHz, so 1 cycle = 0.001 us. The pipe times
    # are the copies' own 356 cycles: each pipe's 1-cycle SetFlag is not a transfer.
    assert row["block_id"] == "0" and row["sub_block_id"] == "vector0"
    assert row["aiv_total_cycles"] == "716" and row["aiv_time(us)"] == "0.716000"
    assert row["aiv_mte2_time(us)"] == "0.356000" and row["aiv_mte3_time(us)"] == "0.356000"
    assert row["aiv_scalar_time(us)"] == "0.005000" and row["aiv_vec_time(us)"] == "0.000000"
    assert row["aiv_mte2_ratio"] == f"{356 / 716:.6f}" == "0.497207"
    assert row["aiv_vec_ratio"] == "0.000000"
    # 256 B in 0.356 us = 719.101 B/us = 0.719101 GB/s
    assert row["aiv_mte2_active_bw(GB/s)"] == "0.719101"
    assert row["aiv_mte3_active_bw(GB/s)"] == "0.719101"
    na = [k for k, v in row.items() if v == "NA"]
    assert all(k.startswith("aic_") for k in header[2:27]) and set(header[2:27]) <= set(na)
    assert sorted(set(na) - set(header[2:27])) == sorted([
        "aiv_icache_miss_rate", "aiv_scalar_single_time(us)", "aiv_scalar_dual_time(us)",
        "aiv_scalar_mte2_stall_time(us)", "aiv_scalar_mte3_stall_time(us)",
        "aiv_scalar_stall_by_ub_time(us)", "aiv_scalar_vector_stall_time(us)",
        "aiv_scalar_wait_ib_time(us)", "aiv_scalar_wait_time(us)"])
    header, info = _rows(tmp_path / OP_BASIC_INFO)
    assert ",".join(header) == OP_BASIC
    assert info == [{"Op Name": "copy_in", "Op Type": "vector", "Task Duration(us)": "0.716000",
                     "Block Dim": "1", "Mix Block Dim": "NA", "Device Id": "NA", "Pid": "NA",
                     "Current Freq": "1000", "Rated Freq": "1000"}]
    # tiny has neither an L2 model nor a UB bank model: only the time columns are filled
    for name, want in ((L2_CACHE, A2A3_L2), (RESOURCE_CONFLICT, A2A3_CONFLICT)):
        header, rows = _rows(tmp_path / name)
        assert ",".join(header) == want
        assert [{k: v for k, v in r.items() if v != "NA"} for r in rows] == [
            {"block_id": "0", "sub_block_id": "vector0", "aiv_time(us)": "0.716000",
             "aiv_total_cycles": "716"}]


def test_operator_run_on_950_and_a2_matches_summary(tmp_path) -> None:
    from op_models.moe_token_unpermute_with_ep_grad import run_case

    for preset, want, want_l2, want_cflt in (
            ("ascend950pr_9589", A5_PIPE, A5_L2, A5_CONFLICT),
            ("ascend910b1", A2A3_PIPE, A2A3_L2, A2A3_CONFLICT)):
        platform = load_platform(preset)
        result = run_case("tiny", platform=platform, mode="timing-only")[1]
        s = summarize(result)
        out = tmp_path / preset
        out.mkdir()
        assert write_msprof(out, s, platform, op_name="MoeTokenUnpermuteWithEpGrad") == ALL_FILES
        header, rows = _rows(out / PIPE_UTILIZATION)
        assert ",".join(header) == want
        # both presets model L2 (128-byte lines); A2 models UB banks, 950 does not (and has no
        # counterpart of its stu / ldu / sfu conflict columns in any case)
        for name, cols in ((L2_CACHE, want_l2), (RESOURCE_CONFLICT, want_cflt)):
            h, extra = _rows(out / name)
            assert ",".join(h) == cols
            for e, p, c in zip(extra, rows, s["cores"], strict=True):
                want_cells = {"block_id": p["block_id"], "sub_block_id": "vector0",
                              "aiv_time(us)": p["aiv_time(us)"],
                              "aiv_total_cycles": p["aiv_total_cycles"]}
                if name == L2_CACHE and c["l2_read_bytes"]:
                    want_cells["aiv_read_hit_rate(%)"] = (
                        f"{100 * c['l2_hit_bytes'] / c['l2_read_bytes']:.6f}")
                if name == RESOURCE_CONFLICT and preset == "ascend910b1":
                    want_cells["aiv_vec_total_cflt_ratio"] = (
                        f"{c['bank_conflict_cycles'] / int(p['aiv_total_cycles']):.6f}")
                assert {k: v for k, v in e.items() if v != "NA"} == want_cells
        assert any(c["l2_read_bytes"] for c in s["cores"])
        assert [int(r["block_id"]) for r in rows] == list(range(s["block_dim"]))
        clock = s["clock_mhz"]
        for r, c in zip(rows, s["cores"]):
            # total = finish - op head (300 cycles on A2, 0 on 950: the platform files)
            assert int(r["aiv_total_cycles"]) == c["cycles"] - platform.op_head_cycles
            for pipe, stem in (("SCALAR", "scalar"), ("MTE2", "mte2"), ("VECTOR", "vec"),
                               ("MTE3", "mte3")):
                # busy + HBM hold + copies' data in flight (trace.py pipe_time_cycles)
                busy = c["pipe_time_cycles"][pipe]
                assert float(r[f"aiv_{stem}_time(us)"]) == pytest.approx(busy / clock, abs=1e-6)
                assert float(r[f"aiv_{stem}_ratio"]) == pytest.approx(
                    busy / int(r["aiv_total_cycles"]), abs=1e-6)
            t = c["pipe_time_cycles"]["MTE2"]
            gbps = c["bytes_gm_to_ub"] / (t / clock) / 1e3 if t else 0.0
            assert float(r["aiv_mte2_active_bw(GB/s)"]) == pytest.approx(gbps, abs=1e-6)
        # the reader of board folders reads both families' files by column name
        back = read_launch(out)
        assert back.n_blocks == s["block_dim"] and back.freq_mhz == platform.clock_mhz
        assert back.times["MTE2"][0] == float(rows[0]["aiv_mte2_time(us)"])
        _, info = _rows(out / OP_BASIC_INFO)
        # makespan + the platform's launch overhead (summary task_cycles)
        assert float(info[0]["Task Duration(us)"]) == pytest.approx(s["task_us"], abs=1e-6)
        assert info[0]["Block Dim"] == str(s["block_dim"])
        assert info[0]["Current Freq"] == f"{platform.clock_mhz:g}"


N_BANKED = 256  # fp32: 1024 B = 32 lines of 32 B = 4 repeats of 256 B


def _reread_and_add(x, t):
    """Core 0 copies the same 1024 B of x into UB twice; both cores then Add two UB operands
    whose blocks share bank groups (src1 at 1024 = src0's group offset: (1024 // 32) mod 16 = 0,
    bank id 0 for all three)."""
    src0 = LocalTensor(float32, TPosition.VECCALC, 0, N_BANKED)
    src1 = LocalTensor(float32, TPosition.VECCALC, 1024, N_BANKED)
    dst = LocalTensor(float32, TPosition.VECCALC, 2048, N_BANKED)
    if GetBlockIdx() == 0:
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(x, N_BANKED)
        DataCopy(src0, g, N_BANKED)
        DataCopy(src0, g, N_BANKED)
    Add(dst, src0, src1, N_BANKED)


def test_l2_hits_and_bank_conflicts_reach_the_csvs(tmp_path) -> None:
    # tiny with an L2 model (32-byte lines) and an A2-like UB bank model (16 groups of 32 B
    # blocks, 1 cycle per beat, Add priced by beats), as tests/test_l2.py and
    # tests/test_bank_conflicts.py build them
    l2 = TINY.with_overrides(costs={"l2_line_bytes": 32})
    platform = l2.with_overrides(costs=dataclasses.replace(
        l2.costs, ub_bank_groups=16, ub_block_bytes=32, ub_bank_bytes=65536,
        ub_beat_cycles=1.0, ub_bank_apis=("Add",)))
    r = launch(_reread_and_add, ["x", {}], {"x": np.zeros(N_BANKED, np.float32)}, {},
               platform, block_dim=2, mode="timing-only")
    s = summarize(r)
    c0, c1 = s["cores"]
    # core 0: read 1 misses (32 line fills), read 2 hits every line: 2048 B seen, 1024 hit;
    # core 1 reads nothing. Add: 4 repeats x 2 beats (src0 and src1 blocks share each group)
    # = 10 + 8 = 18 cycles, 4 x (2 - 1) = 4 of them bank conflicts, on both cores
    assert (c0["l2_read_bytes"], c0["l2_hit_bytes"]) == (2048, 1024)
    assert (c1["l2_read_bytes"], c1["l2_hit_bytes"], c1["l2_hit_rate"]) == (0, 0, None)
    assert c0["bank_conflict_cycles"] == c1["bank_conflict_cycles"] == 4
    # core 0: issue 1 + two curve copies of 100 + 1024 cycles each (a hit keeps the curve's
    # occupancy) = 2249; core 1: issue 1 + Add 18 = 19 (op head 0)
    assert (c0["cycles"], c1["cycles"]) == (2249, 19)
    assert write_msprof(tmp_path, s, platform) == ALL_FILES

    header, rows = _rows(tmp_path / L2_CACHE)
    assert ",".join(header) == A2A3_L2
    filled = [{k: v for k, v in row.items() if v != "NA"} for row in rows]
    # read hit rate = 100 x 1024 / 2048 = 50 %; core 1 read nothing: NA
    assert filled == [
        {"block_id": "0", "sub_block_id": "vector0", "aiv_time(us)": "2.249000",
         "aiv_total_cycles": "2249", "aiv_read_hit_rate(%)": "50.000000"},
        {"block_id": "1", "sub_block_id": "vector0", "aiv_time(us)": "0.019000",
         "aiv_total_cycles": "19"}]
    assert rows[0]["aiv_read_hit_rate(%)"] == f"{100 * c0['l2_hit_rate']:.6f}"

    header, rows = _rows(tmp_path / RESOURCE_CONFLICT)
    assert ",".join(header) == A2A3_CONFLICT
    filled = [{k: v for k, v in row.items() if v != "NA"} for row in rows]
    # total conflict ratio = bank-conflict cycles / total cycles: 4 / 2249 = 0.0017785...,
    # 4 / 19 = 0.2105263...; bank-group / bank split and the other ratios: NA
    assert filled == [
        {"block_id": "0", "sub_block_id": "vector0", "aiv_time(us)": "2.249000",
         "aiv_total_cycles": "2249", "aiv_vec_total_cflt_ratio": "0.001779"},
        {"block_id": "1", "sub_block_id": "vector0", "aiv_time(us)": "0.019000",
         "aiv_total_cycles": "19", "aiv_vec_total_cflt_ratio": "0.210526"}]
    for row, c in zip(rows, s["cores"]):
        assert row["aiv_vec_total_cflt_ratio"] == f"{c['bank_conflict_cycles'] / c['cycles']:.6f}"
    # the per-core time columns are PipeUtilization's
    _, pipe = _rows(tmp_path / PIPE_UTILIZATION)
    assert [(p["aiv_time(us)"], p["aiv_total_cycles"]) for p in pipe] == [
        (row["aiv_time(us)"], row["aiv_total_cycles"]) for row in rows]
    # the board-folder reader still reads the folder (it picks the two files it needs)
    back = read_launch(tmp_path)
    assert back.n_blocks == 2 and back.freq_mhz == 1000.0


def test_functional_summary_writes_nothing(tmp_path) -> None:
    n = 64
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1, mode="functional")
    assert write_msprof(tmp_path, summarize(r), TINY) == []
    assert list(tmp_path.iterdir()) == []
