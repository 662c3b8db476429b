"""PlatformAscendC: the host-side platform query object that tiling functions read.

Models CANN's ``platform_ascendc::PlatformAscendC`` for the two queries the supported tilings
make, so a what-if platform changes data, never tiling code.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aicore_sim.sim.platform import Platform


NPU_ARCH: dict[str, int] = {"Ascend910B": 2201, "Ascend910_93": 2201, "Ascend950": 3510}
"""short SoC -> ``__NPU_ARCH__`` (A2/A3 2201, 950 3510): what host tilings and kernels built
for the SoC test."""


def npu_arch(platform: Platform) -> int:
    """The ``__NPU_ARCH__`` of ``platform``'s SoC (:data:`NPU_ARCH`), decided here only."""
    return NPU_ARCH[platform.short_soc]


class CoreMemType(Enum):
    """On-core memories ``GetCoreMemSize`` can be asked about (only UB is modelled)."""

    UB = "UB"


class PlatformAscendC:
    """Answers ``GetCoreNumAiv`` / ``GetCoreMemSize`` from a :class:`Platform`; ``cores``
    replaces its AIV core count (a tiling for that many cores, as a sweep asks)."""

    def __init__(self, platform: Platform, cores: int | None = None) -> None:
        self.platform = platform
        self.cores = cores

    def GetCoreNumAiv(self) -> int:  # noqa: N802 - Ascend C name
        """AIV cores a kernel launch spreads over (``vector_core_cnt`` on split-core SoCs)."""
        return self.platform.aiv_core_num if self.cores is None else self.cores

    def GetCoreMemSize(self, mem_type: CoreMemType = CoreMemType.UB) -> int:  # noqa: N802
        """UB bytes a kernel may use: ``ub_size`` minus the SoC family's reserved bytes."""
        if mem_type is not CoreMemType.UB:
            raise ValueError(f"GetCoreMemSize: only UB is modelled, got {mem_type}")
        return self.platform.core_mem_size_ub

    def GetLibApiWorkSpaceSize(self) -> int:  # noqa: N802
        """Bytes of workspace the Ascend C library keeps (``ascendc/utils.py``)."""
        from aicore_sim.ascendc.utils import SYSTEM_WORKSPACE_BYTES

        return SYSTEM_WORKSPACE_BYTES

    def GetSocVersion(self) -> str:  # noqa: N802
        """The short SoC version string, e.g. ``Ascend910B``."""
        return self.platform.short_soc
