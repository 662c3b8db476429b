"""The bank_conflict_nd2nz port: its numbers against an independent ND -> NZ golden, and the
bank beats of its block-strided Copy on ascend910b1."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.sim import cost
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from op_models.board_samples.bank_conflict_nd2nz import bank_conflict_nd2nz

A2 = load_platform("ascend910b1")


def _run(m: int, n: int, scenario: int, mode: str = "timed", npu_arch: int = 2201):
    x = (np.arange(m * n) % 2039).astype(np.float16).reshape(m, n)
    row_tiles, col_splits = -(-m // 144), n // 128
    args = ["x", "z", m, n, 144, 128, 128, row_tiles, col_splits, scenario, npu_arch]
    platform = A2 if npu_arch == 2201 else load_platform("ascend950pr_9589")
    r = launch(bank_conflict_nd2nz, args, {"x": x, "z": np.zeros(m * n, np.float16)},
               {"z": (np.dtype(np.float16), (m * n,))}, platform,
               block_dim=row_tiles * col_splits, mode=mode)
    return x, r


@pytest.mark.parametrize("scenario, npu_arch", [(1, 2201), (2, 2201), (1, 3510), (2, 3510)])
def test_the_port_writes_the_compact_nz_layout(scenario, npu_arch):
    # 300 rows = tiles of 144, 144 and 12 rows (the short last tile), 256 columns = 2 C0
    # column groups of 128; NZ: C0 column c (16 halves) holds rows 0..299 of columns
    # 16c..16c+15, one after the other (3510's scenario 2 moves the NZ buffers by 256 B)
    x, r = _run(300, 256, scenario, npu_arch=npu_arch)
    golden = x.reshape(300, 16, 16).transpose(1, 0, 2).reshape(-1)
    assert np.array_equal(r.outputs["z"].view(np.uint16), golden.view(np.uint16))


@pytest.mark.parametrize("scenario, beats, conflict", [
    # stride 144 = 0 mod 16: a repeat's 8 written blocks share one bank group, 8 beats; 144
    # repeats x 7 extra beats x 1 cycle = 1008 conflict cycles per Copy
    (1, 8.0, 1008),
    # stride 145 = 1 mod 16: 8 groups; the reads (row r's 8 blocks) and the writes never share
    # a bank (nzBuf starts at 2 x 36,864 = 73,728 B, bank id 1; ndBuf bank id 0): 1 beat
    (2, 1.0, 0),
])
def test_the_sample_copy_pays_its_write_write_conflicts(scenario, beats, conflict):
    _x, r = _run(300, 256, scenario, mode="timing-only")
    copies = [i for i in r.program.streams[0] if i.op is Opcode.COPY]
    first = copies[0]  # a full 144-row tile
    assert first.repeat == 144
    assert cost.bank_beats(first, A2.costs) == beats
    assert cost.bank_conflict_cycles(first, A2) == conflict


def test_the_3510_layout_starts_the_nz_buffers_at_bank_8():
    from op_models.board_samples.bank_conflict_nd2nz import KernelNd2Nz

    # ndBuf 144 x 128 halves = 36,864 B (nzBuf, scenario 2: (143 + 7 x 145 + 1 + 1 spare)
    # blocks x 32 B = 37,120 B)
    k2201 = KernelNd2Nz(8192, 8192, 144, 128, 128, 6, 8, 2, 2201)
    k3510 = KernelNd2Nz(8192, 8192, 144, 128, 128, 8, 8, 2, 3510)
    assert (k2201.nzBufBaseOffset, k2201.nzPongExtraPadBytes) == (73728, 0)
    # 2 x 36,864 + 8 blocks x 32 B = 73,984 = block 2312, bank 2312 mod 16 = 8
    assert (k3510.nzBufBaseOffset, k3510.nzPongExtraPadBytes) == (73984, 256)
    assert (k3510.nzBufBaseOffset // 32) % 16 == 8
