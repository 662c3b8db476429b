"""Host tiling of ``my_op`` (the port of ``op_host/<op>_tiling.cpp``).

Keep upstream's TilingData field names and order, its checks and its tiling keys; the kernel
reads only these fields. Here: the elements split over the cores in 32-byte blocks
(``blockLength`` per core, the last core the rest), each core's part in tiles of
``tileLength`` elements that fit the UB twice (one input and one output buffer).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

BLOCK_BYTES = 32  # UB access granule
MAX_TILE = 4096  # elements per tile


class TilingError(ValueError):
    """The shapes admit no tiling; ``rule`` names the check (the aclnn layer adds the code)."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class TilingData:
    """What the kernel reads, in upstream's field order."""

    totalLength: int
    blockLength: int
    tileLength: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def tiling_func(total: int, itemsize: int, core_num: int, ub_bytes: int
                ) -> tuple[TilingData, int, int]:
    """``(tiling data, tiling key, block dim)`` for ``total`` elements of ``itemsize`` bytes."""
    if total < 1:
        raise TilingError(f"x has {total} elements; at least 1 is needed (rule empty)", "empty")
    align = BLOCK_BYTES // itemsize
    units = -(-total // align)
    block = -(-units // core_num) * align
    block_dim = -(-total // block)
    tile = min(MAX_TILE, block, ub_bytes // (2 * itemsize) // align * align)
    if tile < align:
        raise TilingError(f"UB of {ub_bytes} bytes holds no tile (rule ub_size)", "ub_size")
    key = 0 if itemsize == 4 else 1  # one key per dtype, as many upstream ops do
    return TilingData(total, block, tile), key, block_dim
