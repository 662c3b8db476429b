"""Kernel entry and scenario configurations of the DataCopy sample, GM->UB part.

``kernel_data_copy_pad_gm2ub`` is what ``launch`` runs once per AIV core: it builds
``KernelDataCopyPadGm2Ub`` with the scenario's template arguments and runs the method the
scenario selects. ``UbScenario`` holds scenarios 1-8 as the sample configures them for A2/A3
(48 AIV cores) and for the 950 (``ARCH_3510``: 64 AIV cores, 8192 rows in scenarios 7 / 8).

Provenance
----------
Upstream: ``examples/01_simd_cpp_api/05_best_practices/04_memory_access/data_copy/data_copy.asc``
(the asc-devkit commit and how the ports follow it: :mod:`op_models.board_samples`).

Deviations from upstream
------------------------
1. Only the GM->UB (``COPY_DST_UB``) path is ported: the GM->L1 kernel
   (``kernel_data_copy_gm2l1``, ``L1Scenario``) runs on AIC cores, which are not modelled.
2. The compile-time choices are arguments: ``scenarioNum`` (``SCENARIO_NUM``) and the
   configuration (``M, N, NUM_BLOCKS, SINGLE_CORE_M, TILE_M, TILE_N``); ``ARCH_3510`` becomes
   the ``arch`` argument of :func:`UbScenario`.
3. The host ``main`` (ACL set-up, reading the input file, the launch) is the suite's
   ``Scenario.build`` (``op_models/board_samples/suite.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aicore_sim.ascendc import GM_ADDR, PIPE_ALL, InitSocState, PipeBarrier
from op_models.board_samples.data_copy_ub import KernelDataCopyPadGm2Ub

# AIV core count and the row count of the same-address scenarios, per arch
_ARCH = {"2201": (48, 6144), "3510": (64, 8192)}


@dataclass(frozen=True)
class ScenarioConfig:
    """``ScenarioConfig<m, n, numBlocks, tileM, tileN>``; ``SINGLE_CORE_M = M / NUM_BLOCKS``."""

    M: int
    N: int
    NUM_BLOCKS: int
    TILE_M: int
    TILE_N: int

    @property
    def SINGLE_CORE_M(self) -> int:
        return self.M // self.NUM_BLOCKS


def UbScenario(scenario: int, arch: str = "2201") -> ScenarioConfig:
    """``UbScenario<scenario>`` as compiled for ``arch`` (``"2201"`` A2/A3, ``"3510"`` 950)."""
    AIV_CORE_NUM, UB_ADDR_CONFLICT_M = _ARCH[arch]
    table = {
        # 1-4: tile size and the unaligned tail; 5-6: repeated reads; 7-8: same addresses
        1: (12288, 12288, AIV_CORE_NUM, 1, 64),
        2: (12288, 12288, AIV_CORE_NUM, 64, 64),
        3: (12288, 12288, AIV_CORE_NUM, 64, 1024),
        4: (12288, 12287, AIV_CORE_NUM, 64, 1024),
        5: (12288, 12288, AIV_CORE_NUM, 64, 1024),
        6: (12288, 12288, AIV_CORE_NUM, 64, 1024),
        7: (UB_ADDR_CONFLICT_M, 512, AIV_CORE_NUM, 128, 64),
        8: (UB_ADDR_CONFLICT_M, 512, AIV_CORE_NUM, 128, 64),
    }
    return ScenarioConfig(*table[scenario])


def kernel_data_copy_pad_gm2ub(src: GM_ADDR, scenarioNum: int, mValue: int, nValue: int,
                               numBlocksValue: int, singleCoreMValue: int, tileMValue: int,
                               tileNValue: int) -> None:
    """The ``__global__ __vector__`` kernel of the GM->UB scenarios."""
    InitSocState()
    op = KernelDataCopyPadGm2Ub(mValue, nValue, numBlocksValue, singleCoreMValue, tileMValue,
                                tileNValue)
    op.Init(src)
    if scenarioNum == 5:
        op.ProcessRepeatWhole4Times()
    elif scenarioNum == 6:
        op.ProcessSplitFourAndRepeat4Times()
    elif scenarioNum == 7:
        op.ProcessFullMatrixSameAddr()
    elif scenarioNum == 8:
        op.ProcessFullMatrixOffsetAddr()
    else:
        op.Process()
    PipeBarrier(PIPE_ALL)


__all__ = ["ScenarioConfig", "UbScenario", "kernel_data_copy_pad_gm2ub"]
