"""Host side of ``my_op``: the port of ``op_host/<op>_tiling.cpp`` and the checks of its aclnn
first phase (a real port keeps those in ``api.py``, as ``op_models/`` ops do).

Keep upstream's TilingData field names and order, its checks and its tiling keys; the kernel
reads only these fields. Here: the elements split over the cores in 32-byte blocks
(``blockLength`` per core, the last core the rest), each core's part in tiles of
``tileLength`` elements such that every tile-sized buffer fits the UB: input and output, the
bias when given, the |y| buffer and one 32-byte block per core plus two when amax is asked
for; with amax the GM workspace holds, after the library's system part, one 32-byte block per
core for the partial maxima (``GetUserWorkspace``). The tiling's failures raise the host
layer's ``TilingError`` naming the rule (``aicore_sim.ascendc.host``); aclnn returns 561002.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    AclnnError,
    TilingError,
    aclnn_invalid,
    aclnn_tensor,
)
from aicore_sim.ascendc.utils import SYSTEM_WORKSPACE_BYTES

BLOCK_BYTES = 32  # UB access granule
MAX_TILE = 4096  # elements per tile
DTYPES = ("float16", "float32")


@dataclass(frozen=True)
class TilingData:
    """What the kernel reads, in upstream's field order."""

    totalLength: int
    blockLength: int
    tileLength: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def tiling_func(total: int, itemsize: int, core_num: int, ub_bytes: int, bias: bool = False,
                amax: bool = False) -> tuple[TilingData, int, int, int]:
    """``(tiling data, tiling key, block dim, workspace bytes)`` for ``total`` elements of
    ``itemsize`` bytes."""
    if total < 1:
        raise TilingError(f"x has {total} elements; at least 1 is needed (rule empty)", "empty")
    align = BLOCK_BYTES // itemsize
    units = -(-total // align)
    block = -(-units // core_num) * align
    block_dim = -(-total // block)
    buffers = 2 + bias + amax  # tile-sized buffers
    # amax: a core's maximum, the running maximum and, in pass 2, every core's partial
    free = ub_bytes - ((2 + block_dim) * BLOCK_BYTES if amax else 0)
    tile = min(MAX_TILE, block, max(free, 0) // (buffers * itemsize) // align * align)
    if tile < align:
        raise TilingError(f"UB of {ub_bytes} bytes holds no tile (rule ub_size)", "ub_size")
    key = (0 if itemsize == 4 else 1) + 2 * bias + 4 * amax  # one key per dtype and form
    workspace = SYSTEM_WORKSPACE_BYTES + BLOCK_BYTES * block_dim if amax else 0
    return TilingData(total, block, tile), key, block_dim, workspace


def get_workspace_size(x: Any, bias: Any, amax: bool, platform: Any
                       ) -> tuple[TilingData, int, int, int]:
    """aclnn's checks of the arguments (161001 / 161002, naming the rule), then
    :func:`tiling_func` on the platform's AIV cores and usable UB (its refusal: 561002)."""
    x = aclnn_tensor("x", x, True)
    if str(x.dtype) not in DTYPES or x.ndim != 1:
        raise aclnn_invalid(f"x: expected a 1-D tensor of {'/'.join(DTYPES)}, got {x.ndim}-D "
                            f"{x.dtype}", "x_1d_float")
    if bias is not None and (bias.dtype != x.dtype or bias.shape != x.shape):
        raise aclnn_invalid(f"bias: expected {x.shape} {x.dtype} like x, got {bias.shape} "
                            f"{bias.dtype}", "bias_like_x")
    try:
        return tiling_func(x.size, x.itemsize, PlatformAscendC(platform).GetCoreNumAiv(),
                           platform.core_mem_size_ub, bias is not None, bool(amax))
    except TilingError as e:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, str(e), e.rule) from None
