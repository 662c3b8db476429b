"""Small Ascend C helpers kernel ports call that record nothing: InitSocState, DivCeil and
GetUserWorkspace.

Step of the flow: kernel-port support. None emits an instruction; they exist so a port can
keep upstream's calls in place.
"""

from __future__ import annotations

import numpy as np

from aicore_sim.ascendc.tensors import GM_ADDR
from aicore_sim.sim.errors import KernelError

SYSTEM_WORKSPACE_BYTES = 16 * 1024 * 1024
"""Bytes at the start of a launch's workspace that the Ascend C library keeps for itself
(``GetLibApiWorkSpaceSize`` on the host; the kernel's ``GetUserWorkspace`` skips them).
source: ops-transformer's MoE host tilings reserve exactly this (``SYS_WORKSPACE_SIZE =
16 * 1024 * 1024``, e.g. moe_token_unpermute_with_ep_grad's tiling at upstream 5778144), the
system workspace of A2/A3; the 950 value is taken the same (ASSUMPTION)."""


def ToFloat(value) -> np.float32:
    """``AscendC::ToFloat(bfloat16_t)``: a bf16 (or any narrower float) scalar as float,
    exactly (every bf16 value is a float32 value)."""
    return np.float32(value)


def GetUserWorkspace(workspace: GM_ADDR | None) -> GM_ADDR:
    """``AscendC::GetUserWorkspace(workspace)``: the user part of the launch's workspace, the
    first byte after the library's :data:`SYSTEM_WORKSPACE_BYTES`."""
    if workspace is None:
        raise KernelError("GetUserWorkspace: the workspace argument is nullptr (the host "
                          "tiling asked for no workspace)")
    if not isinstance(workspace, GM_ADDR):
        raise KernelError(f"GetUserWorkspace: expected a GM_ADDR, got {workspace!r}")
    return workspace + SYSTEM_WORKSPACE_BYTES


def InitSocState() -> None:
    """``AscendC::InitSocState()``: puts the core's control registers in their default state
    at kernel start. It has no effect here and records nothing: every simulated launch starts
    from that state already (no mask, atomic or saturation mode is carried between launches)."""
    return None


def DivCeil(a: int, b: int) -> int:
    """``AscendC::DivCeil(a, b)``: ``a / b`` rounded up, for non-negative integers."""
    a, b = int(a), int(b)
    if b == 0:
        raise KernelError("DivCeil: division by zero")
    if a < 0 or b < 0:
        raise KernelError(f"DivCeil({a}, {b}): operands must be non-negative")
    return (a + b - 1) // b


__all__ = ["SYSTEM_WORKSPACE_BYTES", "DivCeil", "GetUserWorkspace", "InitSocState", "ToFloat"]
