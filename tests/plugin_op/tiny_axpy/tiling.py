"""Host tiling of ``tiny_axpy``: the elements split over cores, each core's part over tiles.

Each core gets ``blockLength`` elements (a multiple of 8, i.e. 32 bytes of fp32), the last core
the rest; a core walks its part in tiles of ``tileLength`` elements through double-buffered
queues (2 x x, 2 x y, 2 x z tiles in UB).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ALIGN = 8  # elements per 32-byte block of fp32
BUFFER_NUM = 2  # double buffering
MAX_TILE = 2048  # elements per tile


class TilingError(ValueError):
    """The shapes admit no tiling; ``rule`` names the check."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class TilingData:
    """The fields the kernel reads, in kernel order."""

    totalLength: int
    blockLength: int
    tileLength: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def tiling_func(total: int, core_num: int, ub_bytes: int) -> tuple[TilingData, int]:
    """``(tiling data, block dim)`` for ``total`` fp32 elements."""
    if total < 1:
        raise TilingError(f"x has {total} elements; at least 1 is needed", "empty")
    units = -(-total // ALIGN)
    block = -(-units // core_num) * ALIGN
    block_dim = -(-total // block)
    tile = min(MAX_TILE, block, ub_bytes // (3 * BUFFER_NUM * 4) // ALIGN * ALIGN)
    return TilingData(total, block, tile), block_dim
