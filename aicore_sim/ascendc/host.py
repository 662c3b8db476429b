"""Host-side stand-ins of the CANN tiling API that host-tiling ports share.

Models the part of ``gert::TilingContext`` a tiling function talks to during one call: the
node name, attributes by IR index, the platform, the tiling key / block dim / workspace it
writes back, and the error and debug log (``OP_LOGE`` / ``OP_LOGD``). An operator's port
subclasses :class:`RunContext` with the tiling-data and result types of its own operator;
:class:`TilingError` is what a rejected tiling raises (aclnn would return 561002);
:class:`AclnnError` is a failed aclnn two-phase call with its status code.
"""

from __future__ import annotations

from typing import Any

from aicore_sim.errors import SimError

__all__ = ["AclnnError", "RunContext", "TilingError"]


class TilingError(SimError):
    """The host tiling rejected a case (aclnn would return 561002)."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


class AclnnError(SimError):
    """An aclnn call failed; ``code`` is the aclnn status (161001, 161002, 561002)."""

    def __init__(self, code: int, message: str, rule: str | None = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.rule = rule


class RunContext:
    """Mutable stand-in for ``gert::TilingContext`` during one tiling call.

    ``ctx`` is the operator's own input description (it needs ``node_name`` and ``attrs``, a
    mapping from IR index to value); ``platform`` answers the platform queries. What the
    tiling writes back (key, block dim, workspace, saved tiling data) and its messages
    (``errors`` as ``(rule, message)``, ``warnings``, ``log``) stay here until the port turns
    them into its result.
    """

    def __init__(self, ctx: Any, platform: Any) -> None:
        self.ctx = ctx
        self.platform = platform
        self.tiling_key: int | None = None
        self.block_dim: int | None = None
        self.workspace: list[int] = []
        self.saved: Any = None
        self.errors: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        self.log: list[str] = []

    # gert-like accessors used by the ported functions
    def GetNodeName(self) -> str:
        return self.ctx.node_name

    def GetPlatformInfo(self) -> Any:
        return self.platform

    def SetBlockDim(self, block_dim: int) -> None:
        self.block_dim = block_dim

    def SetTilingKey(self, key: int) -> None:
        self.tiling_key = key

    def SetWorkspace(self, sizes: list[int]) -> None:
        self.workspace = list(sizes)

    def attr(self, index: int) -> Any:
        """Attribute by IR index, ``None`` when absent (no type check)."""
        return self.ctx.attrs.get(index)

    # logging
    def LogD(self, msg: str) -> None:
        self.log.append(f"[D] {msg}")

    def LogE(self, rule: str, msg: str) -> None:
        self.log.append(f"[E] {self.GetNodeName()}: {msg}")
        self.errors.append((rule, msg))
