"""Tests of aicore_sim.sim.cost: exact cycle counts with the arithmetic beside each figure.

Conventions: msKPP times are ns per transfer; cycles = ns x clock (GHz); results are rounded
half up. ascend910b1 runs at 1.85 GHz, the 950 presets at 1.65 GHz.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aicore_sim.sim.cost import gm_bytes, issue_cycles, occupancy_cycles, tail_cycles
from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Operand, Pipe, Space
from aicore_sim.sim.platform import load_platform

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
I32 = np.dtype(np.int32)

# These tests check the public single-core data as transcribed (msKPP copy curves, GE ATT
# vector fits), so they run on the presets with copy_model "curve" and no UB bank model; the
# presets' own board-fitted mechanisms (pipelined copies, bank conflicts) are tested in
# test_copy_pipeline.py / test_bank_conflicts.py and held against the board by validate.
B1 = load_platform("ascend910b1").with_overrides(costs={"copy_model": "curve",
                                                        "ub_bank_groups": 0})
PR950 = load_platform("ascend950pr_9589").with_overrides(costs={"copy_model": "curve"})


def gm2ub(row_bytes: int, rows: int = 1, gap: int = 0, addr: int = 0, dt=F32) -> Instr:
    gm = Operand(Space.GM, "x", addr, rows * (row_bytes + gap), dt)
    ub = Operand(Space.UB, "u", 0, rows * row_bytes, dt)
    return Instr(
        Pipe.MTE2,
        Opcode.COPY_GM_TO_UB,
        dst=ub,
        src=(gm,),
        nbytes=rows * row_bytes,
        params=(rows, row_bytes, gap, 0),
    )


def ub2gm(row_bytes: int, rows: int = 1, gap: int = 0, addr: int = 0, dt=F32) -> Instr:
    gm = Operand(Space.GM, "y", addr, rows * (row_bytes + gap), dt)
    ub = Operand(Space.UB, "u", 0, rows * row_bytes, dt)
    return Instr(
        Pipe.MTE3,
        Opcode.COPY_UB_TO_GM,
        dst=gm,
        src=(ub,),
        nbytes=rows * row_bytes,
        params=(rows, row_bytes, 0, gap),
    )


def vec(op: Opcode, n: int = 0, src=F32, dst=F32, mask: int = 0, repeat: int = 0) -> Instr:
    s = Operand(Space.UB, "a", 0, max(32, n * src.itemsize), src)
    d = Operand(Space.UB, "b", 4096, max(32, n * dst.itemsize), dst)
    return Instr(Pipe.VECTOR, op, dst=d, src=(s,), count=n, mask=mask, repeat=repeat)


# ---------------------------------------------------------------------------- GM -> UB (MTE2)


def test_gm_to_ub_16k_on_a_measured_point() -> None:
    # msKPP 910B3 GM_TO_UB at 16384 B: 166.554 ns x 1.85 = 308.125 -> 308
    assert occupancy_cycles(gm2ub(16384), B1) == 308


def test_gm_to_ub_interpolates_in_bytes() -> None:
    # 10240 B lies halfway between 8192 B (132.917 ns) and 12288 B (149.684 ns):
    # 132.917 + 0.5 x 16.767 = 141.3005 ns x 1.85 = 261.406 -> 261
    assert occupancy_cycles(gm2ub(10240), B1) == 261


def test_gm_to_ub_floor_below_first_point() -> None:
    # 64 B < 1024 B (first point): floor 120.26 ns x 1.85 = 222.481 -> 222
    assert occupancy_cycles(gm2ub(64), B1) == 222
    # 2048 B is measured at 119.899 ns (221.8 cycles) but the floor holds: 222
    assert occupancy_cycles(gm2ub(2048), B1) == 222


def test_gm_to_ub_slow_profile() -> None:
    slow = B1.with_overrides(costs={"mte2_profile": "mskpp_910b1_gm_to_ub"})
    # msKPP 910B1 GM_TO_UB at 16384 B: 224.424 ns x 1.85 = 415.184 -> 415
    assert occupancy_cycles(gm2ub(16384), slow) == 415


def test_clock_override_rescales_curve() -> None:
    # 166.554 ns at 1.0 GHz = 166.554 -> 167 (the cached tables are per platform)
    assert occupancy_cycles(gm2ub(16384), B1.with_overrides(clock_mhz=1000)) == 167
    assert occupancy_cycles(gm2ub(16384), B1) == 308


def test_gm_to_ub_not_512_aligned_is_slower() -> None:
    # GM offset 32: bus bytes 16384 (32-byte aligned) / 0.85 = 19275.29 B; between 16384 B
    # (166.554 ns) and 20480 B (199.17 ns): frac = 2891.29 / 4096 = 0.705883;
    # 166.554 + 0.705883 x 32.616 = 189.577 ns x 1.85 = 350.718 -> 351
    assert occupancy_cycles(gm2ub(16384, addr=32), B1) == 351
    assert occupancy_cycles(gm2ub(16384, addr=512), B1) == 308  # 512-aligned: no penalty


def test_gm_to_ub_stride_penalty() -> None:
    # 4 rows x 1024 B fp32, GM gap 512 B = 128 elements: bus 4096 B -> 132.144 ns x 1.85
    # = 244.466; + 0.07 x 4 rows x (128 mod 256) = 35.84 -> 280.306 -> 280
    assert occupancy_cycles(gm2ub(1024, rows=4, gap=512), B1) == 280
    # gap 1024 B = 256 elements: 256 mod 256 = 0, no penalty -> 244
    assert occupancy_cycles(gm2ub(1024, rows=4, gap=1024), B1) == 244


# ---------------------------------------------------------------------------- UB -> GM (MTE3)


def test_ub_to_gm_16k() -> None:
    # msKPP 910B1 UB_TO_GM at 16384 B: 175.692 ns x 1.85 = 325.030 -> 325
    assert occupancy_cycles(ub2gm(16384), B1) == 325


def test_ub_to_gm_beyond_last_point_holds_bandwidth() -> None:
    # last point 77824 B at 657.994 ns: 1217.289 cycles; 131072 B x 1217.289 / 77824
    # = 2050.17 -> 2050 (64 B/cycle per the ini ub_to_ddr_rate would give 2048)
    assert occupancy_cycles(ub2gm(131072), B1) == 2050


def test_ub_to_gm_stride_penalty() -> None:
    # 2 rows x 2048 B, GM gap 64 B fp16 = 32 elements: bus 4096 B -> 100.628 ns x 1.85
    # = 186.162; + 0.02 x 2 x 32 = 1.28 -> 187.442 -> 187
    assert occupancy_cycles(ub2gm(2048, rows=2, gap=64, dt=F16), B1) == 187


def test_950_copies() -> None:
    # msKPP 950 GM_TO_UB at 16384 B: 162.934 ns x 1.65 = 268.841 -> 269
    assert occupancy_cycles(gm2ub(16384), PR950) == 269
    # msKPP 950 UB_TO_GM at 1024 B: 168.197 ns x 1.65 = 277.525 -> 278
    assert occupancy_cycles(ub2gm(1024), PR950) == 278


# ---------------------------------------------------------------------------- GM bytes


def test_gm_bytes_rounds_rows_to_32_bytes() -> None:
    assert gm_bytes(gm2ub(16384)) == 16384
    # one 100-byte row at GM offset 2: up(100 + 2, 32) = 128
    assert gm_bytes(gm2ub(100, addr=2)) == 128
    # 3 rows of 40 B, gap 0, offset 0: rows start at 0, 40, 80 -> misalignment 0, 8, 16:
    # up(40, 32) + up(48, 32) + up(56, 32) = 64 + 64 + 64 = 192
    assert gm_bytes(gm2ub(40, rows=3)) == 192
    # 10 rows of 4 B, pitch 4: offsets mod 32 = 0,4,...,28,0,4 -> 8 rows of 32 + 2 rows of 32
    assert gm_bytes(ub2gm(4, rows=10)) == 320
    assert gm_bytes(vec(Opcode.ADD, 64)) == 0


def test_gm_bytes_large_row_count_is_closed_form() -> None:
    # 4095 rows of 62 B with gap 2 (pitch 64): offsets mod 32 = 0 always -> 4095 x 64
    assert gm_bytes(gm2ub(62, rows=4095, gap=2, dt=F16)) == 4095 * 64


# ---------------------------------------------------------------------------- vector, A2/A3


def test_vector_linear_fits() -> None:
    # Muls fp32, 2048 el: 23.0966 + 0.0142 x 2048 = 52.178 -> 52
    assert occupancy_cycles(vec(Opcode.MULS, 2048), B1) == 52
    # Add fp32, 64 el: 23.2225 + 0.0206 x 64 = 24.541 -> 25
    assert occupancy_cycles(vec(Opcode.ADD, 64), B1) == 25
    # Mul fp32, 8192 el: 23.2291 + 0.0206 x 8192 = 191.984 -> 192
    assert occupancy_cycles(vec(Opcode.MUL, 8192), B1) == 192
    # Duplicate fp32, 512 el: 16.9965 + 0.0156 x 512 = 24.984 -> 25
    assert occupancy_cycles(vec(Opcode.DUPLICATE, 512), B1) == 25
    # Duplicate bf16 uses the float16 fit: 16.9993 + 0.0078 x 512 = 20.993 -> 21
    assert occupancy_cycles(vec(Opcode.DUPLICATE, 512, BF16, BF16), B1) == 21


def test_cast_up_and_down() -> None:
    # bf16 -> fp32 uses float16tofloat32: 20.1204 + 0.0147 x 2048 = 50.226 -> 50
    assert occupancy_cycles(vec(Opcode.CAST, 2048, BF16, F32), B1) == 50
    # fp32 -> bf16 uses float32tofloat16: 20.4393 + 0.0087 x 2048 = 38.257 -> 38
    assert occupancy_cycles(vec(Opcode.CAST, 2048, F32, BF16), B1) == 38
    # int32 -> fp32 has no fit: priced as a Copy fp32: 12.9966 + 0.0157 x 64 = 14.001 -> 14
    assert occupancy_cycles(vec(Opcode.CAST, 64, I32, F32), B1) == 14


def test_mask_repeat_forms() -> None:
    # WholeReduceSum fp32 mask 64 x repeat 8 = 512 el: 32.0029 + 0.1094 x 512 = 88.016 -> 88
    assert occupancy_cycles(vec(Opcode.WHOLE_REDUCE_SUM, mask=64, repeat=8), B1) == 88
    # BlockReduceSum fp32 (BlockReduceMax fit) mask 64 x 2: 16.7401 + 0.0198 x 128 = 19.27 -> 19
    assert occupancy_cycles(vec(Opcode.BLOCK_REDUCE_SUM, mask=64, repeat=2), B1) == 19
    # Copy fp32 mask 128 clamps to 64 per repeat: 64 x 2 = 128 el: 12.9966 + 2.0096 = 15.006
    assert occupancy_cycles(vec(Opcode.COPY, mask=128, repeat=2), B1) == 15
    # mask 0 or repeat 0: the call costs b only: 12.9966 -> 13
    assert occupancy_cycles(vec(Opcode.COPY, mask=0, repeat=4), B1) == 13
    assert occupancy_cycles(vec(Opcode.COPY, mask=64, repeat=0), B1) == 13


# ---------------------------------------------------------------------------- vector, 950


def test_vector_vf_model_950() -> None:
    # head 30.6; per register the micro-ops' throughputs, the UB loads/stores (vld, vst) 0.343
    # each; plus the largest latency (950.toml)
    # Add fp32 2048 el: 8192 B -> 32 registers: 30.6 + (2 x 0.343 + 1 + 0.343) x 32 + 4 = 99.5
    assert occupancy_cycles(vec(Opcode.ADD, 2048), PR950) == 100
    # Cast bf16 -> fp32, 100 el: wider 4 B -> 400 B -> 2 registers: 30.6 + 2.686 x 2 + 5 = 41.0
    assert occupancy_cycles(vec(Opcode.CAST, 100, BF16, F32), PR950) == 41
    # Muls bf16 (no bf16 entry -> float16): 256 el x 2 B = 512 B -> 2: 30.6 + 1.686 x 2 + 5
    assert occupancy_cycles(vec(Opcode.MULS, 256, BF16, BF16), PR950) == 39
    # WholeReduceSum fp32 mask 64 x 8 = 512 el -> 2048 B -> 8: 30.6 + 1.343 x 8 + 19 = 60.3
    assert occupancy_cycles(vec(Opcode.WHOLE_REDUCE_SUM, mask=64, repeat=8), PR950) == 60
    # mask 0: head only, 30.6 -> 31
    assert occupancy_cycles(vec(Opcode.COPY, mask=0, repeat=1), PR950) == 31


# ---------------------------------------------------------------------------- sync and scalar


def test_sync_scalar_and_issue_costs() -> None:
    set_flag = Instr(Pipe.MTE2, Opcode.SET_FLAG, event=HardEvent.MTE2_V, event_id=0)
    wait_flag = Instr(Pipe.VECTOR, Opcode.WAIT_FLAG, event=HardEvent.MTE2_V, event_id=0)
    barrier = Instr(Pipe.VECTOR, Opcode.BARRIER, barrier=Pipe.VECTOR)
    gv_gm = Instr(Pipe.SCALAR, Opcode.GET_VALUE_GM, src=(Operand(Space.GM, "i", 0, 4, I32),))
    gv_ub = Instr(Pipe.SCALAR, Opcode.GET_VALUE_UB, src=(Operand(Space.UB, "i", 0, 4, I32),))
    assert [occupancy_cycles(i, B1) for i in (set_flag, wait_flag, barrier)] == [2, 1, 2]
    assert occupancy_cycles(gv_gm, B1) == 4  # DCache hit; the engine adds 200 on a miss
    assert occupancy_cycles(gv_ub, B1) == 11  # ub_read_cycles, fitted on add case 0
    assert [issue_cycles(i, B1) for i in (set_flag, wait_flag, barrier)] == [1, 1, 1]
    assert issue_cycles(gm2ub(1024), B1) == 8
    assert issue_cycles(ub2gm(1024), B1) == 8
    assert issue_cycles(vec(Opcode.ADD, 64), B1) == 6
    assert issue_cycles(gv_gm, B1) == 0  # executed by the scalar unit: all in occupancy
    assert tail_cycles(vec(Opcode.ADD, 64), B1) == 10
    assert tail_cycles(vec(Opcode.WHOLE_REDUCE_SUM, mask=64, repeat=1), B1) == 20
    assert tail_cycles(gm2ub(1024), B1) == 0


def test_cost_overrides_reach_the_formulas() -> None:
    q = B1.with_overrides(costs={"set_flag_cycles": 7, "copy_issue_cycles": 3})
    set_flag = Instr(Pipe.MTE2, Opcode.SET_FLAG, event=HardEvent.MTE2_V, event_id=0)
    assert occupancy_cycles(set_flag, q) == 7
    assert issue_cycles(gm2ub(1024), q) == 3


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1000, 65535, 200_000])
def test_copies_are_positive_and_monotonic(n: int) -> None:
    for make in (gm2ub, ub2gm):
        a = occupancy_cycles(make(n), B1)
        b = occupancy_cycles(make(n + 32), B1)
        assert 1 <= a <= b


def test_memo_returns_same_answer() -> None:
    i = gm2ub(12345)
    assert occupancy_cycles(i, B1) == occupancy_cycles(i, B1)
