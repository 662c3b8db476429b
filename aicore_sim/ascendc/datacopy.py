"""DataCopyPad between GM and UB: the MTE2 (GM->UB) and MTE3 (UB->GM) transfers.

GM->UB copies ``blockCount`` blocks of ``blockLen`` bytes; GM blocks are ``srcStride`` bytes
apart (end to start), UB blocks start on 32-byte boundaries and are ``dstStride`` 32-byte
blocks apart. UB->GM is the mirror image (UB stride in blocks, GM stride in bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from aicore_sim import program
from aicore_sim.ascendc.tensors import GlobalTensor, LocalTensor
from aicore_sim.errors import KernelError
from aicore_sim.isa import Instr, Opcode, Operand, Pipe, Space

MAX_BLOCK_COUNT = 4095  # uint16 field, A2/A3 documented range
MAX_BLOCK_LEN = 2097151  # bytes


@dataclass
class DataCopyExtParams:
    """``DataCopyExtParams``: blockCount, blockLen (bytes), srcStride, dstStride, rsv."""

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0
    rsv: int = 0


@dataclass
class DataCopyPadExtParams:
    """``DataCopyPadExtParams<T>``: isPad, leftPadding, rightPadding, paddingValue."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: float = 0


def _up32(x: int) -> int:
    return -(-x // 32) * 32


def _check(p: DataCopyExtParams) -> tuple[int, int, int, int]:
    count, length = int(p.blockCount), int(p.blockLen)
    if not 0 <= count <= MAX_BLOCK_COUNT:
        raise KernelError(f"DataCopyPad: blockCount {count} outside [0, {MAX_BLOCK_COUNT}]")
    if not 0 <= length <= MAX_BLOCK_LEN:
        raise KernelError(f"DataCopyPad: blockLen {length} outside [0, {MAX_BLOCK_LEN}] bytes")
    return count, length, int(p.srcStride), int(p.dstStride)


def DataCopyPad(dst, src, params: DataCopyExtParams, padParams: DataCopyPadExtParams | None = None
                ) -> None:
    """GM->UB (dst LocalTensor, src GlobalTensor) or UB->GM (dst GlobalTensor, src LocalTensor)."""
    rec = program.current()
    count, length, s_stride, d_stride = _check(params)
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        src._check_bound("DataCopyPad GM->UB source")
        gm_span = count * length + max(count - 1, 0) * s_stride if count else 0
        ub_span = count * _up32(length) + max(count - 1, 0) * d_stride * 32 if count else 0
        rec.image.check_gm(src.name, src.base, gm_span, f"DataCopyPad GM->UB from '{src.name}'")
        ub = dst.operand(0, f"DataCopyPad GM->UB into '{dst.buf}'", nbytes=ub_span)
        gm = Operand(Space.GM, src.name, src.base, gm_span, src.dtype)
        rec.emit(Instr(Pipe.MTE2, Opcode.COPY_GM_TO_UB, dst=ub, src=(gm,), count=count,
                       nbytes=count * length, params=(count, length, s_stride, d_stride)))
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        dst._check_bound("DataCopyPad UB->GM destination")
        ub_span = count * _up32(length) + max(count - 1, 0) * s_stride * 32 if count else 0
        gm_span = count * length + max(count - 1, 0) * d_stride if count else 0
        ub = src.operand(0, f"DataCopyPad UB->GM from '{src.buf}'", nbytes=ub_span)
        rec.image.check_gm(dst.name, dst.base, gm_span, f"DataCopyPad UB->GM into '{dst.name}'")
        gm = Operand(Space.GM, dst.name, dst.base, gm_span, dst.dtype)
        rec.emit(Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(ub,), count=count,
                       nbytes=count * length, params=(count, length, s_stride, d_stride)))
    else:
        raise KernelError(
            "DataCopyPad: expected (LocalTensor, GlobalTensor) or (GlobalTensor, LocalTensor), "
            f"got ({type(dst).__name__}, {type(src).__name__})"
        )
