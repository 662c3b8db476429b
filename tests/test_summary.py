"""Tests of the bound-by summary (``aicore_sim/views/summary.py``) with exact tiny-platform
arithmetic.

Platform ``tiny``: 1000 MHz (1 cycle = 1 ns), copies 100 + bytes cycles, HBM 1 B/cycle for the
chip, issue 1 cycle per call, SetFlag / WaitFlag / PipeBarrier 1 cycle, Muls 10 + n/8 cycles,
queue depth 4, no op head.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from aicore_sim.sim.launch import launch
from aicore_sim.views.summary import compare_golden, format_summary, summarize
from tests import kernels
from tests.conftest import TINY


def copy_in_one_core():
    n = 64  # 256 bytes of fp32
    x = np.arange(n, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, (n,))}, TINY, block_dim=1), x


def test_copy_in_exact_numbers() -> None:
    r, x = copy_in_one_core()
    d = summarize(r, golden={"y": x})
    # S issues copy (t=1), SetFlag (2), WaitFlag (3), copy (4): scalar span [0, 4).
    # MTE2: copy [1, 357) = 100 + 256; SetFlag [357, 358).
    # MTE3: waits the flag [3, 358), WaitFlag [358, 359), copy [359, 715).
    # S: PipeBarrier<PIPE_ALL> waits [4, 715), executes [715, 716).  Makespan 716.
    assert d["makespan_cycles"] == 716
    assert d["makespan_us"] == pytest.approx(0.716)
    c = d["cores"][0]
    assert c["busy_cycles"] == {"SCALAR": 5, "MTE2": 357, "VECTOR": 0, "MTE3": 357}
    assert c["utilisation"]["MTE2"] == pytest.approx(357 / 716)
    assert d["bytes_gm_to_ub"] == d["bytes_ub_to_gm"] == 256
    # 512 bytes in 716 cycles at 1 B/cycle: 71.5 % of the roofline; 1 GB/s peak
    assert d["hbm_roofline_pct"] == pytest.approx(100 * 512 / 716)
    assert d["hbm_peak_gbps"] == pytest.approx(1.0)
    assert d["achieved_gbps"] == pytest.approx(512 / 716e-9 / 1e9)
    assert d["ub_high_water_bytes"] == c["ub_high_water_bytes"] == 256
    # MTE3 was not executing for 716 - 357 = 359 cycles: 355 waiting the flag, 4 idle.
    w = c["waits"]["MTE3"]
    assert w["waiting_cycles"] == 359
    assert w["cycles"]["flag"] == 355 and w["cycles"]["idle"] == 4
    assert w["flags"] == {"HardEvent MTE2_MTE3 id 0": pytest.approx(355 / 359)}
    assert sum(w["shares"].values()) == pytest.approx(1.0)
    # S waited 711 cycles at the barrier
    assert c["waits"]["SCALAR"]["cycles"]["barrier"] == 711
    # MTE2 and MTE3 tie at 357/716; the first in data-flow order wins
    assert d["bound_by"]["pipe"] == "MTE2" and d["bound_by"]["core"] == 0
    assert d["bound_by"]["why"].startswith("core0.veccore0, the critical core (last to finish")
    assert d["hazards"] == [] and d["golden"]["y"]["exact"]
    json.dumps(d)  # JSON-ready


def test_vector_bound_kernel() -> None:
    n, k = 64, 12
    x = np.zeros(n, np.float32)
    r = launch(kernels.many_vector, ["x", "y", {"n": n, "k": k}], {"x": x, "y": x.copy()}, {},
               TINY, block_dim=1)
    d = summarize(r)
    c = d["cores"][0]
    assert c["busy_cycles"]["VECTOR"] == k * (10 + n // 8)  # 12 Muls of 18 cycles
    assert d["bound_by"]["pipe"] == "VECTOR"
    # the issuer outruns V: the scalar unit waits (full queue and/or the final barrier)
    s = c["waits"]["SCALAR"]["cycles"]
    assert s["queue_full"] + s["barrier"] > 0


def test_saturated_hbm_without_a_saturated_pipe_is_bandwidth_bound() -> None:
    # 8 cores each copy 256 B in, then out. Alone a copy takes 100 + 256 = 356 cycles; the
    # chip's 1 B/cycle HBM drains the 8 concurrent 256 B copies in 8 * 256 = 2048 cycles, so
    # MTE2 holds [1, 2049) and MTE3 [2050, 4098): each is occupied only half of the 4100
    # cycles, while 4096 B / 4100 cycles = 99.9 % of the roofline are moved.
    n = 64
    x = np.arange(8 * n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (8 * n,))}, TINY, block_dim=8)
    d = summarize(r)
    assert d["makespan_cycles"] == 4100
    assert d["cores"][0]["occupied_share"]["MTE2"] == 2049 / 4100
    assert round(d["hbm_roofline_pct"], 3) == round(100 * 4096 / 4100, 3)
    assert (d["bound_by"]["class"], d["bound_by"]["hbm_bound"]) == ("bandwidth", True)
    assert "HBM serves 100% of its roofline over the launch" in d["bound_by"]["why"]


def test_chip_waits_sum_over_cores() -> None:
    n = 64
    x = np.arange(2 * n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (2 * n,))}, TINY, block_dim=2)
    d = summarize(r)
    for pipe, w in d["waits"].items():
        for cause, v in w["cycles"].items():
            assert v == sum(c["waits"][pipe]["cycles"][cause] for c in d["cores"])
    # two cores share 1 B/cycle of HBM: the copies wait for bandwidth
    assert d["waits"]["MTE2"]["cycles"]["gm_bandwidth"] > 0
    assert d["bytes_gm_to_ub"] == 2 * 256


def test_functional_mode_has_no_timing() -> None:
    n = 64
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, TINY, block_dim=1, mode="functional")
    d = summarize(r, golden={"y": x})
    assert "makespan_cycles" not in d and d["golden"]["y"]["exact"]
    assert "no timing" in format_summary(d)


def test_hazards_are_listed() -> None:
    n = 64
    x = np.arange(n, dtype=np.float16)
    r = launch(kernels.copy_cast, ["x", "y", {"n": n, "wait_mte2_v": False}],
               {"x": x, "y": np.zeros(n, np.float32)}, {"y": (np.float32, (n,))}, TINY,
               block_dim=1)
    d = summarize(r)
    assert d["hazards"] and sum(d["hazard_counts"].values()) == len(d["hazards"])
    assert "hazards:" in format_summary(d) and "none" not in format_summary(d).split(
        "hazards:")[1].splitlines()[0]


def test_compare_golden_counts_mismatches() -> None:
    got = {"a": np.array([1.0, 2.0, np.nan, 4.0], np.float32)}
    ref = {"a": np.array([1.0, 2.5, np.nan, 3.0], np.float32), "missing": None}
    g = compare_golden(got, ref)["a"]
    # NaN equals NaN; 2 vs 2.5 and 4 vs 3 differ. Relative error |got - want| / (|want| + 1e-7)
    # (CANN's, as in verify): 0.5 / 2.5000001 = 0.19999999 and 1 / 3.0000001 = 0.33333332.
    assert g["mismatches"] == 2 and not g["exact"] and g["bit_mismatches"] == 2
    assert g["max_abs_error"] == 1.0
    assert g["max_rel_error"] == 1 / (3 + 1e-7)
    assert g["mean_rel_error"] == pytest.approx((0.5 / (2.5 + 1e-7) + 1 / (3 + 1e-7)) / 4,
                                                rel=1e-15)
    assert g["first_mismatch"] == {"index": [1], "got": 2.0, "want": 2.5}
    assert compare_golden({"a": np.zeros(2)}, {"a": np.zeros(3)})["a"] == {
        "error": "shape [2] != expected [3]"}


def test_format_summary_text() -> None:
    r, x = copy_in_one_core()
    text = format_summary(summarize(r, golden={"y": x}))
    assert "makespan 716 cycles = 0.716 us" in text
    assert "bound by latency (phases in series): core0.veccore0, the critical core" in text
    assert "HBM-bound: no: HBM traffic 512 B = 1 GB/s, 71.5% of the 1 GB/s roofline" in text
    assert "hazards: none" in text and "golden y: exact" in text
