"""UB bank conflicts of two-source vector calls (cost.bank_beats, the [ub] cost table): the 8
address layouts of Huawei's bank_conflict_ub sample on an A2-like UB geometry.

Geometry (as a2.toml [ub]): 16 bank groups of 32-byte blocks, bank id = addr // 64 KiB, so a
block's group is (addr // 32) mod 16 and the groups repeat every 512 B. One repeat = 8 blocks
(256 B) per operand: a contiguous operand covers groups 0-7 on even repeats and 8-15 on odd
ones, shifted by its (addr // 32) mod 16. Rules (bank_beats' docstring): read-read - a repeat
takes as many beats as the most-used group has distinct blocks; read-write - a write to the
(group, bank id) of a block read at another position adds one beat, the same position or the
same address does not.

Platform ``tiny`` (Add = 10 + n / 8 cycles without banks, issue 1 cycle) with that geometry,
1 cycle per beat, ``Add`` priced by beats: 10 + repeats x beats; the sample's Add: 4096 fp32 =
64 lanes x 64 repeats. Physical UB 192 KiB so the fixed addresses fit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from aicore_sim.ascendc import Add, BinaryRepeatParams, LocalTensor, TPosition, float32
from aicore_sim.sim import cost
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.launch import launch
from aicore_sim.views.summary import summarize_trace
from tests.conftest import TINY as TINY_PRESET

TINY = TINY_PRESET.with_overrides(ub_physical_size=192 * 1024)
BANKED = TINY.with_overrides(costs=dataclasses.replace(
    TINY.costs, ub_bank_groups=16, ub_block_bytes=32, ub_bank_bytes=65536, ub_beat_cycles=1.0,
    ub_bank_apis=("Add",)))
N = 4096  # fp32: 64 repeats of 64 lanes
REPEATS = 64
CONTIGUOUS = (1, 1, 1, 8, 8, 8)  # dst, src0, src1 block strides; then repeat strides

# (scenario, src0, src1, dst, BinaryRepeatParams, beats per repeat), derived by hand:
LAYOUTS = [
    # src1 at 0x10100: (0x10100 // 32) mod 16 = 8, so src0 and src1 use disjoint groups
    # (0-7 / 8-15); dst 0x20000 shares src0's groups at bank id 2, src0's is 0: 1 beat
    (1, 0x0, 0x10100, 0x20000, CONTIGUOUS, 1.0),
    # src1 0x4000: group offset 0 = src0's: every group holds 2 distinct blocks: 2 beats;
    # dst (bank id 1) shares no bank with the reads (bank id 0)
    (2, 0x0, 0x4000, 0x10000, CONTIGUOUS, 2.0),
    # src1 0x10000: group offset 0 again: 2 beats; dst 0x14100 (offset 8, bank id 1) hits
    # src1's bank only in groups src1 does not read in that repeat
    (3, 0x0, 0x10000, 0x14100, CONTIGUOUS, 2.0),
    # disjoint reads; dst 0x4000 writes src0's bank (group and bank id 0) at the same
    # position of the repeat only: 1 beat
    (4, 0x0, 0x10100, 0x4000, CONTIGUOUS, 1.0),
    # dst 0x4020: its block j is in the group of src0's block j + 1 (bank id 0), another
    # position: + 1 beat
    (5, 0x0, 0x10100, 0x4020, CONTIGUOUS, 2.0),
    # dst = src1, the same addresses: no write conflict; reads disjoint: 1 beat
    (6, 0x0, 0x10100, 0x10100, CONTIGUOUS, 1.0),
    # src0 block stride 0, repeat stride 1: repeat r reads one block of group r mod 16;
    # src1 covers 8-15 (r even) / 0-7 (r odd): src0's group is among them for r mod 16 in
    # {1, 3, 5, 7, 8, 10, 12, 14}, 8 repeats of 16 at 2 beats: 1.5 on average
    (7, 0x0, 0x10100, 0x10100, (1, 0, 1, 8, 1, 8), 1.5),
    # src0 block stride 0, repeat stride 8: group 0 (r even) / 8 (r odd), never src1's: 1
    (8, 0x0, 0x10100, 0x10100, (1, 0, 1, 8, 8, 8), 1.0),
]
IDS = [f"s{s}" for s, *_ in LAYOUTS]


def _kernel(x, t):
    src0 = LocalTensor(float32, TPosition.VECCALC, t["src0"], N)
    src1 = LocalTensor(float32, TPosition.VECCALC, t["src1"], N)
    dst = LocalTensor(float32, TPosition.VECCALC, t["dst"], N)
    if t["params"] is None:
        Add(dst, src0, src1, N)  # count mode
    else:
        Add(dst, src0, src1, 64, REPEATS, BinaryRepeatParams(*t["params"]))


def _run(platform, src0, src1, dst, params):
    tiling = {"src0": src0, "src1": src1, "dst": dst, "params": params}
    return launch(_kernel, ["x", tiling], {"x": np.zeros(8, np.float32)}, {}, platform,
                  block_dim=1, mode="timing-only")


def _add(r):
    (ins,) = [i for i in r.program.streams[0] if i.op is Opcode.ADD]
    return ins


@pytest.mark.parametrize("scenario, src0, src1, dst, params, beats", LAYOUTS, ids=IDS)
def test_bank_beats_of_the_sample_layouts(scenario, src0, src1, dst, params, beats):
    r = _run(BANKED, src0, src1, dst, params)
    ins = _add(r)
    assert cost.bank_beats(ins, BANKED.costs) == beats
    # 10 + 64 repeats x beats; the part beyond 1 beat per repeat is the conflict
    cycles, conflict = 10 + round(REPEATS * beats), round(REPEATS * (beats - 1))
    assert cost.occupancy_cycles(ins, BANKED) == cycles
    assert cost.bank_conflict_cycles(ins, BANKED) == conflict
    ct = r.trace.cores[0]
    (row,) = ct.rows(Pipe.VECTOR)
    assert (int(ct.start[row]), int(ct.end[row])) == (1, 1 + cycles)  # issued at 1
    # the conflict cycles are the last of the Add's execution: one bank_conflict row
    stalls = [(p, a, b, cause) for p, a, b, cause, _ in ct.stalls]
    assert stalls == ([(int(Pipe.VECTOR), 1 + cycles - conflict, 1 + cycles, "bank_conflict")]
                      if conflict else [])
    core = summarize_trace(r.trace, BANKED)["cores"][0]
    assert core["bank_conflict_cycles"] == conflict
    assert core["busy_cycles"]["VECTOR"] == cycles  # execution, not a wait


@pytest.mark.parametrize("scenario, src0, src1, dst, params, beats", LAYOUTS[:6], ids=IDS[:6])
def test_count_mode_prices_as_the_contiguous_mask_repeat_form(scenario, src0, src1, dst,
                                                               params, beats):
    r = _run(BANKED, src0, src1, dst, None)
    ins = _add(r)
    # 4096 fp32 = 16 KiB = 64 repeats of 256 B, operands contiguous
    assert cost.bank_beats(ins, BANKED.costs) == beats
    assert cost.occupancy_cycles(ins, BANKED) == 10 + round(REPEATS * beats)
    assert summarize_trace(r.trace, BANKED)["cores"][0]["bank_conflict_cycles"] == \
        round(REPEATS * (beats - 1))


def test_the_conflict_scales_with_the_beat_cycles():
    costs = dataclasses.replace(BANKED.costs, ub_beat_cycles=2.0)
    platform = TINY.with_overrides(costs=costs)
    r = _run(platform, 0x0, 0x4000, 0x10000, CONTIGUOUS)  # scenario 2: 2 beats
    # 10 + 64 repeats x 2 beats x 2 cycles = 266, of which 64 x 1 x 2 = 128 conflict
    assert cost.occupancy_cycles(_add(r), platform) == 266
    assert summarize_trace(r.trace, platform)["cores"][0]["bank_conflict_cycles"] == 128


@pytest.mark.parametrize("platform", [
    TINY,  # no [ub] table: ub_bank_groups = 0
    TINY.with_overrides(costs=dataclasses.replace(BANKED.costs, ub_bank_apis=("Mul",))),
], ids=["no_ub_model", "add_not_banked"])
@pytest.mark.parametrize("scenario, src0, src1, dst, params, beats", LAYOUTS, ids=IDS)
def test_without_the_bank_model_there_is_no_conflict(platform, scenario, src0, src1, dst,
                                                     params, beats):
    r = _run(platform, src0, src1, dst, params)
    ins = _add(r)
    # the linear fit: 10 + 4096 elements / 8 = 522 cycles, whatever the addresses
    assert cost.occupancy_cycles(ins, platform) == 522
    assert cost.bank_conflict_cycles(ins, platform) == 0
    ct = r.trace.cores[0]
    assert [s for s in ct.stalls if s[3] == "bank_conflict"] == []
    assert summarize_trace(r.trace, platform)["cores"][0]["bank_conflict_cycles"] == 0


# --- one-source forms: a block-strided Copy (the bank_conflict_nd2nz sample's vcopy) ---------

COPY_BANKED = TINY.with_overrides(costs=dataclasses.replace(
    BANKED.costs, ub_bank_apis=("Add", "Copy")))
ROWS = 16  # Copy repeats: rows of 128 halves (8 blocks), one per repeat


def _nd2nz_kernel(x, t):
    from aicore_sim.ascendc import Copy, CopyRepeatParams, half

    nd = LocalTensor(half, TPosition.VECCALC, 0x0, ROWS * 128)
    nz = LocalTensor(half, TPosition.VECCALC, t["dst"], 8 * t["stride"] * 16)
    # repeat r: row r's 8 contiguous blocks -> block j * stride + r of nz (one per C0 column)
    Copy(nz, nd, 128, ROWS, CopyRepeatParams(t["stride"], 1, 1, 8))


def _copy(platform, stride, dst=0x10000):
    r = launch(_nd2nz_kernel, ["x", {"stride": stride, "dst": dst}],
               {"x": np.zeros(8, np.float32)}, {}, platform, block_dim=1, mode="timing-only")
    (ins,) = [i for i in r.program.streams[0] if i.op is Opcode.COPY]
    return r, ins


@pytest.mark.parametrize("stride, beats", [
    # write-write: block j of repeat r lands at j * 144 + r; 144 mod 16 = 0, so all 8 blocks
    # of a repeat share group (dst // 32 + r) mod 16: 8 beats. Reads: one row, 8 groups: 1.
    (144, 8.0),
    # 145 mod 16 = 1: the 8 blocks land in 8 consecutive groups: 1 beat
    (145, 1.0),
    # 136 mod 16 = 8: groups g and g + 8 alternate: 4 distinct blocks in each of 2 groups
    (136, 4.0),
])
def test_a_block_strided_copy_pays_write_write_conflicts(stride, beats):
    r, ins = _copy(COPY_BANKED, stride)
    assert cost.bank_beats(ins, COPY_BANKED.costs) == beats
    # dst at 0x10000 is bank id 1, the source's bank id 0: no read-write beat.
    # cycles = 10 + 16 repeats x beats; conflict = 16 x (beats - 1)
    cycles, conflict = 10 + round(ROWS * beats), round(ROWS * (beats - 1))
    assert cost.occupancy_cycles(ins, COPY_BANKED) == cycles
    assert cost.bank_conflict_cycles(ins, COPY_BANKED) == conflict
    assert summarize_trace(r.trace, COPY_BANKED)["cores"][0]["bank_conflict_cycles"] == conflict


def test_a_strided_copy_without_copy_banked_keeps_its_fit():
    r, ins = _copy(BANKED, 144)  # Copy not in ub_bank_apis
    # the linear fit: 10 + 16 x 128 halves / 8 = 266 cycles, no conflict
    assert cost.occupancy_cycles(ins, BANKED) == 266
    assert cost.bank_conflict_cycles(ins, BANKED) == 0


def test_a_copy_writing_the_bank_of_a_read_at_another_position_adds_a_beat():
    # dst 0x20 (block 1, bank id 0 as the source): stride 145 = 1 mod 16 spreads the writes
    # (1 beat); repeat r writes groups (1 + r + j) mod 16 at positions j and reads groups
    # (8r + k) mod 16 (0-7 for even r, 8-15 for odd r) at positions k, all bank 0. A group
    # shared at another position adds a beat in every repeat but r = 7 (writes 8 + j, reads
    # 8 + k: same positions only) and r = 15 (writes 0-7, reads 8-15): (14 x 2 + 2) / 16
    r, ins = _copy(COPY_BANKED, 145, dst=0x20)
    assert cost.bank_beats(ins, COPY_BANKED.costs) == 1.875
    assert cost.occupancy_cycles(ins, COPY_BANKED) == 10 + 30  # 16 repeats x 1.875 beats


# 950-like geometry (costs/950.toml [ub]): 8 groups of 32-byte blocks, bank within the group
# (addr // 256) mod 2, a group serves two reads from distinct banks a beat.
GEOMETRY_950 = dict(ub_bank_groups=8, ub_block_bytes=32, ub_bank_bytes=256, ub_banks_per_group=2,
                    ub_group_read_ports=2, ub_beat_cycles=1.0, ub_bank_apis=("Add", "Copy"))
BANKED_950 = TINY.with_overrides(costs=dataclasses.replace(TINY.costs, **GEOMETRY_950))


@pytest.mark.parametrize("src1, beats", [
    # src0 at 0, src1 at 0x100 (block 8: group 0, bank 1): each group gets one block of each
    # source from two banks - two ports: 1 beat
    (0x100, 1.0),
    # src1 at 0x200 (block 16: group 0, bank 0): same group and bank as src0 - 2 beats
    (0x200, 2.0),
])
def test_950_geometry_two_reads_per_group_from_distinct_banks(src1, beats):
    r = _run(BANKED_950, 0x0, src1, 0x8000, CONTIGUOUS)
    assert cost.bank_beats(_add(r), BANKED_950.costs) == beats


@pytest.mark.parametrize("stride, beats", [
    # 144 mod 8 = 0: the 8 written blocks of repeat r share group r mod 8: 8 beats. Their bank
    # is (r // 8) mod 2 (dst block 2048 + r + 144 j, 144 j / 8 even); the source's block of
    # that group is in bank r mod 2 at another position: same bank for even r < 8 and odd
    # r >= 8, + 1 beat in 8 of 16 repeats: 8.5
    (144, 8.5),
    # 145 mod 8 = 1: 8 groups, one write each, write j in group (r + j) mod 8. Repeat r reads
    # groups 0-7 at positions 0-7, all in bank r mod 2, and the writes span both banks, so a
    # write meets the read of its group at another position unless r mod 8 = 0 (group j at
    # position j): + 1 beat in 14 of 16 repeats, (14 x 2 + 2) / 16 = 1.875
    (145, 1.875),
])
def test_950_geometry_write_write(stride, beats):
    _r, ins = _copy(BANKED_950, stride, dst=0x10000)
    assert cost.bank_beats(ins, BANKED_950.costs) == beats


def test_the_vf_family_prices_each_operands_loads_and_stores_by_their_own_beats():
    # ascend950pr_9589 (the VF family, costs/950.toml [ub]: 8 groups): a register is loaded by
    # one vld and stored by one vst, so only an operand's own blocks can collide. Copy's store
    # with block stride 144 (= 0 mod 8) writes its 8 blocks to one group: 7 extra beats a
    # register; stride 145 none; the contiguous load none. 16 registers x 7 x 1 cycle = 112.
    from aicore_sim.sim.platform import load_platform

    p950 = load_platform("ascend950pr_9589")
    (_r144, c144), (_r145, c145) = _copy(p950, 144), _copy(p950, 145)
    assert cost.register_extra_beats(c144, p950.costs) == 7.0
    assert cost.register_extra_beats(c145, p950.costs) == 0.0
    assert cost.occupancy_cycles(c144, p950) - cost.occupancy_cycles(c145, p950) == 112
    assert cost.bank_conflict_cycles(c144, p950) == 112
    # two contiguous sources sharing a bank cost nothing extra here (separate loads), while
    # the linear family's one-beat repeat pays for them (test_bank_beats_of_the_sample_layouts)
    r = _run(p950, 0x0, 0x4000, 0x10000, CONTIGUOUS)
    assert cost.register_extra_beats(_add(r), p950.costs) == 0.0
