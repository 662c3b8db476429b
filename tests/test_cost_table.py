"""The cost table of docs/model.md: every simulated cost within ±10 % of its public figure.

The public figures below are transcribed constants (not read from any file at run time):

- msKPP measured single-transfer times, ns (S5: github.com/Ascend/mskpp,
  csrc/prof_data/resource910b.cpp @ 065b75cc9d406173effc00fa9cdf6dd52444c932), tables
  GM_TO_UB_910b3, GM_TO_UB_910b1, UB_TO_GM_910b1; converted at 1.85 cycles/ns (ascend910b1);
- the CANN ini per-core UB->GM rate ub_to_ddr_rate = 64 B/cycle (S1: Ascend910B1.ini,
  github.com/leideng/CANN-8.1.RC1 @ 4332a0134a96cfea4a4f6673690a81075c1e4dfb), used where msKPP
  has no point (above 76 KiB);
- GE ATT V1 fits t = b + k*n (S6: github.com/hicann/ge @ 74573e24c43fcff3947f7c01fa4a0d404994fdd6,
  compiler/graph/optimize/autofuse/att/gen_model_info/api_perf_register/v1/perf_param_v1.cpp).

The simulated figures come from aicore_sim.cost.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from aicore_sim.cost import occupancy_cycles
from aicore_sim.isa import Instr, Opcode, Operand, Pipe, Space
from aicore_sim.platform import load_platform

# These tests check the public single-core data as transcribed (msKPP copy curves, GE ATT
# vector fits), so they run on the presets with copy_model "curve" and no UB bank model; the
# presets' own board-fitted mechanisms (pipelined copies, bank conflicts) are tested in
# test_copy_pipeline.py / test_bank_conflicts.py and held against the board by validate.
B1 = load_platform("ascend910b1").with_overrides(costs={"copy_model": "curve",
                                                        "ub_bank_groups": 0})
GHZ = 1.85
F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
KIB = 1024

# size KiB -> ns per transfer (msKPP S5)
GM_TO_UB_910B3 = {
    1: 120.26,
    2: 119.899,
    4: 132.144,
    8: 132.917,
    16: 166.554,
    32: 269.182,
    64: 414.85,
    128: 682.581,
    192: 980.808,
}
GM_TO_UB_910B1 = {
    1: 130.74,
    2: 141.506,
    4: 161.622,
    8: 178.494,
    16: 224.424,
    32: 395.342,
    64: 792.15,
    128: 1555.19,
    192: 2334.24,
}
UB_TO_GM_910B1 = {
    1: 83.696,
    2: 86.258,
    4: 100.628,
    8: 131.916,
    16: 175.692,
    32: 281.556,
    64: 551.562,
}
UB_TO_DDR_RATE = 64.0  # B/cycle, S1

# name -> (opcode, src dtype, dst dtype, b, k) from GE ATT V1 (S6)
FITS = {
    "Cast bf16->fp32": (Opcode.CAST, BF16, F32, 20.1204, 0.0147),
    "Cast fp32->bf16": (Opcode.CAST, F32, BF16, 20.4393, 0.0087),
    "Muls fp32": (Opcode.MULS, F32, F32, 23.0966, 0.0142),
    "Mul fp32": (Opcode.MUL, F32, F32, 23.2291, 0.0206),
    "Add fp32": (Opcode.ADD, F32, F32, 23.2225, 0.0206),
    "Duplicate fp32": (Opcode.DUPLICATE, F32, F32, 16.9965, 0.0156),
    "Copy fp32": (Opcode.COPY, F32, F32, 12.9966, 0.0157),
    "WholeReduceSum fp32": (Opcode.WHOLE_REDUCE_SUM, F32, F32, 32.0029, 0.1094),
}


def _copy(direction: str, nbytes: int) -> Instr:
    gm = Operand(Space.GM, "gm", 0, nbytes, F32)
    ub = Operand(Space.UB, "ub", 0, nbytes, F32)
    if direction == "in":
        return Instr(
            Pipe.MTE2,
            Opcode.COPY_GM_TO_UB,
            dst=ub,
            src=(gm,),
            nbytes=nbytes,
            params=(1, nbytes, 0, 0),
        )
    return Instr(
        Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(ub,), nbytes=nbytes, params=(1, nbytes, 0, 0)
    )


def _vector(op: Opcode, src: np.dtype, dst: np.dtype, n: int) -> Instr:
    s = Operand(Space.UB, "s", 0, n * src.itemsize, src)
    d = Operand(Space.UB, "d", 0, n * dst.itemsize, dst)
    if op in (Opcode.COPY, Opcode.WHOLE_REDUCE_SUM):  # high-dimensional form: mask 64 x repeats
        return Instr(Pipe.VECTOR, op, dst=d, src=(s,), mask=64, repeat=n // 64)
    return Instr(Pipe.VECTOR, op, dst=d, src=(s,), count=n)


def _cases() -> list[tuple[str, Instr, object, float]]:
    slow = B1.with_overrides(costs={"mte2_profile": "mskpp_910b1_gm_to_ub"})
    out: list[tuple[str, Instr, object, float]] = []
    for kib, ns in GM_TO_UB_910B3.items():
        out.append((f"GM->UB {kib} KiB (910B3 curve)", _copy("in", kib * KIB), B1, ns * GHZ))
    for kib, ns in GM_TO_UB_910B1.items():
        out.append((f"GM->UB {kib} KiB (910B1 curve)", _copy("in", kib * KIB), slow, ns * GHZ))
    for kib in (1, 2, 4, 8, 16, 32, 64, 128, 192):
        pub = UB_TO_GM_910B1[kib] * GHZ if kib in UB_TO_GM_910B1 else kib * KIB / UB_TO_DDR_RATE
        out.append((f"UB->GM {kib} KiB", _copy("out", kib * KIB), B1, pub))
    for name, (op, s, d, b, k) in FITS.items():
        for n in (64, 512, 2048, 8192):
            out.append((f"{name} n={n}", _vector(op, s, d, n), B1, b + k * n))
    return out


CASES = _cases()


@pytest.mark.parametrize(("name", "instr", "platform", "public"), CASES, ids=[c[0] for c in CASES])
def test_within_ten_percent(name: str, instr: Instr, platform, public: float) -> None:
    sim = occupancy_cycles(instr, platform)
    assert abs(sim - public) <= 0.10 * public, f"{name}: simulated {sim}, public {public:.1f}"


def test_benchmark_script_table_agrees() -> None:
    """benchmarks/cost_table.py (which regenerates the docs table) stays within ±10 % too."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "cost_table.py"
    spec = importlib.util.spec_from_file_location("cost_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    rows = module.rows(B1)
    assert len(rows) == len(CASES)
    assert all(abs(r.diff_pct) <= 10.0 for r in rows)
    text = module.markdown(B1)
    assert text.count("\n| ") == len(rows) + 1  # header + one line per row
