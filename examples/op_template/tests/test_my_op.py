"""Tests of ``my_op``: the tiling figures, kernel == golden (with and without the optional
input and output), and every flag pair and the cross-core barrier removed.

Run with ``python -m pytest tests`` after ``pip install -e .`` of this package. Platform
``tiny`` (2 AIV cores, 8192 usable UB bytes) keeps the figures small.
"""

from __future__ import annotations

import numpy as np
import pytest
from my_op import kernel
from my_op.model import MODEL

from aicore_sim import ascendc, call, load_platform
from aicore_sim.sim.isa import HardEvent

TINY = load_platform("tiny")


def test_tiling_of_the_small_case():
    # 5000 fp32 = 625 blocks of 8 -> 313 blocks (2504 elements) per core, 2 cores (the last
    # 2496); tile = min(4096, 2504, 8192 // (2 * 4) = 1024) = 1024 -> tiles 1024, 1024, 456
    t = MODEL.tiling({"x": ((5000,), np.dtype(np.float32))}, {}, TINY)
    assert t["tiling_data"] == {"totalLength": 5000, "blockLength": 2504, "tileLength": 1024}
    assert (t["block_dim"], t["tiling_key"]) == (2, 0)


def test_kernel_equals_golden():
    case = MODEL.cases()["my_op_small"]
    inputs = MODEL.case_inputs(case)
    attrs = MODEL.case_specs(case)[1]
    pc, result = call(MODEL, inputs, attrs, TINY)
    cmp = result.compare()  # against the op's golden for this call
    assert cmp["y"]["exact"] and cmp["y"]["elements"] == 5000
    assert not result.hazards


def test_bad_dtype_is_161002():
    with pytest.raises(Exception) as e:
        MODEL.prepare({"x": np.zeros(8, np.int32)}, {}, TINY)
    assert e.value.code == 161002


PAIRS = [(HardEvent.MTE2_V, 0), (HardEvent.V_MTE3, 0), (HardEvent.V_MTE2, 0),
         (HardEvent.MTE3_V, 0)]


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{e.name}-{i}" for e, i in PAIRS])
def test_each_flag_pair_removed_is_reported(monkeypatch, pair):
    def set_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.SetFlag(event, eid, **kw)

    def wait_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.WaitFlag(event, eid, **kw)

    monkeypatch.setattr(kernel, "SetFlag", set_flag)
    monkeypatch.setattr(kernel, "WaitFlag", wait_flag)
    case = MODEL.cases()["my_op_small"]
    _, result = call(MODEL, MODEL.case_inputs(case), MODEL.case_specs(case)[1], TINY)
    kinds = {h.kind for h in result.hazards}
    assert kinds & {"race", "timed_differs"}, kinds


def test_tiling_with_bias_and_amax():
    # 3000 fp32 = 375 blocks of 8 -> 188 blocks (1504 elements) per core, 2 cores; four
    # tile-sized buffers (x, y, bias, |y|) in 8192 - (2 + 2 cores) x 32 = 8064 bytes:
    # 8064 // (4 x 4) = 504 elements; key 0 (fp32) + 2 (bias) + 4 (amax)
    specs = {"x": ((3000,), np.dtype(np.float32)), "bias": ((3000,), np.dtype(np.float32))}
    t = MODEL.tiling(specs, {"with_amax": True}, TINY)
    assert t["tiling_data"] == {"totalLength": 3000, "blockLength": 1504, "tileLength": 504}
    assert (t["block_dim"], t["tiling_key"]) == (2, 6)
    # workspace: the 16 MiB system part + one 32-byte block per core
    assert t["workspace"] == [16 * 1024 * 1024 + 64]


def test_optional_input_and_output_equal_golden():
    case = MODEL.cases()["my_op_bias_amax"]
    inputs = MODEL.case_inputs(case)
    attrs = MODEL.case_specs(case)[1]
    pc, result = call(MODEL, inputs, attrs, TINY)
    cmp = result.compare()  # against the op's golden for this call
    assert cmp["y"]["exact"] and cmp["amax"]["exact"] and cmp["amax"]["elements"] == 1
    assert not result.hazards
    # without with_amax the output is absent and nothing crosses the cores
    pc, result = call(MODEL, inputs, {**attrs, "with_amax": False}, TINY)
    assert pc.out_shapes["amax"] is None and "amax" not in result.outputs


def test_bias_of_another_shape_is_161002():
    x = np.zeros(8, np.float32)
    with pytest.raises(Exception) as e:
        MODEL.prepare({"x": x, "bias": np.zeros(9, np.float32)}, {}, TINY)
    assert e.value.code == 161002
    assert "(rule bias_like_x)" in str(e.value)


AMAX_PAIRS = [(HardEvent.V_MTE3, 1), (HardEvent.MTE2_V, 1)]


@pytest.mark.parametrize("pair", AMAX_PAIRS, ids=[f"{e.name}-{i}" for e, i in AMAX_PAIRS])
def test_each_amax_flag_pair_removed_is_reported(monkeypatch, pair):
    def set_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.SetFlag(event, eid, **kw)

    def wait_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.WaitFlag(event, eid, **kw)

    monkeypatch.setattr(kernel, "SetFlag", set_flag)
    monkeypatch.setattr(kernel, "WaitFlag", wait_flag)
    case = MODEL.cases()["my_op_bias_amax"]
    _, result = call(MODEL, MODEL.case_inputs(case), MODEL.case_specs(case)[1], TINY)
    kinds = {h.kind for h in result.hazards}
    assert kinds & {"race", "timed_differs"}, kinds


def test_the_barrier_removed_is_a_race_on_the_workspace(monkeypatch):
    monkeypatch.setattr(kernel, "SyncAll", lambda: None)
    case = MODEL.cases()["my_op_bias_amax"]
    _, result = call(MODEL, MODEL.case_inputs(case), MODEL.case_specs(case)[1], TINY)
    assert any(h.kind == "race" for h in result.hazards)
