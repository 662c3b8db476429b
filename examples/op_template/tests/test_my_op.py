"""Tests of ``my_op``: the tiling figures, kernel == golden, and every flag pair removed.

Run with ``python -m pytest tests`` after ``pip install -e .`` of this package. Platform
``tiny`` (2 AIV cores, 8192 usable UB bytes) keeps the figures small.
"""

from __future__ import annotations

import numpy as np
import pytest
from my_op import kernel
from my_op.model import MODEL

from aicore_sim import ascendc
from aicore_sim.isa import HardEvent
from aicore_sim.opmodel import call
from aicore_sim.platform import load_platform

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
