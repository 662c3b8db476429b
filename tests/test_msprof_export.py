"""msprof-style CSVs of a run (aicore_sim.export.msprof): headers verbatim, figures = summary's."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from aicore_sim.correlate.opprof import read_launch
from aicore_sim.export.msprof import (
    OP_BASIC_INFO,
    PIPE_UTILIZATION,
    msprof_format,
    write_msprof,
)
from aicore_sim.launch import launch
from aicore_sim.platform import load_platform
from aicore_sim.summary import summarize
from tests import kernels

# The headers as msprof op writes them, transcribed from the project's msprof reference
# (Ascend/msopprof metric_csv_header.h @ d6c29df: pipeFor910B_, pipeForA5_,
# OpBasicHeaderFor910B/A5), one string each, independent of the package's data file.
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

TINY = load_platform("tiny")


def _rows(path) -> tuple[list[str], list[dict[str, str]]]:
    text = path.read_text()
    r = csv.DictReader(io.StringIO(text))
    return text.splitlines()[0].split(","), list(r)


def test_headers_of_each_family_are_msprofs() -> None:
    assert len(A2A3_PIPE.split(",")) == 48 and len(A5_PIPE.split(",")) == 34
    for soc in ("Ascend910B", "Ascend910_93"):
        f = msprof_format(soc)
        assert ",".join(f.pipe_utilization) == A2A3_PIPE
        assert ",".join(f.op_basic_info) == OP_BASIC
    f = msprof_format("Ascend950")
    assert ",".join(f.pipe_utilization) == A5_PIPE and ",".join(f.op_basic_info) == OP_BASIC
    with pytest.raises(ValueError, match="no msprof op format"):
        msprof_format("Ascend310P")


def test_copy_in_figures_are_the_summarys(tmp_path) -> None:
    n = 64  # 256 bytes of fp32 per core
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1)
    s = summarize(r)
    s["case"] = "copy_in"
    assert write_msprof(tmp_path, s, TINY) == [PIPE_UTILIZATION, OP_BASIC_INFO]
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


def test_operator_run_on_950_and_a2_matches_summary(tmp_path) -> None:
    from op_models.moe_token_unpermute_with_ep_grad.api import run_case

    for preset, want in (("ascend950pr_9589", A5_PIPE), ("ascend910b1", A2A3_PIPE)):
        platform = load_platform(preset)
        result = run_case("tiny", platform=platform, mode="timing-only")[1]
        s = summarize(result)
        out = tmp_path / preset
        out.mkdir()
        write_msprof(out, s, platform, op_name="MoeTokenUnpermuteWithEpGrad")
        header, rows = _rows(out / PIPE_UTILIZATION)
        assert ",".join(header) == want
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


def test_functional_summary_writes_nothing(tmp_path) -> None:
    n = 64
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1, mode="functional")
    assert write_msprof(tmp_path, summarize(r), TINY) == []
    assert list(tmp_path.iterdir()) == []
