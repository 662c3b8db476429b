"""Host tiling of ``my_op`` (the port of ``op_host/<op>_tiling.cpp``).

Keep upstream's TilingData field names and order, its checks and its tiling keys; the kernel
reads only these fields. Here: the elements split over the cores in 32-byte blocks
(``blockLength`` per core, the last core the rest), each core's part in tiles of
``tileLength`` elements such that every tile-sized buffer fits the UB: input and output, the
bias when given, the |y| buffer and one 32-byte block per core plus two when amax is asked
for.
Failures raise the host layer's ``TilingError`` naming the rule (``aicore_sim.ascendc.host``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from aicore_sim.ascendc.host import TilingError

BLOCK_BYTES = 32  # UB access granule
MAX_TILE = 4096  # elements per tile


@dataclass(frozen=True)
class TilingData:
    """What the kernel reads, in upstream's field order."""

    totalLength: int
    blockLength: int
    tileLength: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def tiling_func(total: int, itemsize: int, core_num: int, ub_bytes: int, bias: bool = False,
                amax: bool = False) -> tuple[TilingData, int, int]:
    """``(tiling data, tiling key, block dim)`` for ``total`` elements of ``itemsize`` bytes."""
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
    return TilingData(total, block, tile), key, block_dim
