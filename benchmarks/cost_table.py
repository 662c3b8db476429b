"""Cost table: simulated single-core instruction costs beside the public figures they came from.

Step of the flow: a check of ``cost/price.py`` (the one home of timing formulas) against its
sources.
Prints the markdown table of the "Cost model" section of ``docs/model.md``:

    python benchmarks/cost_table.py [preset]      # default preset: ascend910b1

Each row builds a real :class:`~aicore_sim.sim.isa.Instr`, prices it with
:func:`aicore_sim.sim.cost.occupancy_cycles` and compares it with the public number it is meant to
reproduce (an msKPP measured time converted at the platform clock, a CANN ini rate, or a GE ATT
fitted formula). The ±10 % agreement is a check of transcription, interpolation, clock
conversion and rounding; it is not a validation against hardware.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from aicore_sim.sim.cost import occupancy_cycles
from aicore_sim.sim.isa import Instr, Opcode, Operand, Pipe, Space
from aicore_sim.sim.platform import Platform, load_platform

F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
KIB = 1024
COPY_SIZES_KIB = (1, 2, 4, 8, 16, 32, 64, 128, 192)
VECTOR_SIZES = (64, 512, 2048, 8192)

_MSKPP = "msKPP S5 @065b75cc"
_ATT = "GE ATT V1 S6 @74573e24"

# Public single-transfer times in ns (msKPP S5, github.com/Ascend/mskpp,
# csrc/prof_data/resource910b.cpp @ 065b75cc9d406173effc00fa9cdf6dd52444c932), by KiB.
GM_TO_UB_910B3_NS = {
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
GM_TO_UB_910B1_NS = {
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
UB_TO_GM_910B1_NS = {
    1: 83.696,
    2: 86.258,
    4: 100.628,
    8: 131.916,
    16: 175.692,
    32: 281.556,
    64: 551.562,
}
# Above the last measured UB->GM point (76 KiB) the public figure is the CANN ini per-core rate
# ub_to_ddr_rate = 64 B/cycle (S1: Ascend910B1.ini, CANN 8.1.RC1 public copy
# github.com/leideng/CANN-8.1.RC1 @ 4332a0134a96cfea4a4f6673690a81075c1e4dfb).
UB_TO_DDR_RATE = 64.0

# GE ATT V1 SimpleLinear fits t = b + k * n (S6, github.com/hicann/ge @ 74573e24c43f…,
# .../api_perf_register/v1/perf_param_v1.cpp): name -> (opcode, src, dst, b, k).
VECTOR_FITS: dict[str, tuple[Opcode, np.dtype, np.dtype, float, float]] = {
    "Cast bf16->fp32": (Opcode.CAST, BF16, F32, 20.1204, 0.0147),
    "Cast fp32->bf16": (Opcode.CAST, F32, BF16, 20.4393, 0.0087),
    "Muls fp32": (Opcode.MULS, F32, F32, 23.0966, 0.0142),
    "Mul fp32": (Opcode.MUL, F32, F32, 23.2291, 0.0206),
    "Add fp32": (Opcode.ADD, F32, F32, 23.2225, 0.0206),
    "Duplicate fp32": (Opcode.DUPLICATE, F32, F32, 16.9965, 0.0156),
    "Copy fp32 (mask 64 x repeat)": (Opcode.COPY, F32, F32, 12.9966, 0.0157),
    "WholeReduceSum fp32 (mask 64 x repeat)": (Opcode.WHOLE_REDUCE_SUM, F32, F32, 32.0029, 0.1094),
}
_MASKED = (Opcode.COPY, Opcode.WHOLE_REDUCE_SUM, Opcode.BLOCK_REDUCE_SUM)


@dataclass(frozen=True)
class Row:
    """One line of the table: what was priced, our cycles, the public figure and its source."""

    what: str
    size: str
    simulated: int
    public: float
    source: str

    @property
    def diff_pct(self) -> float:
        return 100.0 * (self.simulated - self.public) / self.public


def copy_instr(direction: str, nbytes: int, gm_addr: int = 0) -> Instr:
    """A one-row DataCopyPad of ``nbytes`` fp32 bytes between GM offset ``gm_addr`` and UB."""
    gm = Operand(Space.GM, "gm", gm_addr, nbytes, F32)
    ub = Operand(Space.UB, "ub", 0, nbytes, F32)
    if direction == "GM->UB":
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


def vector_instr(op: Opcode, src: np.dtype, dst: np.dtype, n: int) -> Instr:
    """A vector call on n elements: count mode, or mask 64 x n/64 repeats for Copy/reductions."""
    s = Operand(Space.UB, "src", 0, n * src.itemsize, src)
    if op in _MASKED:
        out = n // 64 * dst.itemsize if op is not Opcode.COPY else n * dst.itemsize
        d = Operand(Space.UB, "dst", 0, max(32, out), dst)
        return Instr(Pipe.VECTOR, op, dst=d, src=(s,), mask=64, repeat=n // 64)
    d = Operand(Space.UB, "dst", 0, n * dst.itemsize, dst)
    srcs = (s, s) if op in (Opcode.MUL, Opcode.ADD) else (s,)
    return Instr(Pipe.VECTOR, op, dst=d, src=srcs, count=n)


def rows(platform: Platform) -> list[Row]:
    """Every row of the table for ``platform`` (the public figures are A2 / 910B1 numbers)."""
    ghz = platform.clock_mhz / 1000.0
    out: list[Row] = []
    default = platform.costs.mte2_profile
    for kib in COPY_SIZES_KIB:
        sim = occupancy_cycles(copy_instr("GM->UB", kib * KIB), platform)
        out.append(
            Row(
                "GM->UB DataCopyPad (default, 910B3 curve)",
                f"{kib} KiB",
                sim,
                GM_TO_UB_910B3_NS[kib] * ghz,
                f"{_MSKPP} GM_TO_UB_910b3",
            )
        )
    slow = platform.with_overrides(costs={"mte2_profile": "mskpp_910b1_gm_to_ub"})
    for kib in COPY_SIZES_KIB:
        sim = occupancy_cycles(copy_instr("GM->UB", kib * KIB), slow)
        out.append(
            Row(
                "GM->UB DataCopyPad (slow profile, 910B1 curve)",
                f"{kib} KiB",
                sim,
                GM_TO_UB_910B1_NS[kib] * ghz,
                f"{_MSKPP} GM_TO_UB_910b1",
            )
        )
    for kib in COPY_SIZES_KIB:
        sim = occupancy_cycles(copy_instr("UB->GM", kib * KIB), platform)
        if kib in UB_TO_GM_910B1_NS:
            pub, src = UB_TO_GM_910B1_NS[kib] * ghz, f"{_MSKPP} UB_TO_GM_910b1"
        else:
            pub, src = kib * KIB / UB_TO_DDR_RATE, "S1 ini ub_to_ddr_rate 64 B/cycle"
        out.append(Row("UB->GM DataCopyPad (910B1 curve)", f"{kib} KiB", sim, pub, src))
    assert default == platform.costs.mte2_profile
    for name, (op, s, d, b, k) in VECTOR_FITS.items():
        for n in VECTOR_SIZES:
            sim = occupancy_cycles(vector_instr(op, s, d, n), platform)
            out.append(Row(name, f"{n} el", sim, b + k * n, f"{_ATT} b + k*n"))
    return out


def markdown(platform: Platform) -> str:
    """The table as markdown, with a headline line of the worst difference."""
    table = rows(platform)
    ghz = platform.clock_mhz / 1000.0
    lines = [
        f"Simulated single-core occupancy on `{platform.name}` ({platform.clock_mhz:g} MHz; "
        f"msKPP times converted at {ghz:g} cycles/ns), rounded half up.",
        "",
        "| Instruction | Size | Simulated (cycles) | Public figure (cycles) | Source | Diff |",
        "|---|---|---:|---:|---|---:|",
    ]
    for r in table:
        lines.append(
            f"| {r.what} | {r.size} | {r.simulated} | {r.public:.1f} | {r.source} | "
            f"{r.diff_pct:+.1f} % |"
        )
    worst = max(table, key=lambda r: abs(r.diff_pct))
    lines += [
        "",
        f"{len(table)} rows; largest difference {worst.diff_pct:+.1f} % "
        f"({worst.what}, {worst.size}).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(markdown(load_platform(args[0] if args else "ascend910b1")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
