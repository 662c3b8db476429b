"""The board-samples validation suite: Huawei's best-practice sample kernels, launched as the
samples launch them, with the on-board figures of their READMEs (``board.toml``).

Step of the flow: registered in the ``aicore_sim.validation`` entry-point group as ``SUITE``;
``aicore-sim validate`` runs every scenario timing-only and compares (see
:mod:`aicore_sim.validate.suite`). Samples: ``data_copy`` (GM->UB scenarios 1-8, A2 and 950),
``add_high_performance`` (cases 0-6 on A2, 0-5 on 950), ``bank_conflict_ub`` (scenarios 1-8,
A2) and ``bank_conflict_nd2nz`` (scenarios 1-2, A2). The figures are data (``board.toml``);
this module only turns them into :class:`BoardValue` objects and builds each launch.
``board.toml``'s ``[fitted]`` table (the scenarios timing-model parameters were fitted on,
with those parameters) becomes ``Suite.fitted``.

Scaled scenarios (``Scenario.scale`` < 1: the runner runs ``scale`` and ``2 * scale`` and
extrapolates linearly): ``data_copy`` scenario 1 keeps 1/8 of each core's rows (the matrix has
``M * scale`` rows, every core the same number of tile rows); ``add`` case 0 runs on one core
over ``totalM = 8192 * scale`` = 8 rows (the chunk loop the same, fewer chunks). Every other
scenario runs at full size.
"""

from __future__ import annotations

import tomllib
from functools import partial
from pathlib import Path

import numpy as np

from aicore_sim.validate.suite import COLUMNS, BoardValue, LaunchSpec, Scenario, Step, Suite
from op_models.board_samples import add as add_sample
from op_models.board_samples import bank_conflict_nd2nz, bank_conflict_ub, data_copy

BOARD_FILE = Path(__file__).with_name("board.toml")

# chip tag of a scenario name -> (platform preset, data_copy arch, add NPU_ARCH)
CHIPS = {"a2": ("ascend910b1", "2201", 2201), "950": ("ascend950pr_9589", "3510", 3510)}

# scale of the scenarios too long to record whole (see the module docstring)
SCALES = {
    "data_copy_s1_a2": 1 / 8, "data_copy_s1_950": 1 / 8,
    "add_c0_a2": 8 / 8192, "add_c0_950": 8 / 8192,
}

ADD_TOTAL_M = ADD_TOTAL_N = 8192  # the sample's matrix


def load_board(path: Path = BOARD_FILE) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def board_values(entry: dict, source: str, commit: str) -> tuple[BoardValue, ...]:
    """The :class:`BoardValue` of every column a scenario's table entry gives."""
    out = []
    for column in COLUMNS:
        v = entry.get(column)
        if v is None:
            continue
        if v["unit"] != COLUMNS[column][1]:
            raise ValueError(f"{column}: unit {v['unit']!r}, the column's is "
                             f"{COLUMNS[column][1]!r}")
        out.append(BoardValue(column, float(v["value"]), v["unit"], v["scope"], source, commit))
    return tuple(out)


# -- launches ---------------------------------------------------------------------------------


def build_data_copy(scenario: int, arch: str, scale: float) -> LaunchSpec:
    """``kernel_data_copy_pad_gm2ub`` of ``UbScenario<scenario>``; below scale 1 the matrix
    keeps ``scale`` of each core's rows (a whole number of ``TILE_M`` rows per core)."""
    c = data_copy.UbScenario(scenario, arch)
    single = c.SINGLE_CORE_M
    if scale < 1.0:
        single = max(c.TILE_M, round(c.SINGLE_CORE_M * scale / c.TILE_M) * c.TILE_M)
    m = single * c.NUM_BLOCKS
    src = np.zeros((m, c.N), np.float16)  # zero pages: only the copies' timing matters
    args = ["src", scenario, m, c.N, c.NUM_BLOCKS, single, c.TILE_M, c.TILE_N]
    return LaunchSpec(data_copy.kernel_data_copy_pad_gm2ub, args, {"src": src}, {},
                      c.NUM_BLOCKS)


def build_add(case: int, npu_arch: int, scale: float) -> LaunchSpec:
    """``add_custom`` of case ``case``; below scale 1 the matrix has ``8192 * scale`` rows
    (with one core, as cases 0 and 1 launch, that core's rows)."""
    cfg = add_sample.cfg(case, npu_arch)
    totalM = ADD_TOTAL_M if scale >= 1.0 else max(1, round(ADD_TOTAL_M * scale))
    shape = (totalM, ADD_TOTAL_N)
    tensors = {k: np.zeros(shape, np.float16) for k in ("x", "y", "z")}
    args = ["x", "y", "z", totalM, ADD_TOTAL_N, cfg.splitM, cfg.splitN, cfg.dataCopyLen, case,
            npu_arch]
    return LaunchSpec(add_sample.add_custom, args, tensors, {"z": (np.dtype(np.float16), shape)},
                      cfg.splitM * cfg.splitN)


def build_bank_conflict(scenario: int, scale: float) -> LaunchSpec:
    """``add_custom`` of ``bank_conflict_ub`` on one core, 4096 floats (never scaled)."""
    n = bank_conflict_ub.TOTAL_LENGTH
    tensors = {k: np.zeros(n, np.float32) for k in ("x", "y", "z")}
    return LaunchSpec(bank_conflict_ub.add_custom, ["x", "y", "z", scenario], tensors,
                      {"z": (np.dtype(np.float32), (n,))}, 1)


def build_nd2nz(scenario: int, npu_arch: int, scale: float) -> LaunchSpec:
    """``bank_conflict_nd2nz`` of ``SCENARIO``: [8192, 8192] half, tile 144 x 128, 8 column
    splits by 6 row splits on 2201 (48 blocks) or 8 on 3510 (64) (never scaled)."""
    m = n = ND2NZ_TOTAL
    row_splits = 6 if npu_arch == 2201 else 8
    tensors = {k: np.zeros(m * n, np.float16) for k in ("x", "z")}
    args = ["x", "z", m, n, 144, 128, 128, row_splits, 8, scenario, npu_arch]
    return LaunchSpec(bank_conflict_nd2nz.bank_conflict_nd2nz, args, tensors,
                      {"z": (np.dtype(np.float16), (m * n,))}, row_splits * 8)


ND2NZ_TOTAL = 8192  # the sample's matrix is [8192, 8192]

_DATA_COPY_WHAT = {
    1: "tile [1, 64] (128 B per copy)", 2: "tile [64, 64] (8 KB per copy)",
    3: "tile [64, 1024] (128 KB per copy)", 4: "tile [64, 1024], N = 12287 (unaligned tail)",
    5: "whole matrix read 4 times", 6: "N split in 4, each quarter read 4 times",
    7: "every core reads the whole matrix, same order, L2 off",
    8: "every core reads the whole matrix, order rotated by core, L2 off",
}
_ADD_WHAT = {
    0: "one core, scalar adds", 1: "one core, vector Add", 2: "all cores, 4096-element chunks",
    3: "all cores, large chunks", 4: "double buffer", 5: "double buffer, inputs bypass L2",
    6: "double buffer, L2 bypass, bank-conflict-free buffer layout",
}
_BANK_WHAT = {
    1: "no conflict", 2: "src0 / src1 in one bank (read-read)",
    3: "src0 / src1 in one bank group (read-read)", 4: "src0 / dst in one bank (no conflict)",
    5: "src0 / dst in different banks of one group (read-write)",
    6: "src1 = dst (no conflict)", 7: "src0 block stride 0, repeat stride 1 (read-read)",
    8: "src0 block stride 0, repeat stride 8 (no conflict)",
}
_ND2NZ_WHAT = {1: "C0 columns 144 blocks apart in UB (each row's 8 stored blocks in one bank "
                   "group)", 2: "C0 columns 145 blocks apart (8 bank groups)"}
_UB_950_NOTE = ("the sample's ping / pong layout reaches UB byte 262080 (6 x 21840 half); "
                "the ascend950pr_9589 preset's UB is 253952 bytes")


def _scenario(name: str, entry: dict, board: dict) -> Scenario:
    sample, num = entry["sample"], int(entry["scenario"])
    chip = name.rsplit("_", 1)[1]
    preset, dc_arch, npu_arch = CHIPS[chip]
    if preset != entry["platform"]:
        raise ValueError(f"{name}: platform {entry['platform']!r}, the chip tag says {preset!r}")
    notes = dict(entry.get("notes", {}))
    if sample == "data_copy":
        build = partial(build_data_copy, num, dc_arch)
        what = _DATA_COPY_WHAT[num]
    elif sample == "add_high_performance":
        build = partial(build_add, num, npu_arch)
        what = _ADD_WHAT[num]
        if chip == "950" and num in (4, 5):
            what += f" ({_UB_950_NOTE})"
    elif sample == "bank_conflict_nd2nz":
        build = partial(build_nd2nz, num, npu_arch)
        what = _ND2NZ_WHAT[num]
    else:
        build = partial(build_bank_conflict, num)
        what = _BANK_WHAT[num]
    values = board_values(entry, board["sources"][sample], board["commit"])
    return Scenario(name, sample, preset, f"{sample} {'case' if 'add' in sample else 'scenario'}"
                    f" {num} on {preset}: {what}", build, values, SCALES.get(name, 1.0), notes)


# the tuning steps of a sample, scenario / case numbers: (what changes, what it tunes, baseline,
# optimised)
_DATA_COPY_STEPS = (("tile 128 B -> 8 KB", "tile size", 1, 2),
                    ("tile 128 B -> 128 KB", "tile size", 1, 3),
                    ("aligned N", "alignment", 4, 3),
                    ("N split for L2 reuse", "L2 reuse", 5, 6),
                    ("staggered core order", "core staggering", 7, 8))
_ADD_STEPS = (("scalar -> vector", "scalar -> vector", 0, 1),
              ("one core -> all cores", "one core -> all cores", 1, 2),
              ("bigger copies", "tile size", 2, 3),
              ("double buffer", "double buffer", 3, 4),
              ("L2 bypass", "L2 bypass", 4, 5))


def _sample_steps(sample: str, scenario: str, table: tuple, chip: str, label: str
                  ) -> list[Step]:
    """The steps of ``table`` on one chip: scenario ``n`` is named ``{scenario}{n}_{chip}``."""
    name = f"{scenario}{{}}_{chip}".format
    return [Step(f"{sample} {what} ({label})", kind, name(a), name(b))
            for what, kind, a, b in table]


def _steps() -> tuple[Step, ...]:
    steps = []
    for chip, label in (("a2", "A2"), ("950", "950")):
        steps += _sample_steps("data_copy", "data_copy_s", _DATA_COPY_STEPS, chip, label)
    for chip, label, last in (("a2", "A2", 6), ("950", "950", 5)):
        steps += _sample_steps("add", "add_c", _ADD_STEPS, chip, label)
        if last >= 6:
            steps.append(Step(f"add bank-conflict-free layout ({label})",
                              "bank-conflict-free layout", f"add_c5_{chip}", f"add_c6_{chip}",
                              "vec_us"))
    steps += [
        Step("bank_conflict src0 / src1 banks apart (A2)", "bank-conflict-free layout",
             "bank_conflict_s2_a2", "bank_conflict_s1_a2", "vec_ticks"),
        Step("bank_conflict src0 / dst in one bank (A2)", "bank-conflict-free layout",
             "bank_conflict_s5_a2", "bank_conflict_s4_a2", "vec_ticks"),
    ]
    for chip, label in (("a2", "A2"), ("950", "950")):
        steps += [
            Step(f"nd2nz C0 columns 145 blocks apart ({label})", "bank-conflict-free layout",
                 f"nd2nz_s1_{chip}", f"nd2nz_s2_{chip}", "vec_us"),
            Step(f"nd2nz C0 columns 145 blocks apart, end to end ({label})",
                 "bank-conflict-free layout", f"nd2nz_s1_{chip}", f"nd2nz_s2_{chip}"),
        ]
    return tuple(steps)


def make_suite(path: Path = BOARD_FILE) -> Suite:
    board = load_board(path)
    scenarios = tuple(_scenario(name, entry, board)
                      for name, entry in board["scenarios"].items())
    steps = _steps()
    names = {s.name for s in scenarios}
    for st in steps:
        if st.baseline not in names or st.optimised not in names:
            raise ValueError(f"step {st.name!r}: names a scenario the board file lacks")
    fitted = {name: tuple(params) for name, params in board.get("fitted", {}).items()}
    return Suite("board_samples", scenarios, steps, fitted)


SUITE = make_suite()

__all__ = ["SUITE", "build_add", "build_bank_conflict", "build_data_copy", "build_nd2nz",
           "make_suite"]
